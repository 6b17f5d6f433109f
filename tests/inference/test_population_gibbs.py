"""The population model's collapsed Gibbs sampler: each closed form against the NumPyro model's own
distributions, the whole sampler against the prior (clicks that say nothing), determinism, and the
diagnostics flagging chains that have not met."""
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from scipy import integrate, stats

from inference.kernels import gibbs_conjugate as conj
from inference.kernels import gibbs_moves as moves
from inference.kernels import gibbs_split_merge as sm
from inference.model_fits import fit_population, stored_label_invariant
from tdmodels.errors import InputError
from inference.population_gibbs import GibbsSettings, sample_population
from tdmodels.population_model import PopulationHyper, population

D = 3


def _model_component_log_prior(hyper: PopulationHyper, mu, Sigma) -> float:
    """log p(mu, Sigma) of one learned component as the NumPyro model states it (its "cov_chol" and
    "mu" sites at these values), turned into a density over Sigma by the Jacobian of L -> L L^T."""
    d = len(mu)
    L = np.linalg.cholesky(Sigma)
    with jax.enable_x64(True):
        model = numpyro.handlers.substitute(numpyro.handlers.seed(population, 0),
                                            data={"cov_chol": jnp.asarray(L)[None], "mu": jnp.asarray(mu)[None]})
        tr = numpyro.handlers.trace(model).get_trace(jnp.zeros((2, 1, d)), n_learned=1, **{
            k: v for k, v in hyper._asdict().items() if k != "n_learned"})
        lp = float(tr["cov_chol"]["fn"].log_prob(tr["cov_chol"]["value"]).sum()
                   + tr["mu"]["fn"].log_prob(tr["mu"]["value"]).sum())
    log_jac = d * np.log(2) + sum((d - i) * np.log(L[i, i]) for i in range(d))
    return lp - log_jac


@pytest.mark.parametrize("n", [1, 2, 7])
def test_log_marginal_is_the_models_prior_times_likelihood_over_the_conjugate_posterior(n):
    """log p(X) = log p(X | mu, Sigma) + log p(mu, Sigma) - log p(mu, Sigma | X) at any (mu, Sigma):
    the closed form against the model's inverse-Wishart and Gaussian densities."""
    hyper = PopulationHyper()
    rng = np.random.default_rng(n)
    X = rng.normal(1.0, 1.5, size=(n, D))
    T1, T2 = X.sum(0), X.T @ X
    nu0, psi, k0 = hyper.cov_df(D), hyper.cov_prior_scale(D), hyper.kappa0
    lm = conj.log_marginal(n, T1, T2, nu0, psi, k0, np.empty((D, D)), np.empty((D, D)))
    for _ in range(3):
        Sigma = stats.invwishart(df=nu0 + 2, scale=np.eye(D) * 3).rvs(random_state=rng)
        mu = rng.normal(size=D)
        prior = _model_component_log_prior(hyper, mu, Sigma)
        lik = stats.multivariate_normal(mu, Sigma).logpdf(X).sum()
        kn = k0 + n
        Psi_n = psi * np.eye(D) + T2 - np.outer(T1, T1) / kn
        post = stats.invwishart(df=nu0 + n, scale=Psi_n).logpdf(Sigma) + stats.multivariate_normal(
            T1 / kn, Sigma / kn).logpdf(mu)
        np.testing.assert_allclose(lm, lik + prior - post, rtol=0, atol=1e-8)


def test_predictive_t_is_the_ratio_of_marginals():
    hyper = PopulationHyper()
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, D))
    x = rng.normal(size=D)
    nu0, psi, k0 = hyper.cov_df(D), hyper.cov_prior_scale(D), hyper.kappa0
    W = (np.empty((D, D)), np.empty((D, D)))
    ratio = (conj.log_marginal(5, X.sum(0) + x, X.T @ X + np.outer(x, x), nu0, psi, k0, *W)
             - conj.log_marginal(4, X.sum(0), X.T @ X, nu0, psi, k0, *W))
    loc, L = np.empty(D), np.empty((D, D))
    df, logdet = conj._predictive_t(4, X.sum(0), X.T @ X, nu0, psi, k0, loc, L)
    ref = stats.multivariate_t(loc, L @ L.T, df=df).logpdf(x)
    np.testing.assert_allclose(ratio, ref, atol=1e-10)
    # the users' moves read it through the slot's cached parameters
    K = 1
    n = np.array([4, 0], np.int64)
    T1, T2 = X.sum(0)[None], (X.T @ X)[None]
    tdf, tconst, plogdet = np.empty(K + 1), np.empty(K + 1), np.empty(K + 1)
    tloc, tL, pmean, pprec = np.empty((K + 1, D)), np.empty((K + 1, D, D)), np.empty((K + 1, D)), np.empty((K + 1, D, D))
    conj._slot_params(0, n, T1, T2, nu0, psi, k0, tdf, tloc, tL, tconst, pmean, pprec, plogdet, np.empty((D, D)),
                      np.empty(D), np.empty(D))
    np.testing.assert_allclose(conj._slot_logpdf(0, K, x, tdf, tloc, tL, tconst, 4.0, np.empty(D)), ref, atol=1e-10)
    np.testing.assert_allclose(np.linalg.inv(pprec[0]), L @ L.T * df / (df - 2), rtol=1e-10)   # the t's covariance


def test_assignment_prior_integrates_the_stick_fractions_out():
    """p(c) = E_v[prod_u w_{c_u}] under v_k ~ Beta(1, alpha), by numerical integration (K = 2)."""
    alpha = 3.0
    for counts in ([2, 1, 0], [0, 3, 1], [1, 0, 2], [0, 0, 4]):
        n = np.array(counts, np.int64)

        def integrand(v2, v1):
            w = np.array([v1, (1 - v1) * v2, (1 - v1) * (1 - v2)])
            return np.prod(w ** n) * stats.beta(1, alpha).pdf(v1) * stats.beta(1, alpha).pdf(v2)

        ref, _ = integrate.dblquad(integrand, 0, 1, 0, 1, epsabs=1e-13)
        np.testing.assert_allclose(conj.log_assignment_prior(n, alpha), np.log(ref), rtol=1e-6)


def test_predictive_weights_are_ratios_of_the_assignment_prior():
    """p(c_u = k | c_-u) used by the users' moves = p(c with u in k) / p(c without u), and sums to 1."""
    alpha = 2.5
    n = np.array([3, 0, 5, 1, 2], np.int64)                     # 4 learned slots and the broad one
    out = np.empty(5)
    conj.predictive_log_weights(n, alpha, out)
    base = conj.log_assignment_prior(n, alpha)
    for k in range(5):
        m = n.copy()
        m[k] += 1
        np.testing.assert_allclose(out[k], conj.log_assignment_prior(m, alpha) - base, atol=1e-12)
    np.testing.assert_allclose(np.exp(out).sum(), 1.0, atol=1e-12)


def test_component_draws_follow_the_conjugate_posterior():
    hyper = PopulationHyper()
    rng = np.random.default_rng(4)
    X = rng.normal(2.0, 1.0, size=(6, D))
    nu0, psi, k0 = hyper.cov_df(D), hyper.cov_prior_scale(D), hyper.kappa0
    n = np.array([6, 0, 0], np.int64)
    T1 = np.stack([X.sum(0), np.zeros(D)])
    T2 = np.stack([X.T @ X, np.zeros((D, D))])
    gen = np.random.default_rng(5)
    draws = 20000
    mu, chol = np.empty((draws, 2, D)), np.empty((draws, 2, D, D))
    for s in range(draws):
        conj.draw_components(gen, n, T1, T2, nu0, psi, k0, mu[s], chol[s])
    Sig = chol @ np.swapaxes(chol, -1, -2)
    kn = k0 + 6
    Psi_n = psi * np.eye(D) + T2[0] - np.outer(T1[0], T1[0]) / kn
    np.testing.assert_allclose(Sig[:, 0].mean(0), Psi_n / (nu0 + 6 - D - 1), rtol=0.05, atol=0.02)
    np.testing.assert_allclose(mu[:, 0].mean(0), T1[0] / kn, atol=0.03)
    np.testing.assert_allclose(Sig[:, 1].mean(0), psi * np.eye(D) / (nu0 - D - 1), atol=0.1)   # the prior: E = I
    assert np.all(np.diagonal(chol, axis1=-2, axis2=-1) > 0)


def _prior_draws(hyper, U, d, draws, seed=0):
    """Draws from the NumPyro model's prior: theta of each user, and the weights."""
    with jax.enable_x64(True):
        pred = numpyro.infer.Predictive(population, num_samples=draws)(
            jax.random.PRNGKey(seed), jnp.zeros((U, 1, d)), **hyper._asdict())
    return np.asarray(pred["theta"]), np.asarray(pred["weights"])


@pytest.mark.slow
def test_sampler_recovers_the_models_prior_when_clicks_say_nothing():
    """Designs of zeros: the likelihood is constant, so the posterior is the NumPyro model's prior.
    Users' theta, the broad share and the chance that two users share a component match its draws."""
    hyper = PopulationHyper(n_learned=4)
    U, S = 6, 2
    z = np.zeros((U, S, D))
    y = np.ones((U, S))
    idata = sample_population(z, y, hyper, chains=2, warmup=200, draws=6000, seed=1)
    th = idata.posterior["theta"].values.reshape(-1, U, D)
    c = idata.posterior["assignment"].values.reshape(-1, U)
    ref_th, ref_w = _prior_draws(hyper, U, D, 20000)
    for j in range(D):          # the marginal of one coordinate (every user has the same), heavy-tailed: by quantiles
        a, b = th[:, :, j].ravel(), ref_th[:, :, j].ravel()
        for q in (0.1, 0.25, 0.5, 0.75, 0.9):
            assert abs(np.quantile(a, q) - np.quantile(b, q)) < 0.12, (j, q)
    broad = (c == hyper.n_learned).mean()
    assert abs(broad - ref_w[:, -1].mean()) < 0.03
    same = (c[:, 0] == c[:, 1]).mean()
    assert abs(same - (ref_w ** 2).sum(-1).mean()) < 0.03
    # a user's squared norm mixes over components: compare its mean (finite under nu0 = d + 3)
    np.testing.assert_allclose((th ** 2).sum(-1).mean(), (ref_th ** 2).sum(-1).mean(), rtol=0.1)


def _two_groups(U=24, S=24, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[2.5, -2.0, 0.0], [-2.5, 2.0, 0.0]])
    group = np.arange(U) % 2
    theta = centres[group] + 0.3 * rng.standard_normal((U, D))
    z = rng.standard_normal((U, S, D))
    y = (rng.random((U, S)) < 1 / (1 + np.exp(-np.einsum("usd,ud->us", z, theta)))).astype(float)
    return z, y, group


def test_same_seed_same_draws_and_chains_differ():
    z, y, _ = _two_groups(U=10)
    a = sample_population(z, y, PopulationHyper(n_learned=4), chains=2, warmup=5, draws=10, seed=3)
    b = sample_population(z, y, PopulationHyper(n_learned=4), chains=2, warmup=5, draws=10, seed=3)
    np.testing.assert_array_equal(a.posterior["theta"].values, b.posterior["theta"].values)
    np.testing.assert_array_equal(a.posterior["assignment"].values, b.posterior["assignment"].values)
    assert not np.array_equal(a.posterior["theta"].values[0], a.posterior["theta"].values[1])


@pytest.mark.parametrize("users, learned", [(1, 4), (6, 1), (1, 1)])
def test_one_user_or_one_learned_slot_has_no_pair_to_move_and_still_samples(users, learned):
    """`tutorduel fit --users 1` crashed in the split-merge move ('empty range for randrange()'): a pair
    of users, or of learned slots for a label swap, needs two."""
    z, y, _ = _two_groups(U=6)
    idata = sample_population(z[:users], y[:users], PopulationHyper(n_learned=learned), chains=2, warmup=5,
                              draws=10, seed=1)
    assert idata.posterior["theta"].shape == (2, 10, users, D)
    assert np.all(np.isfinite(idata.posterior["theta"].values))
    if users == 1:
        assert np.all(idata.sample_stats["splits_proposed"].values == 0)


def test_one_chain_runs_once_not_in_rounds_until_the_budget():
    """`tutorduel fit --chains 1` ran round after round until --max-minutes (30 by default), waiting
    for a verdict one chain can never get."""
    z, y, _ = _two_groups(U=6)
    idata = fit_population(z, y, chains=1, warmup=20, draws=30, hyper=PopulationHyper(n_learned=3), max_seconds=30)
    assert idata.sample_stats.attrs["rounds"] == 1 and idata.sample_stats.attrs["sweeps_per_chain"] == 50
    lines = stored_label_invariant(idata).lines()           # printed "theta 0 entries" for 18 unjudged ones
    assert "theta          no entry with a finite R-hat" in lines[1] and "PROBLEMS" in lines[-1]


def test_sampler_separates_two_clear_groups():
    z, y, group = _two_groups()
    idata = sample_population(z, y, PopulationHyper(n_learned=6), chains=2, warmup=300, draws=300, seed=0)
    c = idata.posterior["assignment"].values.reshape(-1, len(group))
    same = (c[:, :, None] == c[:, None, :]).mean(0)
    within = same[group[:, None] == group[None, :]].mean()
    between = same[group[:, None] != group[None, :]].mean()
    assert between < 0.05 < 0.5 < within


def test_diagnostics_flag_chains_started_apart_and_run_briefly():
    """Chains from different partitions (one component; every user in a random one), a few sweeps:
    the fit is not called healthy, and the co-clustering R-hat is what says so."""
    z, y, _ = _two_groups()
    with pytest.warns(UserWarning, match="co_clustering"):
        idata = fit_population(z, y, chains=2, warmup=0, draws=4, hyper=PopulationHyper(n_learned=6),
                               settings=GibbsSettings(split_merge_per_user=0.0))
    attrs = idata["label_invariant"].attrs
    assert attrs["li_ok"] == 0
    assert attrs["li_co_clustering_max_rhat"] > 1.01


def test_one_chain_is_never_healthy():
    z, y, _ = _two_groups(U=8)
    with pytest.warns(UserWarning, match="at least 2 chains"):
        idata = fit_population(z, y, chains=1, warmup=10, draws=20, hyper=PopulationHyper(n_learned=3))
    assert idata["label_invariant"].attrs["li_ok"] == 0


@pytest.mark.parametrize("bad", [dict(alpha=0.0), dict(n_learned=0), dict(broad_var=float("nan")),
                                 dict(cov_df_extra=1), dict(n_learned=2.5)])
def test_bad_hyperparameters_are_refused_by_name(bad):
    z, y, _ = _two_groups(U=4)
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        fit_population(z, y, chains=2, warmup=1, draws=2, hyper=PopulationHyper(**bad))


def test_unknown_sampler_is_refused():
    z, y, _ = _two_groups(U=4)
    with pytest.raises(ValueError, match="sampler"):
        fit_population(z, y, sampler="hmc")


@pytest.mark.slow
def test_population_sbc_runs_and_ranks_lie_in_range(dev_world):
    """The machinery of the (slow) population SBC, on two tiny data sets."""
    import warnings

    from inference.sbc import run_population_sbc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_population_sbc(dev_world["features"].values, n_sims=2, users=8, rounds=6, L=19, seed=3,
                                 chains=2, warmup=10, draws=40, max_seconds=None)
    assert res.ranks.shape == res.truth.shape == (2, len(res.names))
    assert res.ranks.min() >= 0 and res.ranks.max() <= 19 and res.healthy.shape == (2,)
    assert np.all(np.isfinite(res.truth))


def test_split_merge_and_label_moves_leave_the_partition_posterior_invariant():
    """theta fixed, 4 users in 4 learned slots: split-merge and label swaps alone move between every
    labelled partition; their long-run frequencies match p(c | theta) ~ p(c) prod_k M(theta_k),
    enumerated over all 256 assignments."""
    import itertools

    hyper = PopulationHyper(alpha=1.5, n_learned=4)
    rng = np.random.default_rng(7)
    theta = np.concatenate([rng.normal(1.0, 0.4, (2, D)), rng.normal(-1.0, 0.4, (2, D))])
    K, U = 4, 4
    nu0, psi, k0 = hyper.cov_df(D), hyper.cov_prior_scale(D), hyper.kappa0
    W = (np.empty((D, D)), np.empty((D, D)))

    def log_post(c):
        n = np.bincount(c, minlength=K + 1).astype(np.int64)
        out = conj.log_assignment_prior(n, hyper.alpha)
        for k in range(K):
            X = theta[c == k]
            if len(X):
                out += conj.log_marginal(len(X), X.sum(0), X.T @ X, nu0, psi, k0, *W)
        return out

    states = [np.array(s, np.int64) for s in itertools.product(range(K), repeat=U)]
    lp = np.array([log_post(s) for s in states])
    exact = np.exp(lp - lp.max())
    exact /= exact.sum()
    c = np.zeros(U, np.int64)
    n = np.zeros(K + 1, np.int64)
    T1, T2 = np.zeros((K, D)), np.zeros((K, D, D))
    gen = np.random.default_rng(11)
    index = {tuple(s): i for i, s in enumerate(states)}
    counts = np.zeros(len(states))
    for t in range(200_000):
        conj.recompute_stats(c, theta, K, n, T1, T2)
        sm.split_merge(gen, c, theta, n, T1, T2, hyper.alpha, nu0, psi, k0, 1.0)
        sm.label_swaps(gen, c, n, T1, T2, hyper.alpha, 1)
        counts[index[tuple(c)]] += 1
    freq = counts / counts.sum()
    assert np.abs(freq - exact).max() < 0.006, np.abs(freq - exact).max()
    assert 0.5 * np.abs(freq - exact).sum() < 0.02, 0.5 * np.abs(freq - exact).sum()


def test_dilation_alone_leaves_the_components_density_invariant():
    """One user alone in a learned component, clicks that say nothing: the dilation move theta -> s theta
    on its own must sample the radius of the component's prior predictive, a multivariate t with
    isotropic scale sigma^2 I, for which |theta|^2 / (d sigma^2) ~ F(d, df) (its Jacobian s^d checked)."""
    hyper = PopulationHyper(n_learned=1)
    nu0, psi, k0 = hyper.cov_df(D), hyper.cov_prior_scale(D), hyper.kappa0
    df = nu0 - D + 1
    sigma2 = psi * (k0 + 1) / (k0 * df)
    z, y = np.zeros((1, 2, D)), np.ones((1, 2))
    c = np.zeros(1, np.int64)
    theta = np.array([[1.0, -0.5, 0.3]])
    n, T1, T2 = np.zeros(2, np.int64), np.zeros((1, D)), np.zeros((1, D, D))
    gen = np.random.default_rng(5)
    radius = np.empty(60_000)
    for t in range(len(radius)):
        conj.recompute_stats(c, theta, 1, n, T1, T2)
        for _ in range(5):
            moves.dilate_clusters(gen, z, y, c, theta, n, T1, T2, nu0, psi, k0, 0.5)
        radius[t] = (theta[0] ** 2).sum() / (D * sigma2)
    thinned = radius[::20]
    assert stats.kstest(thinned, stats.f(D, df).cdf).pvalue > 0.001


def test_a_budget_of_rounds_ends_the_fit_whatever_the_machines_speed():
    """max_rounds is the budget tests use: a fit short of health after one round stops there (max_seconds would
    make the outcome depend on the machine)."""
    z, y, _ = _two_groups(U=6)
    idata = fit_population(z, y, chains=2, warmup=5, draws=10, hyper=PopulationHyper(n_learned=3), max_rounds=1)
    assert idata.sample_stats.attrs["rounds"] == 1 and idata.sample_stats.attrs["until_met"] == 0
    with pytest.raises(InputError, match="max_rounds"):
        fit_population(z, y, chains=2, warmup=5, draws=10, max_rounds=0)

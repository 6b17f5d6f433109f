import numpy as np
from scipy.stats import multivariate_t

from inference.evidence import mvt_logpdf, mvt_sample


def test_student_t_density_and_draws_match_scipy():
    rng = np.random.default_rng(0)
    B, d = 3, 4
    mean = rng.normal(size=(B, d))
    A = rng.normal(size=(B, d, d))
    cov = A @ A.transpose(0, 2, 1) + 0.5 * np.eye(d)
    x, logq = mvt_sample(rng, mean, cov, 2000, nu=5.0)
    for b in range(B):
        ref = multivariate_t(loc=mean[b], shape=cov[b], df=5.0)
        np.testing.assert_allclose(logq[b], ref.logpdf(x[b]), rtol=1e-10)
        np.testing.assert_allclose(mvt_logpdf(x[b:b + 1, :5], mean[b:b + 1], cov[b:b + 1], 5.0)[0],
                                   ref.logpdf(x[b, :5]), rtol=1e-10)
        # the draws' covariance is nu / (nu - 2) times the shape matrix
        np.testing.assert_allclose(np.cov(x[b].T), 5.0 / 3.0 * cov[b], atol=0.6 * np.abs(cov[b]).max())

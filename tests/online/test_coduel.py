import numpy as np
import pytest

from online.learner import Context
from online.policies import coduel as cd
from online.policies.coduel_prior import BROAD_FLOOR_MAX, belief_from
from online.registry import make_learner
from online.replay import play, prepare_run, replay, replay_logged
from online.schedule import make_schedule
from tests.online.driving import play_sessions

ARR = 12


def test_functional_core_gives_the_replays_rows(dev_world):
    """Driving the pure core by hand reproduces the replay's pairs exactly."""
    spec = "coduel[lookahead=false]"
    _, log = replay_logged(dev_world, 4, spec, arrivals=ARR)
    sched = make_schedule(dev_world, 4, arrivals=ARR)
    feats, probs = dev_world["features"].values, dev_world["probs"].values
    learner = cd.coduel(lookahead=False)
    state = learner.init(Context(6, 7, 24, 1.0, 16, ARR))
    rng = np.random.default_rng(0)
    pairs = []
    for a in range(ARR):
        state, _ = learner.start_session(state, rng)
        for t in range(24):
            q = sched.question[a, t]
            (i, j), _ = learner.select(state, feats[q], rng)
            state, info = learner.update(state, feats[q], (i, j), int(sched.uniform[a, t] < probs[sched.student[a], q, i, j]))
            assert info.log_predictive_population < 0 and info.log_predictive_alone < 0
            pairs.append((i, j))
        state, info = learner.end_session(state)
        assert info.n_components == state.pop.active.sum()
    np.testing.assert_array_equal(np.array(pairs), np.stack([log.first, log.second], -1).reshape(-1, 2))
    assert state.pop.n == ARR and len(state.pop.prior.weights) >= 2       # components were learned


def test_ablations_are_settings(dev_world):
    for spec in ("coduel", "coduel[population=false]", "coduel[recalibration=false]", "coduel[lookahead=false]",
                 "coduel[gate=false]"):
        assert make_learner(spec).records == cd.RECORDS
    row = replay(dev_world, 0, "coduel[population=false,lookahead=false]", arrivals=3)
    assert row["policy"] == "coduel[lookahead=false,population=false]"
    assert row["settings"]["lookahead"] is False and row["settings"]["population"] is False
    assert row["settings"]["gate"] is True and row["settings"]["em_iters"] == 1     # defaults filled in


def test_gate_closed_means_no_transfer_pairs(dev_world):
    """Before eight sessions the gate is closed: CODuel shows exactly the no-transfer learner's pairs."""
    a = replay_logged(dev_world, 2, "coduel[recalibration=false]", arrivals=8)[1]
    b = replay_logged(dev_world, 2, "no-transfer", arrivals=8)[1]
    np.testing.assert_array_equal(a.first, b.first)
    np.testing.assert_array_equal(a.second, b.second)


def test_recalibration_replaces_the_rater_column():
    Phi = np.concatenate([np.eye(6), np.arange(6.0)[:, None]], 1)
    A = 2.0 * np.eye(6)
    out = cd.recalibrate(Phi, A)
    np.testing.assert_array_equal(out[:, :6], np.eye(6))
    np.testing.assert_array_equal(out[:, 6], 2.0 * np.arange(6.0))
    learner, rng = cd.coduel(), np.random.default_rng(0)
    st, _ = learner.start_session(learner.init(Context(6, 7, 24, 1.0, 16, 1)), rng)
    with pytest.raises(ValueError, match="session of 3 clicks"):
        for _ in range(3):
            pair, _ = learner.select(st, Phi, rng)
            st, _ = learner.update(st, Phi, pair, 1)
        learner.end_session(st)


def test_the_prior_each_user_arrived_under_is_kept_with_the_log(dev_world, tmp_path):
    from online.clicklog import load_click_log, save_click_log

    _, log = replay_logged(dev_world, 1, "coduel[lookahead=false]", arrivals=10)
    w, m, C = log.priors
    assert w.shape[0] == 10 and np.allclose(w.sum(1), 1.0)
    np.testing.assert_array_equal(w[0], np.r_[1.0, np.zeros(w.shape[1] - 1)])       # the first user: isotropic only
    assert (w[9] > 0).sum() > 1                                                       # later users: learned components
    back = load_click_log(save_click_log(log, tmp_path / "c.clicks.nc"))
    for a, b in zip(back.priors, log.priors):
        np.testing.assert_array_equal(a, b)


def test_ablations_by_name_are_the_same_cells_as_their_settings(dev_world):
    from online.registry import canonical_spec, parse_spec

    assert canonical_spec("coduel-greedy") == canonical_spec("coduel[lookahead=false]")
    assert canonical_spec("coduel-no-population") == "coduel[population=false]"
    assert parse_spec("coduel-no-gate[refresh=4]") == ("coduel", {"gate": False, "refresh": 4})
    from online.registry import PolicySpecError
    with pytest.raises(PolicySpecError, match="alias fixes lookahead=false"):
        parse_spec("coduel-greedy[lookahead=true]")
    row = replay(dev_world, 0, "coduel-no-recalibration", arrivals=2)
    assert row["policy"] == "coduel[recalibration=false]"
    for name in ("no-population", "no-recalibration", "greedy", "no-gate"):        # the first spelling
        assert canonical_spec(f"coduel:{name}") == canonical_spec(f"coduel-{name}")


def test_the_belief_after_every_click_is_in_the_update_info(dev_world):
    """What the watch page shows comes from the infos: the belief after every click, the gate's
    running ratio, whether the population learner chose and the gate's figures at arrival."""
    from online.replay import play, prepare_run
    run = prepare_run(dev_world, 0, "coduel[lookahead=false]", 10)
    arrived, after, ends = [], [], []

    def keep(kind, a, t, info):
        {"start_session": arrived, "update": after, "end_session": ends}.get(kind, []).append(info)

    play(run, observe=keep)
    assert len(arrived) == 10 and len(after) == 240 and len(ends) == 10
    w = np.array([np.exp(u.belief.log_w) for u in after])
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert not any(a.transfer for a in arrived[:8])              # the gate needs eight sessions
    llr = np.array([u.gate_llr for u in after]).reshape(10, 24)
    np.testing.assert_allclose(llr[:, 0], [u.log_predictive_population - u.log_predictive_alone for u in after[::24]])
    assert np.isnan([a.gate_se for a in arrived[:2]]).all() and np.isfinite([a.gate_se for a in arrived[2:]]).all()
    np.testing.assert_allclose(arrived[9].gate_mean, llr[:9, -1].mean())     # the mean of completed sessions
    last = after[-1].belief                                   # the session-end belief is the last click's, on the arrival prior's slots
    active = np.isfinite(last.log_w)
    np.testing.assert_array_equal(ends[-1].belief.means, last.means[active])


def test_the_log_reads_each_users_clicks_with_the_recalibration_in_force(dev_world, tmp_path):
    """After the first fit (20 sessions) users' designs differ from the raw ones; each matches the
    recalibrated design under the A recorded for that user; the file keeps it."""
    from online.clicklog import load_click_log, save_click_log
    from tdmodels.population_model import recalibrated_design

    _, log = replay_logged(dev_world, 2, "coduel-greedy", arrivals=22)
    A = log.recalibration
    assert A.shape == (22, 6, 6)
    np.testing.assert_array_equal(A[:20], np.broadcast_to(np.eye(6), (20, 6, 6)))
    assert not np.allclose(A[21], np.eye(6))
    z, y = log.recalibrated_design()
    raw, _ = log.design()
    np.testing.assert_array_equal(z[:20], raw[:20])
    for u in (20, 21):
        ref = recalibrated_design(A[u], log.first[u][None], log.second[u][None], log.rater[u][None])[0]
        np.testing.assert_allclose(z[u], ref, atol=1e-12)
    back = load_click_log(save_click_log(log, tmp_path / "c.clicks.nc"))
    np.testing.assert_array_equal(back.recalibration, A)


def test_the_lookahead_bank_holds_the_bank_size_most_recent_questions(dev_world):
    """Bug: the bank was cut with a negative index while it filled up (bank[len - 15:]), so it never
    held more than 8 questions instead of the world's 16. It holds the b most recent, this one last."""
    seen = []
    feats = dev_world["features"].values
    learner, rng = cd.coduel(gate=False, recalibration=False), np.random.default_rng(0)
    state = learner.init(Context(6, 7, 24, 1.0, 16, 3))
    shown = []
    for a in range(2):
        state, _ = learner.start_session(state, rng)
        for t in range(24):
            Phi = feats[(a * 24 + t) % len(feats)]
            pair, _ = learner.select(state, Phi, rng)
            shown.append(Phi)
            if state.transfer:                                # the bank coduel_pair hands the lookahead
                seen.append(cd.kn.lookahead_bank(state.bank, state.n_bank, Phi))
            state, _ = learner.update(state, Phi, pair, t % 2)
        state, _ = learner.end_session(state)
    assert len(seen) == 24                                    # the second session transfers (gate off)
    for t, bank in enumerate(seen):
        np.testing.assert_array_equal(bank, np.stack(shown[24 + t - 15:24 + t + 1]))   # 16, this one last


def test_completed_sessions_are_shared_yet_states_stay_as_they_were_when_a_caller_branches(dev_world):
    """CODuel appends each finished session to buffers its states share (no [N, S, ...] copy a session);
    a second branch from one past neither changes the first branch's sessions nor plays differently from a
    fresh run, recalibration (a rewrite of every design) included."""
    feats = dev_world["features"].values
    learner = cd.coduel_learner(cd.Settings(recal_start=3, recal_every=2))
    ctx = Context(6, 7, 24, 1.0, 16, 8)
    past, _ = play_sessions(learner, learner.init(ctx), feats, 3, 0, 24)
    a, pairs_a = play_sessions(learner, past, feats, 3, 1, 24)
    a_rows = [x[:6].copy() for x in (*a.done.rounds, a.done.Z)]
    past_rows = [x[:3].copy() for x in (*past.done.rounds, past.done.Z)]
    b, pairs_b = play_sessions(learner, past, feats, 3, 2, 24)              # a second branch from the same past
    for x, want in zip((*a.done.rounds, a.done.Z), a_rows):
        np.testing.assert_array_equal(x[:6], want)
    for x, want in zip((*past.done.rounds, past.done.Z), past_rows):
        np.testing.assert_array_equal(x[:3], want)
    assert play_sessions(learner, past, feats, 3, 1, 24)[1] == pairs_a
    fresh, _ = play_sessions(learner, learner.init(ctx), feats, 3, 0, 24)
    assert play_sessions(learner, fresh, feats, 3, 2, 24)[1] == pairs_b


def test_component_thompson_shows_the_greedy_pair_of_a_component_drawn_by_weight():
    """coduel-component-ts: with transfer on, the pair is the greedy pair under one component's mean, each
    component drawn about as often as its weight says; the broad component's theta is never sampled."""
    from inference.mixture_belief import MixtureBelief

    s = cd.Settings(component_thompson=True)
    state = cd.start_session(cd.init(Context(6, 7, 24, 1.0, 16, 4), s), s)
    means = np.zeros((state.belief.means.shape[0], 7))
    means[0, :6] = [3, 2, 0, 0, 0, 0]              # component 0: personas 0, 1
    means[-1, :6] = [0, 0, 0, 0, 2, 3]             # the broad slot: personas 5, 4
    active = np.zeros(len(means), dtype=bool)
    active[[0, -1]] = True
    log_w = np.full(len(means), -np.inf)
    log_w[[0, -1]] = np.log([0.7, 0.3])
    pop = state.pop._replace(active=active)
    state = state._replace(pop=pop, active=active, transfer=True, belief=MixtureBelief(log_w, means, state.belief.covs))
    Phi = np.concatenate([np.eye(6), np.zeros((6, 1))], 1)
    rng = np.random.default_rng(3)
    pairs = [cd.select(state, Phi, s, rng) for _ in range(2000)]
    assert set(pairs) == {(0, 1), (5, 4)}
    assert pairs.count((0, 1)) / 2000 == pytest.approx(0.7, abs=0.03)
    assert cd.select(state._replace(transfer=False), Phi, s, rng) == cd.select(state._replace(transfer=False), Phi)
    from tdmodels.errors import InputError

    with pytest.raises(InputError, match="select needs its rng"):
        cd.select(state, Phi, s)


def test_component_thompson_is_coduel_until_the_gate_opens(dev_world):
    a = replay_logged(dev_world, 1, "coduel-component-ts", arrivals=20)[1]
    b = replay_logged(dev_world, 1, "coduel", arrivals=20)[1]
    np.testing.assert_array_equal(a.first[:8], b.first[:8])             # gate closed: no-transfer's pairs
    assert (a.first[8:] != b.first[8:]).any() or (a.second[8:] != b.second[8:]).any()


@pytest.mark.parametrize("belief", ["adf", "laplace-is"])
def test_every_belief_keeps_the_state_fixed_in_shape_and_each_session_end_belief_is_its_fold(dev_world, belief):
    """A belief setting changes only how clicks enter the user's belief: the state's arrays keep their shapes
    and earlier states are untouched, and the belief each user ends with is the belief's own fold of that
    user's clicks from the prior they arrived under (``inference.online_beliefs.fold_session``)."""
    import copy

    from inference.online_beliefs import fold_session
    from tdmodels.priors import MixturePrior

    learner = make_learner(f'coduel[belief="{belief}", gate=false]')
    state = learner.init(Context(K=6, d=7, S=4, beta=1.0, b=8, N=6))
    fixed = ("belief", "alone", "bank", "bank_P", "session", "session_z", "done")   # the population grows a row a session
    shapes = {f: [np.shape(x) for x in _leaves(getattr(state, f))] for f in fixed}
    feats = np.random.default_rng(0).normal(size=(20, 6, 7))
    rng = np.random.default_rng(1)
    for _ in range(3):
        state, arrived = learner.start_session(state, rng)
        z, ys = [], []
        for _ in range(4):
            Phi = feats[rng.integers(20)]
            pair, _ = learner.select(state, Phi, rng)
            before = copy.deepcopy(state)
            y = int(rng.integers(2))
            new, _ = learner.update(state, Phi, pair, y)
            for a, b in zip(_leaves(state), _leaves(before)):
                np.testing.assert_array_equal(a, b)
            state = new
            P = cd.recalibrate(Phi, arrived.A)
            z.append(P[pair[0]] - P[pair[1]])
            ys.append(y)
        state, ended = learner.end_session(state)
        assert {f: [np.shape(x) for x in _leaves(getattr(state, f))] for f in fixed} == shapes
        want = fold_session(MixturePrior(*arrived.prior), np.array(z), np.array(ys), belief).belief
        np.testing.assert_allclose(ended.belief.means, want.means, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ended.belief.weights, want.weights, rtol=1e-10, atol=1e-12)


def _leaves(state):
    """The arrays of a learner state, depth first."""
    if isinstance(state, np.ndarray):
        return [state]
    if isinstance(state, tuple):
        return [leaf for x in state for leaf in _leaves(x)]
    return [np.asarray(state)] if isinstance(state, (int, float, bool, np.number)) else []


def test_a_sessions_belief_starts_with_the_broad_weight_at_least_the_floor():
    pop = cd.init_population(3)._replace(weights=np.array([0.6, 0.3, 0.0, 0.1]),
                                          active=np.array([True, True, False, True]))
    for floor, want in ((0.0, 0.1), (0.05, 0.1), (0.4, 0.4)):
        w = np.exp(belief_from(pop, floor)[0].log_w)
        assert w[-1] == pytest.approx(want) and w.sum() == pytest.approx(1.0) and w[2] == 0.0
        assert w[0] / w[1] == pytest.approx(2.0)                  # the learned components keep their ratios


def test_recent_broad_holds_the_last_sessions_unfloored_end_weights_and_sets_the_next_floor(dev_world):
    """The recorded weight is the session's final broad weight re-weighted to the population's own prior (the
    same clicks folded from that prior), so the floor does not feed on itself; the arrival info's prior is
    the one the session's belief starts from."""
    from inference.kernels.belief import mixture_update

    feats = dev_world["features"].values
    learner = make_learner("coduel[broad_memory=3]")
    state = learner.init(Context(6, 7, 4, 1.0, 16, 12))
    rng = np.random.default_rng(0)
    for n in range(8):
        before = state.recent_broad.copy()
        state, info = learner.start_session(state, rng)
        active = state.pop.active
        np.testing.assert_allclose(np.exp(state.belief.log_w[active]), info.prior.weights, rtol=1e-12)
        floor = min(before.mean(), BROAD_FLOOR_MAX)
        assert info.prior.weights[-1] >= floor - 1e-12
        plain = belief_from(state.pop)[0]
        log_w, means, covs = plain.log_w, plain.means, plain.covs
        for _ in range(4):
            Phi = feats[rng.integers(len(feats))]
            pair, _ = learner.select(state, Phi, rng)
            y = int(rng.integers(2))
            state, _ = learner.update(state, Phi, pair, y)
            P = cd.recalibrate(Phi, state.A)
            log_w, means, covs, _ = mixture_update(log_w, means, covs, active, P[pair[0]] - P[pair[1]], y)
        learned = state.pop.n_learned > 0
        state, _ = learner.end_session(state)
        assert state.recent_broad.shape == (3,)
        if learned:
            assert state.recent_broad[-1] == pytest.approx(np.exp(log_w[-1]), rel=1e-9, abs=1e-12)
            np.testing.assert_array_equal(state.recent_broad[:-1], before[1:])
        else:                                   # no learned type yet: nothing to record
            np.testing.assert_array_equal(state.recent_broad, before)
    assert make_learner("coduel").init(Context(6, 7, 4, 1.0, 16, 9)).recent_broad.shape == (0,)


def test_a_one_session_memory_never_locks_transfer_off(dev_world):
    """broad_memory=1 once fed on its own floored sessions (each ending at broad weight 1, the learned types
    emptied, transfer never on); re-weighted to the population's prior the floor stays below 1."""
    row = replay(dev_world, 0, "coduel[broad_memory=1]", arrivals=60)
    base = replay(dev_world, 0, "no-transfer", arrivals=60)
    assert row["score"] > base["score"] + 5


@pytest.mark.parametrize("bad", [{"session_broad_weight": 1.0}, {"session_broad_weight": float("nan")},
                                 {"session_broad_weight": -0.1}, {"broad_memory": -1}, {"broad_memory": 2.5},
                                 {"broad_memory": True}])
def test_broad_floor_settings_out_of_range_are_one_clear_error(bad):
    from tdmodels.errors import InputError

    with pytest.raises(InputError, match=next(iter(bad))):
        cd.coduel_learner(cd.Settings(**bad))


def test_a_state_and_settings_of_different_broad_memories_are_one_clear_error():
    from tdmodels.errors import InputError

    state = cd.init(Context(6, 7, 4, 1.0, 16, 9), cd.Settings(broad_memory=3))
    with pytest.raises(InputError, match="broad_memory=3"):
        cd.start_session(state, cd.Settings(broad_memory=5))


def test_with_a_change_hazard_the_belief_holds_the_recent_type_before_the_broad_component():
    """coduel-change-point: one slot more than the population's, just before the broad one, inactive until two
    sessions are done, then at most change_weight_max of the arrival prior; the population never sees it. The
    population part's broad weight is at least the session's floor, and that at least the probability of a new
    kind."""
    from inference.change_point import new_kind_probability
    from tdmodels.stress_knobs import StressKnobs
    from tdmodels.stress_worlds import build_stress_world

    w = build_stress_world(StressKnobs(arrivals=30, types=1, tightness=0.1, block_length=15), 0, "one-type")
    run = prepare_run(w, 0, "coduel-change-point", None)
    priors, slots = [], []

    def observe(kind, a, t, info):
        if kind == "start_session":
            priors.append(info.prior)

    play(run, observe=observe)
    state = run.learner.init(run.ctx)
    C = len(state.pop.weights)
    assert state.pop.active.shape == (C,) and state.belief.log_w.shape == (C + 1,)
    assert not state.active[C - 1] and state.active[C]
    assert len(priors[0].weights) == 1 and len(priors[1].weights) == 2      # the broad, then one learned too
    state = run.learner.init(run.ctx)
    recent = []
    for a in range(30):                           # the recent slot's own weight, read off the state
        state, _ = run.learner.start_session(state, np.random.default_rng(a))
        recent.append(np.exp(state.belief.log_w[C - 1]) if state.active[C - 1] else 0.0)
        new_kind = new_kind_probability(state.arrival_gain[max(0, a - 50):a], 0.05) if a else 0.0
        part = 1.0 - state.recent_weight
        assert np.exp(state.belief.log_w[-1]) >= part * state.floor - 1e-12
        assert state.floor >= min(new_kind, BROAD_FLOOR_MAX) - 1e-12
        for t in range(run.sched.question.shape[1]):
            q = run.sched.question[a, t]
            pair, _ = run.learner.select(state, run.feats[q], np.random.default_rng(t))
            y = int(run.probs[run.sched.student[a], q, pair[0], pair[1]] > 0.5)    # the students' likelier click
            state, _ = run.learner.update(state, run.feats[q], pair, y)
        state, _ = run.learner.end_session(state)
    with pytest.raises(ValueError, match="gains"):                            # the gains are not optional
        belief_from(state.pop, 0.0, 0.05)
    assert recent[0] == recent[1] == recent[2] == 0.0 < recent[3]    # the first is the population's, two more agree
    assert max(recent) <= 0.25 + 1e-12 and max(recent[17:]) > 0.2            # a new type after the switch, capped
    for p in priors:
        assert p.weights.sum() == pytest.approx(1.0) and np.all(p.weights >= 0)
    _, log = replay_logged(w, 0, "coduel-change-point")
    assert log.priors.weights.shape[1] >= 3 and np.isfinite(log.beliefs.weights).all()


@pytest.mark.parametrize("spec, match", [("coduel[change_hazard=0.6]", "change_hazard"),
                                         ("coduel[change_hazard=-0.1]", "change_hazard"),
                                         ("coduel[change_hazard=0.1,population=false]", "needs population=True")])
def test_change_hazard_out_of_range_or_without_a_population_is_one_clear_error(spec, match):
    from online.registry import PolicySpecError
    from tdmodels.errors import InputError

    with pytest.raises((InputError, PolicySpecError), match=match):
        make_learner(spec)


def test_a_state_built_without_eps_start_or_sites_is_refolded_and_wrong_sites_are_refused():
    """CODuel[belief=ep] keeps the session's starting belief and EP's sites in its state: a state without
    them (None) folds the click from the population's prior and EP's cold start, the same belief as a state
    whose sites say none is fitted; sites of another shape are one InputError, never read past."""
    from inference.online_beliefs import Sites
    from tdmodels.errors import InputError

    learner, rng = cd.coduel(belief="ep"), np.random.default_rng(1)
    state, _ = learner.start_session(learner.init(Context(6, 7, 24, 1.0, 16, 2)), rng)
    Phi = rng.normal(size=(6, 7))
    state, _ = learner.update(state, Phi, (0, 1), 1)
    bare, _ = learner.update(state._replace(start=None, sites=None, alone_sites=None), Phi, (2, 3), 0)
    s, a = state.sites, state.alone_sites
    cold = state._replace(sites=Sites(s.values, np.zeros_like(s.fitted), s.means, s.covs),
                          alone_sites=Sites(a.values, np.zeros_like(a.fitted), a.means, a.covs))
    again, _ = learner.update(cold, Phi, (2, 3), 0)
    for x, y in zip(bare.belief, again.belief):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(InputError, match="sites"):
        learner.update(state._replace(sites=Sites(s.values[:1], s.fitted[:1], s.means[:1], s.covs[:1])), Phi,
                       (2, 3), 0)

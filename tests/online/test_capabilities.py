"""One policy abstraction: every learner's functions return (state or pair, info); what a learner
offers beyond the five functions (direct questions, records for the click log) is declared in the
Learner, never guessed from the methods an object happens to have; a plug-in policy object is a
Learner through one adapter."""
import numpy as np
import pytest

from online.combined_replay import replay_combined
from online.learner import Context, Learner, same_state
from online.policies.coduel import ArrivalInfo, RECORDS, coduel
from online.protocol import Policy, PolicyOutputError, plugin_learner
from online.records import Recorder, checked_records
from online.registry import REGISTRY, PolicySpecError, make_learner, resolve
from online.replay import replay, replay_logged

CTX = Context(K=6, d=7, S=24, beta=10.0, b=16, N=3)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_policy_is_a_learner_with_the_same_shapes(name):
    learner = resolve(name)()
    assert isinstance(learner, Learner), name
    state = learner.init(CTX._replace(S=1))                # one round: the session ends after one click
    out = learner.start_session(state, np.random.default_rng(0))
    assert isinstance(out, tuple) and len(out) == 2, name
    Phi = np.random.default_rng(1).normal(size=(6, 7))
    pair, _ = learner.select(out[0], Phi, np.random.default_rng(2))
    new, _ = learner.update(out[0], Phi, pair, 1)
    assert len(learner.end_session(new)) == 2
    checked_records(learner.records, name)
    assert (learner.ask is None) == (learner.answer is None)


def test_coduel_says_what_each_user_arrives_under():
    learner = coduel()
    state, info = learner.start_session(learner.init(CTX), np.random.default_rng(0))
    assert isinstance(info, ArrivalInfo) and info.A.shape == (6, 6) and info.transfer is False
    assert np.isclose(info.prior.weights.sum(), 1.0) and info.prior.means.shape[-1] == 7
    assert same_state(state) == (state, None)


def test_settings_are_closed_over_not_carried_in_the_state():
    for name in ("random", "colstim"):
        learner = resolve(name)()
        state = learner.init(CTX)
        assert "lam" not in getattr(state, "_fields", ()) and "K" not in getattr(state, "_fields", ())


class AsksButDoesNotSay(Policy):
    """Has an `ask` method but does not declare `asks`: never asked."""

    def ask(self, Phi):
        raise AssertionError("asked without declaring asks")

    def select(self, Phi):
        return 0, 1


def test_a_method_that_is_not_declared_is_never_called(dev_world):
    out = replay_combined(dev_world, 0, "tests.online.test_capabilities:AsksButDoesNotSay", 2, 0.5)
    assert out["asked_per_user"].sum() == 0


def test_what_coduel_declares_reaches_the_click_log(dev_world):
    _, log = replay_logged(dev_world, 0, "coduel", arrivals=3)
    assert make_learner("coduel").records == RECORDS == {"arrival_priors", "arrival_recalibrations",
                                                        "session_beliefs", "click_predictions"}
    assert log.beliefs is not None and log.priors is not None and log.predictions is not None
    assert log.predictions["population"].shape == (3, 24) and log.recalibration.shape == (3, 6, 6)
    _, plain = replay_logged(dev_world, 0, "no-transfer", arrivals=3)
    assert plain.beliefs is None and plain.priors is None


def test_the_records_come_from_the_infos(dev_world):
    """The click log's session beliefs are the end_session infos' beliefs, user by user, and the
    predictions the update infos'."""
    from online.replay import play, prepare_run
    run = prepare_run(dev_world, 1, "coduel", 4)
    ends, updates = [], []
    play(run, observe=lambda kind, a, t, info: ends.append(info) if kind == "end_session"
         else updates.append(info) if kind == "update" else None)
    _, log = replay_logged(dev_world, 1, "coduel", arrivals=4)
    for a, info in enumerate(ends):
        k = len(info.belief.weights)
        np.testing.assert_array_equal(log.beliefs.means[a, :k], info.belief.means)
    np.testing.assert_array_equal(log.predictions["alone"].ravel(), [u.predictions.alone for u in updates])


def test_an_unknown_or_malformed_record_is_one_clear_error():
    with pytest.raises(PolicyOutputError, match="its_diary"):
        checked_records(frozenset({"session_beliefs", "its_diary"}), "mine")
    with pytest.raises(PolicyOutputError, match="must be a set of names"):
        checked_records("session_beliefs", "mine")


def test_a_record_the_infos_lack_is_one_clear_error():
    rec = Recorder(frozenset({"session_beliefs"}), "mine", 6, 7)
    with pytest.raises(PolicyOutputError, match="declares records 'session_beliefs' but its end_session info"):
        rec("end_session", 0, -1, None)


def my_learner_that_records_what_it_lacks():
    """A learner factory declaring a record its infos do not carry (no-transfer's functions)."""
    return resolve("no-transfer")()._replace(records=frozenset({"arrival_priors"}))


def test_a_learner_declaring_what_it_lacks_fails_before_a_wrong_log(dev_world):
    with pytest.raises(PolicyOutputError, match="arrival_priors"):
        replay_logged(dev_world, 0, "tests.online.test_capabilities:my_learner_that_records_what_it_lacks", 2)


class DeclaresRecords(Policy):
    records = frozenset({"session_beliefs"})

    def select(self, Phi):
        return 0, 1


class AsksWithoutAnswering(Policy):
    asks = True

    def select(self, Phi):
        return 0, 1


class AsksMaybe(Policy):
    asks = "yes"

    def select(self, Phi):
        return 0, 1


@pytest.mark.parametrize("policy, words", [(DeclaresRecords(), "records nothing"),
                                           (AsksWithoutAnswering(), "declares asks"),
                                           (AsksMaybe(), "asks must be True or False")])
def test_a_false_or_malformed_declaration_is_one_clear_error(policy, words):
    with pytest.raises(PolicyOutputError, match=words):
        plugin_learner(policy, "mine")


def test_asking_without_the_methods_fails_in_every_mode(dev_world):
    for run in (lambda s: replay_combined(dev_world, 0, s, 2, 0.5), lambda s: replay(dev_world, 0, s, 2)):
        with pytest.raises(PolicyOutputError, match="declares asks"):
            run("tests.online.test_capabilities:AsksWithoutAnswering")


def half_an_asking_learner():
    return resolve("random")()._replace(ask=lambda state, Phi, rng: (None, None))


def test_a_learner_that_asks_has_both_functions():
    with pytest.raises(PolicySpecError, match="both ask and answer"):
        make_learner("tests.online.test_capabilities:half_an_asking_learner")


class CountsResets(Policy):
    def __init__(self):
        self.resets = 0

    def reset(self, rng, context):
        super().reset(rng, context)
        self.resets += 1
        self.context = context

    def select(self, Phi):
        return int(self.rng.integers(3)), 5


def test_the_adapter_resets_a_plugin_once_per_run_with_the_runs_generator():
    pol = CountsResets()
    learner = plugin_learner(pol, "counts")
    rng = np.random.default_rng(0)
    state = learner.init(CTX)
    for _ in range(3):
        state, _ = learner.start_session(state, rng)
        learner.select(state, np.zeros((6, 7)), rng)
        state, _ = learner.end_session(state)
    assert pol.resets == 1 and pol.rng is rng and pol.context == CTX._asdict()


def update_returns_nothing():
    base = resolve("random")()
    return base._replace(update=lambda state, Phi, pair, y: None)


def select_returns_a_bare_pair():
    base = resolve("random")()
    return base._replace(select=lambda state, Phi, rng: (0, 1))


def test_a_learner_function_that_returns_no_info_pair_is_one_clear_error(dev_world):
    with pytest.raises(PolicyOutputError, match=r"update returned None, expected \(the state, info\)"):
        replay(dev_world, 0, "tests.online.test_capabilities:update_returns_nothing", 2)
    # (0, 1) had been read as pair 0 with info 1, and the message said a pair was expected, not (pair, info)
    with pytest.raises(PolicyOutputError, match=r"select returned \(0, 1\), a bare pair; .* returns \(pair, info\), "
                                                r"e\.g\. \(\(0, 1\), None\)"):
        replay(dev_world, 0, "tests.online.test_capabilities:select_returns_a_bare_pair", 2)


@pytest.mark.parametrize("record, kind, info, words", [
    ("click_predictions", "update", type("I", (), {"predictions": 0.7})(), "not a NamedTuple of probabilities"),
    ("session_beliefs", "end_session", type("I", (), {"belief": 3.0})(), "not a tdmodels.priors.MixturePrior"),
    ("arrival_recalibrations", "start_session", type("I", (), {"A": np.eye(2)})(), r"not a finite \[6, 6\] array"),
])
def test_a_recorded_value_of_the_wrong_kind_is_one_clear_error(record, kind, info, words):
    with pytest.raises(PolicyOutputError, match=words):
        Recorder(frozenset({record}), "mine", 6, 7)(kind, 3, -1, info)


def learner_without_select():
    return resolve("random")()._replace(select=None)


def five_functions_in_a_tuple():
    return tuple(resolve("random")())[:5]


@pytest.mark.parametrize("target, words", [("learner_without_select", "select is not a function"),
                                           ("five_functions_in_a_tuple", "neither an online.learner.Learner"),
                                           ("CountsResets", None)])
def test_what_a_factory_returns_is_checked(target, words):
    spec = f"tests.online.test_capabilities:{target}"
    if words is None:
        assert isinstance(make_learner(spec), Learner)          # a plug-in class: its instance, adapted
        return
    with pytest.raises(PolicySpecError, match=words):
        make_learner(spec)

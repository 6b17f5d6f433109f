"""One policy abstraction: every learner's functions return (state or pair, info); what a policy
offers beyond the five methods (direct questions, records for the click log) is declared, never
guessed from the methods an object happens to have."""
import numpy as np
import pytest

from online.combined_replay import replay_combined
from online.learner import Context, same_state
from online.policies.coduel import ArrivalInfo, coduel
from online.protocol import Policy, PolicyOutputError
from online.registry import REGISTRY, make_policy, resolve
from online.replay import recorded, replay_logged

CTX = Context(K=6, d=7, S=24, beta=10.0, b=16, N=3)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_learner_returns_a_state_and_an_info_from_start_session(name):
    target = resolve(name)
    if isinstance(target, type):                       # a class over a learner (CODuel's recording shell)
        learner = target().learner
    else:
        learner = target()
    state = learner.init(CTX._replace(S=1))                # one round: the session ends after one click
    out = learner.start_session(state, np.random.default_rng(0))
    assert isinstance(out, tuple) and len(out) == 2, name
    Phi = np.random.default_rng(1).normal(size=(6, 7))
    pair, _ = learner.select(out[0], Phi, np.random.default_rng(2))
    new, _ = learner.update(out[0], Phi, pair, 1)
    assert len(learner.end_session(new)) == 2


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


class DeclaresNonsense(Policy):
    records = frozenset({"session_beliefs", "its_diary"})

    def select(self, Phi):
        return 0, 1


def test_a_method_that_is_not_declared_is_never_called(dev_world):
    out = replay_combined(dev_world, 0, "tests.online.test_capabilities:AsksButDoesNotSay", 2, 0.5)
    assert out["asked_per_user"].sum() == 0


def test_an_unknown_record_is_one_clear_error():
    with pytest.raises(PolicyOutputError, match="its_diary"):
        recorded(DeclaresNonsense())


def test_what_coduel_declares_reaches_the_click_log(dev_world):
    _, log = replay_logged(dev_world, 0, "coduel", arrivals=3)
    assert make_policy("coduel").records == {"arrival_priors", "arrival_recalibrations", "session_beliefs",
                                             "click_predictions"}
    assert log.beliefs is not None and log.priors is not None and log.predictions is not None
    _, plain = replay_logged(dev_world, 0, "no-transfer", arrivals=3)
    assert plain.beliefs is None and plain.priors is None


class RecordsAString(Policy):
    records = "session_beliefs"          # a string, not a set of names

    def select(self, Phi):
        return 0, 1


class DeclaresWithoutTheMethod(Policy):
    records = frozenset({"session_beliefs"})

    def select(self, Phi):
        return 0, 1


class AsksWithoutAnswering(Policy):
    asks = True

    def select(self, Phi):
        return 0, 1


@pytest.mark.parametrize("policy, words", [(RecordsAString(), "must be a set of names"),
                                           (DeclaresWithoutTheMethod(), "has no such method")])
def test_a_malformed_declaration_is_one_clear_error(policy, words):
    with pytest.raises(PolicyOutputError, match=words):
        recorded(policy)


def test_asking_without_the_methods_is_one_clear_error(dev_world):
    with pytest.raises(PolicyOutputError, match="declares asks"):
        replay_combined(dev_world, 0, "tests.online.test_capabilities:AsksWithoutAnswering", 2, 0.5)

"""The policy protocol, the learners, replay, the run store and sweeps.

Public names are imported from their modules on first use: ``import online`` imports nothing else. The replay
functions are ``online.replay.replay`` and ``online.replay.replay_logged``, and a tuner's space is
``online.search_space.search_space`` (the modules have the names).
"""
from tdmodels._lazy import lazy_namespace

_EXPORTS = {
    "Learner": ".learner",
    "Context": ".learner",
    "Policy": ".protocol",
    "plugin_learner": ".protocol",
    "make_learner": ".registry",
    "policy_spec": ".registry",
    "canonical_spec": ".registry",
    "PolicySpecError": ".registry",
    "Search": ".setting_range",
    "make_schedule": ".schedule",
    "strong_regret": ".scoring",
    "benchmark_score": ".scoring",
    "ClickLog": ".clicklog",
    "load_click_log": ".clicklog",
    "save_click_log": ".clicklog",
    "RunStore": ".store",
    "run_sweep": ".sweep",
}
__getattr__, __dir__, __all__ = lazy_namespace(__name__, _EXPORTS)

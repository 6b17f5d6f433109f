"""Worlds, the simulator and the NumPyro models (the lowest layer).

Public names are imported from their modules on first use: ``import tdmodels`` imports nothing else.
"""
from tdmodels._lazy import lazy_namespace

_EXPORTS = {
    "open_world": ".rosters",
    "known_worlds": ".rosters",
    "HeldOutError": ".errors",
    "build_roster": ".simulator",
    "load_world": ".world",
    "save_world": ".world",
    "validate_world": ".world",
    "world_digest": ".world",
    "session_length": ".world",
    "WorldFormatError": ".world",
    "world_from_arrays": ".from_arrays",
    "btl_clicks": ".click_model",
    "btl_probability": ".click_model",
    "user_utilities": ".click_model",
    "population": ".population_model",
    "PopulationHyper": ".population_hyper",
    "recalibration": ".population_model",
    "recalibrated_design": ".population_hyper",
    "MixturePrior": ".priors",
    "isotropic_prior": ".priors",
    "stick_breaking": ".prior_distributions",
}
__getattr__, __dir__, __all__ = lazy_namespace(__name__, _EXPORTS)

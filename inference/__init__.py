"""Every posterior computation: Laplace, the mixture belief, the population prior's EM,
recalibration, NUTS references and their health, the population model's exact reference (a
collapsed Gibbs sampler), SBC.

Public names are imported from their modules on first use: ``import inference`` imports nothing else.
"""
from tdmodels._lazy import lazy_namespace

_EXPORTS = {
    "laplace_update": ".laplace",
    "laplace_fit": ".laplace",
    "click_mode": ".laplace",
    "MixtureBelief": ".mixture_belief",
    "init_belief": ".mixture_belief",
    "update_belief": ".mixture_belief",
    "fold_session": ".online_beliefs",
    "FoldedSession": ".online_beliefs",
    "Population": ".population",
    "init_population": ".population",
    "refit_population": ".population",
    "recent_type": ".change_point",
    "RecentType": ".change_point",
    "new_kind_probability": ".change_point",
    "fit_mixture_em": ".mixture_em",
    "GaussianPopulation": ".gaussian_population",
    "fit_gaussian_population": ".gaussian_population",
    "fit_recalibration_map": ".recalibration_fit",
    "configure_jax": ".nuts",
    "run_nuts": ".nuts",
    "fit_health": ".health",
    "check_health": ".health",
    "FitHealthError": ".health",
    "FitHealthWarning": ".health",
    "fit_users": ".user_reference",
    "fit_users_joint": ".joint_reference",
    "sample_units": ".unit_nuts",
    "unit_health": ".unit_nuts",
    "reference_memory": ".memory_estimate",
    "fit_population": ".model_fits",
    "sample_population": ".population_gibbs",
    "GibbsSettings": ".population_gibbs",
    "fit_recalibration": ".model_fits",
    "run_sbc": ".sbc",
    "run_population_sbc": ".sbc",
}
__getattr__, __dir__, __all__ = lazy_namespace(__name__, _EXPORTS)

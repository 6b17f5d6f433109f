"""Checks of approximations against exact references, the benchmark's statistics, plots
and reports; reads, never writes.

Public names are imported from their modules on first use: ``import diagnostics`` imports nothing else.
"""
from tdmodels._lazy import lazy_namespace

_EXPORTS = {
    "paired_gain": ".stats",
    "t_interval": ".stats",
    "leaderboard": ".stats",
    "mean_se": ".stats",
    "block_table": ".segments",
    "recovery_failures": ".segments",
    "reference_regrets": ".references",
    "check_posterior": ".posterior_checks",
    "check_logged_users": ".posterior_checks",
    "psis_khat": ".posterior_checks",
    "compare_beliefs": ".belief_comparison",
    "belief_table": ".belief_comparison",
    "reliability_table": ".click_reliability",
    "reliability": ".click_reliability",
    "compare_population_fits": ".population_fit_checks",
    "reference_agreement": ".population_fit_checks",
    "read_tuned_settings": ".tuned_settings",
    "tuning_table": ".tuning_report",
}
__getattr__, __dir__, __all__ = lazy_namespace(__name__, _EXPORTS)

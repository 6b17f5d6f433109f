"""The fit and validation use cases: an exact (NUTS or Gibbs) reference fit of a stored run's clicks,
and a learner's online beliefs checked against such references, each printed as a report.

JAX must be configured (``inference.nuts.configure_jax``) before this module is imported."""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from diagnostics.stats import t_interval
from diagnostics.validation_report import write_report
from inference.health import FitHealthError, stored_health
from inference.model_fits import stored_label_invariant
from online.store import RunStore
from tutorduel.cell_fit import fit_cell, fit_summary
from tutorduel.validate_cell import validate_users


def progress_line(msg: str) -> None:
    """A progress message of a fit or validation, indented on standard error."""
    print(f"  {msg}", file=sys.stderr, flush=True)


def fit_and_report(world, seed: int, policy: str, model: str, store: RunStore, strict: bool = False, **fit_options) -> int:
    """Fit `model` to the clicks of the stored run (world, seed, policy), write it beside the row and print its
    summary and health. Returns 1 when `strict` and a health threshold is missed, else 0."""
    try:
        idata, path = fit_cell(world, seed, policy, model, store, strict=strict, progress=progress_line, **fit_options)
    except FitHealthError as exc:
        print(f"tutorduel: fit failed its health checks (--strict): {exc}", file=sys.stderr)
        return 1
    health = stored_health(idata)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(fit_summary(idata, model))
    print(f"\nhealth: {health.line()}")
    li = stored_label_invariant(idata)
    if li is not None:
        print("\n".join(li.lines()))
    ok = health.ok and (li is None or li.ok)
    if "units" in idata.groups():
        u = idata["units"]
        from inference.unit_nuts import RETRY_TREE_DEPTH

        again = int((u.tree_depth == RETRY_TREE_DEPTH).sum()) if "tree_depth" in u else 0
        print(f"units: {u.sizes['unit']} (user, component) pairs, each its own chains; max importance k-hat "
              f"{float(u.khat.max()):.2f}; max pruned Laplace mass {float(u.pruned_mass.max()):.1e}"
              + (f"; {again} sampled again deeper and longer (their first chains missed a threshold)" if again else ""))
    print(f"wrote {path}")
    return 0 if ok or not strict else 1


def print_population_fits(idata) -> None:
    """Print the `population_fits` group of a validation: the reference's verdict, then each fit's figures
    beside the reference's (its own value first, then the difference)."""
    pf = idata["population_fits"].attrs
    n_train = idata["population_fits"].sizes["train_user"]
    verdict = ("healthy on every label-invariant diagnostic" if pf["reference_healthy"]
               else "NOT converged: the figures below are against an unconverged fit")
    print(f"population model reference ({pf['reference_sampler']}, {pf['reference_seconds']:.0f} s of chains; "
          f"{verdict}) on the first {n_train} arrivals, against batch EM and the online prior:")
    names = [k for k in ("em", "online") if f"log_pred_{k}_mean" in pf]
    print(f"  log density of a new user's theta at {idata['population_fits'].sizes['test_point']} test points: "
          f"reference {pf['log_density_reference_mean']:.3f}; " + ", ".join(
              f"{k} {pf[f'log_density_{k}_mean']:.3f} ({pf[f'log_density_{k}_vs_reference_mean']:+.3f} against "
              f"it, mean |difference| {pf[f'log_density_{k}_vs_reference_mean_abs']:.3f})" for k in names)
          + " nats (mean over the points)")
    print(f"  held-out clicks: reference {pf['log_pred_reference_mean']:.3f} nats per user; " + ", ".join(
        f"{k} {pf[f'log_pred_{k}_mean']:.3f} ({pf[f'log_pred_{k}_vs_reference']:+.3f} +- "
        f"{pf[f'log_pred_{k}_vs_reference_ci95']:.3f} against it)" for k in names))
    line = "  co-clustering: " + ", ".join(f"mean |{k} - reference| {pf[f'co_clustering_{k}_vs_reference_mean_abs']:.3f}"
                                           for k in ("em",))
    if "co_clustering_reference_same_student" in pf:
        line += "; P(same component) for arrivals of the same / another student: " + ", ".join(
            f"{k} {pf[f'co_clustering_{k}_same_student']:.2f} / {pf[f'co_clustering_{k}_other_student']:.2f}"
            for k in ("reference", "em"))
    print(line)
    print(f"  learned components: reference {pf['components_reference']:.1f} (90% {pf['components_reference_90']}), "
          + ", ".join(f"{k} {pf[f'components_{k}']:.0f}" for k in names))
    if "first_pair_em_same_as_reference" in pf:
        print("  first pair shown to a held-out arrival, same as the reference's: " + ", ".join(
            f"{k} {100 * pf[f'first_pair_{k}_same_as_reference']:.0f}% (mean utility given up under the "
            f"reference {pf[f'first_pair_{k}_loss']:.3f} logits)" for k in names))


def validate_and_report(world, seed: int, policy: str, store: RunStore, rounds: tuple[int, ...] = (),
                        **validate_options) -> int:
    """Check each user's online belief of the stored run against NUTS references on the same clicks; print the
    table and summaries, write the report and the netCDF beside the row."""
    checks, idata, path = validate_users(world, seed, policy, store, rounds=rounds, progress=progress_line,
                                         **validate_options)
    _print_user_table(checks, idata)
    _print_summary(checks, idata)
    for t in rounds:
        r = idata[f"checks_round_{t}"].attrs
        print(f"after {t} clicks: k-hat median {r['khat_median']:.2f}, max {r['khat_max']:.2f}, over 0.7: "
              f"{100 * r['share_khat_over_0.7']:.0f}%; mean |error| {r['mean_abs_error_sd']:.3f} sd; "
              f"sd ratio median {r['sd_ratio_median']:.3f}")
    if "beliefs" in idata.groups():
        from diagnostics.belief_comparison import belief_table, format_belief_table, target_met

        rows = belief_table(idata["beliefs"])
        print("\nonline beliefs on the same clicks, against the same reference:")
        print(format_belief_table(rows))
        met = target_met(rows)
        print("k-hat under 0.7 for at least 95% of users in every block of 50: "
              + ", ".join(f"{b} {'yes' if ok else 'no'}" for b, ok in met.items()))
        attrs = idata["beliefs"].attrs
        if "importance_draws" in attrs:
            print(f"exact moments (importance): {int(attrs['importance_draws']):,} draws a component around "
                  f"ep-corrected's Gaussians; least effective sample size {attrs['importance_ess_min']:,.0f} (over the "
                  "components weighing 1% or more)")
    if "population" in idata.groups():
        _print_population_priors(idata["population"])
    if "population_fits" in idata.groups():
        print_population_fits(idata)
    print(f"NUTS reference health: {idata.posterior.attrs['reference_health']}")
    report = write_report(idata, path.with_suffix(".html"))
    print(f"report {report}")
    print(f"wrote {path}")
    return 0


def _print_user_table(checks, idata) -> None:
    table = pd.DataFrame({"k-hat": checks.khat, "k-hat MC sd": checks.khat_replicates.std(1, ddof=1),
                          "max |mean error| (sd)": np.abs(checks.mean_error).max(1),
                          "min sd ratio": checks.sd_ratio.min(1), "max sd ratio": checks.sd_ratio.max(1),
                          "max W1 / floor": (checks.w1 / checks.w1_floor).max(1),
                          "weights TV": idata["checks"].weights_tv.values}, index=checks.users)
    table.index.name = "user"
    with pd.option_context("display.width", 160, "display.max_rows", 40):
        print(table.round(3))


def _print_summary(checks, idata) -> None:
    sm = checks.summary()
    lo, hi = sm["share_khat_over_0.7_range"]
    print(f"\nk-hat (mean of {sm['khat_replicates']} independent proposal samples; Monte Carlo sd median "
          f"{sm['khat_mc_sd_median']:.3f}) median {sm['khat_median']:.2f}, max {sm['khat_max']:.2f}, over 0.7: "
          f"{100 * sm['share_khat_over_0.7']:.0f}% ({100 * lo:.0f}-{100 * hi:.0f}% over the samples; "
          f"{100 * sm['share_flagged_in_some_replicates_only']:.0f}% flagged in some samples only) of {sm['users']} "
          f"users; mean |error| {sm['mean_abs_error_sd']:.3f} sd "
          f"(max {sm['max_abs_error_sd']:.2f}); sd ratio median {sm['sd_ratio_median']:.3f} "
          f"(range {sm['sd_ratio_range'][0]:.2f}-{sm['sd_ratio_range'][1]:.2f}); W1 / noise floor median "
          f"{sm['w1_over_floor_median']:.2f}; component weights TV median "
          f"{idata['checks'].attrs['weights_tv_median']:.3f} (max {idata['checks'].attrs['weights_tv_max']:.3f})")
    blocks = checks.by_block()
    if len(blocks) > 1:
        print("by arrival block (an early user arrives under a prior learned from few sessions):")
        for b in blocks:
            print(f"  arrivals {b['arrivals'][0]}-{b['arrivals'][1]} ({b['users']} users): k-hat median "
                  f"{b['khat_median']:.2f}, over 0.7 {100 * b['share_khat_over_0.7']:.0f}%; mean |error| "
                  f"{b['mean_abs_error_sd']:.3f} sd")
    cal = idata["reliability"].attrs if "reliability" in idata.groups() else {}
    for name in sorted(k.removesuffix("_clicks") for k in cal if k.endswith("_clicks")):
        print(f"click predictions, {name} learner: log loss {cal[name + '_log_loss']:.4f} nats, Brier "
              f"{cal[name + '_brier']:.4f}, expected calibration error {cal[name + '_ece']:.4f} over {cal[name + '_clicks']} clicks")


def _print_population_priors(pop) -> None:
    base = pop["log_pred_isotropic"].values
    for name in ("online", "batch_em", "isotropic"):
        if f"log_pred_{name}" in pop:
            diff = pop[f"log_pred_{name}"].values - base
            half = t_interval(diff)[1]
            print(f"held-out users' clicks under the {name} prior: {pop[f'log_pred_{name}'].values.mean():.3f} "
                  f"nats per user ({diff.mean():+.3f} +- {half:.3f} against isotropic; "
                  f"max k-hat {pop.attrs[f'max_khat_{name}']:.2f})")

"""`tutorduel validate --seeds`: one validation per seed, on local worker processes or a Dask cluster.

This process (the only writer of the store) reads or replays each seed's click log, sends it to a worker,
and writes the reference (``seed-NNNN.users.nc``) and the validation (``seed-NNNN.validate.nc``) a worker
sends back as soon as it arrives, so an interrupted command keeps every finished seed. A seed whose
validation is already there, made with the same settings on the same click log, is read, not
recomputed (its settings include the validation code's identity and the numerical libraries' versions).
Workers compute from the click log alone (``tutorduel.validate_cell.compute_validation``),
so a Dask worker needs neither the store nor the worlds. On a cluster the scheduler runs a task again
when the worker running it dies.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from online.process_pool import TaskError
from online.registry import canonical_spec
from online.replay import run_key
from online.sweep import check_dask_options
from online.store import RunStore
from tdmodels.errors import InputError

SETTINGS_ATTR = "validate_settings"     # the settings a validation file was made with (JSON), for resuming
MAX_VALIDATE_SEEDS = 64


def _validation_code() -> str:
    """What a validation's figures depend on beyond its settings and its run: the code of
    ``tutorduel.validate_cell`` and everything of the project's it imports (the reference, the checks), and the
    numerical libraries' versions."""
    from importlib.metadata import version

    from online.code_identity import code_identity

    libs = ",".join(f"{name} {version(name)}" for name in ("numpy", "scipy", "jax", "jaxlib", "numpyro", "arviz"))
    return f"{code_identity('tutorduel.validate_cell').digest}; {libs}"


def validation_task(job: dict) -> dict:
    """One seed's validation in a worker: the reference's and the validation's InferenceData."""
    from inference.nuts import configure_jax

    configure_jax(job["settings"]["chains"])      # no effect where this worker's JAX has started already
    from inference.kernel_cache import configure_kernel_cache

    configure_kernel_cache()
    from tutorduel.validate_cell import compute_validation

    s = job["settings"]
    checks, ref, (idata, _) = compute_validation(job["log"], job["seed"], job["spec"], s["users"], s["chains"],
                                                 s["warmup"], s["draws"], s["check_seed"], tuple(s["rounds"]),
                                                 s["holdout"], tuple(s["beliefs"]), s["chunk"],
                                                 exact_draws=s.get("exact_draws", 0))
    for made in (ref, idata):
        made.posterior.attrs[SETTINGS_ATTR] = job["settings_text"]
    # InferenceData, not netCDF bytes: inside a Dask worker xarray writes through a cluster-wide lock named after
    # the file, which a BytesIO cannot be; the command's process serialises what it writes.
    return {"users": ref, "validate": idata}


def _local_task(job: dict) -> tuple[str, dict]:
    """`validation_task` as a local worker pool runs it: (status, payload); what it raises is an error the pool
    reports."""
    return "ok", validation_task(job)


def seed_figures(path: Path) -> dict:
    """The per-user figures of a written validation: k-hat, max |mean error| (sd units), min sd ratio, weights
    TV, and the reference's health line."""
    import arviz as az

    idata = az.from_netcdf(str(path))
    c = idata["checks"]
    return {"khat": c.khat.values, "error": np.abs(c.mean_error.values).max(1), "sd_ratio": c.sd_ratio.values.min(1),
            "tv": c.weights_tv.values, "health": str(idata.posterior.attrs.get("reference_health", ""))}


def _made_with(spec: str, arrivals, settings: dict) -> dict:
    """What a validation is made with apart from its seed and click log: the settings, policy, truncation and
    the validation code's identity."""
    return {**settings, "policy": spec, "arrivals": arrivals, "code": _validation_code()}


def _settings_text(made_with: dict, seed: int, log_path: Path) -> str | None:
    """The JSON a seed's validation files carry (`SETTINGS_ATTR`): `made_with`, the seed, and a SHA-256 of the
    click log file it validated; None where there is no log file (nothing can be read back)."""
    try:
        log_digest = hashlib.sha256(log_path.read_bytes()).hexdigest()
    except OSError:
        return None
    return json.dumps({**made_with, "seed": int(seed), "click_log_sha256": log_digest}, sort_keys=True)


def _finished(path: Path, settings_text: str | None) -> bool:
    """A validation's file (reference or checks) already there, made with these settings on this seed's click
    log as it is now (read back whole: a damaged one is redone; a reference another command wrote since is
    foreign; another seed's file under this seed's name, or one made on another log, is made again)."""
    if settings_text is None or not path.is_file():
        return False
    try:
        import arviz as az

        return az.from_netcdf(str(path)).posterior.attrs.get(SETTINGS_ATTR) == settings_text
    except Exception:        # noqa: BLE001 -- unreadable or foreign: computed again
        return False


def validate_seeds(world, seeds: list[int], spec: str, store: RunStore, jobs: int = 1, scheduler: str | None = None,
                   dask_workers: int | None = None, arrivals: int | None = None, progress=None,
                   max_memory: float | None = None, **settings) -> dict[int, dict]:
    """Validate the run (world, seed, spec) for every seed; returns each seed's figures (`seed_figures`).

    `settings`: users, chains, warmup, draws, check_seed, rounds, holdout, beliefs, chunk, exact_draws (optional)
    (``compute_validation``'s). `max_memory` (GiB) bounds the estimate of the seeds validated at once here (local
    workers); a Dask worker's machine is its own.
    """
    from tdmodels.atomic_file import check_output_path
    from tdmodels.netcdf_file import inference_data_bytes, save_netcdf
    from tutorduel.validate_cell import log_with_beliefs, check_validation_settings

    from tutorduel.cell_fit import check_fit_ranges

    if not seeds or len(seeds) > MAX_VALIDATE_SEEDS:
        raise InputError(f"--seeds: give 1 to {MAX_VALIDATE_SEEDS} seeds (got {len(seeds)})")
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise InputError(f"--scheduler {scheduler!r}: give the scheduler's address, e.g. tcp://HOST:PORT")
    check_dask_options(scheduler, dask_workers)
    check_fit_ranges(chains=settings["chains"], warmup=settings["warmup"], draws=settings["draws"],
                     chunk=settings["chunk"], jobs=jobs, **({"seed": max(seeds)} if seeds else {}))
    spec = canonical_spec(spec)
    made_with = _made_with(spec, arrivals, settings)
    keys = {s: run_key(world, s, spec, arrivals) for s in seeds}
    paths = {s: (store.fit_path(keys[s], "users"), store.fit_path(keys[s], "validate")) for s in seeds}
    for pair in paths.values():
        for p in pair:
            check_output_path(p)
    todo = [s for s in seeds
            if not all(_finished(p, _settings_text(made_with, s, store.clicks_path(keys[s]))) for p in paths[s])]
    for s in seeds:
        if s not in todo and progress:
            progress(f"seed {s}: validated before with the same settings ({paths[s][1]}); read, not recomputed")
    jobs_by_seed = {}
    for s in todo:                       # logs first, here: the store's only writer
        log = log_with_beliefs(world, s, spec, store, arrivals, progress)
        check_validation_settings(log, settings["users"], tuple(settings["rounds"]), settings["holdout"],
                                  tuple(settings["beliefs"]), settings.get("exact_draws", 0))   # before any worker
        jobs_by_seed[s] = {"log": log, "seed": s, "spec": spec, "settings": settings,
                           "settings_text": _settings_text(made_with, s, store.clicks_path(keys[s]))}
    if jobs_by_seed and scheduler is None:          # the workers are on this machine (a LocalCluster's too)
        from inference.memory_estimate import check_reference_memory, reference_memory
        from tdmodels.memory import memory_available

        log = next(iter(jobs_by_seed.values()))["log"]
        est = reference_memory(settings["users"] or log.n_users, log.priors.weights.shape[1], settings["chains"],
                               settings["draws"], settings["chunk"], log.outcome.shape[1], log.phi_first.shape[-1],
                               validate=True)
        at_once = min(dask_workers or jobs, len(jobs_by_seed))
        check_reference_memory(est._replace(fixed=est.fixed * at_once, chunk=est.chunk * at_once,
                                            users=est.users * at_once), max_memory, memory_available())

    def finish(seed: int, files: dict) -> None:
        save_netcdf(paths[seed][0], inference_data_bytes(files["users"]))
        save_netcdf(paths[seed][1], inference_data_bytes(files["validate"]))
        if progress:
            progress(f"seed {seed}: validated, wrote {paths[seed][1]}")

    if todo:
        if scheduler is not None or dask_workers is not None:
            _on_dask(jobs_by_seed, finish, scheduler, dask_workers)
        else:
            _on_local(jobs_by_seed, finish, jobs)
    return {s: seed_figures(paths[s][1]) for s in seeds}


def _on_local(jobs_by_seed: dict, finish, jobs: int) -> None:
    from online.process_pool import WorkerPool

    errors = []

    def on_result(seed, status, payload):
        if status == "ok":
            finish(seed, payload)
        else:
            errors.append(f"seed {seed}: {payload}")

    WorkerPool(min(jobs, len(jobs_by_seed))).run(
        ((s, _local_task, (job,)) for s, job in jobs_by_seed.items()), on_result)
    if errors:
        raise ValidationSeedError("; ".join(errors))


def _on_dask(jobs_by_seed: dict, finish, scheduler: str | None, n_workers: int | None) -> None:
    from distributed import LocalCluster, as_completed

    from online.sweep_dask import connect_client

    cluster = None if scheduler else LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                                  dashboard_address=None)
    try:
        client = connect_client(scheduler or cluster, ValidationSeedError)
        with client, client.as_current():
            futures = {client.submit(validation_task, job, pure=False, key=f"validate-seed-{s}-{id(job)}"): s
                       for s, job in jobs_by_seed.items()}
            errors = []
            for fut in as_completed(futures):
                seed = futures[fut]
                try:
                    finish(seed, fut.result())
                except Exception as exc:      # noqa: BLE001 -- one seed's failure is reported, the others kept
                    errors.append(f"seed {seed}: {type(exc).__name__}: {exc}")
            if errors:
                raise ValidationSeedError("; ".join(errors))
    finally:
        if cluster is not None:
            cluster.close()


class ValidationSeedError(TaskError):
    """A seed's validation failed in its worker; the other seeds' files are written (exit 2, one line)."""


def print_seed_table(figures: dict[int, dict], out=sys.stdout) -> None:
    """Per seed, then pooled over the seeds: the share of users with k-hat over 0.7, the median k-hat, the mean over
    users of each user's largest |mean error| (posterior sd), the median of each user's smallest sd ratio and the
    median weights TV; pooled as the mean over seeds with the seeds' sd, and over
    every user of every seed."""
    rows = {s: {"users": len(f["khat"]), "share_khat_over_0.7": float(np.mean(f["khat"] > 0.7)),
                "khat_median": float(np.median(f["khat"])), "mean_abs_error_sd": float(np.mean(f["error"])),
                "sd_ratio_median": float(np.median(f["sd_ratio"])), "weights_tv_median": float(np.median(f["tv"])),
                "healthy": f["health"].endswith("-- OK")} for s, f in figures.items()}
    print(f"{'seed':>6} {'users':>6} {'k-hat>0.7':>10} {'k-hat med':>10} {'max|err|':>9} {'sd ratio':>9} "
          f"{'TV med':>7}  reference", file=out)
    for s, r in rows.items():
        print(f"{s:>6} {r['users']:>6} {100 * r['share_khat_over_0.7']:>9.1f}% {r['khat_median']:>10.3f} "
              f"{r['mean_abs_error_sd']:>9.3f} {r['sd_ratio_median']:>9.3f} {r['weights_tv_median']:>7.3f}  "
              f"{'healthy' if r['healthy'] else 'NOT healthy'}", file=out)
    if len(rows) > 1:
        keys = ("share_khat_over_0.7", "khat_median", "mean_abs_error_sd", "sd_ratio_median", "weights_tv_median")
        mean = {k: np.mean([r[k] for r in rows.values()]) for k in keys}
        sd = {k: np.std([r[k] for r in rows.values()], ddof=1) for k in keys}
        print(f"{'mean':>6} {'':>6} {100 * mean[keys[0]]:>9.1f}% {mean[keys[1]]:>10.3f} {mean[keys[2]]:>9.3f} "
              f"{mean[keys[3]]:>9.3f} {mean[keys[4]]:>7.3f}  over {len(rows)} seeds", file=out)
        print(f"{'sd':>6} {'':>6} {100 * sd[keys[0]]:>9.1f}% {sd[keys[1]]:>10.3f} {sd[keys[2]]:>9.3f} "
              f"{sd[keys[3]]:>9.3f} {sd[keys[4]]:>7.3f}  between seeds", file=out)
        k = np.concatenate([f["khat"] for f in figures.values()])
        print(f"pooled over {len(k):,} users of {len(rows)} seeds: k-hat over 0.7 {100 * np.mean(k > 0.7):.1f}%, "
              f"median {np.median(k):.3f}", file=out)


__all__ = ["MAX_VALIDATE_SEEDS", "ValidationSeedError", "print_seed_table", "validate_seeds", "validation_task"]

"""A simulated PrefDisco world: preference attributes, tasks with sparse relevant subsets,
personas with Big Five traits and expertise, instance-level preference profiles and
candidate responses with known per-attribute grades. No text and no LLM: the statistical
core of PrefDisco, so elicitation strategies can be compared exactly.

Generative story (seeded; every draw from one numpy Generator):
- attributes j = 1..A (names below), each with trait loadings a_j [6] (Big Five +
  expertise) driving its preferred value and c_j [6] driving its importance;
- tasks i in D domains; each domain has its own relevance probability per attribute, and
  task i keeps F(i), the `n_relevant` attributes with the largest relevance draws;
- personas p: traits t_p in [0, 1]^5 (Big Five) and expertise e_pd in [0, 1] per domain;
- profile of (p, i): among F(i), the `profile_size` attributes with the largest importance
  logits c_j . x + N(0, importance_noise^2) (x = traits and the domain's expertise) get
  weights softmax(logits) summing to 1; the others weight 0. Values
  v_j = sigmoid(a_j . (x - 1/2) * gain + shift_ij + N(0, value_noise^2)) in (0, 1), where
  shift_ij is the task context's push on attribute j (values move with the task);
- responses r = 1..R of task i each have a style s_rj in [0, 1] on every relevant attribute;
  grade g_j(r, v) = 1 - |s_rj - v| in [0, 1].

Stored as an xarray Dataset (netCDF like the TutorDuel worlds).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from tdmodels.world import WorldFormatError, read_world_file, write_world_file
from tdmodels.errors import InputError

ATTRIBUTES = ("expertise_level", "jargon", "analogies", "step_by_step", "empathy", "brevity", "formality",
              "examples", "encouragement", "visual_description", "rigor", "humor", "real_world_context",
              "historical_context", "socratic_questions", "summaries", "caveats", "directness",
              "cultural_references", "pacing", "checking_understanding", "structure")
DOMAINS = ("mathematics", "medicine", "law", "programming", "history")
TRAITS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism", "expertise")
FORMAT_VERSION = 1


def build_prefdisco_world(seed: int = 0, n_tasks_per_domain: int = 12, n_personas: int = 40,
                          n_relevant: int = 6, profile_size: int = 4, n_responses: int = 12,
                          value_gain: float = 6.0, value_noise: float = 0.5, importance_noise: float = 0.5,
                          context_shift: float = 1.0) -> xr.Dataset:
    """Draw a world. Shapes: tasks T = D * n_tasks_per_domain, personas P, attributes A, responses R."""
    if not 0 < profile_size <= n_relevant <= len(ATTRIBUTES):
        raise InputError(f"need 0 < profile_size <= n_relevant <= {len(ATTRIBUTES)}, "
                         f"got {profile_size}, {n_relevant}")
    rng = np.random.default_rng(seed)
    A, D, P = len(ATTRIBUTES), len(DOMAINS), n_personas
    T = D * n_tasks_per_domain
    value_loading = rng.normal(0.0, 1.0, (A, len(TRAITS))) / np.sqrt(len(TRAITS))
    importance_loading = rng.normal(0.0, 1.5, (A, len(TRAITS)))
    domain_relevance = rng.beta(0.6, 0.6, (D, A))
    task_domain = np.repeat(np.arange(D), n_tasks_per_domain)
    draws = rng.random((T, A)) * domain_relevance[task_domain]
    relevant = np.zeros((T, A), dtype=bool)
    np.put_along_axis(relevant, np.argsort(-draws, 1)[:, :n_relevant], True, 1)
    shift = context_shift * rng.normal(0.0, 1.0, (T, A))
    big_five = rng.random((P, 5))
    expertise = rng.beta(1.2, 1.2, (P, D))
    x = np.concatenate([np.broadcast_to(big_five[:, None], (P, T, 5)), expertise[:, task_domain][..., None]], -1)

    logits = np.einsum("ptk,ak->pta", x, importance_loading) + importance_noise * rng.standard_normal((P, T, A))
    logits = np.where(relevant[None], logits, -np.inf)
    top = np.argsort(-logits, -1)[..., :profile_size]
    keep = np.zeros((P, T, A), dtype=bool)
    np.put_along_axis(keep, top, True, -1)
    z = np.where(keep, logits, -np.inf)
    weights = np.exp(z - z.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    eta = value_gain * np.einsum("ptk,ak->pta", x - 0.5, value_loading) + shift[None] \
        + value_noise * rng.standard_normal((P, T, A))
    values = np.where(relevant[None], 1.0 / (1.0 + np.exp(-eta)), np.nan)
    styles = np.where(relevant[:, None], rng.random((T, n_responses, A)), np.nan)
    return xr.Dataset(
        {"relevant": (("task", "attribute"), relevant), "task_domain": ("task", task_domain),
         "big_five": (("persona", "trait"), big_five),
         "expertise": (("persona", "domain"), expertise),
         "weights": (("persona", "task", "attribute"), weights),
         "values": (("persona", "task", "attribute"), values),
         "styles": (("task", "response", "attribute"), styles)},
        coords={"attribute": list(ATTRIBUTES), "domain": list(DOMAINS), "trait": list(TRAITS[:5])},
        attrs={"kind": "prefdisco", "seed": int(seed), "format_version": FORMAT_VERSION,
               "profile_size": int(profile_size), "n_relevant": int(n_relevant)})


def validate_prefdisco_world(ds: xr.Dataset, source: str = "<memory>") -> xr.Dataset:
    """Check a PrefDisco world's variables, dims and ranges; WorldFormatError naming the file and field."""
    def fail(field, problem):
        raise WorldFormatError(f"PrefDisco world {source}: field {field!r}: {problem}")

    if ds.attrs.get("kind") != "prefdisco":
        fail("attrs.kind", f"expected 'prefdisco', got {ds.attrs.get('kind')!r}")
    need = {"relevant": ("task", "attribute"), "task_domain": ("task",), "weights": ("persona", "task", "attribute"),
            "values": ("persona", "task", "attribute"), "styles": ("task", "response", "attribute")}
    for name, dims in need.items():
        if name not in ds:
            fail(name, "missing variable")
        if ds[name].dims != dims:
            fail(name, f"dims {ds[name].dims}, expected {dims}")
    for dim, least in (("persona", 2), ("task", 1), ("attribute", 1), ("response", 2)):
        if ds.sizes.get(dim, 0) < least:
            fail(dim, f"{ds.sizes.get(dim, 0)} along '{dim}'; a PrefDisco world needs at least {least}")
    rel = ds["relevant"].values.astype(bool)
    dom = ds["task_domain"].values
    if "domain" in ds.coords and (np.any(dom < 0) or np.any(dom >= ds.sizes["domain"])):
        fail("task_domain", f"indices must lie in 0..{ds.sizes['domain'] - 1}")
    w = ds["weights"].values
    if not np.all(np.isfinite(w)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(w))[0])
        fail("weights", f"non-finite value at (persona, task, attribute) = {bad}")
    if np.any(w < 0) or not np.allclose(w.sum(-1), 1.0) or np.any(w[:, ~rel] > 0):
        fail("weights", "must be >= 0, sum to 1 per (persona, task), and vanish outside the task's relevant attributes")
    for name in ("values", "styles"):
        v = ds[name].values
        inside = v[..., rel] if name == "values" else np.moveaxis(v, 1, -1)[rel]
        if not np.all(np.isfinite(inside)) or np.any((inside < 0) | (inside > 1)):
            fail(name, "relevant entries must be finite and lie in [0, 1]")
    return ds


def save_prefdisco_world(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Validate and write atomically as netCDF (h5netcdf, zlib), like ``tdmodels.world.save_world``."""
    validate_prefdisco_world(ds, str(path))
    return write_world_file(ds, path)


def load_prefdisco_world(path: str | os.PathLike) -> xr.Dataset:
    """Read and validate a PrefDisco world file; any problem raises WorldFormatError naming it."""
    ds = read_world_file(path, "PrefDisco world")
    if "relevant" in ds:
        ds["relevant"] = ds["relevant"].astype(bool)
    return validate_prefdisco_world(ds, str(path))

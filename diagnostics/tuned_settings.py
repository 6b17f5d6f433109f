"""The settings each policy was tuned to on dev (``tutorduel tune``), read from one data file.

``diagnostics/tuned_settings.json`` holds, per policy name, the chosen spec and how it was chosen: the date,
the world and its digest, the seeds, the budget, the sampler, the score of the chosen settings and of the
untuned defaults, and every evaluation tried. The leaderboard runs the chosen spec of each of the paper's
competitors (``diagnostics.leaderboard_report.leaderboard_policies``); a row's spec carries its settings, so
rows run under earlier settings stay under their own specs. Every entry is checked when read: its spec must
parse and name the policy the entry is for.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from tdmodels.errors import InputError
from tdmodels.file_read import UnreadableFileError, read_regular_text

TUNED_FILE = Path(__file__).with_name("tuned_settings.json")
FILE_BYTES = 2**22
FIELDS = {"spec": str, "base": str, "date": str, "world": str, "world_digest": str, "seeds": list, "budget": int,
          "sampler": str, "score": list, "default_score": list, "gain": list, "space": str, "dimensions": list,
          "default": dict, "evaluations": list}


class TunedSettingsError(InputError):
    """A tuned-settings file that cannot be read or whose entry does not check out."""


def finite_pair(v) -> bool:
    """Whether `v` is [number, number], both finite (a score with its spread)."""
    return (isinstance(v, list) and len(v) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v))


def _dimension_problem(d) -> str | None:
    if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("log"), bool) \
            or not isinstance(d.get("choices"), list):
        return "not an object with a name, log and choices"
    if not d["choices"] and not (finite_pair([d.get("lo"), d.get("hi")]) and d["lo"] < d["hi"]):
        return f"{d['name']}: a numeric search needs finite lo < hi"
    return None


def _value_problem(d: dict, v) -> str | None:
    if d["choices"]:
        return None if any(json.dumps(v) == json.dumps(c) for c in d["choices"]) else f"{d['name']}={v!r} is not a choice"
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and d["lo"] <= v <= d["hi"]
    return None if ok else f"{d['name']}={v!r} is outside [{d['lo']}, {d['hi']}]"


def _evaluation_problem(e, dims: list, default: bool) -> str | None:
    if not isinstance(e, dict) or not isinstance(e.get("spec"), str) or not isinstance(e.get("point"), dict):
        return "not an object with a spec and a point"
    if set(e["point"]) != {d["name"] for d in dims}:
        return f"its point sets {sorted(e['point'])}, not the searched {sorted(d['name'] for d in dims)}"
    if not finite_pair(e.get("score")) or (not default and not finite_pair(e.get("gain"))):
        return "its score (or gain) is not two finite numbers"
    return None if default else next((p for p in (_value_problem(d, e["point"][d["name"]]) for d in dims) if p), None)


def _entry_problem(name: str, entry) -> str | None:
    from online.registry import PolicySpecError, policy_spec

    if not isinstance(entry, dict):
        return "not a JSON object"
    for field, kind in FIELDS.items():
        if not isinstance(entry.get(field), kind) or (kind is int and isinstance(entry.get(field), bool)):
            return f"field {field!r} is missing or not a {kind.__name__}"
    if not all(finite_pair(entry[f]) for f in ("score", "default_score", "gain")):
        return "fields 'score', 'default_score' and 'gain' must each be two finite numbers"
    seeds = entry["seeds"]
    if not seeds or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds) \
            or len(set(seeds)) != len(seeds):
        return "field 'seeds' is not a list of distinct seeds"
    dims = entry["dimensions"]
    problem = (None if dims else "field 'dimensions' is empty") or next(
        (f"dimension {p}" for p in map(_dimension_problem, dims) if p), None)
    if problem:
        return problem
    evaluations = [(entry["default"], True)] + [(e, False) for e in entry["evaluations"]]
    problem = next((f"{'the defaults' if default else f'evaluation {i}'}: {p}" for i, (e, default) in
                    enumerate(evaluations) if (p := _evaluation_problem(e, dims, default))), None)
    if problem:
        return problem
    best = max((e for e, _ in evaluations), key=lambda e: e["score"][0])      # the first of equal scores
    if entry["spec"] != best["spec"] or entry["score"] != best["score"]:
        return f"its spec {entry['spec']!r} is not the best evaluated ({best['spec']!r}, {best['score'][0]:.4g})"
    try:
        spec, base = policy_spec(entry["spec"]), policy_spec(entry["base"])
    except PolicySpecError as exc:
        return f"its spec does not parse ({exc})"
    if spec.target != base.target or any(spec.settings.get(k) != v for k, v in base.changed.items()):
        return f"its spec {entry['spec']!r} is not a setting of {entry['base']!r}"
    if policy_spec(name).canonical != base.canonical:
        return f"it is filed under {name!r} but tunes {entry['base']!r}"
    return None


def read_tuned_settings(path: str | Path = TUNED_FILE) -> dict[str, dict]:
    """{policy name: entry} from a tuned-settings file; {} where the file does not exist.

    Raises
    ------
    TunedSettingsError
        A file that is not a JSON object of entries, or an entry that does not check out (named).
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return {}
    try:
        data = json.loads(read_regular_text(path, FILE_BYTES))
    except (UnreadableFileError, ValueError, RecursionError) as exc:
        raise TunedSettingsError(f"tuned settings {path}: cannot be read as JSON ({exc})") from None
    entries = data.get("policies") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise TunedSettingsError(f"tuned settings {path}: expected an object with a 'policies' object")
    for name, entry in entries.items():
        problem = _entry_problem(name, entry)
        if problem:
            raise TunedSettingsError(f"tuned settings {path}: entry {name!r}: {problem}")
    return entries


__all__ = ["read_tuned_settings", "TunedSettingsError", "TUNED_FILE", "finite_pair"]

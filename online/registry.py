"""Policy specs: registered names or `module:Class`, with keyword settings in brackets.

    random
    no-transfer[prior_var=2.0]
    mypackage.policies:MyPolicy[alpha=0.5,name="x"]
    coduel:greedy                      (a named ablation = coduel[lookahead=false])

Values are read as JSON where they parse (numbers, true/false, quoted strings), else as
bare strings. The canonical form sorts settings, so equal specs name the same store cell.
A list of specs is comma-separated; commas inside brackets belong to the spec.
"""
from __future__ import annotations

import importlib
import inspect
import json
import re

from online.policies.coduel import CODuel
from online.policies.coduel_ask import CODuelAsk
from online.policies.coldb import COLDB
from online.policies.colstim import CoLSTIM
from online.policies.hierarchical_ts import HierTS, MetaTS
from online.policies.no_transfer import NoTransfer, Pooled
from online.policies.random_pairs import RandomPairs
from online.policies.rucb import RUCB

REGISTRY = {"random": RandomPairs, "no-transfer": NoTransfer, "pooled": Pooled, "coduel": CODuel,
            "rucb": RUCB, "colstim": CoLSTIM, "coldb": COLDB, "meta-ts": MetaTS, "hierts": HierTS,
            "coduel-ask": CODuelAsk}
# Named ablations: an alias stands for its settings, so both spellings name the same store cell.
ALIASES = {
    "coduel:no-population": ("coduel", {"population": False}),
    "coduel:no-recalibration": ("coduel", {"recalibration": False}),
    "coduel:greedy": ("coduel", {"lookahead": False}),
    "coduel:no-gate": ("coduel", {"gate": False}),
    "coldb-lr": ("coldb", {"estimator": "least-squares"}),
}
_SPEC = re.compile(r"^\s*(?P<target>[A-Za-z0-9_.:\-]+)\s*(?:\[(?P<settings>.*)\])?\s*$")


class PolicySpecError(ValueError):
    """An unknown policy, an unknown setting or a malformed spec."""


def split_specs(text: str) -> list[str]:
    """Split a comma-separated list of specs, keeping commas inside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise PolicySpecError(f"unbalanced brackets in policy list {text!r}")
    out.append(cur.strip())
    if any(not s for s in out):
        raise PolicySpecError(f"empty policy spec in list {text!r}")
    return out


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_spec(spec: str) -> tuple[str, dict]:
    """'name[k=v,...]' -> ('name', {k: v})."""
    m = _SPEC.match(spec)
    if not m:
        raise PolicySpecError(f"malformed policy spec {spec!r}; expected NAME or module:Class, optionally [key=value,...]")
    settings = {}
    if m.group("settings"):
        for part in split_specs(m.group("settings")):
            if "=" not in part:
                raise PolicySpecError(f"policy spec {spec!r}: setting {part!r} is not key=value")
            k, v = part.split("=", 1)
            settings[k.strip()] = _value(v.strip())
    target = m.group("target")
    if target in ALIASES:
        target, fixed = ALIASES[target]
        clash = [k for k in settings if k in fixed and settings[k] != fixed[k]]
        if clash:
            raise PolicySpecError(f"policy spec {spec!r}: the alias fixes {clash[0]}={json.dumps(fixed[clash[0]])}")
        settings = {**fixed, **settings}
    return target, settings


def canonical_spec(spec: str) -> str:
    target, settings = parse_spec(spec)
    if not settings:
        return target
    body = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(settings.items()))
    return f"{target}[{body}]"


def resolve(target: str):
    if target in REGISTRY:
        return REGISTRY[target]
    if ":" not in target:
        raise PolicySpecError(f"unknown policy {target!r}; registered: {', '.join(sorted(REGISTRY))}, or use module:Class")
    mod, _, cls = target.partition(":")
    try:
        obj = getattr(importlib.import_module(mod), cls)
    except (ImportError, AttributeError) as exc:
        raise PolicySpecError(f"cannot load policy {target!r}: {exc}") from None
    return obj


def make_policy(spec: str):
    """Instantiate the policy a spec names, checking its settings against the constructor."""
    target, settings = parse_spec(spec)
    cls = resolve(target)
    params = inspect.signature(cls).parameters
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [k for k in settings if k not in params and not takes_kwargs]
    if unknown:
        known = [k for k, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        raise PolicySpecError(f"policy {target!r} has no setting {unknown[0]!r}; its settings: {', '.join(known) or 'none'}")
    try:
        pol = cls(**settings)
    except (TypeError, ValueError) as exc:
        raise PolicySpecError(f"policy {target!r} rejected its settings {settings}: {exc}") from None
    missing = [m for m in ("reset", "start_student", "select", "update", "end_student") if not callable(getattr(pol, m, None))]
    if missing:
        raise PolicySpecError(f"policy {target!r} lacks protocol method(s) {', '.join(missing)}")
    return pol

"""Policy specs: registered names or `module:Class`, with keyword settings in brackets.

    random
    no-transfer[prior_var=2.0]
    mypackage.policies:MyPolicy[alpha=0.5,name="x"]
    coduel-greedy                      (a named ablation = coduel[lookahead=false])

Settings are parsed by the type the policy's constructor declares for them:

- ``bool``: ``true`` or ``false`` in any case, nothing else (not ``"false"``, ``no`` or ``0``);
- ``int``: an integer literal (``1.7`` and ``2.0`` are refused);
- ``float``: a finite number (``NaN``, ``Infinity`` and ``1e999`` are refused);
- ``str``: a quoted JSON string or bare text; ``X | None``: also ``null``.

Settings without a declared type (a researcher's ``**kwargs`` or unannotated parameter) are read as
JSON where they parse, else as bare strings, and must be finite. A numeric setting declared as
``Annotated[float, Range(lo, hi)]`` (``online.setting_range``) must lie in its range; the policy's
constructor checks choices. A wrong value raises PolicySpecError naming the policy, the setting, the
value and what is allowed, before any cell starts.

The canonical form of a spec names its target and, sorted, only the settings that differ from
their defaults: ``no-transfer``, ``no-transfer[prior_var=4.0]`` and ``no-transfer[prior_var=4]`` are
one spec, and one store cell. The defaults themselves are part of the policy's code identity
(``online.code_identity``). Registered policies are imported only when a spec names them.
"""
from __future__ import annotations

import importlib
import inspect
import json
import math
import re
import types
import typing
from typing import NamedTuple

from online.code_identity import PROJECT_PACKAGES
from online.learner import Learner
from online.protocol import PROTOCOL, plugin_learner
from online.records import checked_records
from online.setting_range import Range, Search, annotated_range, hint_range, hint_search, range_problem
from tdmodels.errors import InputError

REGISTRY = {
    "random": "online.policies.random_pairs:random_pairs",
    "no-transfer": "online.policies.no_transfer:no_transfer",
    "pooled": "online.policies.no_transfer:pooled",
    "coduel": "online.policies.coduel:coduel",
    "rucb": "online.policies.rucb:rucb",
    "colstim": "online.policies.colstim:colstim",
    "coldb": "online.policies.coldb:coldb",
    "meta-ts": "online.policies.hierarchical_ts:meta_ts",
    "hierts": "online.policies.hierarchical_ts:hierts",
    "coduel-ask": "online.policies.coduel_ask:coduel_ask",
    "tempered-kg": "online.policies.tempered_kg:tempered_kg",
    "low-rank": "online.policies.low_rank:low_rank",
    "coduel-or-low-rank": "online.policies.predictive_selection:coduel_or_low_rank",
}
# Named ablations: an alias stands for its settings, so both spellings name the same store cell.
ALIASES = {
    "coduel-no-population": ("coduel", {"population": False}),
    "coduel-no-recalibration": ("coduel", {"recalibration": False}),
    "coduel-greedy": ("coduel", {"lookahead": False}),
    "coduel-no-gate": ("coduel", {"gate": False}),
    "coduel-component-ts": ("coduel", {"component_thompson": True}),
    "coduel-component-info": ("coduel", {"component_information": 4.0}),
    "coduel-recent-broad": ("coduel", {"broad_memory": 5}),
    "coduel-challenger": ("coduel", {"challenger": 0.7}),
    "coduel-change-point": ("coduel", {"change_hazard": 0.05, "change_weight_max": 0.25}),
    "coldb-lr": ("coldb", {"estimator": "least-squares"}),
    "tempered-kg-greedy": ("tempered-kg", {"gamma": 0.0}),
    "tempered-kg-recalibrated": ("tempered-kg", {"recalibration": True}),
}
# The first spelling of CODuel's ablations, `coduel:greedy`, read like `module:Class`; still accepted.
ALIASES.update({f"coduel:{k[len('coduel-'):]}": v for k, v in list(ALIASES.items()) if k.startswith("coduel-")})
_SPEC = re.compile(r"^\s*(?P<target>[A-Za-z0-9_.:\-]+)\s*(?:\[(?P<settings>.*)\])?\s*$", re.S)
_INT = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_UNTYPED = object()
_PLUGINS_LOADED: set[str] = set()


class PolicySpecError(InputError):
    """An unknown policy, an unknown setting, a wrong value or a malformed spec."""


class Setting(NamedTuple):
    """One keyword setting of a policy's constructor."""
    kind: object           # bool, int, float, str, or _UNTYPED
    optional: bool         # None is allowed
    default: object        # inspect.Parameter.empty when required
    range: Range | None = None   # declared with typing.Annotated (online.setting_range)
    search: Search | None = None  # where a tuner looks (online.setting_range, online.search_space)


class PolicySpec(NamedTuple):
    """A parsed spec."""
    target: str            # registered name or module:Class
    settings: dict         # every declared setting, defaults filled in, typed
    changed: dict          # the settings that differ from their defaults
    canonical: str         # target[settings that differ from their defaults, sorted]: the store's name


def split_specs(text: str) -> list[str]:
    """Split a comma-separated list of specs, keeping commas inside brackets and inside double-quoted
    (JSON) strings, where brackets are text too."""
    out, depth, cur, quoted, escaped = [], 0, "", False, False
    for ch in text:
        if quoted:
            quoted = escaped or ch != '"'
            escaped = not escaped and ch == "\\"
            cur += ch
            continue
        if ch == '"':
            quoted = True
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if depth < 0:
            raise PolicySpecError(f"unbalanced brackets in policy list {text!r}")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if depth != 0 or quoted:
        raise PolicySpecError(f"unbalanced {'quotes' if quoted else 'brackets'} in policy list {text!r}")
    out.append(cur.strip())
    if any(not s for s in out):
        raise PolicySpecError(f"empty policy spec in list {text!r}")
    return out


def registered_target(spec: str) -> str | None:
    """The registered policy (or alias) a spec names, None for a plug-in (module:Class) or anything that is
    not a spec. Imports nothing: for readers of data that names policies (a benchmark table)."""
    m = _SPEC.match(spec) if isinstance(spec, str) else None
    if not m:
        return None
    target = m.group("target")
    return target if target in REGISTRY or target in ALIASES else None


def plugins_loaded() -> frozenset[str]:
    """The modules from outside this toolkit that `resolve` imported in this process (researchers' plug-ins):
    where there are none, this process ran no code but the toolkit's and its dependencies' on a spec's say,
    so a check it makes is as good as one made in a fresh process."""
    return frozenset(_PLUGINS_LOADED)


def resolve(target: str):
    """What a target names: a policy class, or a function returning an ``online.learner.Learner``."""
    path = REGISTRY.get(target, target)
    if ":" not in path:
        raise PolicySpecError(f"unknown policy {target!r}; registered: {', '.join(sorted(REGISTRY))}, or use module:Class")
    mod, _, name = path.partition(":")
    if mod.split(".")[0] not in PROJECT_PACKAGES:
        _PLUGINS_LOADED.add(mod)           # before the import: a module that fails to import has still run
    try:
        obj = getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError) as exc:
        raise PolicySpecError(f"cannot load policy {target!r}: {exc}") from None
    except (Exception, SystemExit) as exc:  # a researcher's module that fails, or exits, on import
        raise PolicySpecError(f"cannot load policy {target!r}: importing {mod} raised {type(exc).__name__}: {exc}") from None
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        raise PolicySpecError(f"policy {target!r} is a {type(obj).__name__}, not a class or a learner factory")
    return obj


def _kind(annotation) -> tuple[object, bool]:
    annotation, _ = annotated_range(annotation)
    if annotation in (bool, int, float, str):
        return annotation, False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [annotated_range(a)[0] for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and args[0] in (bool, int, float, str):
            return args[0], len(args) < len(typing.get_args(annotation))
    return _UNTYPED, True


def _collect(fn, skip: int, out: dict) -> bool | None:
    """Add fn's keyword parameters (after the first `skip`) to `out`; whether it takes **kwargs, None if
    its signature cannot be read."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # an annotation that does not evaluate: read as untyped
        hints = {}
    for name, p in list(params.items())[skip:]:
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in out:
            hint = hints.get(name, _UNTYPED)
            kind, optional = _kind(hint)
            out[name] = Setting(kind, optional or p.default is None, p.default, hint_range(hint), hint_search(hint))
    return any(p.kind is p.VAR_KEYWORD for p in params.values())


def declared_settings(target) -> tuple[dict[str, Setting], bool]:
    """The keyword settings of a learner factory, or of a policy class (following ``**kwargs`` into the
    base class's constructor), and whether it takes further undeclared ones."""
    out = {}
    if inspect.isfunction(target):
        more = _collect(target, 0, out)
        return out, more is not False
    for klass in getattr(target, "__mro__", (target,))[:-1]:       # object's own (*args, **kwargs) aside
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        more = _collect(init, 1, out)
        if more is None:
            return out, True
        if not more:
            return out, False
    return out, target.__init__ is not object.__init__


def _describe(kind) -> str:
    return {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}.get(kind, "a value")


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(map(_finite, value))
    if isinstance(value, dict):
        return all(map(_finite, value.values()))
    return True


def _convert(target: str, key: str, text: str, setting: Setting):
    where = f"policy {target!r}: setting {key}={text}"
    if setting.optional and text.lower() in ("null", "none"):
        return None
    kind = setting.kind
    if kind is bool:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
    elif kind is int:
        if _INT.fullmatch(text) and len(text.lstrip("+-")) <= 4000:   # past Python's 4,300-digit limit: refused below
            return int(text)
    elif kind is float:
        if _NUMBER.fullmatch(text):
            value = float(text)
            if math.isfinite(value):
                return value
    elif kind is str:
        if text.startswith('"'):
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            if isinstance(value, str):
                return value
        elif text:
            return text
    else:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = text
        if _finite(value):
            return value
        raise PolicySpecError(f"{where}: not a finite value")
    extra = " or null" if setting.optional else ""
    raise PolicySpecError(f"{where}: expected {_describe(kind)}{extra}")


def _in_range(target: str, key: str, text: str, value, setting: Setting):
    problem = range_problem(key, value, setting.range) if setting.range is not None else None
    if problem:
        raise PolicySpecError(f"policy {target!r}: setting {key}={text}: outside its range {setting.range} "
                              f"(see the table of settings in docs/policies.md)")
    return value


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                                 and not isinstance(a, bool) and not isinstance(b, bool) and a == b)


def _typed(value, setting: Setting):
    """A default or alias value in the setting's type (ints given for floats become floats)."""
    if setting.kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def policy_spec(spec: str) -> PolicySpec:
    """Parse a spec: resolve its target, convert every setting by its declared type, fill in the defaults."""
    if not isinstance(spec, str):
        raise PolicySpecError(f"policy spec {spec!r} is not a string")
    m = _SPEC.match(spec)
    if not m:
        raise PolicySpecError(f"malformed policy spec {spec!r}; expected NAME or module:Class, optionally [key=value,...]")
    raw = {}
    if m.group("settings"):
        for part in split_specs(m.group("settings")):
            if "=" not in part:
                raise PolicySpecError(f"policy spec {spec!r}: setting {part!r} is not key=value")
            k, v = (x.strip() for x in part.split("=", 1))
            if k in raw:
                raise PolicySpecError(f"policy spec {spec!r}: setting {k!r} given twice")
            raw[k] = v
    target, fixed = m.group("target"), {}
    if target in ALIASES:
        target, fixed = ALIASES[target]
    declared, open_ended = declared_settings(resolve(target))
    settings = {}
    for k, text in raw.items():
        if k not in declared and not open_ended:
            names = ", ".join(declared) or "none"
            raise PolicySpecError(f"policy {target!r} has no setting {k!r}; its settings: {names}")
        setting = declared.get(k, Setting(_UNTYPED, True, inspect.Parameter.empty))
        settings[k] = _in_range(target, k, text, _convert(target, k, text, setting), setting)
    for k, v in fixed.items():
        if k in settings and not _same(settings[k], v):
            raise PolicySpecError(f"policy spec {spec!r}: the alias fixes {k}={json.dumps(v)}")
        settings[k] = v
    missing = [k for k, s in declared.items() if s.default is inspect.Parameter.empty and k not in settings]
    if missing:
        raise PolicySpecError(f"policy {target!r} needs setting(s) {', '.join(missing)}")
    full = {k: _typed(s.default, s) for k, s in declared.items() if s.default is not inspect.Parameter.empty}
    full.update({k: _typed(v, declared[k]) if k in declared else v for k, v in settings.items()})
    changed = {k: v for k, v in full.items() if k not in declared or not _same(v, _typed(declared[k].default, declared[k]))}
    body = ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in sorted(changed.items()))
    return PolicySpec(target, full, changed, f"{target}[{body}]" if body else target)


def parse_spec(spec: str) -> tuple[str, dict]:
    """'name[k=v,...]' -> ('name', {k: v}) for the settings that differ from their defaults."""
    ps = policy_spec(spec)
    return ps.target, ps.changed


def canonical_spec(spec: str) -> str:
    """The spec's canonical form: equal specs name the same store cell."""
    return policy_spec(spec).canonical


def make_learner(spec: str) -> Learner:
    """The Learner a spec names, its settings typed and checked: the learner a registered or `module:function`
    target returns, or a plug-in policy object (`module:Class`) behind ``online.protocol.plugin_learner``."""
    ps = policy_spec(spec)
    try:
        made = resolve(ps.target)(**ps.settings)
    except (TypeError, ValueError) as exc:
        shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(ps.changed.items())) or "defaults"
        raise PolicySpecError(f"policy {ps.target!r} refused its settings ({shown}): {exc}") from None
    except (Exception, SystemExit) as exc:  # a researcher's constructor can raise (or exit with) anything
        raise PolicySpecError(f"policy {ps.target!r}: constructing it raised {type(exc).__name__}: {exc}") from None
    if inspect.isclass(made):
        raise PolicySpecError(f"policy {ps.target!r} returned a class ({made.__name__}), not a learner or a policy object")
    if isinstance(made, tuple) and not isinstance(made, Learner):
        raise PolicySpecError(f"policy {ps.target!r} returned a {type(made).__name__}: neither an online.learner.Learner "
                              "nor a plug-in policy object")
    if not isinstance(made, Learner):
        missing = [m for m in PROTOCOL if not callable(getattr(made, m, None))]
        if missing:
            raise PolicySpecError(f"policy {ps.target!r} lacks protocol method(s) {', '.join(missing)}")
        return plugin_learner(made, ps.target)
    broken = [f for f in Learner._fields[:5] if not callable(getattr(made, f))]
    if broken:
        raise PolicySpecError(f"policy {ps.target!r}: the learner's {', '.join(broken)} is not a function")
    checked_records(made.records, ps.target)
    if (made.ask is None) != (made.answer is None) or not all(
            f is None or callable(f) for f in (made.ask, made.answer)):
        raise PolicySpecError(f"policy {ps.target!r}: a learner that asks has both ask and answer functions")
    return made


def settings_table() -> str:
    """Markdown table of every registered policy's numeric settings and of those a tuner searches: type,
    default, declared range and the search of ``tutorduel tune`` (the table in docs/policies.md)."""
    lines = ["| policy | setting | type | default | range | tuned over |", "|---|---|---|---|---|---|"]
    for name in sorted(REGISTRY):
        declared, _ = declared_settings(resolve(name))
        for key, s in declared.items():
            if s.kind not in (int, float) and s.search is None:
                continue
            kind = getattr(s.kind, "__name__", "any") + (" or null" if s.optional else "")
            default = "required" if s.default is inspect.Parameter.empty else json.dumps(_typed(s.default, s))
            lines.append(f"| {name} | {key} | {kind} | {default} | {s.range if s.range is not None else '-'} | "
                         f"{s.search if s.search is not None else '-'} |")
    return "\n".join(lines)

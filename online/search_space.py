"""What a tuner may change in a policy, and how a point of that space becomes a spec.

A policy declares the settings worth tuning beside their ranges, in its signature
(``online.setting_range.Search``):

    s0_var: Annotated[float, Range(MIN_POSITIVE, 1e4), Search(0.01, 10, log=True)] = S0_VAR

`search_space("meta-ts")` reads those declarations; `search_space("meta-ts", {"s0_var": "0.05:5:log"})`
searches only the settings named, over the ranges given, each checked against the setting's own type and
Range. A plug-in (``module:function`` or ``module:Class``) that declares no Search is searched over its
Range-annotated numeric settings with finite ends, log-uniformly where the range is positive and spans two
decades or more, an open end moved just inside; a registered policy that declares none is searched only over
the settings named.
Settings the spec fixes (``coldb-lr`` fixes ``estimator``; ``meta-ts[q_var=1.0]`` fixes ``q_var``) are
not searched.

A point is a dict {setting: value}; numbers are kept to three significant digits, so that specs stay
readable and two points that round alike are one store cell.
"""
from __future__ import annotations

import json
import math
import re
from typing import NamedTuple

from online.registry import (REGISTRY, PolicySpec, PolicySpecError, Setting, declared_settings, make_learner,
                             policy_spec, resolve)
from online.setting_range import Range, Search

DIGITS = 3                  # significant digits a searched number keeps
LOG_DECADES = 2             # a plug-in's positive Range spanning at least this many decades is searched log-uniformly
OPEN_END = 1e-3             # ... and an open end of its Range moved this share of the span inside
MAX_CHOICES = 100
_RANGE = re.compile(r"^\s*(?P<lo>[^:]+):(?P<hi>[^:]+)(?::(?P<log>log))?\s*$")


class Dimension(NamedTuple):
    """One searched setting: its name, type (bool, int, float or str) and where it is searched."""
    name: str
    kind: type
    search: Search


class SearchSpace(NamedTuple):
    """A policy, the settings its spec fixes, and the dimensions a tuner searches."""
    base: PolicySpec
    dimensions: tuple[Dimension, ...]

    @property
    def name(self) -> str:
        """The base spec, as the tuner reports it."""
        return self.base.canonical

    def spec(self, point: dict) -> str:
        """The canonical spec of the base policy with `point`'s settings (checked by the spec parser)."""
        names = {d.name for d in self.dimensions}
        if set(point) != names:
            raise PolicySpecError(f"{self.name}: a point must set exactly {', '.join(sorted(names))}, got "
                                  f"{', '.join(sorted(point)) or 'nothing'}")
        settings = {**self.base.changed, **point}
        body = ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in sorted(settings.items()))
        return policy_spec(f"{self.base.target}[{body}]" if body else self.base.target).canonical

    def grid_size(self) -> int | None:
        """How many points the grid has, where every dimension is a list of choices; else None."""
        if not all(d.search.choices for d in self.dimensions):
            return None
        return math.prod(len(d.search.choices) for d in self.dimensions)

    def grid(self, limit: int | None = None) -> list[dict] | None:
        """Every point, where every dimension is a list of choices and (with `limit`) there are at most `limit`
        of them; else None (the size is counted before any point is made)."""
        size = self.grid_size()
        if size is None or (limit is not None and size > limit):
            return None
        points = [{}]
        for d in self.dimensions:
            points = [{**p, d.name: v} for p in points for v in d.search.choices]
        return points

    def describe(self) -> str:
        """One line: each dimension and its search."""
        return ", ".join(f"{d.name} {d.search}" for d in self.dimensions)


def rounded(value: float, dim: Dimension) -> float | int:
    """A number the sampler proposed, kept to DIGITS significant digits (more where the search is narrower than
    its ends' own digits, so that rounding cannot collapse it; ints as they are) and inside the search."""
    if dim.kind is int:
        return int(value)
    lo, hi = dim.search.lo, dim.search.hi
    extra = max(0, math.floor(math.log10(max(abs(lo), abs(hi)) / (hi - lo)))) if hi > lo else 0
    kept = float(f"{value:.{DIGITS + extra}g}")
    return min(max(kept, lo), hi)


def _parse_number(text: str, kind, where: str):
    text = text.strip()
    try:
        value = json.loads(text) if kind is not str else text
    except ValueError:
        raise PolicySpecError(f"{where}: {text!r} is not a number") from None
    if kind is int and not (isinstance(value, int) and not isinstance(value, bool)):
        raise PolicySpecError(f"{where}: {text!r} is not an integer")
    if kind in (float, object) and (isinstance(value, bool) or not isinstance(value, (int, float))
                                    or not math.isfinite(value)):
        raise PolicySpecError(f"{where}: {text!r} is not a finite number")
    return float(value) if kind is float else value


def _parse_choice(text: str, kind, where: str):
    text = text.strip()
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise PolicySpecError(f"{where}: {text!r}: give true or false")
        return text.lower() == "true"
    if kind is str:
        if not text:
            raise PolicySpecError(f"{where}: an empty choice")
        return json.loads(text) if text.startswith('"') and text.endswith('"') and len(text) > 1 else text
    return _parse_number(text, kind, where)


def parse_search(name: str, text: str, setting: Setting) -> Search:
    """A search given as text: ``LO:HI`` or ``LO:HI:log`` (numbers), or comma-separated choices
    (``greedy,thompson``, ``true,false``, ``0.5,1,2``); PolicySpecError on a malformed one."""
    where = f"search {name}={text}"
    if not isinstance(text, str) or not text.strip():
        raise PolicySpecError(f"{where}: give LO:HI, LO:HI:log or comma-separated choices")
    kind = setting.kind if setting.kind in (bool, int, float, str) else object
    m = _RANGE.match(text)
    if m and kind not in (bool, str):
        return Search(_parse_number(m["lo"], kind, where), _parse_number(m["hi"], kind, where), bool(m["log"]))
    if m:
        raise PolicySpecError(f"{where}: {name} is a {kind.__name__} setting; give its choices, comma-separated")
    parts = text.split(",")
    if len(parts) > MAX_CHOICES:
        raise PolicySpecError(f"{where}: {len(parts):,} choices; at most {MAX_CHOICES}")
    return Search(choices=tuple(_parse_choice(t, kind, where) for t in parts))


def _check(target: str, name: str, setting: Setting, search: Search) -> Search:
    """`search` checked against the setting's type and Range; PolicySpecError naming what is wrong."""
    where = f"policy {target!r}: search {name} {search}"
    kind = setting.kind
    rng = setting.range
    if search.choices:
        if len(set(map(json.dumps, search.choices))) != len(search.choices):
            raise PolicySpecError(f"{where}: a choice is given twice")
        for v in search.choices:
            if kind in (bool, int, float, str) and not _fits(v, kind):
                raise PolicySpecError(f"{where}: {v!r} is not a {kind.__name__}")
            if rng is not None and v not in rng:
                raise PolicySpecError(f"{where}: {v!r} is outside the setting's range {rng}")
        return search._replace(choices=tuple(float(v) if kind is float else v for v in search.choices))
    if kind not in (int, float, object):
        raise PolicySpecError(f"{where}: {name} is a {getattr(kind, '__name__', 'untyped')} setting; give its "
                              f"choices")
    lo, hi = search.lo, search.hi
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and math.isfinite(lo) and math.isfinite(hi)):
        raise PolicySpecError(f"{where}: the ends must be finite numbers")
    if kind is int and not (float(lo).is_integer() and float(hi).is_integer()):
        raise PolicySpecError(f"{where}: {name} is an integer setting; give integer ends")
    if not lo < hi:
        raise PolicySpecError(f"{where}: the low end must be below the high end")
    if search.log and not lo > 0:
        raise PolicySpecError(f"{where}: a log search needs a positive low end")
    if rng is not None and not (lo in rng and hi in rng):
        raise PolicySpecError(f"{where}: outside the setting's own range {rng}")
    return search._replace(lo=int(lo) if kind is int else float(lo), hi=int(hi) if kind is int else float(hi))


def _fits(value, kind) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, str)


def _from_range(rng: Range) -> Search | None:
    """A plug-in's Range as a search: log-uniform over a positive range of LOG_DECADES decades or more; an open
    end moved inside by OPEN_END of the span (of the log span for a log search); None where no search inside the
    range results (an infinite end)."""
    lo, hi = float(rng.lo), float(rng.hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        return None
    log = lo > 0 and hi / lo >= 10 ** LOG_DECADES
    f, g = (math.log, math.exp) if log else (float, float)
    span = f(hi) - f(lo)
    a = float(f"{g(f(lo) + OPEN_END * span * rng.lo_open):.6g}")
    b = float(f"{g(f(hi) - OPEN_END * span * rng.hi_open):.6g}")
    return Search(a, b, log) if a < b and a in rng and b in rng else None


def search_space(policy: str, searches: dict | None = None) -> SearchSpace:
    """The space a tuner searches for `policy` (a spec: its bracketed settings stay fixed).

    Parameters
    ----------
    policy : str
        A registered policy, alias or plug-in (``module:function``), optionally with fixed settings.
    searches : dict, optional
        {setting: Search or text} (``parse_search``'s forms): search only these. Default: the settings
        the policy declares a Search for, else (a plug-in only) its Range-annotated numeric ones.

    Returns
    -------
    SearchSpace
        PolicySpecError (an InputError) for an unknown or fixed setting, a search outside the setting's
        range or of the wrong type, or a policy with nothing to search.
    """
    base = policy_spec(policy)
    declared, _ = declared_settings(resolve(base.target))
    if searches is not None and not isinstance(searches, dict):
        raise PolicySpecError(f"policy {policy!r}: searches must be a dict {{setting: search}}, got "
                              f"{type(searches).__name__}")
    if searches:
        chosen = {}
        for name, search in searches.items():
            if name not in declared:
                raise PolicySpecError(f"policy {base.target!r} has no setting {name!r}; its settings: "
                                      f"{', '.join(declared) or 'none'}")
            if not isinstance(search, Search):
                search = parse_search(name, search, declared[name])
            chosen[name] = search
    else:
        chosen = {n: s.search for n, s in declared.items() if s.search is not None}
        if not chosen and base.target not in REGISTRY:          # a plug-in: its ranges are its search
            chosen = {n: _from_range(s.range) for n, s in declared.items()
                      if s.range is not None and s.kind in (int, float)}
            chosen = {n: s for n, s in chosen.items() if s is not None}
    fixed = [n for n in chosen if n in base.changed]
    if fixed and searches:
        raise PolicySpecError(f"policy {policy!r} fixes {', '.join(fixed)}; leave it out of the spec to search it")
    chosen = {n: s for n, s in chosen.items() if n not in base.changed}
    if not chosen:
        raise PolicySpecError(f"policy {policy!r}: nothing to search (declare a Search or a Range on a setting, or "
                              f"name the settings to search)")
    dims = tuple(Dimension(n, declared[n].kind if declared[n].kind in (bool, int, float, str) else float,
                           _check(base.target, n, declared[n], s)) for n, s in chosen.items())
    space = SearchSpace(base, dims)
    if base.target in REGISTRY:       # a registered policy checks its choices itself, cheaply: every one now
        for d in dims:
            for choice in d.search.choices:
                make_learner(policy_spec(_with(base, d.name, choice)).canonical)
    return space


def _with(base: PolicySpec, name: str, value) -> str:
    settings = {**base.changed, name: value}
    return f"{base.target}[" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(settings.items())) + "]"


def default_point(space: SearchSpace) -> dict:
    """The base spec's own value of each dimension (a setting without a default is None)."""
    return {d.name: space.base.settings.get(d.name) for d in space.dimensions}


__all__ = ["Dimension", "SearchSpace", "search_space", "parse_search", "rounded", "default_point", "DIGITS"]

"""The documented range of a policy's numeric setting, and where a tuner looks for its value, declared
once, in its signature.

    def rucb(alpha: Annotated[float, Range(0.5, 100, lo_open=True), Search(0.51, 10, log=True)] = ALPHA): ...

The Range is read by the spec parser (``online.registry``: a value out of range is refused before any
cell starts) and by :func:`ranged`, which checks a direct Python call the same way, so the command line
and the Python API go through one validation. The Search is read by the tuner (``online.search_space``):
the settings that matter and the part of their range worth trying. A plug-in may declare both the same
way; a plug-in that declares no Search is tuned over its Range-annotated settings.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import typing
from typing import NamedTuple

import numpy as np

from tdmodels.errors import InputError


MIN_POSITIVE = 1e-6     # the least a variance or ridge setting may be: below about 1e-15 the precision or ridge
                        # matrices stop being positive definite in float64 (COLDB's, CoLSTIM's and Meta-TS's
                        # factorisations failed at 1e-20); 1e-6 leaves nine orders of magnitude to spare


class Range(NamedTuple):
    """Closed interval [lo, hi]; `lo_open` / `hi_open` exclude an end."""
    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def __contains__(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            return False
        if isinstance(value, (float, np.floating)) and not math.isfinite(value):   # ints of any size are finite
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def __str__(self) -> str:
        return f"{'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"


class Search(NamedTuple):
    """Where a tuner looks for a setting's value: a number in [lo, hi] (log-uniform with `log`), or one of
    `choices` (``Search(choices=("greedy", "thompson"))``). It must lie inside the setting's Range."""
    lo: float = math.nan
    hi: float = math.nan
    log: bool = False
    choices: tuple = ()

    def __str__(self) -> str:
        if self.choices:
            return "{" + ", ".join(map(_text, self.choices)) + "}"
        return f"[{self.lo:g}, {self.hi:g}]{' log' if self.log else ''}"


def _text(value) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def annotated_range(annotation) -> tuple[object, Range | None]:
    """(the type under ``Annotated[...]``, its Range or None); other annotations come back as they are."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        return base, next((x for x in extra if isinstance(x, Range)), None)
    return annotation, None


def hint_range(hint) -> Range | None:
    """The Range a parameter's annotation declares, also inside ``Annotated[...] | None``."""
    rng = annotated_range(hint)[1]
    if rng is None:
        rng = next((r for r in (annotated_range(a)[1] for a in typing.get_args(hint)) if r is not None), None)
    return rng


def hint_search(hint) -> Search | None:
    """The Search a parameter's annotation declares, also inside ``Annotated[...] | None``."""
    for h in (hint, *typing.get_args(hint)):
        if typing.get_origin(h) is typing.Annotated:
            found = next((x for x in typing.get_args(h)[1:] if isinstance(x, Search)), None)
            if found is not None:
                return found
    return None


def _hints(fn) -> dict:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # an annotation that does not evaluate declares nothing
        return {}


def declared_ranges(fn) -> dict[str, Range]:
    """The ranges a function's (or a class's ``__init__``'s) parameters declare."""
    return {name: rng for name, rng in ((n, hint_range(h)) for n, h in _hints(fn).items()) if rng is not None}


def declared_integers(fn) -> set[str]:
    """The parameters a function declares as ``Annotated[int, Range(...)]``."""
    return {name for name, hint in _hints(fn).items() if annotated_range(hint)[0] is int and hint_range(hint)}


def declared_flags(fn) -> set[str]:
    """The parameters a function declares as ``bool``."""
    return {name for name, hint in _hints(fn).items() if hint is bool}


def range_problem(name: str, value, rng: Range) -> str | None:
    """None where `value` is None (an optional setting left unset) or inside `rng`; else what is wrong."""
    if value is None or value in rng:
        return None
    return f"{name}={value!r} is outside its range {rng}"


def ranged(fn):
    """Check every ranged argument of a call against its declared Range, that an int-ranged one is an
    integer and that a bool one is a bool, not a truthy string (InputError naming the first that fails)."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        if "_ranges" not in checked.__dict__:        # read on first use: annotations may name later definitions
            checked._ranges, checked._integers = declared_ranges(fn), declared_integers(fn)
            checked._flags = declared_flags(fn)
        ranges = checked._ranges
        bound = sig.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            if name in checked._flags and not isinstance(value, (bool, np.bool_)):
                raise InputError(f"{name}={value!r}: give True or False")
            if name in checked._integers and value is not None and (
                    isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))):
                raise InputError(f"{name}={value!r} must be an integer")
            if name in ranges:
                problem = range_problem(name, value, ranges[name])
                if problem:
                    raise InputError(problem)
        return fn(*args, **kwargs)

    return checked

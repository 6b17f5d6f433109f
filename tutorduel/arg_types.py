"""argparse types: numbers with their ranges and the paths the command line writes to, checked when the
arguments are parsed, before any work. Every integer and float option has both ends (each command's --help
gives them)."""
from __future__ import annotations

import argparse

from tdmodels.limits import MAX_ARRIVALS, MAX_SEED

MAX_JOBS = 1_024                # worker processes
MAX_DRAWS = 1_000_000           # MCMC warm-up or draws per chain
MAX_RESAMPLES = 100_000         # bootstrap resamples, design simulations
MAX_MINUTES = 7 * 24 * 60.0     # a time budget: one week
REPLAY_TIMEOUT_S = 900.0        # verify --replay: a row's replay runs seconds; one past this is a policy that hangs


MAX_NAMES = 1_000               # worlds or rosters in one comma-separated list


def distinct_names(names, what: str) -> list[str]:
    """`names` (a list of strings) each once, in the order first given (a repeated roster had run its sweep once
    per repeat), or InputError naming the first empty one or a list of more than MAX_NAMES."""
    from tdmodels.errors import InputError

    if isinstance(names, (str, bytes)) or not all(isinstance(n, str) for n in names):
        raise InputError(f"{what}: give a list of names, got {names!r:.80}")
    names = list(names)
    if len(names) > MAX_NAMES:
        raise InputError(f"{what}: {len(names):,} names; at most {MAX_NAMES:,}")
    if not all(n.strip() for n in names):
        raise InputError(f"{what}: an empty name")
    return list(dict.fromkeys(names))


def _range_text(lo, hi, lo_open) -> str:
    return f"{'(' if lo_open else '['}{lo:,}, {hi:,}]"


def number_in(kind, lo, hi, lo_open: bool = False):
    """An argparse type: `kind` (int or float), finite, in [lo, hi] (or (lo, hi] with lo_open)."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            digits = text.strip().lstrip("+-")
            if digits.isascii() and digits.isdigit():      # past Python's 4,300-digit limit: a number, out of range
                raise argparse.ArgumentTypeError(f"{text[:20]}... ({len(text):,} characters): must be "
                                                 f"{'an integer' if kind is int else 'a number'} in "
                                                 f"{_range_text(lo, hi, lo_open)}") from None
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if v != v or not (lo < v if lo_open else lo <= v) or not v <= hi:
            raise argparse.ArgumentTypeError(f"{text!r}: must be {'an integer' if kind is int else 'a number'} in "
                                             f"{_range_text(lo, hi, lo_open)}")
        return v
    parse.__name__ = kind.__name__
    return parse


def int_in(lo: int, hi: int):
    """An integer option in [lo, hi]."""
    return number_in(int, lo, hi)


def float_in(lo: float, hi: float, lo_open: bool = False):
    """A finite float option in [lo, hi] (or (lo, hi])."""
    return number_in(float, lo, hi, lo_open)


def int_list_in(lo: int, hi: int):
    """A comma-separated list of distinct integers, each in [lo, hi] (e.g. 6,12), as a tuple."""
    one = int_in(lo, hi)

    def parse(text):
        parts = [t.strip() for t in text.split(",")]
        if not text.strip() or any(not t for t in parts):
            raise argparse.ArgumentTypeError(f"{text!r}: give comma-separated integers, e.g. 6,12")
        values = tuple(one(t) for t in parts)
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"{text!r}: a value is given twice")
        return values
    parse.__name__ = "integer list"
    return parse


seed_int = int_in(0, MAX_SEED)
arrivals_int = int_in(1, MAX_ARRIVALS)
chains_int = int_in(2, 64)      # R-hat and the ESS compare chains: at least 2


def folder_arg(text: str) -> str:
    """An argparse type: a folder to write into, refused where the path is a file, a device, a symlink loop,
    lies under a regular file or cannot be written (``tdmodels.atomic_file.folder_problem``)."""
    from tdmodels.atomic_file import folder_problem

    problem = folder_problem(text, writable=True)
    if problem:
        raise argparse.ArgumentTypeError(f"{text}: {problem}")
    return text


def file_arg(text: str) -> str:
    """An argparse type: a file to write, refused where the path holds anything but a regular file or lies
    under one (``tdmodels.atomic_file.check_output_path``)."""
    from tdmodels.atomic_file import OutputPathError, check_output_path

    try:
        check_output_path(text)
    except OutputPathError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text

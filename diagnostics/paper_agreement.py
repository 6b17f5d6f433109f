"""How our leaderboard agrees with the reference's: gaps to no-transfer and learning-curve plateaus.

The reference's findings about sharing are statements about gaps, a policy's score minus the
no-transfer ablation's on the same roster: every method that shares information across users is
below no-transfer on the held-out profiles and above it on composite and quirky. For one roster this
module compares each sharing method's gap with the published gap (sign and size), CODuel's gain over
no-transfer with the published one, and each method's plateau (its excess regret per user over arrivals
251-350) with the published curve's. A real-session roster (``tdmodels.sample_roster``) is compared
with the held-out-profile column, the roster its sessions come from.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diagnostics.published_curves import PublishedCurve
from tdmodels.sample_roster import resample_of

SHARING = ("rucb", "pooled", "coldb", "coldb-lr", "meta-ts", "hierts")
BASELINE = "no-transfer"


def published_column(roster: str) -> str:
    """The published roster a roster is compared with: itself, or for a real-session roster the held-out
    profiles (``test_profiles``)."""
    return "test_profiles" if resample_of(roster) is not None else roster


class GapAgreement(NamedTuple):
    """Sharing methods' gaps to no-transfer, ours against the published, on one roster."""
    gaps: dict            # method -> (ours, published)
    signs_agree: int      # methods whose gap has the published sign (a published gap of 0 agrees with any)
    mean_abs_error: float  # mean |ours - published| over the methods
    coduel: tuple | None  # CODuel's gain over no-transfer: (ours, published), or None


def gap_agreement(scores: dict[str, float], published: dict[str, float]) -> GapAgreement | None:
    """The gaps of the sharing methods present in both `scores` (ours) and `published` (both {policy: score}
    on one roster), or None without no-transfer on both sides or without a sharing method."""
    if BASELINE not in scores or BASELINE not in published:
        return None
    methods = [m for m in SHARING if m in scores and m in published]
    if not methods:
        return None
    gaps = {m: (scores[m] - scores[BASELINE], published[m] - published[BASELINE]) for m in methods}
    signs = sum(1 for ours, pub in gaps.values() if pub == 0 or np.sign(ours) == np.sign(pub))
    err = float(np.mean([abs(ours - pub) for ours, pub in gaps.values()]))
    coduel = ((scores["coduel"] - scores[BASELINE], published["coduel"] - published[BASELINE])
              if "coduel" in scores and "coduel" in published else None)
    return GapAgreement(gaps, signs, err, coduel)


def format_gap_agreement(roster: str, agreement: GapAgreement) -> str:
    """One findings line: each sharing method's gap beside the published, the signs that agree, the mean
    error and CODuel's gain."""
    parts = ", ".join(f"{m} {o:+.1f} ({p:+.0f})" for m, (o, p) in agreement.gaps.items())
    line = (f"{roster}: gaps to no-transfer (published): {parts}; signs agree {agreement.signs_agree} of "
            f"{len(agreement.gaps)}, mean absolute gap error {agreement.mean_abs_error:.1f}")
    if agreement.coduel is not None:
        line += f"; CODuel's gain {agreement.coduel[0]:+.1f} ({agreement.coduel[1]:+.0f})"
    return line


def plateau_agreement(ours: dict[str, float], published: dict[str, PublishedCurve]) -> dict[str, tuple[float, float]]:
    """{method: (our plateau, published plateau)} for the methods in both; `ours` is {method: plateau}."""
    return {m: (ours[m], published[m].plateau) for m in published if m in ours and ours[m] is not None}


def format_plateaus(roster: str, plateaus: dict[str, tuple[float, float]], within: float = 0.3) -> str:
    """One findings line: each method's plateau beside the published one and how many are within `within`."""
    parts = ", ".join(f"{m} {o:.2f} ({p:.2f})" for m, (o, p) in sorted(plateaus.items()))
    close = sum(1 for o, p in plateaus.values() if abs(o - p) <= within)
    return (f"{roster}: plateaus, excess per user over arrivals 251-350 (published): {parts}; within {within:g} of "
            f"the published: {close} of {len(plateaus)}")


__all__ = ["SHARING", "GapAgreement", "gap_agreement", "format_gap_agreement", "plateau_agreement",
           "format_plateaus", "published_column"]

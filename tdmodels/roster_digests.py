"""The published content digests of the generated rosters, by generator version.

A world's digest (``tdmodels.world.world_digest``) is its identity in the run store. The
simulator computes with ``tdmodels.portable_math``, so every machine builds the same bytes and
therefore the same digest; these are the digests it builds. ``tutorduel worlds build`` compares
what it built against them, and ``tests/tdmodels/test_portable_worlds.py`` builds every roster
under several BLAS kernels and C-library code paths and requires these digests. A machine that
builds another digest computes differently from the others: its rows will not match theirs.
"""
from __future__ import annotations

ROSTER_DIGESTS = {
    "sim-3": {                       # the default parameters
        "dev": "d27734cf47865964",
        "test_topics": "d2ef03d35387835c",
        "test_profiles": "6be72109a892941b",
        "composite": "3815d398518d9b6c",
        "quirky": "3698d8e073a2696a",
        "scrambled": "1110ca9f3386e6a8",
        "unstructured": "08e56fa8559b0ea4",
    },
    "sim-2": {                       # the earlier default (tutorduel worlds build --generator sim-2)
        "dev": "74a25cabddbc767e",
        "test_topics": "ee255f5844296365",
        "test_profiles": "667177fd7111354f",
        "composite": "6a0920ab806dd324",
        "quirky": "1c341f690e5ad294",
        "scrambled": "ccb5acde64ecc870",
        "unstructured": "1c77e7b30f938115",
    },
    "sim-2+485bbdd151": {            # calibration/simulator.json
        "dev": "bb770565b297a542",
        "test_topics": "3b866c233844d23a",
        "test_profiles": "b0999a2531b1b667",
        "composite": "9d8ac5723ea0c6ff",
        "quirky": "f30e54e34e3adf0a",
        "scrambled": "a08dc255853d7b44",
        "unstructured": "f42bbc30749ca4ea",
    },
    "stress-1": {                    # tutorduel worlds stress (the presets, seed 0)
        "stress-types": "a37155900db295c6",
        "stress-loose": "a37c3c9fc6623217",
        "stress-polarised": "e2c546fe9b9ff46f",
        "stress-drift": "19bc411cb2f5f5ed",
        "stress-lookalike": "f0182d637b73acdb",
        "stress-shift": "edd7898138f76828",
        "stress-unstructured": "2704021cadc0b2e5",
        "stress-rater": "d4760793864265a0",
    },
    "site-sample": {                 # tutorduel worlds import-sample of data/tutorduel-site-sample.json
        "sample": "39a84d07b7ce0c34",
    },
    "real-sessions-1": {             # the real-session rosters import-sample resamples (tdmodels.sample_roster)
        "real-sessions-0": "33b25d1510aa2b6f",
        "real-sessions-1": "6dd9ac714840a0e9",
    },
}


def published_digest(generator: str, roster: str) -> str | None:
    """The published digest of `roster` built by `generator`, or None where none is published."""
    return ROSTER_DIGESTS.get(str(generator), {}).get(str(roster))

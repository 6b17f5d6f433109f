"""Import the reference's real judge sample (48 arrivals of its held-out-profile roster).

The published file holds, per arrival, the profile key and 24 questions with text, U[6]
and the 15 upper-triangle probabilities (P(lower index wins when shown first); the
other order is 1 - P). It becomes a fixed-schedule world `sample`: students are the 8
profiles, questions are the 1,152 asked ones, arrival a asks its own 24 in order.
No rater scores were published: feature g is all zeros and `rater_available = 0`.
The file is read from the path given; nothing of it is copied into the project.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import xarray as xr

from .bradley_terry import order_averaged
from .simulator import fit_click_scale
from .file_read import UnreadableFileError, read_regular_text
from .limits import MAX_ARRIVALS, MAX_SESSION
from .run_inputs import check_memory
from .world import FORMAT_VERSION, KINDS, WorldFormatError

SAMPLE_BYTES = 64 * 2**20     # the published sample is about 1 MB

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")


def last_sentence(text: str) -> str:
    """The last sentence of `text` (the site sample's question is its last sentence)."""
    return _SENTENCE_END.split(text.strip())[-1]


def _suffix_finder(cues: list[str]):
    """A function text -> the index of the longest of `cues` that `text` ends with (None if none), in time
    linear in the text: a trie of the cues read backwards (matching each text against every cue had taken
    hours on a sample of 20 MB)."""
    root: dict = {}
    for i, cue in enumerate(cues):
        node = root
        for ch in reversed(cue):
            node = node.setdefault(ch, {})
        node[None] = i                    # a cue ends here (the empty cue at the root, if any)

    def longest(text: str):
        node, best = root, root.get(None)
        for ch in reversed(text):
            node = node.get(ch)
            if node is None:
                break
            best = node.get(None, best)
        return best
    return longest


def _check_structure(path, personas, arrivals) -> None:
    """WorldFormatError naming the first place where the sample's JSON is not what the site publishes."""
    def fail(where, problem):
        raise WorldFormatError(f"sample {path}: {where}: {problem}")

    if not all(isinstance(p, str) and p for p in personas) or len(set(personas)) != len(personas):
        fail("personas", "each needs a distinct, non-empty 'short' name")
    K = len(personas)
    if K < 3:
        fail("personas", f"{K} personas; a world needs at least 3 (with 2, every pair is the best pair)")
    if not isinstance(arrivals, list) or not arrivals:
        fail("arrivals", "an empty list or not a list; the sample has one entry per arrival")
    if len(arrivals) > MAX_ARRIVALS:
        fail("arrivals", f"{len(arrivals):,} arrivals; at most {MAX_ARRIVALS:,}")
    S = None
    for a, arr in enumerate(arrivals):
        if not isinstance(arr, dict) or not isinstance(arr.get("profile_key"), str) or not isinstance(arr.get("qs"), list):
            fail(f"arrival {a}", "needs a string 'profile_key' and a list 'qs'")
        S = len(arr["qs"]) if S is None else S
        if not 1 <= len(arr["qs"]) <= MAX_SESSION or len(arr["qs"]) != S:
            fail(f"arrival {a}", f"{len(arr['qs'])} questions; every arrival needs the same number, 1 to {MAX_SESSION}")
        for t, q in enumerate(arr["qs"]):
            ok = isinstance(q, dict) and isinstance(q.get("q"), str)
            for key, n in (("U", K), ("P", K * (K - 1) // 2)):
                v = q.get(key) if ok else None
                ok = ok and isinstance(v, list) and len(v) == n and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)
            if not ok:
                fail(f"arrival {a}, question {t}", f"needs text 'q', 'U' of {K} finite numbers and 'P' of "
                                                  f"{K * (K - 1) // 2} (the upper triangle over {K} personas)")


def load_sample(path: str | Path) -> xr.Dataset:
    """Read the site sample JSON into a world Dataset (validated by save_world/load_world)."""
    path = Path(path)
    try:
        raw = json.loads(read_regular_text(path, SAMPLE_BYTES))
        personas = [p["short"] for p in raw["personas"]]
        arrivals = raw["arrivals"]
    except (UnreadableFileError, ValueError, RecursionError, KeyError, TypeError) as exc:    # ValueError: JSON, huge ints
        raise WorldFormatError(f"sample {path}: not the TutorDuel site sample ({type(exc).__name__}: {exc})") from None
    _check_structure(path, personas, arrivals)
    labels = raw.get("labels", {})
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise WorldFormatError(f"sample {path}: labels: expected an object of profile key -> label text")
    K = len(personas)
    iu, ju = np.triu_indices(K, 1)
    profiles = sorted({a["profile_key"] for a in arrivals})
    profile_index = {p: i for i, p in enumerate(profiles)}
    S = len(arrivals[0]["qs"])
    n_q = len(arrivals) * S
    check_memory(8 * (len(profiles) * n_q * K * (K + 1) + n_q * K * (K + 1) * 3),
                 f"the sample {path} as a world ({len(profiles):,} profiles x {n_q:,} questions x {K} personas)")
    probs = np.full((len(profiles), n_q, K, K), np.nan)
    U = np.full((len(profiles), n_q, K), np.nan)
    texts, sched_s, sched_q = [], [], []
    for a, arr in enumerate(arrivals):
        if len(arr["qs"]) != S:
            raise WorldFormatError(f"sample {path}: arrival {a} has {len(arr['qs'])} questions, expected {S}")
        s = profile_index[arr["profile_key"]]
        sched_s.append(s)
        sched_q.append(list(range(a * S, (a + 1) * S)))
        for t, q in enumerate(arr["qs"]):
            qi = a * S + t
            P = np.full((K, K), 0.5)
            P[iu, ju] = q["P"]
            P[ju, iu] = 1.0 - np.asarray(q["P"])
            probs[s, qi] = P
            U[s, qi] = q["U"]
            texts.append(q["q"])
    counts = Counter(last_sentence(t) for t in texts)
    cues = sorted(c for c, n in counts.items() if n > 1)        # a cue recurs; a stray split does not

    longest_cue = _suffix_finder(cues)

    def cue_of(text):
        hit = longest_cue(text.rstrip())
        if hit is None:
            raise WorldFormatError(f"sample {path}: question {text[:60]!r}... ends with none of the {len(cues)} cues")
        return hit
    reach = ~np.isnan(U[..., 0])
    beta = fit_click_scale(order_averaged(probs[reach]), U[reach])
    features = np.concatenate([np.broadcast_to(np.eye(K), (n_q, K, K)), np.zeros((n_q, K, 1))], axis=2)
    rounds = np.arange(n_q) % S
    return xr.Dataset(
        {
            "features": (("question", "persona", "feature"), features),
            "probs": (("student", "question", "first", "second"), probs),
            "utilities": (("student", "question", "persona"), U),
            "question_topic": (("question",), np.array([f"arrival-{i // S:02d}-chain-{(i % S) // 3:d}" for i in range(n_q)])),
            "question_chain": (("question",), ((rounds // 3) % 2).astype(np.int64)),
            "question_kind": (("question",), np.array([KINDS[r % 3] for r in rounds])),
            "question_cue": (("question",), np.array([cue_of(t) for t in texts], dtype=np.int64)),
            "question_text": (("question",), np.array(texts)),
            "student_profile": (("student",), np.array(profiles)),
            "student_traits": (("student",), np.array([labels.get(p, "") for p in profiles])),
            "student_quirks": (("student",), np.array(["" for _ in profiles])),
            "schedule_student": (("arrival",), np.array(sched_s, dtype=np.int64)),
            "schedule_question": (("arrival", "round"), np.array(sched_q, dtype=np.int64)),
        },
        coords={"student": np.arange(len(profiles)), "question": np.arange(n_q), "persona": personas,
                "first": personas, "second": personas, "feature": [f"e_{p}" for p in personas] + ["g"]},
        attrs={"roster": "sample", "arrivals": len(arrivals), "topics_per_session": 4, "chains_per_topic": 2,
               "questions_per_chain": 3, "arrival_mode": "fixed", "held_out": 0, "rater_available": 0,
               "beta": beta, "bank_size": 16, "format_version": FORMAT_VERSION, "generator": "site-sample",
               "description": f"{len(arrivals)} real arrivals of the reference's held-out-profile roster (judge data; "
                              "no rater feature)",
               "source": str(raw.get("source", "")), "cues": "\n".join(cues)},
    )

"""The full leaderboard: every policy over the evaluation rosters, with the published scores beside
ours (fidelity), learning curves per roster, a markdown table and an HTML page.

Runs come from the run store (``online.sweep.run_sweep``), so an interrupted leaderboard
resumes where it stopped. Held-out rosters are only opened with allow_test.
"""
from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np

from tdmodels.atomic_file import atomic_save

# The reference paper's leaderboard (scores), from ../shared/COMPETITORS.md.
# Roster letters there: U test_profiles, C composite, I quirky, T test_topics, D dev.
PUBLISHED = {
    "random": (0, 0, 0, 0, 0),
    "best fixed pair (everyone, hindsight)": (5, 17, 22, 44, 41),
    "per-user linear oracle": (85, 81, 82, 84, 85),
    "rucb": (17, 32, 34, 41, 37),
    "pooled": (17, 31, 33, 39, 31),
    "colstim": (33, 27, 28, 30, 30),
    "coldb": (22, 38, 38, 43, 41),
    "coldb-lr": (22, 34, 36, 43, 40),
    "meta-ts": (23, 34, 35, 42, 39),
    "hierts": (23, 37, 38, 43, 40),
    "no-transfer": (30, 27, 28, 29, 29),
    "coduel": (48, 44, 46, 54, 51),
}
PUBLISHED_ROSTERS = ("test_profiles", "composite", "quirky", "test_topics", "dev")
SEEDS = {"dev": 32, "test_topics": 64, "test_profiles": 64, "composite": 32, "quirky": 32}
# The spec we run for each published row. Pooled: Thompson pairs (greedy pairs on one shared
# posterior lock onto a pair; dev seeds 0-2 scored -10.9, 41.7, 0.5 greedy, 43.4, 42.1, 39.4 Thompson).
POLICIES = {"coduel": "coduel", "no-transfer": "no-transfer", "rucb": "rucb", "pooled": 'pooled[rule="thompson"]',
            "colstim": "colstim", "coldb": "coldb", "coldb-lr": "coldb-lr", "meta-ts": "meta-ts", "hierts": "hierts",
            "random": "random", "tempered-kg": "tempered-kg"}


def display_name(spec_or_label: str) -> str:
    """The published row's name for a policy spec we run for it (any spelling), else the text itself."""
    from online.registry import PolicySpecError, canonical_spec

    for name, spec in POLICIES.items():
        try:
            if canonical_spec(spec) == canonical_spec(spec_or_label):
                return name
        except PolicySpecError:
            return spec_or_label
    return spec_or_label


def published(name: str, roster: str) -> float | None:
    """The published score of a policy (published name or spec) or reference row on a roster, None if not published."""
    name = display_name(name) if name not in PUBLISHED else name
    if roster not in PUBLISHED_ROSTERS or name not in PUBLISHED:
        return None
    return float(PUBLISHED[name][PUBLISHED_ROSTERS.index(roster)])


def fidelity_table(lines_by_roster: dict[str, list[dict]]) -> str:
    """Markdown: one row per policy, per roster 'ours (published)'; reference rows in italics."""
    rosters = list(lines_by_roster)
    names, kinds = [], {}
    lines_by_roster = {r: [{**ln, "name": display_name(ln["name"]) if ln["kind"] == "policy" else ln["name"]}
                           for ln in lines] for r, lines in lines_by_roster.items()}
    for lines in lines_by_roster.values():
        for ln in lines:
            if ln["name"] not in names:
                names.append(ln["name"])
                kinds[ln["name"]] = ln["kind"]
    names.sort(key=lambda n: (kinds[n] == "reference", n))
    out = ["| policy | " + " | ".join(f"{r} (seeds)" for r in rosters) + " |", "|---" * (len(rosters) + 1) + "|"]
    for n in names:
        cells = []
        for r in rosters:
            ln = next((x for x in lines_by_roster[r] if x["name"] == n), None)
            if ln is None:
                cells.append("")
                continue
            pub = published(n, r)
            se = f" ± {ln['score'][1]:.1f}" if np.isfinite(ln["score"][1]) else ""
            cells.append(f"{ln['score'][0]:.1f}{se} [{ln['n']}]" + (f" ({pub:.0f})" if pub is not None else ""))
        label = f"*{n}*" if kinds[n] == "reference" else n
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def findings(lines_by_roster: dict[str, list[dict]]) -> list[str]:
    """Which of the paper's findings hold on our simulator, each as one line with the numbers."""
    out = []
    score = {r: {(display_name(ln["name"]) if ln["kind"] == "policy" else ln["name"]): ln["score"][0] for ln in lines}
             for r, lines in lines_by_roster.items()}
    policies = {r: {display_name(ln["name"]): ln["score"][0] for ln in lines if ln["kind"] == "policy"}
                for r, lines in lines_by_roster.items()}
    for r, s in score.items():
        pol = {n: v for n, v in policies[r].items() if n != "random" and n in PUBLISHED}     # the paper's policies
        if "coduel" in pol:
            best = max(pol, key=pol.get)
            out.append(f"{r}: CODuel first among the paper's policies: "
                       f"{'yes' if best == 'coduel' else f'no ({best} {pol[best]:.1f})'} (CODuel {pol['coduel']:.1f})")
            beyond = {n: v for n, v in policies[r].items() if n not in PUBLISHED}
            if beyond:
                out.append(f"{r}: policies beyond the paper's, against CODuel: "
                           + ", ".join(f"{n} {v:.1f} ({v - pol['coduel']:+.1f})" for n, v in sorted(beyond.items())))
        if "no-transfer" in s:
            sharing = [n for n in ("rucb", "pooled", "coldb", "coldb-lr", "meta-ts", "hierts") if n in s]
            if sharing:
                above = [n for n in sharing if s[n] > s["no-transfer"]]
                expect = "below" if r == "test_profiles" else "above" if r in ("composite", "quirky") else None
                if expect:
                    ok = (len(above) == 0) if expect == "below" else (len(above) == len(sharing))
                    out.append(f"{r}: sharing methods {expect} no-transfer ({s['no-transfer']:.1f}): "
                               f"{'holds' if ok else 'does not hold'} ({', '.join(f'{n} {s[n]:.1f}' for n in sharing)})")
        oracle = s.get("per-user linear oracle")
        if oracle is not None:
            out.append(f"{r}: per-user linear oracle {oracle:.1f} (published 81-85; within 2 points: "
                       f"{'holds' if 81 - 2 <= oracle <= 85 + 2 else 'does not hold'})")
    return out


def write_page(path: str | Path, table: str, findings_lines: list[str], figures: dict[str, Path]) -> Path:
    """A self-contained HTML page: the fidelity table, the findings and the curve PNGs embedded."""
    rows = []
    for line in table.splitlines():
        if line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        tag = "th" if not rows else "td"
        rows.append("<tr>" + "".join(f"<{tag}>{html.escape(c.strip('*'))}</{tag}>" for c in cells) + "</tr>")
    imgs = "".join(f"<h3>{html.escape(r)}</h3><img src='data:image/png;base64,"
                   f"{base64.b64encode(Path(p).read_bytes()).decode()}'/>" for r, p in figures.items())
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>TutorDuel leaderboard</title></head><body>"
            "<h1>TutorDuel leaderboard</h1><p>Score (mean ± s.e. over seeds) [seeds] (published).</p>"
            f"<table border=1 cellpadding=3>{''.join(rows)}</table><h2>Findings of the paper on this simulator</h2>"
            f"<ul>{''.join(f'<li>{html.escape(x)}</li>' for x in findings_lines)}</ul><h2>Learning curves</h2>{imgs}"
            "</body></html>")
    return atomic_save(path, lambda tmp: tmp.write_text(page))

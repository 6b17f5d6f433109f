"""The full leaderboard: every policy over the evaluation rosters, with the published scores beside
ours (fidelity), learning curves per roster, a markdown table and an HTML page.

Runs come from the run store (``online.sweep.run_sweep``), so an interrupted leaderboard
resumes where it stopped. Held-out rosters are only opened with allow_test.
"""
from __future__ import annotations

import base64
import functools
import html
import json
import re
from pathlib import Path

import numpy as np

from tdmodels.errors import check_flag

from diagnostics.paper_agreement import (SHARING, format_gap_agreement, format_plateaus, gap_agreement, plateau_agreement,
                                         published_column)
from diagnostics.page_links import GENERATOR_META, nav, save_page
from diagnostics.tuned_settings import TUNED_FILE, read_tuned_settings

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
# The spec run for each published row before any tuning: the factories' defaults, Pooled with Thompson pairs
# (greedy pairs on one shared posterior lock onto a pair; dev seeds 0-2 scored -10.9, 41.7, 0.5 greedy,
# 43.4, 42.1, 39.4 Thompson). A policy beyond the paper's joins only if it passes the robustness rule
# (``diagnostics.robustness``); tempered-kg does not (docs/results/stress.md), so it runs only when named.
UNTUNED = {"coduel": "coduel", "no-transfer": "no-transfer", "rucb": "rucb", "pooled": 'pooled[rule="thompson"]',
           "colstim": "colstim", "coldb": "coldb", "coldb-lr": "coldb-lr", "meta-ts": "meta-ts", "hierts": "hierts",
           "random": "random"}
# Rows that keep their untuned spec whatever the tuned-settings file says: CODuel keeps the paper's settings
# (its tuning is reported, not used), no-transfer is its ablation and moves only with it, random has none.
PAPER_SETTINGS = ("coduel", "no-transfer", "random")
UNTUNED_MARK = " (untuned)"
# Policies beyond the paper's that the leaderboard runs by default, each judged by the robustness rule against
# CODuel wherever it runs (docs/results/recovery.md) and marked on every table.
BEYOND_PAPER = {"coduel-change-point": "coduel-change-point"}
BEYOND_MARK = " (beyond the paper)"


def default_policies() -> list[str]:
    """The specs `tutorduel leaderboard` runs unless told otherwise: the paper's rows (`leaderboard_policies`),
    then the policies beyond the paper's (`BEYOND_PAPER`)."""
    return [*leaderboard_policies().values(), *BEYOND_PAPER.values()]


def leaderboard_policies(path: str | Path = TUNED_FILE) -> dict[str, str]:
    """{published row: the spec the leaderboard runs for it}: each competitor's settings chosen on dev
    (``diagnostics.tuned_settings``), the untuned spec where the file has no entry for it, and
    `PAPER_SETTINGS` as they are. Read again whenever the file changes."""
    path = Path(path)
    try:
        stamp = (path.stat().st_mtime_ns, path.stat().st_size)
    except OSError:
        stamp = None
    return dict(_policies(str(path), stamp))


@functools.lru_cache(maxsize=8)
def _policies(path: str, stamp) -> tuple:
    tuned = read_tuned_settings(path)
    return tuple((name, tuned[name]["spec"] if name in tuned and name not in PAPER_SETTINGS else spec)
                 for name, spec in UNTUNED.items())


def display_name(spec_or_label: str) -> str:
    """The published row's name for the spec the leaderboard runs for it (any spelling); "NAME (untuned)" for
    a row's untuned spec where the leaderboard runs tuned settings; "NAME (beyond the paper)" for a default
    policy beyond the paper's (`BEYOND_PAPER`); else the text itself."""
    from online.registry import PolicySpecError, canonical_spec

    try:
        canonical = canonical_spec(spec_or_label)
    except PolicySpecError:
        return spec_or_label
    for name, spec in leaderboard_policies().items():
        if canonical_spec(spec) == canonical:
            return name
    for name, spec in UNTUNED.items():
        if canonical_spec(spec) == canonical:
            return name + UNTUNED_MARK
    for name, spec in BEYOND_PAPER.items():
        if canonical_spec(spec) == canonical:
            return name + BEYOND_MARK
    return spec_or_label


def published(name: str, roster: str) -> float | None:
    """The published score of a policy (published name or spec) or reference row on a roster (a real-session
    roster: on the held-out profiles, ``diagnostics.paper_agreement.published_column``), None if not published."""
    name = display_name(name) if name not in PUBLISHED else name
    roster = published_column(roster)
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


def findings(lines_by_roster: dict[str, list[dict]], plateaus: dict[str, dict[str, float]] | None = None,
             curves: dict | None = None) -> list[str]:
    """Which of the paper's findings hold on our simulator, each as one line with the numbers: CODuel first,
    the sign of the sharing methods' gaps to no-transfer and each gap beside the published one
    (``diagnostics.paper_agreement``), the linear oracle's range, and with `plateaus` ({roster: {policy:
    our plateau}}) and `curves` (the published curves, ``diagnostics.published_curves``) each plateau beside
    the published one."""
    out = []
    score = {r: {(display_name(ln["name"]) if ln["kind"] == "policy" else ln["name"]): ln["score"][0] for ln in lines}
             for r, lines in lines_by_roster.items()}
    policies = {r: {display_name(ln["name"]): ln["score"][0] for ln in lines if ln["kind"] == "policy"}
                for r, lines in lines_by_roster.items()}
    signs = [0, 0]          # gap signs that agree with the published, cells, over the simulated rosters
    for r, s in score.items():
        column = published_column(r)
        pol = {n: v for n, v in policies[r].items() if n != "random" and n in PUBLISHED}     # the paper's policies
        if "coduel" in pol:
            best = max(pol, key=pol.get)
            out.append(f"{r}: CODuel first among the paper's policies: "
                       f"{'yes' if best == 'coduel' else f'no ({best} {pol[best]:.1f})'} (CODuel {pol['coduel']:.1f})")
            untuned = {n: v for n, v in policies[r].items() if n.endswith(UNTUNED_MARK)}
            beyond = {n: v for n, v in policies[r].items() if n not in PUBLISHED and n not in untuned}
            if beyond:
                out.append(f"{r}: policies beyond the paper's, against CODuel: "
                           + ", ".join(f"{n} {v:.1f} ({v - pol['coduel']:+.1f})" for n, v in sorted(beyond.items())))
            if untuned:
                out.append(f"{r}: the untuned defaults beside the settings chosen on dev: " + ", ".join(
                    f"{n} {v:.1f} ({pol[n[:-len(UNTUNED_MARK)]]:.1f} tuned)" if n[:-len(UNTUNED_MARK)] in pol
                    else f"{n} {v:.1f}" for n, v in sorted(untuned.items())))
        if "no-transfer" in s:
            sharing = [n for n in SHARING if n in s]
            if sharing:
                above = [n for n in sharing if s[n] > s["no-transfer"]]
                expect = "below" if column == "test_profiles" else "above" if column in ("composite", "quirky") else None
                if expect:
                    ok = (len(above) == 0) if expect == "below" else (len(above) == len(sharing))
                    out.append(f"{r}: sharing methods {expect} no-transfer ({s['no-transfer']:.1f}): "
                               f"{'holds' if ok else 'does not hold'} ({', '.join(f'{n} {s[n]:.1f}' for n in sharing)})")
        if column in PUBLISHED_ROSTERS:
            agreement = gap_agreement(pol, {n: published(n, r) for n in pol})
            if agreement is not None:
                out.append(format_gap_agreement(r, agreement))
                if column == r:
                    signs[0] += agreement.signs_agree
                    signs[1] += len(agreement.gaps)
        oracle = s.get("per-user linear oracle")
        if oracle is not None:
            out.append(f"{r}: per-user linear oracle {oracle:.1f} (published 81-85; within 2 points: "
                       f"{'holds' if 81 - 2 <= oracle <= 85 + 2 else 'does not hold'})")
        if plateaus and curves and r in plateaus and column in curves:
            pairs = plateau_agreement(plateaus[r], curves[column])
            if pairs:
                out.append(format_plateaus(r, pairs))
    if signs[1]:
        out.append(f"all simulated rosters: the sharing methods' gaps to no-transfer have the published sign in "
                   f"{signs[0]} of {signs[1]} cells")
    return out + published_agreement(policies)


def published_agreement(policies: dict[str, dict[str, float]]) -> list[str]:
    """How close the paper's policies (random excepted) come to their published scores: per roster the mean
    absolute difference, the same after one offset for the roster (ours minus published, averaged over its
    policies) and the rank correlation (Spearman) of ours with the published order; then over the cells of
    every simulated roster (a real-session roster is reported on its own line only). `policies`: {roster:
    {published name: our score}}."""
    from scipy.stats import spearmanr      # here: scipy.stats takes half a second to import, for this one figure

    out, diffs, shifted = [], [], []
    for r, scores in policies.items():
        pairs = [(v, published(n, r)) for n, v in scores.items() if n != "random" and n in PUBLISHED]
        pairs = [(v, p) for v, p in pairs if p is not None]
        if len(pairs) < 2:
            continue
        ours, pub = np.array(pairs).T
        d = np.abs(ours - pub)
        offset = float(np.mean(ours - pub))
        d_off = np.abs(ours - pub - offset)
        if published_column(r) == r:
            diffs.extend(d)
            shifted.extend(d_off)
        constant = np.ptp(ours) == 0 or np.ptp(pub) == 0
        rho = "undefined (one side all equal)" if constant else f"{spearmanr(ours, pub)[0]:.2f}"
        out.append(f"{r}: the paper's policies against their published scores: mean absolute difference "
                   f"{d.mean():.1f} points over {len(d)} policies ({d_off.mean():.1f} after the roster's offset "
                   f"{offset:+.1f}), rank correlation (Spearman) {rho}")
    if diffs:
        out.append(f"all simulated rosters: mean absolute difference from the published scores {np.mean(diffs):.1f} "
                   f"points over {len(diffs)} cells ({np.mean(shifted):.1f} after one offset per roster)")
    return out


PAGE_STYLE = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1180px;margin:24px auto;padding:0 16px;color:#1d232b}
h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.2em;margin:28px 0 8px}nav a{margin-right:14px}.muted{color:#667085}
table.lb{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
table.lb th{cursor:pointer;user-select:none;background:#f3f5f7}
table.lb th,table.lb td{padding:5px 8px;border-bottom:1px solid #e3e7eb;text-align:right;white-space:nowrap}
table.lb th:first-child,table.lb td:first-child{text-align:left}
tr.ref td{color:#667085;font-style:italic}td.best{font-weight:700;background:#ecfdf3}
.tabs button,.pols label{font:inherit;margin:0 6px 6px 0}.tabs button{padding:4px 10px;border-radius:6px;border:1px solid #94a3b8;background:#fff;cursor:pointer}
.tabs button.on{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
"""

PAGE_SCRIPT = r"""
function cellValue(td) { const x = parseFloat(td.textContent); return Number.isNaN(x) ? td.textContent : x; }
document.querySelectorAll('table.lb').forEach(table => {
  const body = table.tBodies[0];
  table.querySelectorAll('th').forEach((th, col) => th.onclick = () => {
    const dir = th.dataset.dir === 'desc' ? 'asc' : 'desc'; th.dataset.dir = dir;
    const rows = [...body.rows].sort((a, b) => {
      if (a.classList.contains('ref') !== b.classList.contains('ref')) return a.classList.contains('ref') ? 1 : -1;
      const x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
      const c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
      return dir === 'desc' ? -c : c;
    });
    rows.forEach(r => body.appendChild(r));
  });
});
const C = JSON.parse(document.getElementById('curves').textContent);
const rosters = Object.keys(C);
const palette = ['#1d4ed8', '#dc2626', '#15803d', '#9333ea', '#ea580c', '#0891b2', '#4d7c0f', '#be185d', '#475569', '#a16207', '#0f766e', '#7c3aed'];
const state = {roster: rosters[0], on: new Set(['coduel', 'tempered-kg', 'no-transfer', 'published: coduel', 'published: no-transfer'])};
function drawCurves() {
  const cur = C[state.roster] || {}, pols = Object.keys(cur).sort();
  document.getElementById('pols').innerHTML = pols.map((p, k) =>
    `<label style="color:${palette[k % palette.length]}"><input type="checkbox" data-p="${esc(p)}" ${state.on.has(p) ? 'checked' : ''}> ${esc(p)}</label>`).join('');
  document.querySelectorAll('#pols input').forEach(b => b.onchange = () => { b.checked ? state.on.add(b.dataset.p) : state.on.delete(b.dataset.p); drawCurves(); });
  const shown = pols.filter(p => state.on.has(p));
  const W = 760, H = 300, L = 46, B = 30;
  const all = shown.flatMap(p => [...cur[p].lo, ...cur[p].hi]);
  const xs = pols.length ? cur[pols[0]].x : [0, 1];
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(0, ...all), y1 = all.length ? Math.max(...all) : 1;
  const X = x => L + (W - L - 10) * (x - x0) / (x1 - x0 || 1), Y = y => H - B - (H - B - 10) * (y - y0) / (y1 - y0 || 1);
  let svg = `<svg width="${W}" height="${H}" role="img" aria-label="learning curves ${esc(state.roster)}">`;
  for (const t of [0, 0.25, 0.5, 0.75, 1]) { const y = y0 + t * (y1 - y0);
    svg += `<line x1="${L}" x2="${W - 10}" y1="${Y(y)}" y2="${Y(y)}" stroke="#eef0f2"/><text x="4" y="${Y(y) + 4}" font-size="11">${y.toFixed(2)}</text>`; }
  shown.forEach(p => { const c = cur[p], col = palette[pols.indexOf(p) % palette.length];
    const pts = v => v.map((y, k) => `${X(c.x[k]).toFixed(1)},${Y(y).toFixed(1)}`);
    svg += `<path d="M${pts(c.hi).join('L')}L${pts(c.lo).reverse().join('L')}Z" fill="${col}" opacity="0.15"/>`;
    svg += `<path d="M${pts(c.mean).join('L')}" fill="none" stroke="${col}" stroke-width="1.6"><title>${esc(p)}</title></path>`; });
  svg += `<text x="${W / 2}" y="${H - 6}" font-size="12">arrival</text></svg>`;
  document.getElementById('plot').innerHTML = svg;
  document.querySelectorAll('.tabs button').forEach(b => b.classList.toggle('on', b.dataset.r === state.roster));
}
document.getElementById('tabs').innerHTML = rosters.map(r => `<button data-r="${esc(r)}">${esc(r)}</button>`).join('');
document.querySelectorAll('.tabs button').forEach(b => b.onclick = () => { state.roster = b.dataset.r; drawCurves(); });
if (rosters.length) drawCurves();
"""

PAGE_JS = r"""const $ = id => document.getElementById(id);
const esc = x => String(x).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c]);
// numpy's pairwise summation, so that a page's sums (and scores) are numpy's to the last bit
function npSum(a, lo = 0, n = a.length) {
  if (n < 8) { let s = 0; for (let i = lo; i < lo + n; i++) s += a[i]; return s; }
  if (n <= 128) {
    const r = a.slice(lo, lo + 8); let i = 8;
    for (; i < n - (n % 8); i += 8) for (let k = 0; k < 8; k++) r[k] += a[lo + i + k];
    let s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) s += a[lo + i];
    return s;
  }
  let n2 = Math.floor(n / 2); n2 -= n2 % 8;
  return npSum(a, lo, n2) + npSum(a, lo + n2, n - n2);
}
"""  # shared by the play and watch pages

def _score(cell: str) -> float | None:
    try:
        return float(cell.split("±")[0].strip().strip("*"))
    except ValueError:
        return None


def write_page(path: str | Path, table: str, findings_lines: list[str], figures: dict[str, Path],
               curves: dict | None = None, extra_md: list[str] | None = None) -> Path:
    """A self-contained HTML page: the fidelity table (sortable; the best policy of each roster marked),
    the findings, `extra_md` (markdown lines: headings, paragraphs and tables, e.g. the stress section),
    learning curves with a roster and policy selector (`curves`: roster -> policy ->
    ``diagnostics.learning_curves.Curve``) and the curve PNGs embedded."""
    data = {r: {p: {"x": c.arrival.tolist(), "mean": c.mean.tolist(), "lo": c.lo.tolist(), "hi": c.hi.tolist()}
                for p, c in by.items()} for r, by in (curves or {}).items()}
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    imgs = "".join(f"<h3>{html.escape(r)}</h3><img alt='learning curves {html.escape(r)}' src='data:image/png;base64,"
                   f"{base64.b64encode(Path(p).read_bytes()).decode()}' style='max-width:100%'/>" for r, p in figures.items())
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>{GENERATOR_META}<title>TutorDuel leaderboard</title>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'><style>{PAGE_STYLE}</style></head><body>"
            f"{nav(path)}<h1>TutorDuel leaderboard</h1><p class='muted'>Score, mean ± s.e. over seeds [seeds] (published "
            "score in brackets); reference rows in italics; the best policy of each roster in bold. Click a column to sort.</p>"
            f"{table_html(table)}"
            "<h2>Findings of the paper on this simulator</h2>"
            f"<ul>{''.join(f'<li>{html.escape(x)}</li>' for x in findings_lines)}</ul>"
            f"{markdown_html(extra_md or [], Path(path).parent)}"
            "<h2>Learning curves</h2><p class='muted'>Excess regret per user, centred 25-arrival moving mean with its 95% "
            "band over seeds. Choose a roster and the policies to show.</p><div class='tabs' id='tabs'></div>"
            "<div class='pols' id='pols'></div><div id='plot'></div>"
            f"<details><summary>static figures (all policies)</summary>{imgs}</details>"
            f"<script type='application/json' id='curves'>{payload}</script><script>{PAGE_JS}{PAGE_SCRIPT}</script></body></html>")
    return save_page(path, page)


def table_html(table: str, marks_best: bool = True) -> str:
    """A markdown table as a sortable HTML table (reference rows, in italics, kept last; with `marks_best`
    the best policy of each column in bold)."""
    marks_best = check_flag("marks_best", marks_best)
    lines = [ln for ln in table.splitlines() if ln.startswith("|") and not ln.startswith("|---")]
    head = [c.strip() for c in lines[0].strip("|").split("|")] if lines else []
    body = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[1:]]
    is_ref = [r[0].startswith("*") for r in body]
    best = {}
    for col in range(1, len(head)):
        vals = [(_score(r[col]), k) for k, r in enumerate(body) if not is_ref[k] and col < len(r)]
        vals = [(v, k) for v, k in vals if v is not None]
        if vals and marks_best:
            best[col] = max(vals)[1]
    rows = "".join(
        f"<tr class='{'ref' if is_ref[k] else 'policy'}'>" + "".join(
            f"<td class='{'best' if best.get(c) == k else ''}'>{html.escape(x.strip('*'))}</td>" for c, x in enumerate(r))
        + "</tr>" for k, r in enumerate(body))
    thead = "".join(f"<th title='click to sort'>{html.escape(h)}</th>" for h in head)
    return f"<table class='lb'><thead><tr>{thead}</tr></thead><tbody>{rows}</tbody></table>"


def _image(line: str, folder) -> str | None:
    """An ``<img>`` with the PNG a markdown image line names in `folder` embedded; None for any other line (or
    a name that is not a plain PNG file there)."""
    m = re.fullmatch(r"!\[([^\]]*)\]\(([\w.-]+\.png)\)", line.strip())
    if m is None or folder is None or not (Path(folder) / m.group(2)).is_file():
        return None
    data = base64.b64encode((Path(folder) / m.group(2)).read_bytes()).decode()
    return f"<img alt='{html.escape(m.group(1))}' src='data:image/png;base64,{data}' style='max-width:100%'/>"


def markdown_html(lines: list[str], folder: str | Path | None = None) -> str:
    """The few markdown forms the leaderboard writes (## and ### headings, tables, paragraphs, and images
    ``![alt](NAME.png)`` of a PNG in `folder`, embedded) as HTML; a table is sortable, with no best cell marked."""
    out, block = [], []

    def flush():
        if block:
            out.append(table_html("\n".join(block), marks_best=False))
            block.clear()
    for ln in lines:
        if ln.startswith("|"):
            block.append(ln)
            continue
        flush()
        if ln.startswith("### "):
            out.append(f"<h3>{html.escape(ln[4:])}</h3>")
        elif ln.startswith("## "):
            out.append(f"<h2>{html.escape(ln[3:])}</h2>")
        elif (image := _image(ln, folder)) is not None:
            out.append(image)
        elif ln.strip():
            out.append(f"<p>{html.escape(ln)}</p>")
    flush()
    return "".join(out)

""""Be the policy": one session of a world played by hand, in a self-contained page or in a terminal.

The visitor sees each scheduled question and the six personas, picks two (the first picked is
shown first), and the click is drawn exactly as the replay draws it, ``u[arrival, round] <
P[student, question, first, second]`` with the run's own uniforms (common random numbers: the
same pair gets the same click a policy would get). After the click the hidden utilities U are
revealed; the round's strong regret is (U* - U_i) + (U* - U_j), and the running score is
100 (R_rand - R) / (R_rand - G) over the rounds so far, as ``online.scoring`` scores a run. At
the end the visitor's score stands beside no-transfer's and CODuel's on the same arrival, taken
from their full runs of the same seed (so CODuel's has learned from the arrivals before it).

`play_data` collects what the page needs; `write_play_page` writes it (data inline, no network);
`play_in_terminal` is the same session at a prompt.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import xarray as xr

from online.replay import replay
from online.schedule import make_schedule, session_utilities
from online.scoring import benchmark_score, floor_regret, random_regret, strong_regret
from diagnostics.leaderboard_report import PAGE_JS
from diagnostics.page_links import GENERATOR_META, nav, save_page
from tdmodels.catalog import PERSONAS
from tdmodels.limits import MAX_PAGE_ARRIVALS
from tdmodels.run_inputs import checked_count, checked_seed, checked_world
from tdmodels.errors import check_flag

COMPARED = ("no-transfer", "coduel")


def _full_names(short: list[str]) -> list[str]:
    full = {s: f for f, s, _ in PERSONAS}
    return [full.get(s, s) for s in short]


def play_data(world: xr.Dataset, seed: int, sessions: int = 48, compare: bool = True) -> dict:
    """The first `sessions` arrivals of (world, seed), as plain lists for the page.

    Parameters
    ----------
    world : xarray.Dataset
    seed : int
        The run's seed: its schedule and click uniforms.
    sessions : int
        How many arrivals the page offers (a selector picks one).
    compare : bool
        Embed no-transfer's and CODuel's per-arrival figures from full runs of the same seed.

    Returns
    -------
    dict
        JSON-ready: personas, and per arrival the question texts, P [S, K, K], U [S, K], uniforms [S],
        floor and random regret per round, and the compared policies' regret, floor and random sums.
    """
    compare = check_flag("compare", compare)
    world, seed = checked_world(world), checked_seed(seed)
    sessions = checked_count(sessions, "play: sessions", 1, MAX_PAGE_ARRIVALS)
    sched = make_schedule(world, seed)
    n = min(sessions, sched.question.shape[0])
    U = session_utilities(world, sched)[:n]
    P = world["probs"].values[sched.student[:n, None], sched.question[:n]]          # [n, S, K, K]
    text = np.asarray(world["question_text"].values).astype(str)[sched.question[:n]]
    G, Rr = floor_regret(U), random_regret(U)
    short = [str(x) for x in world["persona"].values]
    out = {"world": str(world.attrs["roster"]), "seed": int(seed), "personas": short, "names": _full_names(short),
           "arrivals": []}
    rows = {spec: replay(world, seed, spec) for spec in COMPARED} if compare else {}
    for a in range(n):
        item = {"student": int(sched.student[a]), "questions": text[a].tolist(), "P": P[a].tolist(),
                "U": U[a].tolist(), "u": sched.uniform[a].tolist(), "floor": G[a].tolist(),
                "random": Rr[a].tolist(), "policies": {}}
        for spec, row in rows.items():
            pu = row["per_user"]
            item["policies"][spec] = {"regret": pu["regret"][a], "floor": pu["floor"][a], "random": pu["random"][a],
                                      "score": float(benchmark_score(pu["regret"][a], pu["floor"][a], pu["random"][a]))}
        out["arrivals"].append(item)
    return out


def session_score(data: dict, arrival: int, pairs) -> tuple[float, list[int]]:
    """The score of `pairs` [(i, j)] * S on one arrival of `data`, and the clicks they get, by
    ``online.scoring`` (the figure the page must show)."""
    item = data["arrivals"][arrival]
    U = np.array(item["U"])[None]
    p = np.array(pairs)[None]
    r = strong_regret(U, p[..., 0], p[..., 1])
    clicks = [int(u < item["P"][t][i][j]) for t, ((i, j), u) in enumerate(zip(pairs, item["u"]))]
    return float(benchmark_score(r.sum(), np.sum(item["floor"]), np.sum(item["random"]))), clicks


_STYLE = """
body{font:16px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:920px;margin:24px auto;padding:0 16px;color:#1d232b}
h1{font-size:1.5em;margin:0 0 4px}.sub{color:#5b6670;margin:0 0 16px}
.card{border:1px solid #d9dee3;border-radius:10px;padding:14px 18px;margin:12px 0;background:#fbfcfd}
.q{font-size:1.12em;margin:6px 0 12px}
.personas{display:grid;grid-template-columns:repeat(3,1fr);gap:8px}
button.persona{font:inherit;padding:10px;border:2px solid #c5ccd3;border-radius:8px;background:#fff;cursor:pointer;text-align:left}
button.persona.picked{border-color:#2563eb;background:#eef4ff}
button.persona.winner{border-color:#15803d;background:#ecfdf3}
button.persona:disabled{cursor:default;color:inherit}
.bar{height:8px;background:#e6e9ed;border-radius:4px;margin-top:6px;overflow:hidden}.bar>span{display:block;height:100%;background:#64748b}
.row{display:flex;gap:18px;flex-wrap:wrap;align-items:baseline}.big{font-size:1.6em;font-weight:600}
button.act{font:inherit;padding:8px 16px;border-radius:8px;border:1px solid #2563eb;background:#2563eb;color:#fff;cursor:pointer}
button.act:disabled{opacity:.4;cursor:default}
table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #e3e7eb;text-align:right}th:first-child,td:first-child{text-align:left}
.muted{color:#6b7680}
"""

_SCRIPT = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const K = D.personas.length;
const S = D.arrivals[0].U.length;
const st = {a: 0, t: 0, picks: [], pairs: [], clicks: [], rs: [], regret: 0, floor: 0, random: 0, revealed: false};
window.tdState = st;
function score(R, G, Rr) { return Rr > G ? 100 * (Rr - R) / (Rr - G) : NaN; }
function fmt(x) { return Number.isFinite(x) ? x.toFixed(2) : '–'; }
function start(a) {
  Object.assign(st, {a: a, t: 0, picks: [], pairs: [], clicks: [], rs: [], regret: 0, floor: 0, random: 0, revealed: false, done: false, score: null});
  $('end').hidden = true; $('game').hidden = false; render();
}
function render() {
  const item = D.arrivals[st.a];
  $('round').textContent = `round ${st.t + 1} of ${S}`;
  $('question').textContent = item.questions[st.t];
  const box = $('personas'); box.innerHTML = '';
  for (let k = 0; k < K; k++) {
    const b = document.createElement('button');
    b.className = 'persona'; b.dataset.persona = k;
    const order = st.picks.indexOf(k);
    if (order >= 0) b.classList.add('picked');
    let inner = `<b>${esc(D.names[k])}</b>` + (order >= 0 ? ` <span class="muted">(shown ${order === 0 ? 'first' : 'second'})</span>` : '');
    if (st.revealed) {
      const U = item.U[st.t];
      inner += `<div class="muted">U = ${U[k].toFixed(3)}</div><div class="bar"><span style="width:${(100 * U[k]).toFixed(1)}%"></span></div>`;
      if (k === st.winner) b.classList.add('winner');
      b.disabled = true;
    }
    b.innerHTML = inner;
    b.onclick = () => pick(k);
    box.appendChild(b);
  }
  $('show').disabled = st.picks.length !== 2 || st.revealed;
  $('next').disabled = !st.revealed;
  $('regret').textContent = fmt(st.regret);
  $('score').textContent = fmt(score(st.regret, st.floor, st.random));
}
function pick(k) {
  if (st.revealed) return;
  const at = st.picks.indexOf(k);
  if (at >= 0) st.picks.splice(at, 1); else if (st.picks.length < 2) st.picks.push(k);
  render();
}
function show() {
  if (st.picks.length !== 2 || st.revealed) return;
  const item = D.arrivals[st.a], t = st.t, [i, j] = st.picks;
  const y = item.u[t] < item.P[t][i][j] ? 1 : 0;
  const U = item.U[t], top = Math.max(...U);
  const r = 2 * top - U[i] - U[j];
  st.rs.push(r);
  st.regret = npSum(st.rs); st.floor = npSum(item.floor.slice(0, t + 1)); st.random = npSum(item.random.slice(0, t + 1));
  st.pairs.push([i, j]); st.clicks.push(y); st.winner = y ? i : j; st.revealed = true;
  $('last').textContent = `${D.names[st.winner]} won the click. This round's regret ${r.toFixed(3)}; the best pair's ${item.floor[t].toFixed(3)}, random pairs' ${item.random[t].toFixed(3)}.`;
  render();
}
function next() {
  if (!st.revealed) return;
  st.t += 1; st.picks = []; st.revealed = false; $('last').textContent = '';
  if (st.t === S) return finish();
  render();
}
function finish() {
  $('game').hidden = true; $('end').hidden = false;
  const item = D.arrivals[st.a];
  const mine = score(st.regret, st.floor, st.random);
  st.score = mine; st.done = true;
  let rows = `<tr><td>you</td><td>${fmt(mine)}</td><td>${fmt(st.regret)}</td></tr>`;
  for (const [name, p] of Object.entries(item.policies))
    rows += `<tr><td>${esc(name)}</td><td>${fmt(p.score)}</td><td>${fmt(p.regret)}</td></tr>`;
  rows += `<tr><td class="muted">random pairs</td><td>0.00</td><td>${fmt(st.random)}</td></tr>`;
  rows += `<tr><td class="muted">the two best every round</td><td>100.00</td><td>${fmt(st.floor)}</td></tr>`;
  $('final').innerHTML = `<table><tr><th></th><th>score</th><th>regret</th></tr>${rows}</table>`;
  $('final-score').textContent = fmt(mine);
}
const sel = $('arrival');
D.arrivals.forEach((it, a) => { const o = document.createElement('option'); o.value = a; o.textContent = `arrival ${a + 1}`; sel.appendChild(o); });
sel.onchange = () => start(Number(sel.value));
$('show').onclick = show; $('next').onclick = next; $('again').onclick = () => start(st.a);
const h = new URLSearchParams(location.hash.slice(1)).get('arrival');
start(h !== null && Number(h) >= 0 && Number(h) < D.arrivals.length ? Number(h) : 0);
sel.value = st.a;
"""


def write_play_page(path: str | Path, data: dict) -> Path:
    """Write the self-contained "be the policy" page for `data` (from `play_data`)."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = f"Be the policy: {html.escape(data['world'])}, seed {data['seed']}"
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">{GENERATOR_META}<title>{title}</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_STYLE}</style></head><body>
{nav(path)}
<h1>Be the policy for one student</h1>
<p class="sub">World <b>{html.escape(data['world'])}</b>, seed {data['seed']}. Each round, pick two of the six personas
(the first you pick is shown first) and see which one the student clicks. Strong regret counts what both shown answers
lose against the best one; random pairs score 0, the two best personas every round score 100.
<label>Session: <select id="arrival"></select></label></p>
<div id="game" class="card"><div class="row"><span class="muted" id="round"></span>
<span>regret <b id="regret">0</b></span><span>score so far <b id="score">–</b></span></div>
<div class="q" id="question"></div><div class="personas" id="personas"></div>
<p class="row"><button class="act" id="show">Show these two</button><button class="act" id="next">Next question</button></p>
<p id="last" class="muted"></p></div>
<div id="end" class="card" hidden><p>Your score for this session: <span class="big" id="final-score"></span></p>
<div id="final"></div><p class="muted">no-transfer and CODuel played this arrival within their full run of the same seed
(CODuel had learned from the students before it); they saw the same clicks for the same pairs.</p>
<button class="act" id="again">Play this session again</button></div>
<script type="application/json" id="data">{payload}</script><script>{PAGE_JS}{_SCRIPT}</script></body></html>"""
    return save_page(path, page)


def play_in_terminal(data: dict, arrival: int = 0, ask=input, say=print) -> float:
    """The same session at a prompt: `ask(prompt)` returns a line with two persona numbers (1-6), or
    "q" to stop. Returns the score (NaN if stopped early)."""
    item, names = data["arrivals"][arrival], data["names"]
    K, S = len(names), len(item["U"])
    pairs = []
    say(f"{data['world']}, seed {data['seed']}, arrival {arrival + 1}: pick two personas by number, the first shown first.")
    for t in range(S):
        say(f"\nround {t + 1}/{S}: {item['questions'][t]}")
        say("  " + "   ".join(f"{k + 1} {n}" for k, n in enumerate(names)))
        while True:
            try:
                line = ask("your pair> ").strip().lower()
            except EOFError:
                line = "q"
            if line in ("q", "quit", "exit"):
                say(f"stopped after {t} of {S} rounds")
                return float("nan")
            parts = line.replace(",", " ").split()
            numbers = all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts)    # not '²', not 5,000 digits
            if len(parts) == 2 and numbers and all(1 <= int(p) <= K for p in parts) and parts[0] != parts[1]:
                i, j = int(parts[0]) - 1, int(parts[1]) - 1
                break
            say(f"  two different numbers from 1 to {K}, e.g. '1 4' (q to stop)")
        pairs.append((i, j))
        U = item["U"][t]
        won = i if item["u"][t] < item["P"][t][i][j] else j
        r = 2 * max(U) - U[i] - U[j]
        say(f"  {names[won]} won. U: " + ", ".join(f"{n} {u:.3f}" for n, u in zip(names, U))
            + f"; regret {r:.3f} (best pair {item['floor'][t]:.3f}, random {item['random'][t]:.3f})")
    score, _ = session_score(data, arrival, pairs)
    say(f"\nyour score {score:.2f}" + "".join(f"; {k} {p['score']:.2f}" for k, p in item["policies"].items()))
    return score


__all__ = ["play_data", "write_play_page", "play_in_terminal", "session_score"]

""""Watch the policy learn": a CODuel run replayed round by round in a self-contained page.

For each arrival of (world, seed), up to `arrivals`: every round's shown pair and click, the hidden
utilities U, and CODuel's belief after the click as utilities of the question's personas (mean
and sd under the mixture belief, on the recalibrated features the user arrived under, centred
over the six personas (a common shift of all utilities is not identified from clicks):
mean_p = sum_k w_k (P m_k)_p, var_p = sum_k w_k ((P S_k P')_pp + (P m_k)_p^2) - mean_p^2, in logits),
the component weights, whether the population learner chose the pairs (the gate) and the
session's running log-likelihood ratio. Beside it the learning curve: excess regret per user,
25-arrival moving mean over `curve_seeds` full runs with its 95% band
(``diagnostics.learning_curves``), the watched seed's own curve on top.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import xarray as xr

from diagnostics.learning_curves import learning_curve
from online.policies.coduel import recalibrate
from online.replay import prepare_run, play, replay
from online.scoring import floor_regret, random_regret, strong_regret
from diagnostics.leaderboard_report import PAGE_JS
from diagnostics.page_links import GENERATOR_META, nav, save_page
from tdmodels.catalog import PERSONAS
from tdmodels.limits import MAX_CURVE_SEEDS, MAX_PAGE_ARRIVALS
from tdmodels.run_inputs import checked_count


def _belief_utilities(log_w, means, covs, P):
    """Mean and sd [K] of the persona utilities P theta under a mixture belief."""
    w = np.exp(log_w - np.max(log_w))
    w = np.where(np.isfinite(log_w), w, 0.0)
    w = w / w.sum()
    mu_k = means @ P.T                                            # [C, K]
    var_k = np.einsum("pd,cde,pe->cp", P, covs, P)
    mean = w @ mu_k
    var = w @ (var_k + mu_k ** 2) - mean ** 2
    return mean, np.sqrt(np.maximum(var, 0.0))


def watch_data(world: xr.Dataset, seed: int, arrivals: int = 60, curve_seeds: int = 4) -> dict:
    """A CODuel run of (world, seed) over its first `arrivals`, recorded for the watch page.

    Returns
    -------
    dict
        JSON-ready: personas; per arrival the rounds (pair, click, U, belief mean and sd, weights,
        running gate log-likelihood ratio), whether the population learner chose, the per-user
        regret, floor and random sums; the learning curves (all `curve_seeds` full runs, and the seed's).
    """
    checked_count(curve_seeds, "watch: curve_seeds", 1, MAX_CURVE_SEEDS)
    checked_count(arrivals, "watch: arrivals", 1, MAX_PAGE_ARRIVALS)
    run = prepare_run(world, seed, "coduel", arrivals)
    arrived, after = [], []                      # CODuel's ArrivalInfo per arrival, UpdateInfo per round

    def keep(kind, a, t, info):
        if kind == "start_session":
            arrived.append(info)
            after.append([])
        elif kind == "update":
            after[a].append(info)

    played = play(run, observe=keep)
    sched, U = run.sched, run.U
    N, S = sched.question.shape
    feats = run.feats
    r = strong_regret(U, played.pairs[..., 0], played.pairs[..., 1])
    G, Rr = floor_regret(U), random_regret(U)
    short = [str(x) for x in world["persona"].values]
    full = {s: f for f, s, _ in PERSONAS}
    out = {"world": str(world.attrs["roster"]), "seed": int(seed), "personas": short,
           "names": [full.get(s, s) for s in short], "arrivals": []}
    text = np.asarray(world["question_text"].values).astype(str)
    for a in range(N):
        rounds = []
        for t in range(S):
            q = sched.question[a, t]
            P = recalibrate(feats[q], arrived[a].A)
            P = P - P.mean(0)                           # utilities relative to the personas' mean: identified
            b = after[a][t].belief
            m, sd = _belief_utilities(b.log_w, b.means, b.covs, P)
            w = np.exp(b.log_w - np.max(b.log_w))
            w = np.where(np.isfinite(b.log_w), w, 0.0)
            rounds.append({"q": str(text[q]), "pair": [int(x) for x in played.pairs[a, t]], "y": int(played.clicks[a, t]),
                           "U": U[a, t].tolist(), "mean": np.round(m, 4).tolist(), "sd": np.round(sd, 4).tolist(),
                           "w": np.round(w / w.sum(), 4).tolist(), "llr": round(float(after[a][t].gate_llr), 4)})
        out["arrivals"].append({"student": int(sched.student[a]), "transfer": bool(arrived[a].transfer),
                                "rounds": rounds, "floor": G[a].tolist(), "random": Rr[a].tolist(),
                                "regret": float(r[a].sum())})
    recorded = {"per_user": {"regret": r.sum(1).tolist(), "floor": G.sum(1).tolist()}}     # this run, not replayed again
    rows = [recorded if s == seed else replay(world, s, "coduel", arrivals) for s in range(int(curve_seeds))]
    c = learning_curve(rows) if len(rows) > 1 else None
    own = learning_curve([recorded])
    out["curve"] = {"x": own.arrival.tolist(), "seed": own.mean.tolist(),
                    **({"mean": c.mean.tolist(), "lo": c.lo.tolist(), "hi": c.hi.tolist(), "seeds": c.n_seeds} if c else {})}
    return out


_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:20px auto;padding:0 16px;color:#1d232b}
h1{font-size:1.45em;margin:0 0 4px}.sub{color:#5b6670;margin:0 0 12px}
.grid{display:grid;grid-template-columns:1.2fr 1fr;gap:16px}.card{border:1px solid #d9dee3;border-radius:10px;padding:12px 16px;background:#fbfcfd}
.controls button{font:inherit;padding:6px 12px;border-radius:7px;border:1px solid #2563eb;background:#fff;color:#2563eb;cursor:pointer;margin-right:4px}
.controls button.on{background:#2563eb;color:#fff}
table{border-collapse:collapse;width:100%}td,th{padding:3px 6px;border-bottom:1px solid #e6e9ed;text-align:left;font-size:.95em}
.bar{position:relative;height:10px;background:#eef0f2;border-radius:3px}.bar span{position:absolute;top:0;height:100%;border-radius:3px}
.u span{background:#64748b}.b span{background:#93c5fd}.b i{position:absolute;top:-2px;width:2px;height:14px;background:#1d4ed8}
.shown{font-weight:600}.won{color:#15803d}.muted{color:#6b7680}.w{display:flex;gap:2px;align-items:flex-end;height:40px}.w div{width:10px;background:#a78bfa}
"""

_SCRIPT = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const K = D.personas.length, N = D.arrivals.length, S = D.arrivals[0].rounds.length;
const st = {a: 0, t: 0, playing: false, timer: null};
window.tdWatch = st;
// regret of arrival a over its first n rounds, from the embedded pairs and utilities
function arrivalRegret(a, n = S) {
  const rs = D.arrivals[a].rounds.slice(0, n).map(r => { const top = Math.max(...r.U); return 2 * top - r.U[r.pair[0]] - r.U[r.pair[1]]; });
  return npSum(rs);
}
window.tdArrivalRegret = arrivalRegret;
function render() {
  const A = D.arrivals[st.a], R = A.rounds[st.t];
  $('where').textContent = `arrival ${st.a + 1} of ${N}, round ${st.t + 1} of ${S}`;
  $('gate').textContent = A.transfer ? 'population learner choosing (gate open)' : 'no-transfer learner choosing (gate closed)';
  $('llr').textContent = R.llr.toFixed(3);
  $('q').textContent = R.q;
  const lo = Math.min(...R.mean.map((m, k) => m - 2 * R.sd[k])), hi = Math.max(...R.mean.map((m, k) => m + 2 * R.sd[k]));
  const pos = x => (100 * (x - lo) / (hi - lo || 1)).toFixed(1);
  let rows = '<tr><th>persona</th><th>hidden U</th><th>belief after the click (mean ± 2 sd, logits, centred)</th></tr>';
  for (let k = 0; k < K; k++) {
    const shown = R.pair.indexOf(k) >= 0, won = R.pair[R.y ? 0 : 1] === k;
    rows += `<tr><td class="${shown ? 'shown' : ''} ${won ? 'won' : ''}">${esc(D.names[k])}${shown ? (won ? ' (clicked)' : ' (shown)') : ''}</td>`
         + `<td><div class="bar u"><span style="left:0;width:${(100 * R.U[k]).toFixed(1)}%"></span></div><span class="muted">${R.U[k].toFixed(3)}</span></td>`
         + `<td><div class="bar b"><span style="left:${pos(R.mean[k] - 2 * R.sd[k])}%;width:${(pos(R.mean[k] + 2 * R.sd[k]) - pos(R.mean[k] - 2 * R.sd[k])).toFixed(1)}%"></span><i style="left:${pos(R.mean[k])}%"></i></div>`
         + `<span class="muted">${R.mean[k].toFixed(2)} ± ${(2 * R.sd[k]).toFixed(2)}</span></td></tr>`;
  }
  $('personas').innerHTML = rows;
  $('weights').innerHTML = R.w.map(w => `<div title="${w.toFixed(3)}" style="height:${Math.max(1, 40 * w).toFixed(1)}px"></div>`).join('');
  const reg = arrivalRegret(st.a, st.t + 1), floor = npSum(A.floor.slice(0, st.t + 1)), rnd = npSum(A.random.slice(0, st.t + 1));
  $('regret').textContent = reg.toFixed(3); $('floor').textContent = floor.toFixed(3); $('random').textContent = rnd.toFixed(3);
  $('user-regret').textContent = st.t === S - 1 ? arrivalRegret(st.a).toFixed(6) : '…';
  st.shownRegret = reg;
  drawCurve();
}
function step(dt) {
  let i = st.a * S + st.t + dt;
  i = Math.max(0, Math.min(N * S - 1, i));
  st.a = Math.floor(i / S); st.t = i % S; $('slider').value = st.a; render();
  if (i === N * S - 1) setPlaying(false);
}
function setPlaying(on) {
  st.playing = on; $('play').classList.toggle('on', on); $('play').textContent = on ? 'pause' : 'play';
  clearInterval(st.timer); if (on) st.timer = setInterval(() => step(1), 120);
}
function drawCurve() {
  const c = D.curve, W = 420, H = 220, pad = 34;
  const ys = [...c.seed, ...(c.hi || []), ...(c.lo || [])];
  const y0 = Math.min(...ys, 0), y1 = Math.max(...ys);
  const X = x => pad + (W - pad - 8) * x / (N - 1 || 1), Y = y => H - pad - (H - pad - 8) * (y - y0) / (y1 - y0 || 1);
  const line = v => v.map((y, k) => `${k ? 'L' : 'M'}${X(c.x[k]).toFixed(1)},${Y(y).toFixed(1)}`).join('');
  let svg = `<svg width="${W}" height="${H}" role="img" aria-label="learning curve">`;
  if (c.lo) svg += `<path d="${line(c.hi)}L${[...c.lo].map((y, k) => `${X(c.x[c.lo.length - 1 - k]).toFixed(1)},${Y(c.lo[c.lo.length - 1 - k]).toFixed(1)}`).join('L')}Z" fill="#bfdbfe" stroke="none"/>`
                   + `<path d="${line(c.mean)}" fill="none" stroke="#2563eb" stroke-width="1.5"/>`;
  svg += `<path d="${line(c.seed)}" fill="none" stroke="#0f172a" stroke-width="1"/>`;
  svg += `<line x1="${X(st.a)}" x2="${X(st.a)}" y1="8" y2="${H - pad}" stroke="#dc2626"/>`;
  svg += `<text x="${W / 2}" y="${H - 8}" font-size="11">arrival</text>`;
  svg += `<text x="${pad}" y="${H - pad + 14}" font-size="10">1</text><text x="${W - 30}" y="${H - pad + 14}" font-size="10">${N}</text>`;
  svg += `<text x="2" y="${Y(y1) + 4}" font-size="10">${y1.toFixed(1)}</text><text x="2" y="${Y(y0)}" font-size="10">${y0.toFixed(1)}</text></svg>`;
  $('curve').innerHTML = svg;
}
$('slider').max = N - 1;
$('slider').oninput = e => { st.a = Number(e.target.value); st.t = 0; render(); };
$('play').onclick = () => setPlaying(!st.playing);
$('step').onclick = () => step(1); $('back').onclick = () => step(-1);
$('next-arrival').onclick = () => step(S - st.t);
render();
"""


def write_watch_page(path: str | Path, data: dict) -> Path:
    """Write the self-contained "watch the policy learn" page for `data` (from `watch_data`)."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    band = (f"blue: the mean over {data['curve']['seeds']} seeds with its 95% band; " if "seeds" in data["curve"] else "")
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">{GENERATOR_META}
<title>Watch CODuel learn: {html.escape(data['world'])}, seed {data['seed']}</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_STYLE}</style></head><body>
{nav(path)}
<h1>Watch the policy learn across students</h1>
<p class="sub">CODuel on <b>{html.escape(data['world'])}</b>, seed {data['seed']}: students arrive one after another, the population
prior is refitted after each session, and the next student starts from what earlier ones had in common.</p>
<p class="controls"><button id="play">play</button><button id="back">◀ round</button><button id="step">round ▶</button>
<button id="next-arrival">next student ▶▶</button> <input type="range" id="slider" min="0" value="0" style="width:280px">
<span id="where" class="muted"></span></p>
<div class="grid"><div class="card"><p id="q"></p><table id="personas"></table>
<p class="muted">this session so far: regret <b id="regret"></b>, the best pair's <span id="floor"></span>, random pairs'
<span id="random"></span>; the whole session's regret <b id="user-regret"></b></p></div>
<div class="card"><p><b id="gate"></b><br><span class="muted">log-likelihood ratio of this session so far (population − alone):
<span id="llr"></span></span></p><p class="muted">population components' weights in the belief</p><div class="w" id="weights"></div>
<p class="muted">learning curve ({band}black: this seed; red: this arrival)</p><div id="curve"></div></div></div>
<script type="application/json" id="data">{payload}</script><script>{PAGE_JS}{_SCRIPT}</script></body></html>"""
    return save_page(path, page)


__all__ = ["watch_data", "write_watch_page"]

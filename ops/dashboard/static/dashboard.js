// The omdp dashboard page: one EventSource (/api/v1/stream) feeds every figure once a second.
"use strict";

const HOPS = ["fh", "to_de", "de", "to_mc"];
const COLOR = { fh: "#4c9aff", to_de: "#36b37e", de: "#ffab00", to_mc: "#b37feb", e2e: "#e6edf6", e2e_intended: "#ff7aa8" };
const LABEL = { fh: "FH", to_de: "to DE", de: "DE", to_mc: "to MC", e2e: "end to end", e2e_intended: "from intended" };
const FIELDS = ["count", "mean_us", "p50_us", "p90_us", "p99_us", "p99_9_us", "p99_99_us", "max_us"];
const GRID = { gridcolor: "#243245", zerolinecolor: "#243245", linecolor: "#243245" };
const BASE = {
  paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: "#d5deea", size: 12 },
  margin: { l: 60, r: 20, t: 10, b: 40 }, xaxis: { ...GRID }, yaxis: { ...GRID },
  legend: { orientation: "h", y: 1.12, x: 0 }, hovermode: "x unified",
};
const CONFIG = { displayModeBar: false, responsive: true };
const KEEP_S = 180;

const st = { window: "10s", history: new Map(), rate: [], es: null, lastEvent: 0, replay: false, source: "live" };
const $ = (sel, root = document) => root.querySelector(sel);

const num = (v, d = 0) => (v == null ? "–" : Number(v).toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }));
const us = (v) => (v == null ? "n/a" : v < 10 ? v.toFixed(2) : v < 1000 ? v.toFixed(1) : num(v));
const perS = (v) => (v == null ? "–" : v < 100 ? v.toFixed(1) : num(v));
const pct = (v) => (v == null ? "–" : v === 0 ? "0%" : (100 * v).toFixed(v < 0.001 ? 4 : 2) + "%");
const clock = (ns) => new Date(Number(ns) / 1e6).toISOString().slice(11, 23);
const layout = (extra) => ({ ...BASE, ...extra, xaxis: { ...BASE.xaxis, ...(extra.xaxis || {}) }, yaxis: { ...BASE.yaxis, ...(extra.yaxis || {}) } });

function put(root, field, text, value) {
  const el = $(`[data-field="${field}"]`, root);
  el.textContent = text;
  el.dataset.value = value == null ? "" : String(value);
}

function renderHeader(run) {
  $("#run-id").textContent = run.run_id;
  const pill = $("#run-state");
  pill.textContent = run.state;
  pill.className = "pill " + run.state;
  $("#run-what").textContent = [...new Set([run.topology, run.config].filter(Boolean))].join(" · ");
  const s = Math.round(run.uptime_s);
  $("#uptime").textContent = `${run.source === "finished" ? "ran" : "up"} ${Math.floor(s / 3600)}h ${String(Math.floor(s / 60) % 60).padStart(2, "0")}m ${String(s % 60).padStart(2, "0")}s`;
  st.source = run.source;
  const stale = run.source === "live" && run.state === "running" && run.heartbeat_age_s != null && run.heartbeat_age_s > 5;
  // a run that has ended is not live, whether read from its directory or its segment
  const ended = run.source === "finished" || ["done", "failed", "ended", "stopped"].includes(run.state);
  setLive(ended ? "finished" : stale ? "stale" : "live");
}

function setLive(what) {
  const el = $("#live");
  el.className = "live " + (what === "live" ? "on" : what === "stale" ? "stale" : "");
  $("b", el).textContent = what;
}

function renderKpis(snap) {
  const hops = Object.fromEntries(snap.latency.hops.map((h) => [h.hop, h]));
  const e2e = $("#kpi-e2e"), intended = $("#kpi-intended");
  for (const [root, h, main] of [[e2e, hops.e2e, "p50_us"], [intended, hops.e2e_intended, "p99_us"]]) {
    for (const f of ["p50_us", "p99_us", "p99_9_us", "max_us"]) {
      if ($(`[data-field="${f}"]`, root)) put(root, f, us(h[f]), h[f]);
    }
    if ($('[data-field="count"]', root)) put(root, "count", num(h.count), h.count);
    $(`.value`, root).dataset.unit = h[main] == null ? "" : "µs";
  }
  const run = snap.run, tot = snap.ingest.totals, rate = $("#kpi-rate");
  const achieved = tot.packets_per_s ?? run.achieved_pps;
  put(rate, "achieved", num(achieved), achieved);
  put(rate, "target", run.target_pps ? num(run.target_pps) : "none", run.target_pps);
  put(rate, "target_x", run.target_x ? run.target_x.toFixed(2) + "x" : "–", run.target_x);
  put(rate, "msgs", num(tot.messages_per_s), tot.messages_per_s);
  const frac = run.target_pps && achieved != null ? achieved / run.target_pps : null;
  $(".bar i", rate).style.width = frac == null ? "0" : Math.min(100, 100 * frac) + "%";
  $(".bar", rate).className = "bar" + (frac != null && frac < 0.9999 ? " short" : "");
  const missed = $("#kpi-missed");
  put(missed, "messages_missed", num(tot.messages_missed), tot.messages_missed);
  put(missed, "missed_ratio", pct(tot.missed_ratio), tot.missed_ratio);
  put(missed, "seen", num(tot.messages_received + tot.messages_missed), tot.messages_received + tot.messages_missed);
  put(missed, "packets_duplicate", num(tot.packets_duplicate), tot.packets_duplicate);
  put(missed, "decode_errors", num(tot.decode_errors), tot.decode_errors);
  missed.classList.toggle("alert", (tot.missed_ratio || 0) > 0.0001);
  const sig = $("#kpi-signals");
  put(sig, "total", num(snap.signals.total), snap.signals.total);
  const kinds = {};
  for (const s of snap.signals.signals) kinds[s.kind] = (kinds[s.kind] || 0) + 1;
  $("#signal-kinds").textContent = Object.keys(kinds).length
    ? "latest: " + Object.entries(kinds).map(([k, n]) => `${n} ${k}`).join(" · ") : "none yet";
}

function renderBreakdown(lat) {
  const hops = Object.fromEntries(lat.hops.map((h) => [h.hop, h]));
  const rows = [["mean", "mean_us"], ["p50", "p50_us"], ["p90", "p90_us"]].reverse();
  const traces = HOPS.map((k) => ({
    type: "bar", orientation: "h", name: LABEL[k], marker: { color: COLOR[k] },
    y: rows.map((r) => r[0]), x: rows.map((r) => hops[k][r[1]]),
    hovertemplate: `${LABEL[k]}: %{x:.2f} µs<extra></extra>`,
  }));
  traces.push({
    type: "scatter", mode: "markers", name: "end to end, measured", y: rows.map((r) => r[0]),
    x: rows.map((r) => hops.e2e[r[1]]), marker: { symbol: "line-ns-open", size: 22, color: COLOR.e2e, line: { width: 3, color: COLOR.e2e } },
    hovertemplate: "end to end: %{x:.2f} µs<extra></extra>",
  });
  Plotly.react("chart-breakdown", traces, layout({
    barmode: "stack", hovermode: "closest", margin: { l: 50, r: 20, t: 4, b: 36 }, legend: { ...BASE.legend, traceorder: "normal" },
    xaxis: { title: { text: "µs (each hop's figure, stacked)", standoff: 6 }, rangemode: "tozero" },
  }), CONFIG);
  const window = lat.window_s == null ? "the whole run" : `the last ${lat.window_s} s`;
  $("#breakdown-note").textContent = `per hop over ${window}; ${num(hops.e2e.count)} samples, 1 in ${num(lat.sample_every)} messages`;
  const body = $("#hop-table tbody");
  body.replaceChildren(...lat.hops.map((h) => {
    const tr = document.createElement("tr");
    tr.dataset.hop = h.hop;
    const name = document.createElement("td");
    name.className = "hop";
    name.style.setProperty("--c", COLOR[h.hop]);
    name.textContent = h.label;
    name.title = h.definition + (h.missing ? ` · ${h.missing} samples lacked a stamp` : "");
    tr.append(name, ...FIELDS.map((f) => {
      const td = document.createElement("td");
      td.dataset.field = f;
      td.dataset.value = h[f] == null ? "" : String(h[f]);
      td.textContent = f === "count" ? num(h[f]) : us(h[f]);
      if (h[f] == null) td.className = "na";
      return td;
    }));
    return tr;
  }));
}

function addSecond(point) {
  if (!point) return;
  st.history.set(point.second, point.hops);
  const oldest = point.second - KEEP_S;
  for (const s of st.history.keys()) if (s < oldest) st.history.delete(s);
}

// Tick values for a log axis over [lo, hi]. A log axis labels only decades by itself, so
// data within one decade (20 to 80 us) got no label at all: over less than a decade the
// ticks are evenly spaced round numbers (1, 2 or 5 times a power of ten apart), over more
// the decades with 2 and 5 between them when fewer than three decades show.
function logTicks(lo, hi) {
  if (hi / lo < 10) {
    const raw = (hi - lo) / 5, mag = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((d) => d * mag).find((v) => v >= raw);
    const ticks = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(Number(v.toPrecision(12)));
    return ticks;
  }
  const ticks = [];
  for (const steps of [[1], [1, 2, 5]]) {
    ticks.length = 0;
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const d of steps) {
        const v = d * 10 ** e;
        if (v >= lo && v <= hi) ticks.push(Number(v.toPrecision(12)));
      }
    }
    if (ticks.length >= 3) break;
  }
  return ticks;
}

function renderLines() {
  const secs = [...st.history.keys()].sort((a, b) => a - b);
  const x = secs.map((s) => new Date(s * 1000));
  const series = [["e2e", "p50_us", "p50", "solid"], ["e2e", "p90_us", "p90", "solid"], ["e2e", "p99_us", "p99", "solid"],
    ["e2e", "p99_9_us", "p99.9", "solid"], ["e2e_intended", "p99_us", "p99 from intended", "dash"]];
  const shades = ["#8fb8ff", "#4c9aff", "#ffab00", "#ff5c5c", COLOR.e2e_intended];
  const traces = [], notDrawn = [];
  series.forEach(([hop, f, name, dash], i) => {
    const y = secs.map((s) => st.history.get(s)[hop][f]);
    // a percentile is n/a in a second with too few samples: a line with no value is left
    // out of the chart and its legend, and said so in the note below the title
    if (!y.some((v) => v != null && v > 0)) {
      notDrawn.push(name);
      return;
    }
    // markers too, so a value between two n/a seconds still shows
    traces.push({ type: "scatter", mode: "lines+markers", marker: { size: 3 }, name, x, y,
      line: { color: shades[i], width: 2, dash }, connectgaps: false });
  });
  const values = traces.flatMap((t) => t.y.filter((v) => v != null && v > 0));
  const yaxis = { type: "log", title: { text: "µs" } };
  if (values.length) {
    const lo = Math.min(...values) * 0.9, hi = Math.max(...values) * 1.1;
    const tickvals = logTicks(lo, hi);
    Object.assign(yaxis, { range: [Math.log10(lo), Math.log10(hi)], tickmode: "array", tickvals, ticktext: tickvals.map((v) => num(v, v < 1 ? 2 : v < 10 && !Number.isInteger(v) ? 1 : 0)) });
  }
  Plotly.react("chart-lines", traces, layout({ yaxis }), CONFIG);
  $("#lines-note").textContent = notDrawn.length
    ? `not drawn, too few samples per second: ${notDrawn.join(", ")}` : "";
}

function renderRate(snap) {
  if (snap.run.source === "live" || !st.rate.length) {
    const t = new Date(Number(snap.ts_ns) / 1e6);
    st.rate.push({ t, got: snap.ingest.totals.packets_per_s, target: snap.run.target_pps, replay: snap.run.achieved_pps });
  }
  while (st.rate.length > KEEP_S * 4) st.rate.shift();
  const x = st.rate.map((r) => r.t);
  const traces = [
    { type: "scatter", mode: "lines", name: "received, all lines", x, y: st.rate.map((r) => r.got), line: { color: COLOR.to_de, width: 2 },
      fill: "tozeroy", fillcolor: "rgba(54,179,126,0.10)" },
  ];
  // the replayer's achieved rate is known once the run has ended (its average over the
  // run): drawn across the run for a finished one, from when it is known for a live one
  const achieved = snap.run.achieved_pps;
  if (snap.run.source === "finished" && achieved != null && x.length) {
    const from = new Date(Number(snap.run.started_ns) / 1e6), to = new Date(Number(snap.run.ended_ns) / 1e6);
    traces.push({ type: "scatter", mode: "lines", name: "replayer achieved (run average)", x: [from, to], y: [achieved, achieved],
      line: { color: COLOR.fh, width: 1.5 } });
  } else if (st.rate.some((r) => r.replay != null)) {
    traces.push({ type: "scatter", mode: "lines+markers", marker: { size: 3 }, name: "replayer achieved (run average)", x,
      y: st.rate.map((r) => r.replay), line: { color: COLOR.fh, width: 1.5 } });
  }
  if (st.rate.some((r) => r.target != null)) {
    traces.push({ type: "scatter", mode: "lines", name: "target", x, y: st.rate.map((r) => r.target), line: { color: COLOR.e2e, width: 1.5, dash: "dash" } });
  }
  Plotly.react("chart-rate", traces, layout({ yaxis: { rangemode: "tozero", title: { text: "packets/s" } } }), CONFIG);
}

function renderIngest(ing) {
  // the line numbers alone on a category axis titled "line": names like "line 12" on 24
  // lines were turned and cut to "line" by the chart's bottom margin
  const names = ing.lines.map((l) => String(l.line));
  const maxMissed = Math.max(0, ...ing.lines.map((l) => l.messages_missed));
  // missed messages are whole: integer ticks, and 0..1 when there are none (else the axis
  // shows 0.249, 0.499, ...)
  const missedAxis = maxMissed === 0 ? { range: [0, 1], dtick: 1 } : maxMissed < 5 ? { range: [0, maxMissed * 1.25], dtick: 1 } : {};
  Plotly.react("chart-ingest", [
    { type: "bar", name: "messages/s", x: names, y: ing.lines.map((l) => l.messages_per_s), marker: { color: COLOR.fh }, offsetgroup: "rate" },
    { type: "bar", name: "missed messages", x: names, y: ing.lines.map((l) => l.messages_missed), yaxis: "y2",
      marker: { color: "#ff5c5c" }, offsetgroup: "missed", text: ing.lines.map((l) => (l.messages_missed ? num(l.messages_missed) : "")), textposition: "outside" },
  ], layout({
    barmode: "group", hovermode: "closest", margin: { l: 60, r: 60, t: 10, b: 40 },
    xaxis: { type: "category", title: { text: "line", standoff: 4 }, automargin: true },
    yaxis: { title: { text: "msgs/s" }, rangemode: "tozero" },
    yaxis2: { overlaying: "y", side: "right", rangemode: "tozero", showgrid: false, title: { text: "missed", font: { color: "#ff5c5c" } },
      tickfont: { color: "#ff5c5c" }, tickformat: ",d", ...missedAxis },
  }), CONFIG);
  const cells = [["packets_per_s", perS], ["messages_per_s", perS], ["messages_received", num], ["messages_missed", num],
    ["missed_ratio", pct], ["packets_duplicate", num], ["decode_errors", num]];
  $("#line-table tbody").replaceChildren(...ing.lines.map((l) => {
    const tr = document.createElement("tr");
    tr.dataset.line = l.line;
    tr.className = l.messages_missed ? "bad" : "";
    const first = document.createElement("td");
    first.textContent = `line ${l.line}`;
    tr.append(first, ...cells.map(([f, show]) => {
      const td = document.createElement("td");
      td.dataset.field = f;
      td.dataset.value = l[f] == null ? "" : String(l[f]);
      td.textContent = show(l[f]);
      if ((f === "messages_missed" || f === "missed_ratio" || f === "decode_errors") && l[f]) td.className = "bad";
      return td;
    }));
    return tr;
  }));
}

function renderSignals(sig) {
  const list = $("#signals");
  if (!sig.signals.length) {
    list.innerHTML = '<li class="empty">no signals yet</li>';
    return;
  }
  list.replaceChildren(...sig.signals.map((s) => {
    const li = document.createElement("li");
    const parts = [["time", clock(s.ts_ns)], ["kind " + s.kind, s.kind.replace("_", " ")], ["series", s.series], ["value", s.value.toFixed(3)]];
    li.append(...parts.map(([cls, text]) => {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      return span;
    }));
    li.title = `engine ${s.engine}`;
    return li;
  }));
}

function renderOperators(ops) {
  const shown = new Set(["occupancy", "ring_occupancy", "full_events", "full_ring", "full_waits", "spins", "drops", "peer_state"]);
  $("#op-table tbody").replaceChildren(...ops.operators.map((o) => {
    const tr = document.createElement("tr");
    const cols = [o.name, o.kind, o.state, o.cpu == null ? "–" : o.cpu, o.process_cpu_percent == null ? "–" : o.process_cpu_percent.toFixed(1) + "%",
      num(o.occupancy), num(o.full_events), num(o.spins), num(o.drops), o.peer_state || "–"];
    tr.append(...cols.map((c) => {
      const td = document.createElement("td");
      td.textContent = c;
      return td;
    }));
    if (o.drops) tr.children[8].className = "bad";
    if (o.peer_state === "dead") tr.children[9].className = "bad";
    // per second where the rate is known (a live run), the total beside it; a finished
    // run has no rate: its totals, marked as such
    const rest = document.createElement("td");
    for (const c of o.counters.filter((c) => !shown.has(c.name))) {
      const b = document.createElement("b");
      b.textContent = c.per_s == null ? num(c.value) : `${perS(c.per_s)}/s`;
      b.title = `total ${num(c.value)}`;
      rest.append(`${c.name} `, b, c.per_s == null ? " total  " : ` (${num(c.value)})  `);
    }
    tr.append(rest);
    return tr;
  }));
}

function onSnapshot(ev) {
  const snap = JSON.parse(ev.data);
  st.lastEvent = Date.now();
  renderHeader(snap.run);
  renderKpis(snap);
  renderBreakdown(snap.latency);
  addSecond(snap.second);
  renderLines();
  renderRate(snap);
  renderIngest(snap.ingest);
  renderSignals(snap.signals);
  renderOperators(snap.operators);
  if (st.replay) refreshReplay();
  document.body.dataset.snapshotTs = ev.lastEventId;
  document.body.dataset.snapshots = String(Number(document.body.dataset.snapshots || 0) + 1);
}

// ?snapshots=N: the page takes N snapshots and then stops listening, so the page goes quiet
// and a headless browser's screenshot of a live run completes (a finished run's stream ends
// by itself after one).
const SNAPSHOTS = Number(new URLSearchParams(location.search).get("snapshots")) || null;
// ?token=T: the dashboard's read token (omdp dashboard --read-token), sent with every read
const READ_TOKEN = new URLSearchParams(location.search).get("token") || "";
const read = (url) => fetch(url, READ_TOKEN ? { headers: { "X-Omdp-Read-Token": READ_TOKEN } } : {});

function connect() {
  if (st.es) st.es.close();
  const count = SNAPSHOTS ? `&count=${SNAPSHOTS}` : "";
  const token = READ_TOKEN ? `&token=${encodeURIComponent(READ_TOKEN)}` : "";
  st.es = new EventSource(`/api/v1/stream?window=${encodeURIComponent(st.window)}${count}${token}`);
  st.es.addEventListener("snapshot", onSnapshot);
  st.es.addEventListener("end", () => {
    // the server ended the stream: do not let EventSource reconnect
    st.es.close();
    document.body.dataset.streamEnded = "1";
  });
  st.es.addEventListener("unavailable", (ev) => {
    setLive("waiting");
    $("#run-what").textContent = JSON.parse(ev.data).detail;
  });
}

function pickWindow(name) {
  document.querySelectorAll("#windows button").forEach((x) => x.classList.toggle("on", x.dataset.window === name));
  st.window = name;
}

// Without the read token every figure answers 401: say how to pass it instead of waiting
// on a stream that cannot open.
function needToken(detail) {
  const pill = $("#run-state");
  pill.textContent = READ_TOKEN ? "wrong token" : "token needed";
  pill.className = "pill failed";
  setLive("no access");
  const url = `${location.origin}${location.pathname}?token=TOKEN`;
  $("#run-what").textContent = "";
  const note = $("#token-note");
  note.hidden = false;
  $("#token-url", note).textContent = url;
  $("#token-detail", note).textContent = detail || "";
}

async function loadHistory() {
  const first = await read("/api/v1/run");
  if (first.status === 401) {
    needToken((await first.json()).detail);
    return false;
  }
  const run = await first.json();
  if (!run.run_id) return true;
  renderHeader(run);
  for (const b of document.querySelectorAll("#windows button")) {
    b.hidden = b.dataset.window !== "all" && parseInt(b.dataset.window, 10) > run.max_window_s;
  }
  if (run.source === "finished") pickWindow("all");
  st.replay = run.replay_control;
  $("#replay").hidden = !st.replay;
  const seconds = Math.min(run.source === "finished" ? 600 : 64, Math.max(1, Math.ceil(run.uptime_s) + 1));
  const hist = await (await read(`/api/v1/latency/history?seconds=${seconds}`)).json();
  for (const p of hist.points || []) addSecond(p);
  const rates = await (await read(`/api/v1/ingest/history?seconds=${KEEP_S * 4}`)).json();
  for (const p of rates.points || []) {
    st.rate.push({ t: new Date(Number(p.ts_ns) / 1e6), got: p.packets_per_s, target: run.target_pps, replay: null });
  }
  return true;
}

async function refreshReplay() {
  const r = await read("/api/v1/replay");
  if (!r.ok) return;
  const s = await r.json();
  $("#replay-state").textContent = s.state;
  $("#replay-rate").textContent = s.rate || "–";
}

async function replayAction(path, body) {
  const token = $("#replay-token").value;
  sessionStorage.setItem("omdp-token", token);
  const r = await fetch(`/api/v1/replay/${path}`, {
    method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: body ? JSON.stringify(body) : null,
  });
  const s = await r.json();
  $("#replay-msg").textContent = r.ok ? `${path}: ok` : `${path}: ${r.status} ${s.detail}`;
  refreshReplay();
}

/* The market_stats sources a window's bitmap names, e.g. "1" or "0, 2". */
function missingSources(bits) {
  const out = [];
  for (let k = 0; k < 64 && bits / 2 ** k >= 1; k++) if (Math.floor(bits / 2 ** k) % 2) out.push(k);
  return out.join(", ");
}

async function refreshMarket() {
  const r = await read("/api/v1/market?windows=5");
  if (!r.ok) return;
  const m = await r.json();
  $("#market").hidden = !m.available;
  if (!m.available) return;
  $("#market-note").textContent = `${m.window_ms} ms windows, newest first`;
  $("#market-table tbody").replaceChildren(...m.windows.map((w) => {
    const tr = document.createElement("tr");
    const cells = [
      clock(w.start_ms * 1e6) + (w.complete ? "" : ` (incomplete: ${w.missing_sources
        ? `source ${missingSources(w.missing_sources)}` : "a leader"} missing)`),
      w.messages.toLocaleString(),
      w.top_underlyings.slice(0, 5).map((u) => `${u.underlying} (${u.messages})`).join(", "),
      w.exchanges.map((e) => `${e.exchange} ${(100 * e.quote_share).toFixed(0)}%`).join(" "),
    ];
    tr.append(...cells.map((text) => { const td = document.createElement("td"); td.textContent = text; return td; }));
    return tr;
  }));
}

function wire() {
  for (const b of document.querySelectorAll("#windows button")) {
    b.addEventListener("click", () => {
      pickWindow(b.dataset.window);
      connect();
    });
  }
  $("#replay-token").value = sessionStorage.getItem("omdp-token") || "";
  $("#replay-start").addEventListener("click", () => replayAction("start"));
  $("#replay-stop").addEventListener("click", () => replayAction("stop"));
  $("#replay-set").addEventListener("click", () => {
    const v = $("#replay-new-rate").value.trim();
    replayAction("rate", /^[\d.]+$/.test(v) ? { pps: Number(v) } : { rate: v });
  });
  setInterval(() => {
    const listening = st.es && st.es.readyState !== EventSource.CLOSED;
    if (st.source === "live" && listening && st.lastEvent && Date.now() - st.lastEvent > 5000) setLive("stale");
  }, 1000);
}

wire();
refreshMarket().catch(() => true);
setInterval(() => refreshMarket().catch(() => true), 2000);
loadHistory().catch(() => true).then((ok) => { if (ok) connect(); });

#include "admin/graph_page.hpp"

namespace sluice::host {

namespace {

// Element ids the browser test relies on: #state, #graph (the SVG), #node-ID (a node's
// group, with class "backpressure" while it signals back-pressure, "errors" once it
// failed, "held" while back-pressure holds a source, "paused"), #rate-ID (its rate),
// #spark-ID (its rate over the last minute, a polyline), #hold-ID (what it holds, or
// what holds it), #row-ID / #in-ID / #out-ID / #status-ID (the table), #pause-ID /
// #resume-ID (source buttons).
constexpr std::string_view k_page = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sluiced</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
  h1 { font-size: 1.3em; margin: 0 0 .3em; }
  #state { color: #555; margin-bottom: 1em; }
  svg text { font: 12px system-ui, sans-serif; }
  .node rect { stroke: #333; stroke-width: 1.2; }
  .source rect { fill: #dbeafe; } .operator rect { fill: #f3f4f6; } .sink rect { fill: #dcfce7; }
  .paused rect { fill: #fde68a; }
  .held rect { fill: #fef3c7; }
  .backpressure rect { stroke: #d97706; stroke-width: 3; }
  .errors rect { stroke: #dc2626; stroke-width: 3; stroke-dasharray: 6 3; }
  .spark { stroke: #2563eb; stroke-width: 1.2; fill: none; }
  .hold { fill: #b45309; font-size: 11px; }
  .edge { stroke: #777; stroke-width: 1.3; fill: none; marker-end: url(#arrow); }
  .edge.holding { stroke: #d97706; stroke-width: 2.5; }
  #legend span { margin-right: 1.2em; }
  table { border-collapse: collapse; margin-top: 1em; }
  th, td { border-bottom: 1px solid #ddd; padding: .25em .8em; text-align: right; }
  th:first-child, td:first-child, td.type { text-align: left; }
  button { margin-right: .3em; }
</style>
</head>
<body>
<h1 id="title">sluiced</h1>
<div id="state">connecting...</div>
<div id="legend"><span style="color:#d97706">&#9632; signals back-pressure (its sources are
not polled; "holding" names them)</span><span style="color:#dc2626">&#9632; has failed on
messages (errors &gt; 0)</span><span style="color:#2563eb">&#9135; rate, last 60 s</span></div>
<svg id="graph" width="600" height="200" xmlns="http://www.w3.org/2000/svg">
  <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7"
    markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>
</svg>
<table id="nodes">
  <thead><tr><th>node</th><th>type</th><th>in/s</th><th>out/s</th><th>in</th><th>out</th>
  <th>errors</th><th>back-pressure s</th><th>watermark</th><th>behind</th><th>late</th>
  <th>status</th><th></th></tr></thead>
  <tbody></tbody>
</table>
<script>
"use strict";
const token = (location.hash.match(/token=([^&]+)/) || [])[1];
const headers = token ? { "Authorization": "Bearer " + decodeURIComponent(token) } : {};
const SVG = "http://www.w3.org/2000/svg";
const W = 170, H = 74, GX = 50, GY = 24, SPARK = 60;
let generation = -1, previous = null, graph = null;
const history = {};  // node id -> its last SPARK rates (one per tick, about a second apart)

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function rate(n) {
  return n >= 100 ? Math.round(n).toString() : n.toFixed(1);
}

// Columns by longest path from a source; rows in graph order within a column. A graph
// wider than the window wraps: its columns continue in bands below, so a long chain stays
// inside the window.
function layout(graph) {
  const rank = {}, inputs = {};
  graph.nodes.forEach(n => { inputs[n.id] = []; });
  graph.edges.forEach(e => { if (inputs[e.to]) inputs[e.to].push(e.from.split(".")[0]); });
  const visit = (id, depth) => {
    if (rank[id] !== undefined) return rank[id];
    if (depth > graph.nodes.length) return 0;
    let r = 0;
    inputs[id].forEach(p => { r = Math.max(r, visit(p, depth + 1) + 1); });
    return (rank[id] = r);
  };
  const columns = [];
  graph.nodes.forEach(n => {
    const r = visit(n.id, 0);
    (columns[r] = columns[r] || []).push(n);
  });
  const rows = Math.max(1, ...columns.map(c => c.length));
  const room = Math.max(W + 20, document.documentElement.clientWidth - 40);
  const perBand = Math.max(1, Math.min(columns.length, Math.floor((room - 20 + GX) / (W + GX))));
  const bandHeight = rows * (H + GY) + GY;
  const pos = {};
  columns.forEach((col, c) => col.forEach((n, row) => {
    const band = Math.floor(c / perBand);
    pos[n.id] = { x: 10 + (c % perBand) * (W + GX), y: 10 + band * bandHeight + row * (H + GY) };
  }));
  const bands = Math.ceil(columns.length / perBand);
  return { pos, width: 20 + perBand * (W + GX) - GX, height: 20 + bands * bandHeight - 2 * GY };
}

function draw(graph) {
  const svg = document.getElementById("graph");
  svg.querySelectorAll("g, path.edge").forEach(e => e.remove());
  const { pos, width, height } = layout(graph);
  svg.setAttribute("width", Math.max(width, 200));
  svg.setAttribute("height", Math.max(height, 60));
  graph.edges.forEach(e => {
    const from = e.from.split(".")[0], a = pos[from], b = pos[e.to];
    if (!a || !b) return;
    let d;
    if (b.x > a.x) {
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
    } else {  // into the next band (wrapped): from the bottom of one to the top of the other
      const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
      d = `M${x1},${y1} C${x1},${y1 + GY} ${x2},${y2 - GY} ${x2},${y2}`;
    }
    el("path", { class: "edge", "data-from": from, "data-to": e.to, d }, svg);
  });
  graph.nodes.forEach(n => {
    const p = pos[n.id];
    const g = el("g", { class: "node " + n.role, id: "node-" + n.id,
                        transform: `translate(${p.x},${p.y})` }, svg);
    el("title", {}, g).textContent = n.id;
    el("rect", { width: W, height: H, rx: 6 }, g);
    el("text", { x: 8, y: 17, "font-weight": "bold" }, g).textContent = n.id;
    el("text", { x: 8, y: 33, fill: "#555" }, g).textContent = n.type;
    el("text", { x: W - 8, y: 33, "text-anchor": "end", id: "rate-" + n.id }, g).textContent = "";
    el("polyline", { class: "spark", id: "spark-" + n.id, points: "" }, g);
    el("text", { x: 8, y: H - 5, class: "hold", id: "hold-" + n.id }, g).textContent = "";
  });
  const body = document.querySelector("#nodes tbody");
  body.innerHTML = "";
  graph.nodes.forEach(n => {
    const tr = document.createElement("tr");
    tr.id = "row-" + n.id;
    const cells = ["", "type", "in-rate", "out-rate", "in", "out", "errors", "bp", "wm", "wm-lag",
                   "late", "status", "act"];
    cells.forEach(c => {
      const td = document.createElement("td");
      if (c) td.id = c + "-" + n.id;
      if (c === "type") td.className = "type";
      tr.appendChild(td);
    });
    tr.firstChild.textContent = n.id;
    tr.children[1].textContent = n.type;
    if (n.role === "source") {
      const act = tr.lastChild;
      for (const action of ["pause", "resume"]) {
        const b = document.createElement("button");
        b.id = action + "-" + n.id;
        b.textContent = action;
        b.onclick = () => control(n.id, action);
        act.appendChild(b);
      }
    }
    body.appendChild(tr);
  });
}

async function control(id, action) {
  const r = await fetch(`/sources/${encodeURIComponent(id)}/${action}`,
                        { method: "POST", headers });
  if (!r.ok) document.getElementById("state").textContent = `${action} ${id}: ${await r.text()}`;
  tick();
}

async function loadGraph() {
  const r = await fetch("/graph", { headers });
  if (!r.ok) throw new Error("/graph: " + r.status);
  graph = await r.json();
  document.getElementById("title").textContent = "sluiced: " + graph.name;
  draw(graph);
}

// The rate history as a polyline across the bottom of the node's box (scaled to its own
// maximum: the shape matters, the number is beside it).
function spark(id, rates) {
  const line = document.getElementById("spark-" + id);
  if (!line) return;
  const top = 40, bottom = H - 18, max = Math.max(1e-9, ...rates);
  const step = (W - 16) / (SPARK - 1), x0 = 8 + (SPARK - rates.length) * step;
  line.setAttribute("points", rates.map((r, k) =>
      `${(x0 + k * step).toFixed(1)},${(bottom - (bottom - top) * r / max).toFixed(1)}`).join(" "));
}

let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => { if (graph) { draw(graph); previous = null; } }, 200);
});

function set(id, text) {
  const e = document.getElementById(id);
  if (e) e.textContent = text;
}

async function tick() {
  try {
    const r = await fetch("/stats", { headers });
    if (!r.ok) throw new Error("/stats: HTTP " + r.status + (r.status === 401 ?
        " (open this page as /#token=TOKEN)" : ""));
    const stats = await r.json();
    if (stats.generation !== generation && stats.nodes.length > 0) {
      await loadGraph();
      generation = stats.generation;
      previous = null;
      for (const id in history) delete history[id];
    }
    const dt = previous ? (stats.time_ms - previous.time_ms) / 1000 : 0;
    const before = {};
    if (previous) previous.nodes.forEach(n => { before[n.id] = n; });
    stats.nodes.forEach(n => {
      const p = before[n.id];
      const inRate = p && dt > 0 ? (n.in - p.in) / dt : 0;
      const outRate = p && dt > 0 ? (n.out - p.out) / dt : 0;
      set("rate-" + n.id, rate(n.role === "sink" ? inRate : outRate) + "/s");
      set("in-rate-" + n.id, n.role === "source" ? "" : rate(inRate));
      set("out-rate-" + n.id, n.role === "sink" ? "" : rate(outRate));
      set("in-" + n.id, n.role === "source" ? "" : n.in);
      set("out-" + n.id, n.role === "sink" ? "" : n.out);
      set("errors-" + n.id, n.errors);
      set("bp-" + n.id, n.backpressure_s.toFixed(2));
      // Event time: the watermark (UTC) and how far it is behind the wall clock.
      const wm = n.watermark_ms;
      set("wm-" + n.id, wm === null || wm === undefined ? "" : wm === "end" ? "end" :
          new Date(wm).toISOString().replace("T", " ").replace("Z", ""));
      set("wm-lag-" + n.id, typeof wm === "number" ?
          ((stats.time_ms - wm) / 1000).toFixed(1) + " s" : "");
      set("late-" + n.id, n.late ? n.late : "");
      if (p && dt > 0) {
        const h = history[n.id] = history[n.id] || [];
        h.push(n.role === "sink" ? inRate : outRate);
        if (h.length > SPARK) h.shift();
        spark(n.id, h);
      }
      // Back-pressure: the node that signals it names the sources it holds; a held source
      // names who holds it.
      const holders = stats.nodes.filter(m => m.backpressured && (m.holding || []).includes(n.id));
      const hold = n.backpressured ? "holding: " + ((n.holding || []).join(", ") || "-")
                 : n.held ? "held by: " + (holders.map(m => m.id).join(", ") || "?") : "";
      set("hold-" + n.id, hold);
      const status = [];
      if (n.paused) status.push("paused");
      if (n.backpressured) status.push("back-pressure, " + hold);
      else if (n.held) status.push(hold);
      set("status-" + n.id, status.join("; "));
      const g = document.getElementById("node-" + n.id);
      if (g) {
        g.classList.toggle("paused", n.paused);
        g.classList.toggle("held", !!n.held && !n.paused);
        g.classList.toggle("backpressure", !!n.backpressured);
        g.classList.toggle("errors", n.errors > 0);
      }
    });
    // The edges along which back-pressure holds: from each held source towards its holder.
    const holdingEdges = new Set();
    stats.nodes.filter(n => n.backpressured).forEach(n => {
      if (!graph) return;
      const inputs = {};
      graph.edges.forEach(e => { (inputs[e.to] = inputs[e.to] || []).push(e.from.split(".")[0]); });
      const held = new Set(n.holding || []);
      const reaches = {};  // whether a node lies on a path from a held source
      const walk = id => {
        if (reaches[id] !== undefined) return reaches[id];
        reaches[id] = false;
        let r = held.has(id);
        (inputs[id] || []).forEach(p => { if (walk(p)) { r = true; holdingEdges.add(p + ">" + id); } });
        return (reaches[id] = r);
      };
      walk(n.id);
    });
    document.querySelectorAll("path.edge").forEach(e => e.classList.toggle("holding",
        holdingEdges.has(e.getAttribute("data-from") + ">" + e.getAttribute("data-to"))));
    previous = stats;
    set("state", `${stats.state}, graph generation ${stats.generation}, updated ` +
                 new Date(stats.time_ms).toLocaleTimeString());
  } catch (e) {
    set("state", "error: " + e.message);
  }
}

tick();
setInterval(tick, 1000);
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view graph_page_html() { return k_page; }

}  // namespace sluice::host

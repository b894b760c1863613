#include "admin/graph_page.hpp"

namespace sluice::host {

namespace {

// Element ids the browser test relies on: #state, #graph (the SVG),
// #rate-ID (a node's rate in the SVG), #row-ID / #in-ID / #out-ID / #status-ID
// (the table), #pause-ID / #resume-ID (source buttons).
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
  .edge { stroke: #777; stroke-width: 1.3; fill: none; marker-end: url(#arrow); }
  table { border-collapse: collapse; margin-top: 1em; }
  th, td { border-bottom: 1px solid #ddd; padding: .25em .8em; text-align: right; }
  th:first-child, td:first-child, td.type { text-align: left; }
  button { margin-right: .3em; }
</style>
</head>
<body>
<h1 id="title">sluiced</h1>
<div id="state">connecting...</div>
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
const W = 170, H = 46, GX = 70, GY = 24;
let generation = -1, previous = null;

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function rate(n) {
  return n >= 100 ? Math.round(n).toString() : n.toFixed(1);
}

// Columns by longest path from a source; rows in graph order within a column.
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
  const pos = {};
  columns.forEach((col, c) => col.forEach((n, row) => {
    pos[n.id] = { x: 10 + c * (W + GX), y: 10 + row * (H + GY) };
  }));
  const rows = Math.max(1, ...columns.map(c => c.length));
  return { pos, width: 20 + columns.length * (W + GX) - GX, height: 20 + rows * (H + GY) - GY };
}

function draw(graph) {
  const svg = document.getElementById("graph");
  svg.querySelectorAll("g, path.edge").forEach(e => e.remove());
  const { pos, width, height } = layout(graph);
  svg.setAttribute("width", Math.max(width, 200));
  svg.setAttribute("height", Math.max(height, 60));
  graph.edges.forEach(e => {
    const a = pos[e.from.split(".")[0]], b = pos[e.to];
    if (!a || !b) return;
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
    el("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }, svg);
  });
  graph.nodes.forEach(n => {
    const p = pos[n.id];
    const g = el("g", { class: "node " + n.role, id: "node-" + n.id,
                        transform: `translate(${p.x},${p.y})` }, svg);
    el("rect", { width: W, height: H, rx: 6 }, g);
    el("text", { x: 8, y: 18, "font-weight": "bold" }, g).textContent = n.id;
    el("text", { x: 8, y: 36, fill: "#555" }, g).textContent = n.type;
    el("text", { x: W - 8, y: 36, "text-anchor": "end", id: "rate-" + n.id }, g).textContent = "";
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
  const graph = await r.json();
  document.getElementById("title").textContent = "sluiced: " + graph.name;
  draw(graph);
}

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
      set("status-" + n.id, n.paused ? "paused" : "");
      const g = document.getElementById("node-" + n.id);
      if (g) g.classList.toggle("paused", n.paused);
    });
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

// A graph's timeline as a Gantt chart (SVG): one row per job that started, a light bar
// from ready to start (waiting for a worker), a bar in the state's colour from start to
// end, the critical path outlined; a running job's bar grows until its end.
import { el } from "./ui.js";
import { color, secs, svg, ticks } from "./svg.js";

const ROW = 22, LABEL = 220, PAD = 14, AXIS = 26;

export function gantt(timeline, { onOpen, criticalOnly = false } = {}) {
  const begin = timeline.begin ? Date.parse(timeline.begin) : null;
  const started = timeline.items.filter((i) => i.started_at);
  const rows = (criticalOnly ? started.filter((i) => i.critical) : started)
    .sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at) || a.id - b.id);
  const waiting = timeline.items.length - started.length;
  if (!rows.length || begin === null) {
    return el("div", { class: "empty", id: "gantt" }, "No job of this graph has started yet.");
  }
  const end = Math.max(...rows.map((i) => Date.parse(i.ended_at)), begin + 1);
  const span = (end - begin) / 1000;
  const width = 1000, plot = width - LABEL - PAD * 2 - 60;
  const x = (iso) => LABEL + PAD + plot * ((Date.parse(iso) - begin) / 1000) / span;
  const height = AXIS + rows.length * ROW + PAD;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%",
    class: "gantt", role: "img", "aria-label": `Timeline of ${rows.length} jobs` });
  for (const t of ticks(span)) {
    const tx = LABEL + PAD + plot * t / span;
    chart.append(svg("line", { x1: tx, x2: tx, y1: AXIS - 6, y2: height - PAD, class: "gridline" }),
      svg("text", { x: tx, y: AXIS - 10, class: "tick", "text-anchor": "middle" }, t ? `+${secs(t)}` : "0"));
  }
  rows.forEach((item, n) => {
    const y = AXIS + n * ROW;
    const start = x(item.started_at), stop = Math.max(x(item.ended_at), start + 2);
    const row = svg("g", { class: `row${item.critical ? " critical" : ""}`,
      dataset: { id: item.id, label: item.label || "", critical: item.critical ? "1" : "0" },
      onclick: () => onOpen && onOpen(item) },
    svg("title", {}, `${item.label || `job ${item.id}`} (${item.type}): ${item.state}, `
      + `ran ${secs(item.duration)}, waited ${secs(item.wait)}`
      + (item.attempts > 1 ? `, ${item.attempts} attempts` : "")),
    svg("text", { x: LABEL - 4, y: y + 15, class: "name", "text-anchor": "end" },
      (item.label || `#${item.id}`).slice(0, 30)),
    svg("rect", { x: x(item.ready_at), y: y + 8, width: Math.max(start - x(item.ready_at), 0),
      height: 6, class: "wait" }),
    svg("rect", { x: start, y: y + 3, width: stop - start, height: ROW - 7, rx: 3,
      fill: color(item.state), class: "run" }),
    svg("text", { x: stop + 5, y: y + 15, class: "dur" }, secs(item.duration)));
    chart.append(row);
  });
  const note = el("div", { class: "faint gantt-note" },
    `Span ${secs(timeline.span)} · critical path: ${timeline.critical.length} job(s) that ran `
    + `${secs(timeline.critical_seconds)}` + (waiting ? ` · ${waiting} not started` : "")
    + (timeline.truncated ? ` · the first ${timeline.items.length} jobs only` : ""));
  return el("div", { id: "gantt", dataset: { rows: rows.length } }, note, chart);
}

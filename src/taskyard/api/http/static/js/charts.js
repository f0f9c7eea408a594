// Small time-series charts drawn as SVG (bars stacked per bucket, or lines with gaps
// where a bucket has no value), a tooltip per bucket, axes with a few round ticks.
import { el } from "./ui.js";
import { color, svg, ticks } from "./svg.js";

const W = 480, H = 170, LEFT = 46, RIGHT = 10, TOP = 10, BOTTOM = 22;

// series: [{ key, label, state (colour), values: [number|null per point] }]
// kind: "bars" (stacked) or "lines"; fmt: how a value reads on the axis and tooltips.
export function timeChart({ id, title, points, series, kind = "bars", fmt = String, unit = "" }) {
  const n = points.length;
  const totals = points.map((_, i) => kind === "bars"
    ? series.reduce((a, s) => a + (s.values[i] || 0), 0)
    : Math.max(0, ...series.map((s) => s.values[i] ?? 0)));
  const max = Math.max(...totals, 0);
  const scale = ticks(max || 1, 4);
  const top = scale[scale.length - 1] || 1;
  const plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
  const x = (i) => LEFT + (plotW * i) / Math.max(n, 1);
  const y = (v) => TOP + plotH - (plotH * v) / top;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", class: "chart",
    role: "img", "aria-label": title });
  for (const t of scale) {
    chart.append(svg("line", { x1: LEFT, x2: W - RIGHT, y1: y(t), y2: y(t), class: "gridline" }),
      svg("text", { x: LEFT - 6, y: y(t) + 3.5, class: "tick", "text-anchor": "end" }, fmt(t)));
  }
  for (const [i, label] of timeLabels(points)) {
    chart.append(svg("text", { x: x(i), y: H - 6, class: "tick", "text-anchor": "middle" }, label));
  }
  const width = Math.max(plotW / Math.max(n, 1) - 1, 1);
  if (kind === "bars") {
    points.forEach((_, i) => {
      let base = 0;
      for (const s of series) {
        const v = s.values[i] || 0;
        if (!v) continue;
        chart.append(svg("rect", { x: x(i) + 0.5, y: y(base + v), width, height: y(base) - y(base + v),
          fill: color(s.state), class: "bar", dataset: { series: s.key } }));
        base += v;
      }
    });
  } else {
    for (const s of series) {
      let d = "", pen = false;
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) { pen = false; return; }
        d += `${pen ? "L" : "M"}${(x(i) + width / 2).toFixed(1)},${y(v).toFixed(1)}`;
        pen = true;
      });
      if (d) chart.append(svg("path", { d, class: `line${s.faint ? " faint" : ""}`,
        stroke: color(s.state), dataset: { series: s.key } }));
      s.values.forEach((v, i) => {  // single points between gaps stay visible
        if (v !== null && v !== undefined && (s.values[i - 1] ?? null) === null
          && (s.values[i + 1] ?? null) === null) {
          chart.append(svg("circle", { cx: x(i) + width / 2, cy: y(v), r: 2, fill: color(s.state) }));
        }
      });
    }
  }
  points.forEach((p, i) => {
    const lines = series.map((s) => `${s.label}: ${s.values[i] === null || s.values[i] === undefined
      ? "–" : fmt(s.values[i])}${unit}`);
    chart.append(svg("rect", { x: x(i), y: TOP, width: plotW / Math.max(n, 1), height: plotH,
      class: "hover" }, svg("title", {}, [new Date(p.t).toLocaleString(), ...lines].join("\n"))));
  });
  const legend = el("div", { class: "legend" }, series.map((s) =>
    el("span", { style: `--c: var(--s-${s.state})` }, el("i"), s.label)));
  const sum = kind === "bars" ? series.reduce((a, s) => a + s.values.reduce((b, v) => b + (v || 0), 0), 0) : null;
  return el("div", { class: "card chart-card", id, dataset: { total: sum ?? "" } },
    el("div", { class: "chart-head" }, el("h2", {}, title), legend), chart);
}

function timeLabels(points) {
  if (points.length < 2) return [];
  const step = (Date.parse(points[1].t) - Date.parse(points[0].t)) / 1000;
  const every = step <= 60 ? 15 : step <= 900 ? 24 : 12; // 15 min, 6 h, 1 day
  const out = [];
  points.forEach((p, i) => {
    if (i % every) return;
    const d = new Date(p.t);
    out.push([i, step <= 900 ? d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })
      : d.toLocaleDateString(undefined, { weekday: "short", day: "numeric" })]);
  });
  return out;
}

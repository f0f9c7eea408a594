// The history panel: throughput, queue depth, waits, failures and cycle times over the
// last hour, day or week (GET /api/v1/history), for everything, a pool or a task type.
import { api } from "../api.js";
import { timeChart } from "../charts.js";
import { secs } from "../svg.js";
import { el } from "../ui.js";

const WINDOWS = [["hour", "Last hour"], ["day", "Last day"], ["week", "Last week"]];
let chosen = "hour"; // kept while the tab stays open

export function historyPanel(filter = {}) {
  const body = el("div", { class: "grid cols-charts" });
  const tabs = el("div", { class: "tabs", id: "history-window" });
  const note = el("span", { class: "faint", id: "history-note" });
  const by = el("div", { class: "faint history-by", id: "history-by" });
  const panel = el("section", { class: "section-gap", id: "history" },
    el("div", { class: "page-head sub" }, el("h2", {}, "History"), note,
      el("span", { class: "spacer" }), tabs), by, body);
  const draw = (h) => {
    tabs.replaceChildren(...WINDOWS.map(([w, text]) => el("button", { class: w === chosen ? "on" : "",
      dataset: { window: w }, onclick: () => { chosen = w; load(); } }, text)));
    const per = h.bucket_seconds === 60 ? "per minute" : h.bucket_seconds === 900 ? "per 15 minutes" : "per 2 hours";
    note.textContent = `${per} · ${h.totals.finished.toLocaleString()} jobs ended, `
      + `${(h.totals.failed + h.totals.errored).toLocaleString()} failed attempts`;
    const col = (k) => h.points.map((p) => p[k]);
    body.replaceChildren(
      timeChart({ id: "chart-throughput", title: "Throughput (attempts ended)", points: h.points,
        series: [{ key: "succeeded", label: "succeeded", state: "succeeded", values: col("succeeded") },
          { key: "failed", label: "failed", state: "failed", values: col("failed") },
          { key: "errored", label: "error / lost", state: "error", values: col("errored") },
          { key: "canceled", label: "canceled", state: "canceled", values: col("canceled") }] }),
      timeChart({ id: "chart-depth", title: "Queue depth (pending jobs)", points: h.points, kind: "lines",
        fmt: (v) => (Math.round(v * 10) / 10).toLocaleString(),
        series: [{ key: "depth", label: "mean", state: "pending", values: col("depth") },
          { key: "depth_max", label: "max", state: "waiting", values: col("depth_max"), faint: true }] }),
      timeChart({ id: "chart-wait", title: "Submit → start wait", points: h.points, kind: "lines", fmt: secs,
        series: [{ key: "wait_p50", label: "p50", state: "dispatched", values: col("wait_p50") },
          { key: "wait_p95", label: "p95", state: "suspended", values: col("wait_p95") }] }),
      timeChart({ id: "chart-failures", title: "Failures (attempts)", points: h.points,
        series: [{ key: "failed", label: "failed", state: "failed", values: col("failed") },
          { key: "errored", label: "error / lost worker", state: "error", values: col("errored") }] }),
      timeChart({ id: "chart-cycle", title: "Cycle time (created → ended)", points: h.points, kind: "lines", fmt: secs,
        series: [{ key: "cycle_p50", label: "p50", state: "succeeded", values: col("cycle_p50") },
          { key: "cycle_p95", label: "p95", state: "dependency_failed", values: col("cycle_p95") }] }),
    );
    const links = (kind, names) => names.length ? el("span", { class: "by" }, `By ${kind}: `,
      names.map((n, i) => [i ? " · " : "", el("a", { href: `#/${kind === "pool" ? "pools" : "types"}/${encodeURIComponent(n)}`,
        dataset: { [kind]: n } }, n)])) : null;
    by.replaceChildren(...[filter.pool || filter.type ? null : links("pool", h.pools),
      filter.pool || filter.type ? null : links("type", h.types)].filter(Boolean));
    panel.dataset.window = h.window;
  };
  const load = async () => draw(await api("/api/v1/history", { params: { window: chosen, ...filter } }));
  return { panel, load };
}

// Overview: counts by state, recent throughput, workers' capacity, recent graphs, a live
// ticker of events.
import { api } from "../api.js";
import { onEvent } from "../stream.js";
import { ACTIVE, STATES, ago, badge, el, stackedBar, throttle, tookNode, when } from "../ui.js";
import { historyPanel } from "./history.js";

export async function render(page) {
  const stats = el("div", { class: "grid cols-4" });
  const states = el("div", { class: "states-list" });
  const graphs = el("div");
  const ticker = el("ul", { class: "ticker", id: "ticker" });
  const history = historyPanel();
  page.append(
    el("div", { class: "page-head" }, el("h1", {}, "Overview"), el("span", { class: "spacer" }),
      el("span", { class: "faint", id: "updated" })),
    stats,
    history.panel,
    el("div", { class: "grid cols-main section-gap" },
      el("div", { class: "card" }, el("h2", {}, "Jobs by state ",
        el("span", { class: "faint" }, "· now")), states),
      el("div", { class: "card flush" }, el("h2", {}, "Live events"), ticker)),
    el("div", { class: "card flush section-gap" }, el("h2", {}, "Recent graphs"), graphs),
  );
  ticker.append(el("li", { class: "faint" }, "Waiting for events…"));

  const load = async () => {
    const o = await api("/api/v1/overview");
    const unfinished = STATES.filter((s) => ACTIVE.has(s)).reduce((a, s) => a + (o.jobs[s] || 0), 0);
    const total = Object.values(o.jobs).reduce((a, b) => a + b, 0);
    const perMin = (n) => (n / (o.window_seconds / 60)).toFixed(n ? 1 : 0);
    const ended = o.endings["job-completed"] + o.endings["job-failed"]
      + o.endings["job-exception"];
    stats.replaceChildren(
      stat("Jobs", total.toLocaleString(), `${unfinished.toLocaleString()} not finished`, "jobs"),
      stat("Running now", (o.jobs.running + o.jobs.dispatched).toLocaleString(),
        `${o.jobs.pending.toLocaleString()} pending · ${o.jobs.waiting.toLocaleString()} waiting`,
        "running"),
      // Attempts, not jobs: a job that failed twice and then succeeded ended three
      // attempts. The "Jobs by state" card counts jobs.
      stat("Attempts ended", `${perMin(ended)}/min`,
        `last ${o.window_seconds / 60} min: ${o.endings["job-completed"]} succeeded · `
        + `${o.endings["job-failed"]} failed · ${o.endings["job-exception"]} exceptions`,
        "attempts"),
      el("div", { class: "card stat" }, el("div", { class: "label" }, "Workers"),
        el("div", { class: "value" }, String(o.workers)),
        el("div", { class: "capacity section-gap" },
          el("div", { class: `bar${o.used >= o.capacity && o.capacity ? " full" : ""}` },
            el("span", { style: `width: ${o.capacity ? 100 * Math.min(o.used / o.capacity, 1) : 0}%` })),
          el("span", { class: "faint" }, `${o.used}/${o.capacity} used`))),
    );
    states.replaceChildren(...STATES.map((s) => el("a", {
      class: "state-count", style: `--c: var(--s-${s})`, href: `#/jobs?state=${s}`,
      dataset: { state: s } }, el("span", { class: "sw" }),
    el("span", {}, el("div", { class: "n" }, o.jobs[s].toLocaleString()),
      el("div", { class: "s" }, s.replace("_", " "))))));
    graphs.replaceChildren(graphTable(o.graphs));
    page.querySelector("#updated").textContent = `updated ${when(new Date().toISOString())}`;
  };
  await load();
  await history.load();
  const recent = await api("/api/v1/events", { params: { tail: 30 } });
  if (recent.items.length) ticker.replaceChildren();
  const show = (events) => {
    for (const e of events.slice(-30)) {
      ticker.prepend(el("li", { class: "fresh" }, el("span", { class: "faint" }, ago(e.created_at)),
        el("span", {}, topicLabel(e.topic)), el("span", { class: "mono" }, describe(e))));
    }
    while (ticker.childElementCount > 60) ticker.lastChild.remove();
  };
  show(recent.items);
  const refresh = throttle(() => load().catch(() => {}), 2000);
  const timer = setInterval(refresh, 15000);
  const charts = setInterval(() => history.load().catch(() => {}), 30000);
  const stop = onEvent((events) => {
    if (ticker.firstChild && ticker.firstChild.classList.contains("faint")) ticker.replaceChildren();
    show(events);
    refresh();
  });
  return () => { stop(); clearInterval(timer); clearInterval(charts); };
}

function stat(label, value, sub, name) {
  return el("div", { class: "card stat", dataset: { stat: name } },
    el("div", { class: "label" }, label),
    el("div", { class: "value" }, value), el("div", { class: "sub" }, sub));
}

const TOPIC_STATE = { "job-pending": "pending", "job-running": "running",
  "job-completed": "succeeded", "job-failed": "failed", "job-exception": "error",
  "graph-running": "running", "graph-blocked": "failed", "graph-finished": "succeeded",
  "graph-canceled": "canceled", "graph-stalled": "suspended", "schedule-error": "error" };

export function topicLabel(topic) {
  const node = badge(TOPIC_STATE[topic] || "waiting");
  node.textContent = topic;
  return node;
}

function describe(e) {
  const p = e.payload || {};
  if (p.job_id !== undefined) return `job ${p.job_id}${p.attempt ? ` #${p.attempt}` : ""}`
    + `${p.type ? ` (${p.type})` : ""}${p.reason ? ` – ${p.reason}` : ""}`;
  if (p.graph_id !== undefined) return `graph ${p.graph_id}${p.routing ? ` (${p.routing})` : ""}`;
  return e.routing_key;
}

export function graphTable(items) {
  if (!items.length) return el("div", { class: "empty" }, "No graphs yet. Submit one with "
    + "taskyard graph submit FILE or POST /api/v1/graphs.");
  return el("table", {}, el("thead", {}, el("tr", {}, ["Graph", "State", "Routing", "Progress",
    "Done", "Created", "Took"].map((h) => el("th", { class: h === "Took" ? "num" : "" }, h)))),
  el("tbody", {}, items.map((g) => el("tr", { class: "link", dataset: { id: g.id },
    onclick: () => { location.hash = `#/graphs/${g.id}`; } },
  el("td", {}, el("a", { href: `#/graphs/${g.id}` }, `#${g.id}`)),
  el("td", {}, badge(g.stalled ? "suspended" : g.state)),
  el("td", { class: "mono" }, g.routing || "–"),
  el("td", { style: "min-width: 200px" }, stackedBar(g.states, g.jobs_total)),
  el("td", { class: "num" }, `${g.jobs_done.toLocaleString()}/${g.jobs_total.toLocaleString()}`),
  el("td", { class: "faint" }, ago(g.created_at)),
  el("td", { class: "num", dataset: { took: "1" } }, tookNode(g.created_at, g.finished_at,
    g.state === "running"))))));
}

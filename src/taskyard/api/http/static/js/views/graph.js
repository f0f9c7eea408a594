// One graph: its state and counts by state, the DAG drawn live (up to DRAW_LIMIT tasks),
// else (and on the List tab) a paged list of its jobs.
import { allPages, api, session } from "../api.js";
import { DagView } from "../dag.js";
import { gantt } from "../gantt.js";
import { onEvent } from "../stream.js";
import { STATES, badge, el, stackedBar, throttle, toast, when } from "../ui.js";
import { jobTable } from "./jobs.js";

const DRAW_LIMIT = 2500;
// What a job event tells of its job's state (dependency_failed and skipped have no event:
// the periodic refresh brings those).
function stateFrom(e) {
  const p = e.payload || {};
  switch (e.topic) {
    case "job-pending": return "pending";
    case "job-running": return "running";
    case "job-completed": return "succeeded";
    case "job-failed": return p.retry ? "pending" : "failed";
    case "job-exception":
      if (p.reason === "canceled" || p.reason === "graph canceled") return "canceled";
      if (p.state === "error") return p.retry ? "pending" : "error";
      return "suspended";
    default: return null;
  }
}

export async function render(page, params) {
  const id = Number(params.id);
  const started = performance.now();
  let graph = await api(`/api/v1/graphs/${id}`, { params: { jobs: false } });
  const head = el("div");
  const chips = el("div", { class: "chips" });
  const body = el("div", { class: "section-gap" });
  page.append(el("div", { class: "crumbs" }, el("a", { href: "#/graphs" }, "Graphs"), ` / #${id}`),
    head, el("div", { class: "card section-gap" }, chips), body);
  let filter = params.state || "";
  let view = graph.jobs_total <= DRAW_LIMIT && !params.list ? "graph" : "list";
  let dag = null;
  let listReload = null;
  let timelineReload = null;

  const drawHead = () => {
    const cancel = session.canWrite() && (graph.state === "running" || graph.state === "blocked")
      ? el("button", { class: "danger", id: "cancel-graph", onclick: async () => {
        if (!confirm(`Cancel graph #${id}? Its unfinished jobs are canceled.`)) return;
        try { await api(`/api/v1/graphs/${id}/cancel`, { method: "POST", params: { jobs: false } }); toast(`Graph #${id} canceled`); refresh(); } catch (err) { toast(err.message, true); }
      } }, "Cancel graph") : null;
    const tabs = graph.jobs_total <= DRAW_LIMIT ? el("div", { class: "tabs" },
      ["graph", "timeline", "list"].map((v) => el("button", { class: v === view ? "on" : "",
        dataset: { tab: v }, onclick: () => { view = v; drawBody(); drawHead(); } },
      v[0].toUpperCase() + v.slice(1))))
      : null;
    head.replaceChildren(el("div", { class: "page-head" },
      el("h1", {}, `Graph #${id}`), badge(graph.stalled ? "suspended" : graph.state, true),
      graph.routing ? el("span", { class: "mono faint" }, `routing ${graph.routing}`) : null,
      el("span", { class: "spacer" }), tabs, cancel),
    el("div", { class: "grid cols-main" }, el("div", {},
      stackedBar(graph.states, graph.jobs_total, true),
      el("div", { class: "faint section-gap" }, `${graph.jobs_done.toLocaleString()} of `
        + `${graph.jobs_total.toLocaleString()} jobs done · created ${when(graph.created_at)}`
        + (graph.finished_at ? ` · ended ${when(graph.finished_at)}` : "")))));
    chips.replaceChildren(...STATES.filter((s) => graph.states[s]).map((s) => el("span", {
      class: `chip${filter === s ? " on" : ""}`, style: `--c: var(--s-${s})`, dataset: { state: s },
      onclick: () => { filter = filter === s ? "" : s; view = "list"; drawHead(); drawBody(); } },
    el("span", { class: "sw" }), s.replace("_", " "), el("b", {}, graph.states[s].toLocaleString()))));
  };

  const drawBody = async () => {
    if (dag) { dag.destroy(); dag = null; }
    listReload = null;
    timelineReload = null;
    if (view === "timeline") {
      let criticalOnly = false;
      const box = el("div", { class: "card" });
      const draw = async () => {
        const timeline = await api(`/api/v1/graphs/${id}/timeline`);
        box.replaceChildren(el("label", { class: "check gantt-filter" }, el("input", {
          type: "checkbox", id: "critical-only", checked: criticalOnly,
          onchange: (e) => { criticalOnly = e.target.checked; draw(); } }), " Critical path only"),
        gantt(timeline, { criticalOnly, onOpen: (job) => { location.hash = `#/jobs/${job.id}`; } }));
      };
      body.replaceChildren(box);
      await draw();
      timelineReload = draw;
      return;
    }
    if (view === "graph") {
      const wrap = el("div", { class: "dag-wrap", id: "dag" });
      const legend = el("div", { class: "dag-legend" }, STATES.map((s) =>
        el("span", { style: `--c: var(--s-${s})` }, el("i"), s.replace("_", " "))));
      body.replaceChildren(wrap);
      const [jobs, edges] = await Promise.all([
        allPages("/api/v1/jobs", { graph_id: id, limit: 1000, order: "oldest" }),
        api(`/api/v1/graphs/${id}/edges`, { params: { limit: 100000 } }),
      ]);
      dag = new DagView(wrap, { jobs, edges: edges.items,
        onOpen: (job) => { location.hash = `#/jobs/${job.id}`; } });
      wrap.append(legend);
      // From opening the page to the drawing on screen (reported by the browser tests).
      wrap.dataset.drawMs = String(Math.round(performance.now() - started));
      wrap.dataset.layoutMs = String(Math.round(dag.layoutMs));
      wrap.dataset.nodes = String(jobs.length);
      return;
    }
    if (graph.jobs_total > DRAW_LIMIT) {
      body.replaceChildren(el("div", { class: "notice" }, `This graph has `
        + `${graph.jobs_total.toLocaleString()} tasks: too many to draw. The counts above `
        + "are live; its jobs are listed page by page below."));
    } else body.replaceChildren();
    const list = el("div", { class: "card flush" });
    body.append(list);
    listReload = await pagedJobs(list, { graph_id: id, state: filter, order: "oldest" });
  };

  const refresh = throttle(async () => {
    try {
      graph = await api(`/api/v1/graphs/${id}`, { params: { jobs: false } });
      drawHead();
      if (dag) {
        const jobs = await allPages("/api/v1/jobs", { graph_id: id, limit: 1000, order: "oldest" });
        for (const j of jobs) dag.setState(j.id, j.state);
      }
      if (listReload) listReload();
      if (timelineReload) await timelineReload();
    } catch (err) { /* the next event or tick tries again */ }
  }, 1500);

  drawHead();
  await drawBody();
  const timer = setInterval(refresh, 10000);
  const stop = onEvent((events) => {
    let ours = false;
    for (const e of events) {
      if (e.routing_key.split(".")[1] !== String(id)) continue;
      ours = true;
      const state = stateFrom(e);
      if (dag && state && e.payload && e.payload.job_id !== undefined) dag.setState(e.payload.job_id, state);
    }
    if (ours) refresh();
  });
  return () => { stop(); clearInterval(timer); if (dag) dag.destroy(); };
}

// A list of jobs with a "more" button (cursor pages); returns a function that reloads
// the pages shown so far.
export async function pagedJobs(container, params, pageSize = 100) {
  let shown = [];
  let next = null;
  const foot = el("div", { class: "table-foot" });
  const draw = () => {
    container.replaceChildren(jobTable(shown), foot);
    const more = next ? el("button", { id: "more", onclick: async () => {
      const page = await api("/api/v1/jobs", { params: { ...params, limit: pageSize, cursor: next } });
      shown = shown.concat(page.items); next = page.next; draw();
    } }, "Show more") : null;
    foot.replaceChildren(...[el("span", { class: "faint" },
      `${shown.length.toLocaleString()} shown`), more].filter(Boolean));
  };
  const load = async () => {
    const page = await api("/api/v1/jobs", { params: { ...params, limit: Math.min(1000, Math.max(pageSize, shown.length)) } });
    shown = page.items; next = page.next; draw();
  };
  await load();
  return () => load().catch(() => {});
}

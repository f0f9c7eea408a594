// Jobs: filters (state, type, graph), newest first, page by page; live.
import { api } from "../api.js";
import { onEvent } from "../stream.js";
import { STATES, badge, el, tookNode, ago, throttle } from "../ui.js";
import { pagedJobs } from "./graph.js";

export function jobTable(jobs) {
  if (!jobs.length) return el("div", { class: "empty" }, "No jobs match.");
  return el("table", { class: "jobs" }, el("thead", {}, el("tr", {}, ["Job", "Type", "Label",
    "State", "Priority", "Try", "Worker", "Created", "Took"].map((h) => el("th",
    { class: ["Priority", "Try", "Took"].includes(h) ? "num" : "" }, h)))),
  el("tbody", {}, jobs.map((j) => el("tr", { class: "link", dataset: { id: j.id, state: j.state },
    onclick: () => { location.hash = `#/jobs/${j.id}`; } },
  el("td", {}, el("a", { href: `#/jobs/${j.id}` }, `#${j.id}`)),
  el("td", {}, j.type), el("td", { class: "mono" }, j.label || ""),
  el("td", {}, badge(j.state)), el("td", { class: "num" }, String(j.priority)),
  el("td", { class: "num" }, String(j.attempt)), el("td", { class: "mono" }, j.worker || ""),
  el("td", { class: "faint" }, ago(j.created_at)),
  el("td", { class: "num" }, tookNode(j.started_at, j.finished_at, j.state === "running"))))));
}

export async function render(page, params) {
  const state = el("select", { id: "filter-state" }, el("option", { value: "" }, "every state"),
    STATES.map((s) => el("option", { value: s, selected: params.state === s }, s.replace("_", " "))));
  const type = el("input", { id: "filter-type", placeholder: "task type", value: params.type || "" });
  const graph = el("input", { id: "filter-graph", placeholder: "graph id", size: 8,
    value: params.graph_id || "" });
  const apply = () => {
    const q = new URLSearchParams();
    if (state.value) q.set("state", state.value);
    if (type.value.trim()) q.set("type", type.value.trim());
    if (graph.value.trim()) q.set("graph_id", graph.value.trim());
    location.hash = `#/jobs${q.toString() ? `?${q}` : ""}`;
  };
  state.addEventListener("change", apply);
  for (const input of [type, graph]) input.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(); });
  const list = el("div", { class: "card flush" });
  page.append(el("div", { class: "page-head" }, el("h1", {}, "Jobs"), el("span", { class: "spacer" }),
    el("div", { class: "filters" }, state, type, graph, el("button", { onclick: apply }, "Filter"))), list);
  const reload = await pagedJobs(list, { state: params.state, type: params.type,
    graph_id: params.graph_id });
  const refresh = throttle(reload, 2000);
  return onEvent(() => refresh());
}

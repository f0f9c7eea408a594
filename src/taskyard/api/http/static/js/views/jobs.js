// A table of jobs (the Jobs page, a graph's list); the Jobs page itself is the search.
import { badge, el, tookNode, ago } from "../ui.js";

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

// The Jobs page is the search (views/job_search.js).
export { render } from "./job_search.js";

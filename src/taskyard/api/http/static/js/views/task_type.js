// One task type: its definition, a link to its jobs, and its history.
import { api } from "../api.js";
import { el } from "../ui.js";
import { historyPanel } from "./history.js";

const SHOWN = ["handler", "pools", "cost", "timeout", "retries", "retry_delay", "max_queue_length",
  "locks", "rate_limit"];

export async function render(page, params) {
  const name = decodeURIComponent(params.id);
  const spec = await api(`/api/v1/task-types/${encodeURIComponent(name)}`).catch(() => null);
  const history = historyPanel({ type: name });
  const fields = spec ? SHOWN.filter((k) => spec[k] !== null && spec[k] !== undefined
    && !(Array.isArray(spec[k]) && !spec[k].length)).map((k) => [el("dt", {}, k.replace(/_/g, " ")),
    el("dd", { class: "mono" }, Array.isArray(spec[k]) ? spec[k].join(", ") : String(spec[k]))]) : [];
  page.append(el("div", { class: "crumbs" }, el("a", { href: "#/jobs" }, "Jobs"), ` / type ${name}`),
    el("div", { class: "page-head" }, el("h1", {}, `Task type ${name}`), el("span", { class: "spacer" }),
      el("a", { href: `#/jobs?type=${encodeURIComponent(name)}`, id: "type-jobs" }, "Its jobs →")),
    el("div", { class: "card" }, spec ? el("dl", { class: "fields" }, fields)
      : el("p", { class: "faint" }, "No such task type now (its history stays).")),
    history.panel);
  await history.load();
  const timer = setInterval(() => history.load().catch(() => {}), 30000);
  return () => clearInterval(timer);
}

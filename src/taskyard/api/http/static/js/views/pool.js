// One pool: its capacity and workers, a link to its jobs, and its history (jobs whose
// first-choice pool it is).
import { api } from "../api.js";
import { el } from "../ui.js";
import { historyPanel } from "./history.js";

export async function render(page, params) {
  const name = decodeURIComponent(params.id);
  const pools = await api("/api/v1/pools");
  const pool = pools.items.find((p) => p.name === name);
  const history = historyPanel({ pool: name });
  page.append(el("div", { class: "crumbs" }, el("a", { href: "#/workers" }, "Workers & pools"), ` / ${name}`),
    el("div", { class: "page-head" }, el("h1", {}, `Pool ${name}`), el("span", { class: "spacer" }),
      el("a", { href: `#/jobs?pool=${encodeURIComponent(name)}`, id: "pool-jobs" }, "Its jobs →")),
    el("div", { class: "card" }, pool
      ? el("p", {}, `${pool.used}/${pool.capacity} capacity in use · `
        + (pool.workers.length ? `workers: ${pool.workers.join(", ")}` : "no live worker"))
      : el("p", { class: "faint" }, "No live worker serves this pool now.")),
    history.panel);
  await history.load();
  const timer = setInterval(() => history.load().catch(() => {}), 30000);
  return () => clearInterval(timer);
}

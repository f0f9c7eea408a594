// Jobs: search (id, label or args text, state, type, pool, worker, time range), sorted,
// page by page through GET /api/v1/jobs/search; live. Filters no index serves make a
// page examine a bounded stretch of jobs: the page then goes on by itself a few times,
// and offers to search further.
import { api, session } from "../api.js";
import { onEvent } from "../stream.js";
import { STATES, el, throttle, toast } from "../ui.js";
import { jobTable } from "./jobs.js";

const FIELDS = ["q", "state", "type", "label", "pool", "worker", "since", "until", "sort",
  "graph_id", "schedule"];
const RANGES = [["", "any time"], ["1h", "last hour"], ["1d", "last day"], ["7d", "last week"],
  ["30d", "last 30 days"]];
const SORTS = [["-created", "newest first"], ["created", "oldest first"],
  ["-finished", "last ended first"], ["finished", "first ended first"]];
const AUTO_PAGES = 8; // windows examined before asking "search further?"

export function searchParams(params) {
  const out = {};
  for (const f of FIELDS) if (params[f]) out[f] = params[f];
  return out;
}

export async function render(page, params) {
  const input = (id, placeholder, value, size) => el("input", { id, placeholder, size,
    value: value || "", type: "search" });
  const q = input("filter-q", "id, label or args text", params.q, 26);
  const state = el("select", { id: "filter-state" }, el("option", { value: "" }, "every state"),
    STATES.map((s) => el("option", { value: s, selected: params.state === s }, s.replace("_", " "))));
  const type = input("filter-type", "task type", params.type, 12);
  const pool = input("filter-pool", "pool", params.pool, 9);
  const worker = input("filter-worker", "worker", params.worker, 10);
  const since = el("select", { id: "filter-since" }, RANGES.map(([v, t]) =>
    el("option", { value: v, selected: (params.since || "") === v }, t)));
  const sort = el("select", { id: "filter-sort" }, SORTS.map(([v, t]) =>
    el("option", { value: v, selected: (params.sort || "-created") === v }, t)));
  const apply = () => {
    const out = new URLSearchParams();
    for (const [k, node] of [["q", q], ["state", state], ["type", type], ["pool", pool],
      ["worker", worker], ["since", since]]) {
      if (node.value.trim()) out.set(k, node.value.trim());
    }
    if (sort.value !== "-created") out.set("sort", sort.value);
    for (const k of ["label", "graph_id", "until", "schedule"]) if (params[k]) out.set(k, params[k]);
    location.hash = `#/jobs${out.toString() ? `?${out}` : ""}`;
  };
  for (const node of [state, since, sort]) node.addEventListener("change", apply);
  for (const node of [q, type, pool, worker]) {
    node.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(); });
  }
  const list = el("div", { class: "card flush", id: "results" });
  const actions = el("div", { class: "bulk", id: "bulk" });
  const scope = params.schedule ? el("div", { class: "notice", id: "scope" }, `Jobs of schedule ${params.schedule} · `,
    el("a", { href: "#/jobs" }, "all jobs")) : null;
  page.append(el("div", { class: "page-head" }, el("h1", {}, "Jobs"), el("span", { class: "spacer" }),
    el("div", { class: "filters" }, q, state, type, pool, worker, since, sort,
      el("button", { onclick: apply, id: "search" }, "Search"))), ...[scope, actions].filter(Boolean), list);
  const query = searchParams(params);
  if (session.canWrite()) {
    for (const [action, label] of [["cancel", "Cancel all matching…"], ["retry", "Retry all matching…"]]) {
      actions.append(el("button", { id: `bulk-${action}`, class: action === "cancel" ? "danger" : "",
        onclick: () => bulk(action, query, () => results.reload()) }, label));
    }
  }
  const results = new SearchResults(list, query);
  await results.load();
  const refresh = throttle(() => results.reload(), 2000);
  return onEvent(() => refresh());
}

// The pages shown so far, and how to get more (the cursor, whether the last page
// reached its bound before it was full).
class SearchResults {
  constructor(container, query) {
    this.container = container; this.query = query;
    this.items = []; this.next = null; this.complete = true;
    this.foot = el("div", { class: "table-foot" });
  }

  async load() {
    this.items = []; this.next = null;
    await this.more(100);
  }

  async reload() {
    // Live refresh: the first pages again, as many jobs as shown (at most 1,000).
    const size = Math.min(1000, Math.max(100, this.items.length));
    this.items = []; this.next = null;
    await this.more(size).catch(() => {});
  }

  async more(size) {
    let pages = 0;
    do {
      const page = await api("/api/v1/jobs/search", {
        params: { ...this.query, limit: size - this.items.length || size, cursor: this.next } });
      this.items = this.items.concat(page.items);
      this.next = page.next; this.complete = page.complete;
      pages++;
    } while (this.next && !this.complete && this.items.length < size && pages < AUTO_PAGES);
    this.draw();
  }

  draw() {
    const more = this.next ? el("button", { id: "more", onclick: () => this.more(this.items.length + 100) },
      this.complete ? "Show more" : "Search further") : null;
    const note = this.next && !this.complete ? el("span", { class: "faint", id: "partial" },
      " · searched part of the history: more may match further back") : null;
    this.foot.replaceChildren(...[el("span", { class: "faint", id: "shown" },
      `${this.items.length.toLocaleString()} shown`), note, more].filter(Boolean));
    this.container.replaceChildren(jobTable(this.items), this.foot);
  }
}

// Cancel or retry every job the search finds: a dry run counts them, the operator
// confirms that count, and the action changes those jobs (up to the newest counted:
// none submitted since) — POST /api/v1/jobs/bulk/{action}.
async function bulk(action, query, done) {
  const params = { ...query };
  delete params.sort;
  const path = `/api/v1/jobs/bulk/${action}`;
  try {
    const count = await api(path, { method: "POST", params: { ...params, dry_run: true } });
    if (!count.matched) { toast(`No job here to ${action}.`); return; }
    const more = count.more ? " (the first 10,000; run it again for the rest)" : "";
    if (!confirm(`${action === "cancel" ? "Cancel" : "Retry"} ${count.matched} job(s) matching this search${more}?`)) return;
    const result = await api(path, { method: "POST", params: { ...params, up_to: count.up_to } });
    const verb = action === "cancel" ? "Canceled" : "Retried";
    toast(`${verb} ${result.changed} job(s)${result.skipped ? `; ${result.skipped} had changed state` : ""}.`);
    done();
  } catch (err) {
    toast(err.message, true);
  }
}

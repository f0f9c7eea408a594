// Small DOM and formatting helpers. Text always goes in as text (never as HTML).
export const STATES = ["waiting", "pending", "dispatched", "running", "suspended", "awaiting",
  "succeeded", "failed", "error", "canceled", "dependency_failed", "skipped"];
export const ACTIVE = new Set(["waiting", "pending", "dispatched", "running", "suspended", "awaiting"]);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.style.cssText = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function stateColor(state) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--s-${state}`).trim()
    || "#64748b";
}

export function badge(state, big = false) {
  return el("span", { class: `badge${big ? " big" : ""}`, style: `--c: var(--s-${state})`,
    dataset: { state } }, state.replace("_", " "));
}

// A progress bar fills from the left: the jobs that ended first (succeeded, then the
// other endings), then those under way, then those not started.
const BAR_ORDER = ["succeeded", "skipped", "failed", "error", "dependency_failed", "canceled",
  "running", "dispatched", "suspended", "pending", "waiting"];

export function stackedBar(counts, total, thick = false) {
  const order = BAR_ORDER.concat(STATES.filter((s) => !BAR_ORDER.includes(s)));
  const bar = el("div", { class: `bar${thick ? " thick" : ""}`, role: "img",
    "aria-label": order.filter((s) => counts[s]).map((s) => `${counts[s]} ${s}`).join(", ") });
  const sum = total || Object.values(counts).reduce((a, b) => a + b, 0) || 1;
  for (const state of order) {
    if (counts[state]) {
      bar.append(el("span", { style: `--c: var(--s-${state}); width: ${100 * counts[state] / sum}%`,
        title: `${counts[state]} ${state}`, dataset: { state } }));
    }
  }
  return bar;
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit",
    minute: "2-digit", second: "2-digit" });
}

export function ago(iso) {
  if (!iso) return "";
  const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
  const size = Math.abs(seconds);
  const text = size < 45 ? `${Math.round(size)}s` : size < 2700 ? `${Math.round(size / 60)}m`
    : size < 79200 ? `${Math.round(size / 3600)}h` : `${Math.round(size / 86400)}d`;
  return seconds >= 0 ? `${text} ago` : `in ${text}`;
}

export function took(start, end) {
  if (!start) return "";
  const ms = (end ? new Date(end) : new Date()) - new Date(start);
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60000)}m ${Math.round((ms % 60000) / 1000)}s`;
}

// How long something took; while it runs (`running`), a span that counts on: every
// `.ticking` element on the page is updated once a second.
export function tookNode(start, end, running) {
  if (!start || end || !running) return took(start, end);
  return el("span", { class: "ticking", dataset: { since: start } }, took(start, null));
}

setInterval(() => {
  for (const node of document.querySelectorAll(".ticking")) {
    node.textContent = took(node.dataset.since, null);
  }
}, 1000);

export function json(value) {
  return el("pre", { class: "json" }, JSON.stringify(value, null, 2));
}

export function table(headers, rows, { empty = "Nothing here yet.", onRow } = {}) {
  const body = el("tbody");
  for (const row of rows) {
    const tr = el("tr", { class: onRow ? "link" : "" }, row.cells.map((c) => el("td",
      { class: c && c.num ? "num" : "" }, c && c.node !== undefined ? c.node : c)));
    if (onRow) tr.addEventListener("click", () => onRow(row));
    if (row.id !== undefined) tr.dataset.id = row.id;
    body.append(tr);
  }
  const t = el("table", {}, el("thead", {}, el("tr", {}, headers.map((h) =>
    el("th", { class: h.endsWith("#") ? "num" : "" }, h.replace("#", ""))))), body);
  return rows.length ? t : el("div", {}, t, el("div", { class: "empty" }, empty));
}

let toastTimer = null;
export function toast(message, bad = false) {
  const node = document.getElementById("toast");
  node.textContent = message;
  node.className = `toast${bad ? " bad" : ""}`;
  node.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { node.hidden = true; }, 4000);
}

// Calls fn at most once per `ms`, the last call winning (live refreshes).
export function throttle(fn, ms) {
  let timer = null, pending = false;
  return (...args) => {
    if (timer) { pending = true; return; }
    fn(...args);
    timer = setTimeout(() => { timer = null; if (pending) { pending = false; fn(...args); } }, ms);
  };
}

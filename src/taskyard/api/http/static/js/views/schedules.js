// Schedules with their next runs, rhythm, catch-up and overlap policies, last outcome.
import { api, session } from "../api.js";
import { ago, badge, el, toast, when } from "../ui.js";

function rhythm(s) {
  if (s.cron) return `cron ${s.cron}${s.timezone && s.timezone !== "UTC" ? ` (${s.timezone})` : ""}`;
  if (s.kind === "every") return `every ${duration(s.interval)}`;
  return `adaptive, now ${duration(s.current_interval ?? s.interval)}`;
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}m`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(seconds % 3600 ? 1 : 0)}h`;
  return `${(seconds / 86400).toFixed(seconds % 86400 ? 1 : 0)}d`;
}

// What a missed tick and a tick while the previous run goes on do (recurring.md).
function policy(s) {
  const window = s.catchup_window !== null && s.catchup_window !== undefined
    ? ` within ${duration(s.catchup_window)}` : "";
  return `catch-up ${s.catchup ?? "one"}${window}; overlap ${s.overlap ?? "allow"}`;
}

function outcomeState(outcome) {
  if (outcome === "succeeded" || outcome.startsWith("eventful") || outcome.startsWith("uneventful")) return "succeeded";
  if (outcome.startsWith("fail") || outcome.startsWith("err")) return "failed";
  return "waiting";
}

function labelled(state, text) {
  const node = badge(state);
  node.textContent = text;
  return node;
}

export async function render(page) {
  const body = el("div", { class: "card flush" });
  page.append(el("div", { class: "page-head" }, el("h1", {}, "Schedules")), body);
  const load = async () => {
    const found = await api("/api/v1/schedules");
    body.replaceChildren(found.items.length ? el("table", {}, el("thead", {}, el("tr", {},
      ["Schedule", "Type", "Next run", "Rhythm", "Missed ticks", "Last run", "Last outcome", "State", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, found.items.map((s) => el("tr", { dataset: { name: s.name } },
      el("td", { class: "mono" }, s.name), el("td", {}, s.type),
      el("td", {}, s.paused ? el("span", { class: "faint" }, "paused")
        : [el("b", {}, ago(s.next_run)), el("div", { class: "faint" }, when(s.next_run))]),
      el("td", {}, rhythm(s)), el("td", { class: "faint policy" }, policy(s)),
      el("td", { class: "faint" }, s.last_run_at ? ago(s.last_run_at) : "never"),
      el("td", {}, s.last_outcome ? labelled(outcomeState(s.last_outcome), s.last_outcome) : ""),
      el("td", {}, labelled(s.paused ? "canceled" : "running", s.paused ? "paused" : "active")),
      el("td", { class: "actions" }, actions(s, load)))))) :
      el("div", { class: "empty" }, "No schedules. Add one with taskyard schedule add NAME TYPE --every 5m."));
  };
  await load();
  const timer = setInterval(() => load().catch(() => {}), 10000);
  return () => clearInterval(timer);
}

// Its jobs; run now (write scope); pause or resume (admin scope).
function actions(s, reload) {
  const act = (verb, label, path, confirmText) => el("button", { class: "small", dataset: { act: verb },
    onclick: async () => {
      if (confirmText && !confirm(confirmText)) return;
      try {
        const out = await api(`/api/v1/schedules/${encodeURIComponent(s.name)}/${path}`, { method: "POST" });
        toast(verb === "run" ? `Schedule ${s.name}: job #${out.id} submitted` : `Schedule ${s.name}: ${verb}d`);
        await reload();
      } catch (err) { toast(err.message, true); }
    } }, label);
  const admin = session.who && session.who.scope === "admin";
  return [el("a", { href: `#/jobs?schedule=${encodeURIComponent(s.name)}`, dataset: { act: "jobs" } }, "Jobs"),
    session.canWrite() ? act("run", "Run now", "run", `Run ${s.name} now, once?`) : null,
    admin ? (s.paused ? act("resume", "Resume", "resume") : act("pause", "Pause", "pause")) : null];
}

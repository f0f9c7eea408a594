// One job: its fields, why it is not running, args as given and as its handler gets them,
// attempts, stages, log tails per attempt, cancel and retry; an approval's approve and deny,
// the signal a wait expects (and a button that sends it); live.
import { api, session } from "../api.js";
import { LiveLog } from "../log_stream.js";
import { onEvent } from "../stream.js";
import { ACTIVE, badge, el, json, table, tookNode, throttle, toast, when } from "../ui.js";

const RETRYABLE = new Set(["failed", "error", "canceled", "dependency_failed"]);

export async function render(page, params) {
  const id = Number(params.id);
  let logAttempt = null;
  let drawn = 0;
  // The shown attempt's output as it is written, while it runs (log_stream.js).
  let live = null;
  const showLive = (log) => {
    for (const key of ["stdout", "stderr"]) {
      const node = page.querySelector(`#${key}`);
      if (node && log[key]) node.textContent = log[key];
    }
  };
  const draw = async () => {
    const mine = ++drawn;
    const job = await api(`/api/v1/jobs/${id}`);
    const attempt = logAttempt || (job.attempts.length ? job.attempts[job.attempts.length - 1].attempt : null);
    const logs = attempt ? await api(`/api/v1/jobs/${id}/logs`, { params: { attempt } }) : null;
    if (mine !== drawn) return;  // a later draw, started after newer news, shows the job
    const running = logs && !["succeeded", "failed", "error", "canceled", "lost"].includes(logs.state);
    if (live && (!running || live.attempt !== attempt)) { live.stop(); live = null; }
    if (running && !live) live = new LiveLog(id, attempt, showLive);
    page.replaceChildren(...view(job, logs, (n) => { logAttempt = n; draw(); }, draw, !!live).filter(Boolean));
    if (live) showLive(live);
  };
  // Listen before the first read: a job that ends while it is read is drawn again (a
  // listener added after the read missed its end, and the page showed it pending).
  const refresh = throttle(() => draw().catch(() => {}), 1000);
  const unsubscribe = onEvent((events) => {
    if (events.some((e) => e.payload && e.payload.job_id === id)) refresh();
  });
  const stop = () => { unsubscribe(); if (live) live.stop(); };
  try {
    await draw();
  } catch (err) {
    stop();
    throw err;
  }
  return stop;
}

function view(job, logs, pick, redraw, streaming) {
  const actions = [];
  if (session.canWrite() && ACTIVE.has(job.state)) {
    actions.push(el("button", { class: "danger", id: "cancel-job", onclick: () => act(job, "cancel", redraw) }, "Cancel job"));
  }
  if (session.canWrite() && RETRYABLE.has(job.state)) {
    actions.push(el("button", { class: "primary", id: "retry-job", onclick: () => act(job, "retry", redraw) }, "Retry"));
  }
  const awaiting = session.canWrite() && job.state === "awaiting";
  const decision = awaiting && job.kind === "approval" ? decide(job, redraw)
    : awaiting && job.kind === "wait" && job.signal ? signalForm(job, redraw) : null;
  const signal = job.signal ? `${job.signal.name}${job.signal.key !== null ? ` (key ${job.signal.key})` : " (any key)"}` : null;
  const fields = [["Type", job.type], ["Kind", job.kind !== "task" ? job.kind : null],
    ["Expects signal", signal], ["Times out", job.kind !== "task" ? when(job.deadline) : null],
    ["Label", job.label],
    ["Graph", job.graph_id ? el("a", { href: `#/graphs/${job.graph_id}` }, `#${job.graph_id}`) : null],
    ["Priority", job.base_priority !== null && job.base_priority !== undefined
      ? `${job.priority} (submitted ${job.base_priority})` : String(job.priority)],
    ["Pools", job.pools.join(", ")], ["Locks", job.locks.join(", ")],
    ["Worker", job.worker], ["Attempt", `${job.attempt} of ${job.retries + 1}`],
    ["Created", when(job.created_at)], ["Run after", when(job.run_after)],
    ["Started", when(job.started_at)], ["Finished", when(job.finished_at)],
    ["Took", tookNode(job.started_at, job.finished_at, job.state === "running")], ["Exit code", job.exit_code],
    ["Error", job.error]].filter(([, v]) => v !== null && v !== undefined && v !== "");
  // Only a job that waits has something to explain (every reason, one a line); a running
  // or ended job's state and attempts say the rest.
  // An approval, a wait or a sleep says what it awaits (an approval: with its buttons; a
  // wait: with the signal it expects, to send).
  const why = job.why.length ? el("div", { class: "card", id: "why-card" },
    el("h2", {}, job.state === "awaiting" ? "What does it await?" : "Why is it not running?"),
    el("ul", { class: "why", id: "why" }, job.why.map((w) => el("li", {}, w))), decision) : null;
  const resolved = JSON.stringify(job.resolved_args) !== JSON.stringify(job.args);
  return [
    el("div", { class: "crumbs" }, el("a", { href: "#/jobs" }, "Jobs"), ` / #${job.id}`),
    el("div", { class: "page-head" }, el("h1", {}, `Job #${job.id}`), badge(job.state, true),
      el("span", { class: "muted" }, job.type), el("span", { class: "spacer" }), actions),
    el("div", { class: "grid cols-2" },
      el("div", { class: "card" }, el("h2", {}, "Details"),
        el("dl", { class: "fields" }, fields.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]))),
      el("div", { class: "grid" },
        why,
        el("div", { class: "card" }, el("h2", {}, resolved ? "Args (as submitted)" : "Args"),
          json(job.args), resolved ? [el("h2", { class: "section-gap" },
            "Args as the handler gets them"), json(job.resolved_args)] : null),
        job.result !== null ? el("div", { class: "card" }, el("h2", {}, "Result"), json(job.result)) : null)),
    el("div", { class: "card flush section-gap" }, el("h2", {}, "Attempts"),
      table(["Attempt#", "State", "Worker", "Exit#", "Started", "Took", "Error"],
        job.attempts.map((a) => ({ id: a.attempt, cells: [{ node: String(a.attempt), num: true },
          { node: badge(a.state) }, a.worker || "", { node: a.exit_code ?? "", num: true },
          when(a.started_at), tookNode(a.started_at, a.finished_at, a.state === "running"), a.error || ""] })),
        { empty: "No attempt yet." })),
    job.stages.length ? el("div", { class: "card flush section-gap" }, el("h2", {}, "Stages"),
      table(["Attempt#", "Stage", "State", "Started", "Took", "Result"], job.stages.map((s) => ({
        cells: [{ node: String(s.attempt), num: true }, s.name, { node: badge(s.state) },
          when(s.started_at), tookNode(s.started_at, s.finished_at, s.state === "running" && job.state === "running"),
          s.result === null ? "" : JSON.stringify(s.result)] })))) : null,
    el("div", { class: "card section-gap", id: "logs" }, el("h2", {}, "Logs"),
      logs ? [el("div", { class: "tabs" }, job.attempts.map((a) => el("button", {
        class: a.attempt === logs.attempt ? "on" : "", onclick: () => pick(a.attempt) },
      `attempt ${a.attempt}`))),
      el("div", { class: "faint" }, "stdout"),
      el("pre", { class: "log", id: "stdout" }, logs.stdout || "(nothing)"),
      el("div", { class: "faint section-gap" }, "stderr"),
      el("pre", { class: "log stderr", id: "stderr" }, logs.stderr || "(nothing)"),
      el("p", { class: "faint", id: "log-note" }, streaming
        ? "Live: lines appear as the attempt writes them."
        : "The worker keeps the newest 1 MiB of each stream, written as the attempt runs.")]
        : el("p", { class: "faint" }, "No attempt yet: nothing was written.")),
  ];
}

// Approve or deny an awaiting approval, with an optional note (kept in its result with
// who decided: the token's name).
function decide(job, redraw) {
  const note = el("input", { type: "text", id: "decision-note", placeholder: "Note (optional)", maxlength: 1000 });
  const send = async (verb) => {
    try {
      const body = note.value.trim() ? { note: note.value.trim() } : undefined;
      const after = await api(`/api/v1/jobs/${job.id}/${verb}`, { method: "POST", body });
      toast(`Job #${job.id}: ${verb === "approve" ? "approved" : "denied"} (${after.state})`);
      await redraw();
    } catch (err) {
      toast(err.message, true);
    }
  };
  return el("div", { class: "decision section-gap", id: "decision" }, note,
    el("button", { class: "primary", id: "approve-job", onclick: () => send("approve") }, "Approve"),
    el("button", { class: "danger", id: "deny-job", onclick: () => send("deny") }, "Deny"));
}

// Send the signal an awaiting wait expects (its name, and its key when it has one), with
// an optional JSON payload that becomes the wait's result. Every wait expecting it
// completes, and it is kept for waits that come to await it later: hence the confirm.
function signalForm(job, redraw) {
  const { name, key } = job.signal;
  const payload = el("input", { type: "text", id: "signal-payload", spellcheck: "false",
    placeholder: 'Payload as JSON (optional), e.g. {"tag": "v2.0"}' });
  const send = async () => {
    const body = { name, key };
    const text = payload.value.trim();
    if (text) {
      try {
        body.payload = JSON.parse(text);
      } catch (err) {
        toast(`Payload: not JSON (${err.message})`, true);
        return;
      }
    }
    const shown = key !== null ? `${name} (key ${key})` : name;
    if (!confirm(`Send the signal ${shown}? Every wait that expects it completes.`)) return;
    try {
      const sent = await api("/api/v1/signals", { method: "POST", body });
      const done = sent.completed.map((n) => `#${n}`).join(", ");
      toast(`Signal ${shown} sent: ${done ? `completed ${done}` : "no wait completed"}`);
      await redraw();
    } catch (err) {
      toast(err.message, true);
    }
  };
  return el("div", { class: "decision section-gap", id: "signal-form" }, payload,
    el("button", { class: "primary", id: "send-signal", onclick: send }, "Send signal"));
}

async function act(job, verb, redraw) {
  if (verb === "cancel" && !confirm(`Cancel job #${job.id}?`)) return;
  try {
    const after = await api(`/api/v1/jobs/${job.id}/${verb}`, { method: "POST" });
    toast(`Job #${job.id}: ${after.state.replace("_", " ")}`);
    await redraw();
  } catch (err) {
    toast(err.message, true);
  }
}

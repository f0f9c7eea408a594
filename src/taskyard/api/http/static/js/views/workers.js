// Pools with their capacity bars (pause and resume with an admin token), workers with
// their load; live.
import { api, session } from "../api.js";
import { onEvent } from "../stream.js";
import { ago, badge, el, throttle, toast } from "../ui.js";

function capacity(used, total) {
  const full = total > 0 && used >= total;
  return el("div", { class: "capacity" },
    el("div", { class: `bar thick${full ? " full" : ""}` },
      el("span", { style: `width: ${total ? 100 * Math.min(used / total, 1) : 0}%` })),
    el("span", { class: "mono" }, `${used}/${total}`));
}

function admin() { return session.who && session.who.scope === "admin"; }

async function pause(pool, reload) {
  const verb = pool.paused ? "resume" : "pause";
  if (verb === "pause" && !confirm(`Pause pool ${pool.name}? Nothing new is placed there until it is resumed.`)) return;
  try {
    await api(`/api/v1/pools/${encodeURIComponent(pool.name)}/${verb}`, { method: "POST" });
    toast(`Pool ${pool.name} ${verb === "pause" ? "paused" : "resumed"}`);
    await reload();
  } catch (err) {
    toast(err.message, true);
  }
}

// Stopped and expelled workers folded by name: a worker restarted under the same name
// leaves a row each time; one row a name (its latest run) says how many there were.
export function foldByName(items) {
  const live = items.filter((x) => x.state === "active");
  const gone = new Map();
  for (const x of items) {
    if (x.state === "active") continue;
    const seen = gone.get(x.name);
    if (!seen) gone.set(x.name, { ...x, runs: 1 });
    else if (x.last_heartbeat_at > seen.last_heartbeat_at) gone.set(x.name, { ...x, runs: seen.runs + 1 });
    else seen.runs += 1;
  }
  return [...live, ...gone.values()];
}

export async function render(page, params) {
  const pools = el("div", { class: "grid cols-3", id: "pools" });
  const workers = el("div", { class: "card flush section-gap", id: "workers" });
  const all = params.all === "1";
  page.append(el("div", { class: "page-head" }, el("h1", {}, "Workers & pools"),
    el("span", { class: "spacer" }), el("a", { href: all ? "#/workers" : "#/workers?all=1" },
      all ? "Live workers only" : "Show stopped and expelled")), pools, workers);
  const load = async () => {
    const [p, w] = await Promise.all([api("/api/v1/pools"), api("/api/v1/workers", { params: { all } })]);
    pools.replaceChildren(...(p.items.length ? p.items.map((pool) => el("div", { class: "card",
      dataset: { pool: pool.name, paused: pool.paused ? "1" : "0" } },
    el("div", { class: "card-head" },
      el("h2", {}, el("a", { href: `#/pools/${encodeURIComponent(pool.name)}` }, pool.name)),
      pool.paused ? badge("paused") : null, el("span", { class: "spacer" }),
      admin() ? el("button", { class: pool.paused ? "primary" : "danger",
        onclick: () => pause(pool, load) }, pool.paused ? "Resume" : "Pause") : null),
    capacity(pool.used, pool.capacity),
    pool.paused ? el("div", { class: "faint" }, "Paused: nothing new is placed here; running jobs go on.") : null,
    el("div", { class: "faint section-gap" }, pool.workers.length
      ? `${pool.workers.length} worker${pool.workers.length > 1 ? "s" : ""}: ${pool.workers.join(", ")}`
      : "no live worker"))) : [el("div", { class: "card empty" }, "No pools yet.")]));
    workers.replaceChildren(el("h2", {}, "Workers"), w.items.length ? el("table", {},
      el("thead", {}, el("tr", {}, ["Worker", "State", "Pools", "Load", "Running", "Host",
        "Heartbeat", "Started"].map((h) => el("th", { class: h === "Running" ? "num" : "" }, h)))),
      el("tbody", {}, foldByName(w.items).map((x) => el("tr", { dataset: { name: x.name, state: x.state, runs: x.runs || 1 } },
        el("td", { class: "mono" }, x.name, x.runs > 1 ? el("span", { class: "faint runs" }, ` · ${x.runs} runs`) : null),
        el("td", {}, x.state === "active" && x.capacity === 0 ? badge("draining") : badge(x.state),
          session.canWrite() && x.state === "active" && x.capacity > 0
            ? el("button", { class: "small drain", onclick: () => drain(x.name, load) }, "Drain") : null),
        el("td", {}, x.pools.join(", ")), el("td", { style: "min-width: 160px" }, capacity(x.used, x.capacity)),
        el("td", { class: "num" }, String(x.running)), el("td", { class: "mono" }, `${x.hostname}:${x.pid ?? ""}`),
        el("td", { class: "faint" }, ago(x.last_heartbeat_at)), el("td", { class: "faint" }, ago(x.started_at))))))
      : el("div", { class: "empty" }, "No worker is running. Start one with taskyard worker or taskyard up."));
  };
  await load();
  const refresh = throttle(() => load().catch(() => {}), 2000);
  const timer = setInterval(refresh, 5000);
  const stop = onEvent((events) => { if (events.some((e) => e.topic === "job-running" || e.topic.startsWith("job-c") || e.topic.startsWith("job-f") || e.topic.startsWith("pool-"))) refresh(); });
  return () => { stop(); clearInterval(timer); };
}

// Drain: the worker finishes what it runs and is given nothing new (its capacity is 0
// from now on: shown as "draining").
async function drain(name, reload) {
  if (!confirm(`Drain worker ${name}? It finishes its jobs and takes no new one.`)) return;
  try {
    await api(`/api/v1/workers/${encodeURIComponent(name)}/drain`, { method: "POST" });
    toast(`Worker ${name}: draining`);
    await reload();
  } catch (err) {
    toast(err.message, true);
  }
}

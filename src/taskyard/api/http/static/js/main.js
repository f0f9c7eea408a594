// The dashboard's shell: sign-in, navigation (hash routes), the live indicator.
import { api, session, whenUnauthorized } from "./api.js";
import { onStatus, startStream, stopStream } from "./stream.js";
import { el } from "./ui.js";
import * as overview from "./views/overview.js";
import * as graphs from "./views/graphs.js";
import * as graph from "./views/graph.js";
import * as jobs from "./views/jobs.js";
import * as job from "./views/job.js";
import * as workers from "./views/workers.js";
import * as schedules from "./views/schedules.js";
import * as pool from "./views/pool.js";
import * as taskType from "./views/task_type.js";

const ROUTES = [
  [/^\/?$/, overview, "overview"],
  [/^\/graphs\/?$/, graphs, "graphs"],
  [/^\/graphs\/(\d+)$/, graph, "graphs"],
  [/^\/jobs\/?$/, jobs, "jobs"],
  [/^\/jobs\/(\d+)$/, job, "jobs"],
  [/^\/workers\/?$/, workers, "workers"],
  [/^\/schedules\/?$/, schedules, "schedules"],
  [/^\/pools\/([^/]+)$/, pool, "workers"],
  [/^\/types\/([^/]+)$/, taskType, "jobs"],
];

const main = document.getElementById("main");
let cleanup = null;

async function route() {
  if (cleanup) { cleanup(); cleanup = null; }
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = Object.fromEntries(new URLSearchParams(query || ""));
  const found = ROUTES.find(([re]) => re.test(path || "/"));
  document.querySelectorAll("#nav a").forEach((a) =>
    a.classList.toggle("active", found && a.dataset.nav === found[2]));
  main.replaceChildren();
  if (!found) { main.append(el("div", { class: "card empty" }, "No such page.")); return; }
  const [re, view] = found;
  const match = (path || "/").match(re);
  const page = el("div", { class: "page" });
  main.append(page);
  try {
    cleanup = (await view.render(page, { id: match[1], ...params })) || null;
  } catch (err) {
    page.replaceChildren(el("div", { class: "card" }, el("h2", {}, "Could not load this page"),
      el("p", { class: "error" }, err.message)));
  }
}

function showSignIn(message = "") {
  const dialog = document.getElementById("signin");
  document.getElementById("signin-error").textContent = message;
  if (!dialog.open) dialog.showModal();
  document.getElementById("token-input").focus();
}

async function signIn(token, remember) {
  session.token = token;
  const who = await api("/api/v1/whoami");
  session.save(token, remember);
  session.who = who;
  document.getElementById("who").textContent = `${who.name} · ${who.scope}`;
  document.getElementById("signout").hidden = false;
  startStream();
}

function setup() {
  const live = document.getElementById("live");
  onStatus((on) => {
    live.classList.toggle("on", on);
    live.querySelector(".live-text").textContent = on ? "live" : "offline";
  });
  whenUnauthorized((message) => { stopStream(); showSignIn(message); });
  document.getElementById("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = document.getElementById("token-input").value.trim();
    const remember = document.getElementById("remember").checked;
    try {
      await signIn(token, remember);
      document.getElementById("signin").close();
      document.getElementById("token-input").value = "";
      route();
    } catch (err) {
      document.getElementById("signin-error").textContent = err.message;
    }
  });
  document.getElementById("signin").addEventListener("cancel", (e) => e.preventDefault());
  document.getElementById("signout").addEventListener("click", () => {
    session.clear();
    stopStream();
    document.getElementById("who").textContent = "";
    document.getElementById("signout").hidden = true;
    main.replaceChildren();
    showSignIn();
  });
  window.addEventListener("hashchange", route);
}

setup();
if (session.token) {
  signIn(session.token, !!localStorage.getItem("taskyard.token"))
    .then(route).catch((err) => showSignIn(err.message));
} else {
  showSignIn();
}

// Graphs: newest first, with their progress by state; live.
import { api } from "../api.js";
import { onEvent } from "../stream.js";
import { el, throttle } from "../ui.js";
import { graphTable } from "./overview.js";

export async function render(page, params) {
  const state = params.state || "";
  const select = el("select", { onchange: (e) => {
    location.hash = `#/graphs${e.target.value ? `?state=${e.target.value}` : ""}`; } },
  ["", "running", "blocked", "finished", "canceled"].map((s) =>
    el("option", { value: s, selected: s === state }, s || "every state")));
  const body = el("div");
  page.append(el("div", { class: "page-head" }, el("h1", {}, "Graphs"),
    el("span", { class: "spacer" }), el("div", { class: "filters" }, select)),
  el("div", { class: "card flush" }, body));
  const load = async () => {
    const found = await api("/api/v1/graphs", { params: { state, limit: 200 } });
    body.replaceChildren(graphTable(found.items));
  };
  await load();
  const refresh = throttle(() => load().catch(() => {}), 1500);
  return onEvent((events) => {
    if (events.some((e) => e.routing_key.split(".")[1] !== "_")) refresh();
  });
}

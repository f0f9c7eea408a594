// The graph drawing: d3-dag (vendored) lays the DAG out left to right, a canvas draws it
// (a thousand nodes in one canvas, not a thousand DOM elements), with pan, zoom, hover and
// click. A hidden list mirrors the nodes and their states for screen readers (and tests).
import { el, stateColor, took } from "./ui.js";

const W = 156, H = 30;            // node size on screen (left to right: layers along x)
const SMALL = 150;                // up to this many nodes: the slower, tidier layout

export function layout(jobs, edges) {
  const ids = new Set(jobs.map((j) => String(j.id)));
  const parents = new Map(jobs.map((j) => [String(j.id), []]));
  for (const e of edges) {
    const child = String(e.job_id), parent = String(e.requires_id);
    if (ids.has(child) && ids.has(parent)) parents.get(child).push(parent);
  }
  const d3 = window.d3;
  const graph = d3.graphStratify()(jobs.map((j) => ({ id: String(j.id),
    parentIds: parents.get(String(j.id)), job: j })));
  const small = jobs.length <= SMALL;
  // d3-dag lays layers top to bottom: sizes are swapped, and so are x and y when drawn.
  const sugiyama = d3.sugiyama().nodeSize([H, W]).gap([12, 64])
    .layering(d3.layeringLongestPath())
    .decross(small ? d3.decrossTwoLayer() : d3.decrossDfs())
    .coord(small ? d3.coordGreedy() : d3.coordCenter());
  const { width, height } = sugiyama(graph);
  const nodes = [];
  const byId = new Map();
  for (const node of graph.nodes()) {
    const item = { id: node.data.id, job: node.data.job, x: node.y, y: node.x };
    nodes.push(item);
    byId.set(item.id, item);
  }
  const links = [];
  for (const link of graph.links()) {
    links.push(link.points.map(([x, y]) => [y, x]));
  }
  return { nodes, links, byId, width: height, height: width };
}

export class DagView {
  constructor(wrap, { jobs, edges, onOpen }) {
    const started = performance.now();
    this.wrap = wrap;
    this.onOpen = onOpen;
    this.model = layout(jobs, edges);
    this.layoutMs = performance.now() - started;
    this.canvas = el("canvas", { "aria-label": "Graph of the jobs; the list below has them too" });
    this.tip = el("div", { class: "tooltip", hidden: true });
    this.mirror = el("ul", { class: "sr-only", id: "dag-nodes" });
    const tools = el("div", { class: "dag-tools" },
      el("button", { onclick: () => this.zoom(1.25), title: "Zoom in" }, "+"),
      el("button", { onclick: () => this.zoom(0.8), title: "Zoom out" }, "−"),
      el("button", { onclick: () => this.fit(), title: "Fit" }, "Fit"));
    wrap.append(this.canvas, tools, this.tip, this.mirror);
    for (const n of this.model.nodes) {
      n.item = el("li", { dataset: { id: n.id, label: n.job.label || "", state: n.job.state } },
        `${n.job.label || n.id}: ${n.job.state}`);
      this.mirror.append(n.item);
    }
    this.colors = {};
    this.scale = 1; this.tx = 0; this.ty = 0;
    this.bind();
    this.resize();
    this.fit();
    this.drawMs = performance.now() - started;
  }

  setState(id, state) {
    const n = this.model.byId.get(String(id));
    if (!n || n.job.state === state) return false;
    n.job.state = state;
    n.item.dataset.state = state;
    n.item.textContent = `${n.job.label || n.id}: ${state}`;
    this.request();
    return true;
  }

  color(state) {
    if (!this.colors[state]) this.colors[state] = stateColor(state);
    return this.colors[state];
  }

  resize() {
    const ratio = window.devicePixelRatio || 1;
    const { clientWidth: w, clientHeight: h } = this.wrap;
    this.canvas.width = Math.max(1, w * ratio);
    this.canvas.height = Math.max(1, h * ratio);
    this.ratio = ratio;
    this.draw();
  }

  fit() {
    const { clientWidth: w, clientHeight: h } = this.wrap;
    const m = this.model, pad = 40;
    this.scale = Math.max(0.02, Math.min(1.4, (w - pad) / m.width, (h - pad) / m.height));
    this.tx = (w - m.width * this.scale) / 2;
    this.ty = (h - m.height * this.scale) / 2;
    this.draw();
  }

  zoom(factor, cx = this.wrap.clientWidth / 2, cy = this.wrap.clientHeight / 2) {
    const scale = Math.max(0.02, Math.min(4, this.scale * factor));
    this.tx = cx - (cx - this.tx) * (scale / this.scale);
    this.ty = cy - (cy - this.ty) * (scale / this.scale);
    this.scale = scale;
    this.request();
  }

  request() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = null; this.draw(); });
  }

  draw() {
    const ctx = this.canvas.getContext("2d");
    const { ratio, scale } = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.setTransform(ratio * scale, 0, 0, ratio * scale, ratio * this.tx, ratio * this.ty);
    // What is on screen, in layout units: nodes outside are not drawn.
    const x0 = -this.tx / scale - W, y0 = -this.ty / scale - H;
    const x1 = x0 + this.wrap.clientWidth / scale + 2 * W;
    const y1 = y0 + this.wrap.clientHeight / scale + 2 * H;
    ctx.lineWidth = 1.2 / Math.max(scale, 0.5);
    ctx.strokeStyle = "#c3cedd";
    ctx.beginPath();
    for (const points of this.model.links) {
      curve(ctx, points);
    }
    ctx.stroke();
    const detailed = scale >= 0.38;
    ctx.font = "500 12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (const n of this.model.nodes) {
      if (n.x < x0 || n.x > x1 || n.y < y0 || n.y > y1) continue;
      const x = n.x - W / 2, y = n.y - H / 2, c = this.color(n.job.state);
      if (!detailed) {
        ctx.fillStyle = c;
        ctx.fillRect(x, y, W, H);
        continue;
      }
      ctx.fillStyle = "#ffffff";
      roundRect(ctx, x, y, W, H, 7);
      ctx.fill();
      ctx.lineWidth = n === this.hover ? 2 : 1;
      ctx.strokeStyle = n === this.hover ? "#0f172a" : c;
      ctx.stroke();
      ctx.fillStyle = c;
      roundRect(ctx, x, y, 6, H, 3);
      ctx.fill();
      ctx.fillStyle = "#0f172a";
      ctx.fillText(this.text(ctx, n), x + 13, n.y + 0.5);
    }
  }

  text(ctx, n) {
    if (n.text === undefined) {
      let label = n.job.label || `#${n.id}`;
      const room = W - 22;
      if (ctx.measureText(label).width > room) {
        while (label.length > 1 && ctx.measureText(`${label}…`).width > room) {
          label = label.slice(0, -1);
        }
        label += "…";
      }
      n.text = label;
    }
    return n.text;
  }

  at(event) {
    const r = this.canvas.getBoundingClientRect();
    const x = (event.clientX - r.left - this.tx) / this.scale;
    const y = (event.clientY - r.top - this.ty) / this.scale;
    for (const n of this.model.nodes) {
      if (Math.abs(n.x - x) <= W / 2 && Math.abs(n.y - y) <= H / 2) return n;
    }
    return null;
  }

  bind() {
    let drag = null;
    this.canvas.addEventListener("mousedown", (e) => {
      drag = { x: e.clientX, y: e.clientY, tx: this.tx, ty: this.ty, moved: false };
      this.canvas.classList.add("dragging");
    });
    window.addEventListener("mouseup", this.up = (e) => {
      if (drag && !drag.moved) {
        const n = this.at(e);
        if (n) this.onOpen(n.job);
      }
      drag = null;
      this.canvas.classList.remove("dragging");
    });
    this.canvas.addEventListener("mousemove", (e) => {
      if (drag) {
        drag.moved = drag.moved || Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3;
        this.tx = drag.tx + e.clientX - drag.x;
        this.ty = drag.ty + e.clientY - drag.y;
        this.request();
        return;
      }
      const n = this.at(e);
      if (n !== this.hover) { this.hover = n; this.request(); }
      this.tooltip(n, e);
    });
    this.canvas.addEventListener("mouseleave", () => { this.hover = null; this.tip.hidden = true; this.request(); });
    this.canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = this.canvas.getBoundingClientRect();
      this.zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    this.observer = new ResizeObserver(() => this.resize());
    this.observer.observe(this.wrap);
  }

  tooltip(n, e) {
    if (!n) { this.tip.hidden = true; return; }
    const r = this.wrap.getBoundingClientRect();
    this.tip.replaceChildren(el("b", {}, n.job.label || `job ${n.id}`),
      el("div", {}, `${n.job.type} · job ${n.id}`), el("div", {}, n.job.state.replace("_", " ")),
      n.job.started_at ? el("div", {}, `${n.job.finished_at ? "took" : "running for"} `
        + took(n.job.started_at, n.job.finished_at)) : null);
    this.tip.style.left = `${e.clientX - r.left + 14}px`;
    this.tip.style.top = `${e.clientY - r.top + 14}px`;
    this.tip.hidden = false;
  }

  destroy() {
    window.removeEventListener("mouseup", this.up);
    this.observer.disconnect();
  }
}

function curve(ctx, points) {
  ctx.moveTo(points[0][0], points[0][1]);
  if (points.length === 2) {
    const [[ax, ay], [bx, by]] = points, mx = (ax + bx) / 2;
    ctx.bezierCurveTo(mx, ay, mx, by, bx, by);
    return;
  }
  for (let i = 1; i < points.length - 1; i++) {
    const [x, y] = points[i], [nx, ny] = points[i + 1];
    ctx.quadraticCurveTo(x, y, (x + nx) / 2, (y + ny) / 2);
  }
  const last = points[points.length - 1];
  ctx.lineTo(last[0], last[1]);
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}

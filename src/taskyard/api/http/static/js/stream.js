// The live event stream: Server-Sent Events read with fetch (EventSource cannot send the
// Authorization header), resumed with Last-Event-ID after a drop.
import { session } from "./api.js";

const listeners = new Set();
let lastId = null;
let controller = null;
let setStatus = () => {};

export function onEvent(fn) { listeners.add(fn); return () => listeners.delete(fn); }
export function onStatus(fn) { setStatus = fn; }

export function startStream() {
  stopStream();
  controller = new AbortController();
  run(controller.signal);
}

export function stopStream() {
  if (controller) controller.abort();
  controller = null;
  setStatus(false);
}

async function run(signal) {
  let delay = 1000;
  while (!signal.aborted && session.token) {
    try {
      const headers = { Authorization: `Bearer ${session.token}` };
      if (lastId !== null) headers["Last-Event-ID"] = lastId;
      const response = await fetch("/api/v1/events/stream", { headers, signal });
      if (response.status === 401) { setStatus(false); return; }
      if (!response.ok || !response.body) throw new Error(`stream: ${response.status}`);
      setStatus(true);
      delay = 1000;
      await read(response.body.getReader(), signal);
    } catch (err) {
      if (signal.aborted) return;
    }
    setStatus(false);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 15000);
  }
}

async function read(reader, signal) {
  const decoder = new TextDecoder();
  let buffer = "";
  let batch = [];
  let flushing = false;
  const flush = () => {
    flushing = false;
    const events = batch;
    batch = [];
    for (const fn of listeners) {
      try { fn(events); } catch (err) { console.error(err); }
    }
  };
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const message = parse(block);
      if (message) {
        lastId = message.id;
        batch.push(message.event);
      }
    }
    // Events come in bursts (a graph's hundreds of jobs): deliver them once per frame.
    if (batch.length && !flushing) { flushing = true; requestAnimationFrame(flush); }
  }
}

function parse(block) {
  let id = null, data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("id: ")) id = line.slice(4);
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  if (!data) return null;
  return { id, event: JSON.parse(data) };
}

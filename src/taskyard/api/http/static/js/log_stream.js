// A running attempt's output as it is written: GET /api/v1/jobs/{id}/logs/stream (Server-
// Sent Events read with fetch, as stream.js does: EventSource sends no Authorization),
// resumed after a drop from the last chunk seen (Last-Event-ID "ATTEMPT.SEQ").
import { session } from "./api.js";

const KEEP = 1 << 20; // characters of each stream kept on the page (the worker keeps 1 MiB)

export class LiveLog {
  constructor(jobId, attempt, onChange) {
    this.jobId = jobId; this.attempt = attempt; this.onChange = onChange;
    this.stdout = ""; this.stderr = ""; this.lastId = null; this.ended = false;
    this.controller = new AbortController();
    this.run();
  }

  stop() { this.controller.abort(); }

  async run() {
    const signal = this.controller.signal;
    while (!signal.aborted && !this.ended) {
      try {
        const headers = { Authorization: `Bearer ${session.token}` };
        if (this.lastId) headers["Last-Event-ID"] = this.lastId;
        const url = `/api/v1/jobs/${this.jobId}/logs/stream?attempt=${this.attempt}`;
        const response = await fetch(url, { headers, signal });
        if (!response.ok || !response.body) return;
        await this.read(response.body.getReader(), signal);
      } catch (err) {
        if (signal.aborted) return;
      }
      if (!this.ended) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  async read(reader, signal) {
    const decoder = new TextDecoder();
    let buffer = "";
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end, changed = false;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        changed = this.take(block) || changed;
      }
      if (changed) this.onChange(this);
    }
  }

  take(block) {
    let id = null, event = null, data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) id = line.slice(4);
      else if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (event === "end") { this.ended = true; return true; }
    if (event !== "chunk") return false;
    const chunk = JSON.parse(data);
    if (id) this.lastId = id;
    const key = chunk.stream === "stderr" ? "stderr" : "stdout";
    this[key] = (this[key] + chunk.data).slice(-KEEP);
    return true;
  }
}

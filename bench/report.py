"""Aggregates a suite's runs (medians, min-max, ratios) into ``latest.json``, the Markdown
tables of ``latest.md`` (the PNG plots: bench/plots.py)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.metrics import Metric, metrics

# (peer, the taskyard it is compared with): the same storage where there is one;
# redis-based peers are compared with taskyard's default, SQLite.
PAIRS = [("procrastinate-pg", "taskyard-pg"), ("pgqueuer-pg", "taskyard-pg"),
         ("airflow-pg", "taskyard-pg"), ("huey-sqlite", "taskyard-sqlite"),
         ("huey-pg", "taskyard-pg"), ("huey-redis", "taskyard-sqlite"),
         ("celery-redis", "taskyard-sqlite")]


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    """Per metric and system: median, min, max over the repetitions that gave a value."""
    runs = doc["runs"]
    systems = doc["systems"]
    table: list[dict[str, Any]] = []
    for m in metrics(doc["profile"]):
        workload = m.runs or m.workload
        if workload == "W5":  # memory figures come from the workloads' own runs
            workload = "W1" if m.mid.startswith("w5_w1") else \
                "W3" if m.mid.startswith("w5_w3") else "W4"
        values: dict[str, dict[str, Any]] = {}
        for system in systems:
            cell = m.cell if m.peer_cell is None or system.startswith("taskyard-") \
                else m.peer_cell
            rows = [r["result"] for r in runs if r["system"] == system
                    and r["workload"] == workload and r["cell"] == cell]
            values[system] = _cell(m, rows, doc["config"].get(system, {}))
        table.append({"id": m.mid, "workload": m.workload, "label": m.label, "unit": m.unit,
                      "better": m.better, "values": values})
    ratios: dict[str, dict[str, float | None]] = {}
    for row in table:
        ratios[row["id"]] = {}
        for peer, ours in PAIRS:
            a, b = row["values"].get(ours, {}), row["values"].get(peer, {})
            if a.get("median") and b.get("median"):
                ratios[row["id"]][peer] = round(a["median"] / b["median"], 3)
            elif peer in systems and ours in systems:
                ratios[row["id"]][peer] = None
    latency = {s: sorted(x for r in runs if r["system"] == s and r["workload"] == "W2"
                         for x in r["result"].get("samples_ms", [])) for s in systems}
    problems = [{"rep": r["rep"], "system": r["system"], "workload": r["workload"],
                 "cell": r["cell"], "status": r["result"].get("status"),
                 "error": r["result"].get("error", "")}
                for r in runs if r["result"].get("status") in ("failed", "killed")]
    return {"started": doc["started"], "profile": doc["profile"], "systems": systems,
            "machine": doc["machine"], "config": doc["config"], "wall_s": doc.get("wall_s"),
            "metrics": table, "ratios": ratios, "latency_samples_ms": latency,
            "problems": problems, "rtt_ms": doc.get("rtt_ms"),
            "skipped": sum(r["result"].get("status") == "skipped" for r in runs)}


def _cell(m: Metric, rows: list[dict[str, Any]], config: dict[str, str]) -> dict[str, Any]:
    if m.batch_only and config.get("batch_api", "none") == "none":
        return {"status": "none"}
    if not rows:
        return {"status": "absent"}
    statuses = [r.get("status", "?") for r in rows]
    if all(s == "cannot" for s in statuses):
        return {"status": "cannot", "note": rows[0].get("reason", "")}
    got = [(v, m.limited and r.get("status") == "timeout") for r in rows
           if (v := m.get(r)) is not None]
    if not got:
        if all(s == "skipped" for s in statuses):
            return {"status": "skipped"}
        if not m.limited and "ok" not in statuses and "timeout" in statuses:
            return {"status": "absent"}  # e.g. no such process group: not a time limit
        if "timeout" in statuses:
            done = [r.get("succeeded") for r in rows if r.get("status") == "timeout"]
            return {"status": "timeout", "done": max((d for d in done if d), default=0),
                    "jobs": rows[0].get("jobs"), "timeout": rows[0].get("timeout")}
        return {"status": "failed" if any(s in ("failed", "killed") for s in statuses)
                else "absent"}
    vals = [v for v, _ in got]
    return {"status": "partial" if any(p for _, p in got) else "ok",
            "median": round(statistics.median(vals), 3), "min": round(min(vals), 3),
            "max": round(max(vals), 3), "n": len(vals), "of": len(rows)}


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if 0 < abs(value) < 1:
        return f"{value:.2g}"  # two significant digits: a 4 ms submit is not "0.00"
    return f"{value:.2f}"


def render(cell: dict[str, Any]) -> str:
    status = cell.get("status")
    if status in ("ok", "partial"):
        text = fmt(cell["median"])
        if cell["n"] > 1:
            text += f" ({fmt(cell['min'])}\u2013{fmt(cell['max'])})"
        if status == "partial":
            text += " †"
        if cell["n"] < cell["of"]:
            text += f" [{cell['n']}/{cell['of']}]"
        return text
    return {"none": "none", "cannot": "cannot express", "skipped": "skipped (budget)",
            "failed": "failed", "absent": "—",
            "timeout": "timed out"}.get(str(status), str(status))


def _once(prof: dict[str, Any], skipped: int = 0) -> str:
    """Which sizes ran in the first repetition only (Airflow's graphs: see its section),
    and how many runs the time budget skipped."""
    once = [f"W3 at {', '.join(f'{n:,}' for n in prof['w3_once'])} pending"
            if prof["w3_once"] else "",
            f"W4 at {', '.join(f'{n:,}' for n in prof['w4_once'])} jobs"
            if prof["w4_once"] else ""]
    said = " and ".join(o for o in once if o)
    planned = (f"{said}: first repetition only" if said else
               "every cell in every repetition" + (" planned" if skipped else ""))
    if not skipped:
        return planned
    return (f"{planned}; {skipped} run{'s' if skipped != 1 else ''} skipped when the time "
            "budget ran out, their cells marked [n/m]")


def _chain_limit(prof: dict[str, Any], n: Any) -> str:
    """A chain's own limit for ``n`` jobs, when it has one (JSON keys are strings)."""
    chain = {int(k): v for k, v in (prof.get("w4_chain_timeout") or {}).items()}
    return f" (a chain {chain[int(n)]:.0f} s)" if int(n) in chain else ""


def markdown(summary: dict[str, Any]) -> str:
    systems = summary["systems"]
    prof = summary["profile"]
    mach = summary["machine"]
    lines = [
        "# taskyard vs procrastinate, PgQueuer, huey, Celery and Airflow: latest benchmark",
        "",
        f"Run {summary['started']} with `make bench` (profile `{prof['name']}`, "
        f"{prof['reps']} repetitions, systems interleaved; "
        f"{_once(prof, summary.get('skipped') or 0)}). "
        f"Wall time of the suite: {(summary['wall_s'] or 0) / 60:.1f} min.",
        "",
        f"Machine: {mach.get('cpu', '?')}, {mach.get('cores')} cores, "
        f"{mach.get('memory_gib', '?')} GiB, Linux {mach.get('kernel')}, Python "
        f"{mach.get('python')}; load average at start "
        f"{_load(mach.get('load_at_start'))}, at end {_load(mach.get('load_at_end'))} "
        "(other work on the machine skews every figure).",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in {
            **mach.get("versions", {}), **mach.get("servers", {})}.items()) + ".",
        "",
        "Each cell: median (min\u2013max) over the repetitions that produced a figure; "
        "`[n/m]`: only n of m repetitions did. † = at least one repetition hit its time "
        "limit, and the figure covers the part that ran (W1: the completion rate so far; "
        "W4: the delays of the jobs that ran). `timed out`: no repetition finished within "
        f"its limit (W1 completion {prof['w1_timeout']:.0f} s, W2 {prof['w2_timeout']:.0f} s, "
        "W4 " + ", ".join(f"{int(n):,} jobs {t:.0f} s{_chain_limit(prof, n)}"
                          for n, t in prof["w4_timeout"].items())
        + "). `skipped (budget)`: the suite's time budget "
        + (f"({prof['budget'] / 60:.0f} min) " if prof.get("budget") else "")
        + "ran out first (a run is skipped when it would not fit: the longest earlier run "
        "of its cell, or its limit before any). Each measurement runs on a fresh database "
        "(PostgreSQL) or file (SQLite), and its PostgreSQL databases are dropped when it "
        "ends: no run leaves autovacuum work for the next."
        + (f" Every PostgreSQL connection went through a proxy on loopback adding "
           f"{summary['rtt_ms']:g} ms of round trip (`--rtt`, `bench/wire.py`): a "
           "database a network hop away." if summary.get("rtt_ms") else ""),
        "",
    ]
    limit = prof.get("w1_enqueue_limit")
    sections = [
        ("W1", f"W1 throughput: {prof['w1_jobs']:,} no-op jobs",
         "Completion = (jobs - 1) / (last stamp - first stamp), K worker processes started "
         "after the enqueue (their start-up is not counted); taskyard's span is the longer "
         "of that and the span of every start recorded in its database (since run 21: with "
         "two workers the last job can start while the other worker still holds queued "
         "jobs, and a few of its K=2 figures up to run 20 were inflated so, up to 3.5x)."
         + (f" The per-call enqueue rate is timed over the first ~{limit:.0f} s of calls; "
            "the rest of the jobs go in untimed (batch API, else straight into the peer's "
            "storage, as for the K=2 run of a peer without a batch API)." if limit else "")
         + (" taskyard runs `taskyard scheduler` and K `taskyard worker` processes. Its "
            "K=2 run is repeated deployed as huey's `-w 2` is (a consumer that schedules, "
            "two jobs at once): two workers of one slot each (`--capacity 1`; the default "
            "is one slot per CPU, four here), the first running the scheduler in a thread "
            "(`taskyard worker --scheduler`), no scheduler process; rows marked so, beside "
            "the peers' figures of their own K=2 run. Until run 47 two cells stood for it: "
            "`worker --scheduler` at the default capacity, and `--capacity 1` beside a "
            "scheduler process." if prof.get("w1_lean") else "")),
        ("W2", f"W2 latency: {prof['w2_jobs']:,} sequential jobs on an idle system",
         f"Workers up and warm, {prof['w2_warmup']} warm-up jobs discarded; latency = "
         "handler start (its own clock, written to a file the client polls every 1 ms) - "
         "the time just before the enqueue call. Every system alike: after a job has "
         "started (taskyard: and its end is recorded), 10 ms pass before the next enqueue, "
         "so each job meets an idle system (until run 17, taskyard submitted the next job "
         "as soon as the last one ended, with no pause: on this VM an idle pause makes "
         "every wake-up slower, and that flattered taskyard's figure). taskyard's raw rows "
         "also hold the submit call's own median (`submit_p50_ms`) and a `SELECT 1` round "
         "trip's on the same store at the same pace (`round_trip_p50_ms`)."),
        ("HTTP", "HTTP API (taskyard only: the peers have none)",
         "`bench.http` through `/api/v1`: submit throughput = `taskyard serve` alone (its "
         "default processes), keep-alive HTTP/1.1 connections of a light asyncio client "
         "(bench/http_load.py, one request in flight each) POSTing no-op jobs, with the "
         "requests' p50/p99; batch = 1,000 jobs a `POST /api/v1/jobs/batch`, 4 "
         "connections; latency = `taskyard up --workers 1 --http` on an idle system, one "
         "job at a time, handler start - the time just before the POST (the client polls "
         "the job every 2 ms). The client runs on the same 2 cores as the server: the raw "
         "rows give the CPU a request cost the server, the client and the database."),
        ("W3", "W3 backlog: scheduling cycle time",
         "taskyard: one `schedule()` cycle placing 50 jobs on 5 workers x 10 slots, the "
         "backlog inserted in bulk first. Peers have no scheduling cycle: their figure is "
         "the time to hand out 50 jobs through their own dequeue path (huey "
         "`Huey.dequeue()`, procrastinate's `procrastinate_fetch_job_v2`, Celery/kombu "
         "`basic_get` + ack on the worker queue). Every backlog goes straight into the "
         "system's storage, untimed: taskyard and procrastinate by one INSERT ... SELECT "
         "that writes no per-job event or notification (procrastinate's insert triggers "
         "skipped), huey by COPY (PostgreSQL), executemany (SQLite) or LPUSH (redis) of "
         "copies of one real message, Celery by LPUSH of copies of one real message. "
         "A backlog in PostgreSQL is then vacuumed and analysed (`VACUUM (ANALYZE)`, "
         "untimed), as autovacuum would leave it, so that autovacuum does not process it "
         "during the timed part."),
        ("W4", "W4 graphs",
         "2 worker processes, up before the graph is submitted; end to end = last "
         "handler's end - end of the submit call; hand-off = child's handler start - "
         "parent's handler end, over every edge (both from the handlers' own clocks). "
         "The small graphs (chain 100, fan-out 1,000, random 1,000) are the sizes Airflow "
         "can run here: Airflow runs them in the first repetition only (each run takes "
         "minutes), every other system in every repetition."),
        ("W5", "W5 memory: peak RSS",
         "Sum of VmHWM over each process tree (the daemon and all its children, sampled "
         "every 0.2 s): an upper bound of the tree's peak. W3: the process that ran the "
         "cycles (taskyard) or the dequeues (peers), its peak reset after the bulk fill. "
         "Until run 43 every process of a peer (its daemons, their forks, its W3 "
         "dequeuer) also held SQLAlchemy and taskyard, which the harness loaded into it: "
         "11-14 MiB each, 49-51 MiB in huey's W1 figure (4 processes). Since run 45 a peer's "
         "daemons load no harness module. "
         "Airflow forks a process per task: its figure is the highest sum of the tree's "
         "RSS in one sample instead (a sum of peaks would add up processes that never "
         "coexisted). W1's raw rows list each process counted, what it runs and its "
         "peak (`processes`)."),
    ]
    sections += _db_sections(prof)
    for workload, title, note in sections:
        rows = [m for m in summary["metrics"] if m["workload"] == workload]
        if not rows:
            continue
        # A system with no figure in the whole section (the peers in HTTP, Airflow
        # outside W4) gets no column there.
        shown = [s for s in systems if any(m["values"].get(s, {}).get("status", "absent")
                                           not in ("absent", "none") for m in rows)]
        if not shown:  # e.g. the database work per job of a suite without PostgreSQL
            continue
        lines += [f"## {title}", "", note, "", "| metric | " + " | ".join(shown) + " |",
                  "|---|" + "---:|" * len(shown)]
        for m in rows:
            arrow = "↑" if m["better"] == "higher" else "↓"
            cells = [render(m["values"].get(s, {})) for s in shown]
            lines.append(f"| {m['label']} ({m['unit']}, {arrow}) | " + " | ".join(cells) + " |")
        lines.append("")
    pairs = [(p, o) for p, o in PAIRS if p in systems and o in systems]
    if pairs:
        lines += ["## Ratios taskyard / peer (medians)", "",
                  "Above 1 is better for taskyard on ↑ rows, below 1 on ↓ rows. Each peer is "
                  "compared with taskyard on the same storage; redis-based peers with "
                  "taskyard's default, SQLite.", "",
                  "| metric | " + " | ".join(f"{o.split('-')[1]} / {p}" for p, o in pairs)
                  + " |", "|---|" + "---:|" * len(pairs)]
        for m in summary["metrics"]:
            ratios = summary["ratios"].get(m["id"], {})
            cells = [_ratio(ratios.get(p), m["values"].get(o, {}), m["values"].get(p, {}))
                     for p, o in pairs]
            if any(c != "" for c in cells):
                arrow = "↑" if m["better"] == "higher" else "↓"
                lines.append(f"| {m['label']} ({arrow}) | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Configurations", "",
              "taskyard runs with its defaults. Each peer runs in the configuration its "
              "documentation recommends for the workload:", ""]
    for system in systems:
        conf = summary["config"].get(system, {})
        lines.append(f"- **{system}**: " + "; ".join(
            f"{k}: {v}" for k, v in conf.items() if k != "batch_api"))
    lines.append("")
    notes = _cannot_notes(summary)
    if notes:
        lines += ["Cannot express:", ""] + [f"- {n}" for n in notes] + [""]
    if summary["problems"]:
        lines += ["## Failed runs", ""]
        lines += [f"- rep {p['rep']} {p['workload']} {p['cell']} {p['system']}: {p['status']}"
                  f" — {p['error'][:300]}" for p in summary["problems"]]
        lines.append("")
    if summary.get("skipped"):
        lines += [f"{summary['skipped']} runs were skipped when the time budget ran out.", ""]
    lines += ["Method: `bench/suite.py` (one process per run, hard time limits), "
              "`bench/throughput.py`, `bench/backlog.py`, `bench/graphs.py` (taskyard) and "
              "`bench/peers/` (peers). Raw figures: `bench/results/raw/` (not in git) and "
              "`latest.json`. Plots: `throughput.png`, `latency_cdf.png`, `backlog.png`.", ""]
    return "\n".join(lines)


def _db_sections(prof: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The database work per job (bench.dbwork), when the profile counts it."""
    if not prof.get("db"):
        return []
    jobs, calls, m, limit = prof["db"]
    how = ("Counted, not timed, once per suite (first repetition) for each PostgreSQL "
           "system with a W1 and a W2 (Airflow runs W4 only): every connection of a "
           "counted run (`bench/dbwork.py`) goes through a proxy on loopback that reads "
           "the PostgreSQL protocol (`bench/wire.py`). "
           "Round trips = the times a client sends after the server has sent (one wait "
           "for the server: a pipelined batch, or `BEGIN; ...; COMMIT` sent at once, is "
           "one; a connection's goodbye none); statements = CommandComplete messages "
           "(`BEGIN` and `COMMIT` included, as `pg_stat_statements` counts top-level "
           "calls); transactions = commits and rollbacks as `pg_stat_database` counts "
           "them (a new connection's start-up is one). Unlike timings, they hardly "
           "depend on the machine's load (a system that sizes its batches by its pace, as "
           "taskyard's workers do, varies a little between runs). A database at a "
           "network distance adds one RTT (0.5-1 ms in a data centre) per round trip "
           "that a client waits for: ")
    profile_note = (" Each window's `pg_stat_statements` profile (its statements by calls, "
                    "rows and mean time; `track = top` during the counted runs only) is in "
                    "the raw JSON.")
    return [
        ("DB-W1", "Database work per job (machine-independent): W1",
         how + "a system whose round trips run one after another completes at most "
         "1 / (round trips per job x RTT) jobs/s per process (e.g. 8 round trips at "
         "0.5 ms: 250 jobs/s). Windows: "
         f"{calls:,} jobs enqueued one call per job; 1,000 jobs through the batch API; "
         f"the completion of {jobs:,} jobs by 2 worker processes (the K=2 deployment, "
         "tables vacuumed and analysed first as in W1), from the workers' start (their "
         f"start-up included) until every job has ended or {limit:.0f} s after the first "
         "job's start, divided by the jobs that ended in the window "
         "(counted from the database outside the proxy)." + profile_note),
        ("DB-W2", "Database work per job (machine-independent): W2",
         how + "W2's latency a network hop away is about its p50 here plus the last row "
         "times the RTT (and half an RTT more where a notification wakes the worker: a "
         f"one-way message). Window: {m} jobs run one at a time as in W2 (after "
         "warm-up jobs), every connection counted (the client's enqueue, the worker's, "
         "the scheduler's, idle polls); the last row counts only the round trips that "
         "began between an enqueue call and its handler's start." + profile_note),
    ]


def _load(value: Any) -> str:
    return "/".join(f"{v:.1f}" for v in value) if value else "?"


def _ratio(value: float | None, ours: dict[str, Any], peer: dict[str, Any]) -> str:
    if value is None:
        return ""
    mark = " †" if "partial" in (ours.get("status"), peer.get("status")) else ""
    return f"{value:.2f}{mark}"


def _cannot_notes(summary: dict[str, Any]) -> list[str]:
    seen: dict[tuple[str, str], str] = {}
    for m in summary["metrics"]:
        if m["workload"] != "W4":
            continue
        for system, cell in m["values"].items():
            if cell.get("status") == "cannot":
                shape = m["label"].split(":")[0]
                seen.setdefault((system, shape), cell.get("note", ""))
    return [f"{system}, {shape}: {note}" for (system, shape), note in seen.items()]

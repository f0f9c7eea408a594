"""Run one measurement of one system in this process and print its row.

The suite starts one such process per measurement: a crash, a hang or a leak stays
inside it, and the suite's timeout kills its whole session. The spec is JSON:
``{"system": ..., "workload": "W1".."W4" | "HTTP" | "DB", "params": {...}, "pg":
URL|null, "redis": URL|null, "tmp": DIR, "rtt_ms": MS}`` (``rtt_ms``, optional: every
PostgreSQL connection of the run through a proxy adding that round trip; a ``DB`` run,
bench.dbwork, always goes through the proxy, which counts). The row is printed as
``BENCH-RESULT {json}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench import dbwork
from bench.peers import make
from bench.peers.common import CannotExpress, Ctx

MARK = "BENCH-RESULT "


def run(spec: dict[str, Any]) -> dict[str, Any]:
    ctx = Ctx(pg=spec.get("pg"), redis=spec.get("redis"), tmp=Path(spec["tmp"]))
    workload = spec["workload"]
    rtt = float(spec.get("rtt_ms") or 0)
    proxy = dbwork.proxied(ctx, ctx.pg, rtt) if ctx.pg and (rtt or workload == "DB") \
        else None
    try:
        row = _run(spec, ctx, workload)
    finally:
        if proxy:
            proxy.close()
    if rtt and ctx.pg and spec["system"].endswith("-pg"):
        row["rtt_ms"] = rtt
    return row


def _run(spec: dict[str, Any], ctx: Ctx, workload: str) -> dict[str, Any]:
    system = make(spec["system"], ctx)
    p = spec["params"]
    try:
        if workload == "DB":
            return dbwork.run(system, ctx, p)
        if workload == "W1":
            # taskyard only: the scheduler in a worker, the workers' slots
            extra = {k: p[k] for k in ("inproc", "capacity") if p.get(k)}
            return system.w1(p["jobs"], p["workers"], batch=p["batch"], timeout=p["timeout"],
                             enqueue_limit=p.get("enqueue_limit"), **extra)
        if workload == "W2":
            return system.w2(p["jobs"], p["warmup"], p["timeout"])
        if workload == "W3":
            return system.w3(p["pending"], p["cycles"])
        if workload == "W4":
            return system.w4(p["shape"], p["jobs"], p["timeout"])
        if workload == "HTTP":
            return system.http(p["jobs"], p["clients"], p["latency"])
    except CannotExpress as exc:
        return {"status": "cannot", "reason": str(exc)}
    raise ValueError(f"unknown workload {workload!r}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(args[0])
    row = run(spec)
    row.setdefault("status", "ok")
    print(MARK + json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

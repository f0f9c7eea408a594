"""Airflow 2 on the same PostgreSQL, W4 only: ``airflow scheduler`` with the
LocalExecutor, from a venv of its own (``AIRFLOW_VENV``, default ``.venv-airflow``, made
by ``make .venv-airflow/.installed``: Airflow 2 needs SQLAlchemy 1.4, taskyard 2.0).

Each run: a fresh database (``airflow db migrate``), a DAG file written into a fresh
DAGS folder, the scheduler started, the DAG triggered once it is parsed
(``bench.in_airflow.ctl``), the graph's ``bench.handlers.record`` files read as for
every other system. Settings for latency, as Airflow's documentation advises: the
scheduler loops every 1 s instead of 5 s and sleeps 0.1 s when idle, a finished task
schedules its downstream tasks at once (the "mini scheduler", on by default), the DAG
file is parsed once, tasks start by fork (no new interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.graphs import build, edges, handoff_stats, read_records, record_delays
from bench.in_airflow.dags import DAG_ID
from bench.peers.common import (
    HERE,
    Ctx,
    Peer,
    Procs,
    recreate_pg,
    run_db,
)

SLOTS = 2  # LocalExecutor worker processes: the 2 workers of every other system's W4
# The graphs Airflow runs here (its tasks cost ~0.1-0.5 s of CPU each): bigger ones
# cannot finish in any bench-sized time limit.
SIZES = {"chain": 100, "fanout": 1_000, "random": 1_000}


def venv() -> Path:
    return Path(os.environ.get("AIRFLOW_VENV", str(HERE / ".venv-airflow")))


def installed() -> bool:
    """Whether Airflow's venv is there (the suite leaves Airflow out otherwise)."""
    return (venv() / "bin" / "airflow").exists()


class AirflowPeer(Peer):
    name = "airflow-pg"
    batch_api = None

    def __init__(self, ctx: Ctx) -> None:
        super().__init__(ctx)
        assert ctx.pg, "Airflow needs the PostgreSQL cluster"
        self.url = run_db(ctx.pg, "airflow")
        self.home = ctx.tmp / "airflow"

    def env(self) -> dict[str, str]:
        from sqlalchemy.engine import make_url  # noqa: PLC0415

        conn = make_url(self.url).set(drivername="postgresql+psycopg2")
        return {
            # Only the repository: the bench venv's packages must not shadow Airflow's.
            "PYTHONPATH": str(HERE),
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": conn.render_as_string(hide_password=False),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(SLOTS),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.home / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTE_TASKS_NEW_PYTHON_INTERPRETER": "False",
            "AIRFLOW__CORE__DAG_FILE_PROCESSOR_TIMEOUT": "300",
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "300",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.1",
            "AIRFLOW__SCHEDULER__SCHEDULE_AFTER_TASK_EXECUTION": "True",
            "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "3600",
            "AIRFLOW__SCHEDULER__PARSING_PROCESSES": "1",
            "AIRFLOW__SCHEDULER__MAX_TIS_PER_QUERY": "512",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
            "AIRFLOW__WEBSERVER__SECRET_KEY": "bench",
        }

    def _python(self) -> str:
        return str(venv() / "bin" / "python")

    def cannot(self, shape: str, n: int) -> str | None:
        return None  # any graph; the suite gives it only the small ones (SIZES)

    def reset(self) -> None:
        recreate_pg(self.url)
        (self.home / "dags").mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, **self.env())
        subprocess.run([str(venv() / "bin" / "airflow"), "db", "migrate"], env=env, cwd=HERE,
                       check=True, capture_output=True, timeout=300)

    def w4(self, shape: str, n: int, timeout: float) -> dict[str, Any]:
        if not installed():
            raise RuntimeError(f"Airflow's venv {venv()} is missing: make "
                               ".venv-airflow/.installed")
        self.reset()
        out = self.ctx.tmp / "records"
        out.mkdir(exist_ok=True)
        doc = build(shape, n)
        final = {"chain": f"t{n - 1}", "fanout": "join"}.get(shape, "")
        spec = self.home / "graph.json"
        spec.write_text(json.dumps({"doc": doc, "out": str(out), "final": final,
                                    "slots": SLOTS}))
        # Airflow's DAG discovery reads files that mention both "airflow" and "dag".
        (self.home / "dags" / "bench_graph.py").write_text(
            "# an airflow DAG\nfrom bench.in_airflow.dags import dag_from_file\n\n"
            f"dag = dag_from_file({str(spec)!r})\n")
        row: dict[str, Any] = {"shape": shape, "jobs": n}
        procs = Procs(dict(os.environ, **self.env()), self.ctx.tmp / "daemons.log")
        procs.sampler.start()
        try:
            procs.start("workers", [str(venv() / "bin" / "airflow"), "scheduler"])
            ctl = subprocess.Popen([self._python(), "-m", "bench.in_airflow.ctl", DAG_ID],
                                   env=procs.env, cwd=HERE, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
            try:
                row.update(self._run_dag(procs, ctl, out, (final, n), timeout))
            finally:
                ctl.kill()
                ctl.wait()
            procs.sampler.sample()
            # A process per task: the sum of every process's peak (the other systems'
            # figure) would add up peaks that never coexist.
            row["rss_mb"] = procs.sampler.live_peak_mb()
            row["rss_hwm_sum_mb"] = procs.sampler.peak_mb()
        finally:
            procs.sampler.stop()
            procs.stop()
        recs = read_records(out)
        row["succeeded"] = len(recs)
        if row["status"] == "ok":
            e2e = max(end for _, end in recs.values()) - row.pop("submitted_at")
            row.update(end_to_end_s=round(e2e, 2), jobs_per_s=round(n / e2e, 1))
        else:
            row.pop("submitted_at", None)
            row["jobs_per_s_partial"] = round(len(recs) / timeout, 1)
        row.update(handoff_stats(record_delays(edges(doc), recs)))
        return row

    def _run_dag(self, procs: Procs, ctl: subprocess.Popen[str], out: Path,
                 final: tuple[str, int], timeout: float) -> dict[str, Any]:
        """Trigger, then wait for the final task (a random DAG: for every task)."""
        assert ctl.stdin is not None and ctl.stdout is not None
        line = ctl.stdout.readline().strip()  # the scheduler has parsed the DAG
        procs.check_alive()
        if line != "ready":
            raise RuntimeError(f"airflow_ctl: {line or 'exited'}")
        started = time.perf_counter()
        ctl.stdin.write("go\n")
        ctl.stdin.flush()
        line = ctl.stdout.readline().strip()
        if not line.startswith("triggered"):
            raise RuntimeError(f"airflow_ctl: {line or 'exited'}")
        found: dict[str, Any] = {"submit_s": round(time.perf_counter() - started, 4),
                                 "submitted_at": time.time()}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            procs.check_alive()
            if ((out / f"{final[0]}.done").exists() if final[0]
                    else len(read_records(out)) >= final[1]):
                found["status"] = "ok"
                break
            time.sleep(0.05)
        else:
            found["status"] = "timeout"
        return found

    def config(self) -> dict[str, str]:
        return {"storage": "Airflow 2's metadata database on the same PostgreSQL (psycopg2)",
                "workers": f"`airflow scheduler` with the LocalExecutor, parallelism {SLOTS} "
                           "(its worker processes are the scheduler's children: one tree, "
                           "counted as workers; a process forked per task, so its memory "
                           "figure is the highest simultaneous sum of RSS, sampled every "
                           "0.2 s, not the sum of every process's peak); scheduler loop "
                           "every 1 s, idle sleep 0.1 s, mini scheduler on, tasks forked, "
                           "the DAG file parsed once",
                "graphs": "W4 only, one DAG of PythonOperators per graph, triggered by "
                          "`trigger_dag` (as `airflow dags trigger`): chain "
                          f"{SIZES['chain']}, fan-out {SIZES['fanout']:,}, random "
                          f"{SIZES['random']:,}"}

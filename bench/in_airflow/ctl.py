"""Triggers the benchmark's DAG, in Airflow's own venv: ``python -m
bench.in_airflow.ctl DAG_ID``. Waits until the scheduler has parsed and serialized
the DAG, prints ``ready``, then on a line of standard input triggers one run (Airflow's
own ``trigger_dag``, what ``airflow dags trigger`` and the REST API call) and prints
``triggered SECONDS``. A process of its own so that the trigger is timed without
Airflow's import time."""

from __future__ import annotations

import sys
import time


def main() -> int:
    dag_id = sys.argv[1]
    from airflow.api.common.trigger_dag import trigger_dag  # noqa: PLC0415
    from airflow.models.dag import DagModel  # noqa: PLC0415
    from airflow.models.serialized_dag import SerializedDagModel  # noqa: PLC0415
    from airflow.utils import timezone  # noqa: PLC0415

    deadline = time.monotonic() + 600
    while not (SerializedDagModel.has_dag(dag_id) and DagModel.get_dagmodel(dag_id)):
        if time.monotonic() > deadline:
            print("not parsed", flush=True)
            return 1
        time.sleep(0.2)
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    trigger_dag(dag_id, run_id="bench", execution_date=timezone.utcnow(),
                replace_microseconds=False)
    print(f"triggered {time.perf_counter() - started:.4f}", flush=True)
    sys.stdin.readline()  # kept open until the run ends: its stdin closes
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Airflow side of the W4 benchmark: imported by the DAG file that
:class:`bench.peers.airflow_peer.AirflowPeer` writes into its DAGs folder, in Airflow's own
venv (never in the bench venv: Airflow 2 needs SQLAlchemy 1.4).

``dag_from_file(path)`` builds one DAG from a graph document of ``bench.graphs.build``
saved as JSON: one ``PythonOperator`` per task running ``bench.handlers.record`` (the same
handler as every other system's W4), one dependency per ``requires`` entry.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import handlers

DAG_ID = "bench_graph"


def dag_from_file(path: str) -> Any:
    from airflow import DAG  # noqa: PLC0415
    from airflow.operators.python import PythonOperator  # noqa: PLC0415

    spec = json.loads(Path(path).read_text())
    doc, out, final = spec["doc"], spec["out"], spec["final"]
    dag = DAG(DAG_ID, schedule=None, start_date=datetime(2024, 1, 1), catchup=False,
              max_active_tasks=spec["slots"], max_active_runs=1)
    tasks = {}
    for label in doc["tasks"]:
        tasks[label] = PythonOperator(
            task_id=label, python_callable=handlers.record, op_args=[label, out],
            op_kwargs={"final": label == final}, dag=dag, retries=0)
    for label, task in doc["tasks"].items():
        for parent in task.get("requires", ()):
            tasks[parent] >> tasks[label]
    return dag

"""Testing task functions (docs/python.md): the handler alone, then the whole way
through a throwaway SQLite database and real workers (`taskyard up --until-idle`)."""

import importlib
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def test_add_is_a_plain_function():
    from shop import add

    assert add(2, 3) == 5


def test_add_runs_on_a_worker(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'test.db'}"
    monkeypatch.setenv("TASKYARD_DB", url)
    sys.modules.pop("shop", None)           # its Yard reads TASKYARD_DB when imported
    shop = importlib.import_module("shop")
    shop.yard.init()
    job = shop.add.submit(2, 3)
    subprocess.run([sys.executable, "-m", "taskyard", "up", "--workers", "1",
                    "--until-idle"], cwd=HERE, check=True, timeout=120)
    assert job.result(timeout=10) == 5
    shop.yard.close()

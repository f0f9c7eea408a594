"""bench/submit_options.py at a tiny size on both stores: it runs and reports positive
figures (the numbers themselves are measured by hand, see the script's docstring)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import submit_options


def test_the_submit_options_bench_runs(db_url: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    assert submit_options.main(["--db", db_url, "--submits", "20", "--backlogs", "100",
                                "--history", "500", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    kinds = {"plain", "unique_new_key", "unique_key_held"}
    if db_url.startswith("postgresql"):
        kinds |= {"transactional", "own_transaction_reference"}
    assert set(result["submits"]) == kinds
    assert all(row["per_s"] > 0 for row in result["submits"].values())
    assert [(c["backlog"], c["history"]) for c in result["cycles"]] == [(100, 0), (100, 500)]

"""`make ui`: the dashboard on the demo's database, with a scheduler and 2 workers.

Runs the demo first when its database is missing, creates a fresh admin token, prints
the URL and the token, then serves (`taskyard up --workers 2 --http PORT`) until Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DB = HERE / "run" / "taskyard.db"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8080)
    port = parser.parse_args().port
    if not DB.exists():
        subprocess.run([sys.executable, str(HERE / "run_demo.py")], check=True)
    url = f"sqlite:///{DB}"
    base = [sys.executable, "-m", "taskyard", "--db", url]
    name = f"ui-{time.strftime('%Y%m%d-%H%M%S')}"
    token = subprocess.run([*base, "token", "create", "--name", name, "--scope", "admin"],
                           check=True, capture_output=True, text=True).stdout.strip()
    print(f"""
  taskyard dashboard: http://127.0.0.1:{port}/
  token (admin, shown once; paste it in the sign-in box):
    {token}
  revoke it later with: taskyard --db {url} token revoke {name}
  Ctrl-C stops the server and its workers.
""", flush=True)
    os.chdir(HERE)  # the demo's python handlers import from here
    os.execv(sys.executable, [*base, "up", "--workers", "2", "--http", str(port)])
    return 0


if __name__ == "__main__":
    sys.exit(main())

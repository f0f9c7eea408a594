"""The root command loads a command's modules when it is looked up: all of them, even
when another command's module registered the command already (``job`` registers
``jobs``; ``jobs search`` comes from operations.py)."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh interpreter: in this one, other tests may have imported the modules already.
LOOK_UP = """
import json, click
from taskyard.cli.main import cli
ctx = click.Context(cli)
for name in ("job", "jobs", "workers"):
    cli.get_command(ctx, name)
print(json.dumps({n: sorted(cli.commands[n].commands) for n in ("jobs", "workers")}))
"""


def test_every_module_of_a_command_is_loaded_whatever_was_looked_up_first() -> None:
    out = subprocess.run([sys.executable, "-c", LOOK_UP], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    found = json.loads(out)
    assert {"search", "cancel", "retry", "list"} <= set(found["jobs"])
    assert {"drain", "list"} <= set(found["workers"])

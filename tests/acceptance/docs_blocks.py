"""The shell blocks of a Markdown page, made into one script that runs them as a reader
would, in one shell, top to bottom (see ``test_docs.py``).

- ```` ```sh ````, ```` ```bash ````, ```` ```shell ```` and ```` ```console ```` blocks
  run (in a console block, the lines that start with ``$ ``); other fences do not.
- ``<!-- docs-test: skip, REASON -->`` right before a block leaves it out.
- ``<!-- docs-test: file NAME -->`` right before a block writes its text to ``NAME``
  (a YAML file the page shows, then submits).
- ``<!-- docs-test: output -->`` right before an output block (a plain fence right after
  a shell block) checks it: each of its lines, in order, must begin a line the shell
  block printed (spaces collapsed, ISO 8601 times masked; a trailing ``...`` or ``…``
  is dropped).
- A daemon started in the foreground (``taskyard up``, ``scheduler``, ``worker``,
  ``serve``, ``publisher`` or ``celery-pool`` with no ``--until-idle`` and no ``&``), and a
  command that follows a stream until Ctrl-C (``taskyard events --follow``, ``curl -N``
  on an event stream), is what the page runs "in another shell": it is started in the
  background and stopped when the page ends. After one that serves HTTP (``serve``,
  ``up --http PORT``) the page goes on once the server answers, as a reader would.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

SHELLS = {"sh", "bash", "shell", "console"}
MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|file|output)\b[,\s]*(.*?)\s*-->\s*$")
_DAEMON = re.compile(r"^(\S+=\S+\s+)*taskyard\s+(-v+\s+)?"
                     r"(up|scheduler|worker|serve|publisher|celery-pool)\b")
_FOLLOW = re.compile(r"^taskyard\s+events\b.*\s(--follow|-f)\b"
                     r"|^curl\s(.*\s)?-\w*N\w*\s.*/events/stream\b")
"""A command that prints what comes until Ctrl-C."""
_HTTP_PORT = re.compile(r"\s--(?:port|http)[=\s]+(\d+)")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_BACKGROUND = re.compile(r"(?<![&>|])&(?![&>])")
"""``&`` that sends a command to the background (not ``&&``, ``2>&1`` or ``&>``)."""


@dataclass
class Block:
    line: int
    """Line number of the opening fence (1-based)."""
    lang: str
    text: str
    marker: tuple[str, str] | None = None
    expected: list[str] = field(default_factory=list)
    """Lines of the output block that follows (when marked ``output``)."""

    @property
    def runs(self) -> bool:
        return self.lang in SHELLS and (self.marker is None or self.marker[0] != "skip")


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of ``markdown`` with the marker before each."""
    found: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    marker: tuple[str, str] | None = None
    while index < len(lines):
        line = lines[index]
        match = MARKER.match(line.strip())
        if match:
            marker = (match.group(1), match.group(2))
            index += 1
            continue
        fence = FENCE.match(line)
        if fence is None:
            if line.strip():
                marker = None
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        body = "\n".join(lines[index + 1:end])
        block = Block(index + 1, fence.group(2), body, marker)
        if marker is not None and marker[0] == "output" and found and not block.lang:
            found[-1].expected = [x for x in body.splitlines() if x.strip()]
        else:
            found.append(block)
        marker = None
        index = end + 1
    return found


def commands(block: Block) -> str:
    """The block's shell text: prompts taken off a console block, foreground daemons
    sent to the background (their output to a log beside the page's database)."""
    text = block.text
    if block.lang == "console":
        text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ "))
    out = []
    for line in text.splitlines():
        code = line.partition("  #")[0]
        name = _long_running(code)
        if name is None:
            out.append(line)
            continue
        out.append(f"{code.rstrip()} 2>> docs-test-{name}.log &")
        port = _served_port(code)
        if port is not None:
            out.append(f"docs_test_wait_http {port} $!")
    return "\n".join(out)


def _long_running(code: str) -> str | None:
    """The name of the daemon or follower ``code`` starts in the foreground, if any."""
    if "--until-idle" in code or _BACKGROUND.search(code) or code.rstrip().endswith("\\"):
        return None
    daemon = _DAEMON.match(code.strip())
    if daemon:
        return daemon.group(3)
    return "events-follow" if _FOLLOW.match(code.strip()) else None


def _served_port(code: str) -> int | None:
    """The port an HTTP server started by ``code`` answers on (``serve``: 8080 unless
    ``--port``; ``up``: with ``--http PORT`` only)."""
    daemon = _DAEMON.match(code.strip())
    port = _HTTP_PORT.search(code)
    if daemon is None or daemon.group(3) not in ("serve", "up"):
        return None
    if port is not None:
        return int(port.group(1))
    return 8080 if daemon.group(3) == "serve" else None


WAIT_HTTP = """docs_test_wait_http() {  # the server answers (or its process ended)
  local deadline=$((SECONDS + 600))
  until curl -s -o /dev/null "http://127.0.0.1:$1/healthz"; do
    if ! kill -0 "$2" 2>/dev/null || ((SECONDS > deadline)); then
      echo "docs-test: nothing answers on port $1" >&2; return 1
    fi
    sleep 0.2
  done
}"""


def script(markdown: str) -> tuple[str, list[Block]]:
    """One bash script for the page's runnable blocks, and those blocks. Each block's
    output starts with a marker line ``@@docs-test block N@@`` (N: its index)."""
    parts = ["set -eo pipefail",
             "trap 'echo \"docs-test: failed at: $BASH_COMMAND\" >&2' ERR",
             # What the page left running (daemons it started) ends with it.
             "trap 'status=$?; set +e; kill $(jobs -p) 2>/dev/null; wait; exit $status' EXIT",
             WAIT_HTTP]
    runnable = []
    for block in blocks(markdown):
        if block.marker is not None and block.marker[0] == "file" and block.marker[1]:
            parts.append(f"cat > {shlex.quote(block.marker[1])} <<'DOCS_TEST_EOF'\n"
                         f"{block.text}\nDOCS_TEST_EOF")
            continue
        if not block.runs:
            continue
        parts.append(f"echo '@@docs-test block {len(runnable)}@@'")
        parts.append(f"echo 'docs-test: block at line {block.line}' >&2")
        parts.append(commands(block))
        runnable.append(block)
    return "\n".join(parts) + "\n", runnable


_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def _normal(line: str) -> str:
    """Spaces collapsed, times masked, a trailing ellipsis dropped."""
    line = _TIME.sub("TIME", " ".join(line.split()))
    return line.removesuffix("...").removesuffix("…").rstrip()


def missing_output(expected: list[str], printed: str) -> list[str]:
    """The expected lines not found, in order, at the start of printed lines."""
    lines = [_normal(x) for x in printed.splitlines()]
    at = 0
    missing = []
    for want in map(_normal, expected):
        hit = next((i for i in range(at, len(lines)) if lines[i].startswith(want)), None)
        if hit is None:
            missing.append(want)
        else:
            at = hit + 1
    return missing

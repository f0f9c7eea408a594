"""Whatever is accepted is readable (issue 36, item 4): hypothesis generates task types,
submissions, graphs and schedules — hostile durations, times, names and args among
them — and sends each through a way in (Python, the CLI or HTTP). What is refused must
change nothing; what is accepted must then be read back by every way out: the job, its
list and the schedules over HTTP (the dashboard's JSON: overview, graphs, edges),
``/metrics``, and, once at the end, the CLI's lists and shows, table and ``--json``.

On both stores; examples bounded (``TASKYARD_PROPERTY_EXAMPLES``) to keep ``make test``
short: the CLI, at ~0.5 s a command, is one way in of three."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from http_helpers import Api, taskyard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from taskyard.model.errors import StoreError

EXAMPLES = int(os.environ.get("TASKYARD_PROPERTY_EXAMPLES", "30"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
WAYS = st.sampled_from(["python", "http", "http", "cli"])

def mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Absent or valid most of the time, hostile sometimes: so that a body with several
    fields is often accepted, and the values at the edges still come."""
    return st.one_of(st.none(), valid, valid, valid, valid, hostile)


numbers = st.one_of(
    st.integers(-(10**20), 10**20), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1e-300, 1e308, -1e308, 3155760000, 3155760001, 253402300799,
                     253402300800, -62135596800, -62135596801, 2**63, 10**400]))
texts = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", st.integers(0, 10**13),
              st.sampled_from(["", "s", "m", "h", "d", "w", "y"])),
    st.sampled_from(["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00",
                     "2030-02-30", "1e308", "inf", "NaN", "-5m", " 5m ", "", "soon"]),
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    st.text(max_size=12))
fine_durations = st.one_of(st.integers(1, 10**6), st.floats(0.5, 1e9),
                           st.sampled_from(["90", "5m", "2h", "1d", "1w", "5200w"]))
durations = mostly(fine_durations, numbers | texts)
times = mostly(fine_durations | st.sampled_from(["2030-01-01T00:00:00Z",
                                                 "9999-12-31T23:59:59Z", 1.7e9, 0]),
               numbers | texts)
fine_names = st.text(st.sampled_from("abcxyz019-_./:"), min_size=1, max_size=12)
names = st.one_of(fine_names, fine_names, st.text(min_size=1, max_size=12),
                  st.sampled_from(["a/b", "tab\tname", "esc\x1b[31m", "nul\x00", "x" * 201,
                                   " lead"]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=8)
# The types' handler is `shell:echo {x}`: their jobs need an arg x (mostly given).
args = st.builds(lambda x, more: {**more, "x": x} if x is not None else more,
                 st.one_of(json_values, json_values, json_values, json_values, st.just(None)),
                 st.dictionaries(st.text(max_size=8), json_values, max_size=3))


def _drop_none(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


job_bodies = st.builds(lambda t, a, p, r, tm, pools: _drop_none(
    {"type": t, "args": a, "priority": p, "run_after": r, "timeout": tm, "pools": pools}),
    st.sampled_from(["echo", "echo", "echo", "shout", "missing"]), args,
    mostly(st.integers(-1000, 1000), st.integers(-(2**40), 2**40)), times, durations,
    mostly(st.lists(fine_names, min_size=1, max_size=2), st.lists(names, max_size=2)))
type_bodies = st.builds(lambda n, tm, rd, rmd, iv, r: _drop_none(
    {"name": n, "handler": "shell:echo {x}", "timeout": tm, "retry_delay": rd,
     "retry_max_delay": rmd, "interval": iv, "retries": r}),
    names, durations, durations, durations,
    mostly(st.sampled_from(["1h", "1d,1h,64d"]),
           st.sampled_from(["1d,1h,40000d", "0", "1e308"]) | numbers),
    mostly(st.integers(0, 10), st.integers(-1, 2**40)))
schedule_bodies = st.builds(lambda n, e, c, a, tz: _drop_none(
    {"name": n, "type": "echo", "every": e, "cron": None if e is not None else c, "args": a,
     "timezone": tz, "paused": True}),
    names, durations,
    mostly(st.sampled_from(["0 3 * * *", "*/5 * * * *"]), st.sampled_from(["61 * * * *", "x"])),
    args, mostly(st.sampled_from(["UTC", "Europe/Paris"]), st.sampled_from(["Mars/Base", ""])))
graph_bodies = st.builds(lambda tasks, routing: _drop_none({"tasks": tasks, "routing": routing}),
                         st.dictionaries(names, st.builds(lambda a, tm, rr: _drop_none(
                             {"type": "echo", "args": a, "timeout": tm, "reruns": rr}),
                             args, durations, mostly(st.integers(0, 5), st.integers(-1, 2**40))),
                             min_size=1, max_size=3),
                         mostly(fine_names, names))


def _totals(api: Api) -> tuple[int, ...]:
    store = api.yard.store
    with store.engine.connect() as conn:
        return tuple(int(conn.exec_driver_sql(f"SELECT COUNT(*) FROM {table}").scalar_one())
                     for table in ("jobs", "graphs", "schedules", "task_types"))


def _cli_args(kind: str, body: dict[str, Any], folder: Path) -> list[str] | None:
    """The CLI command for ``body``; None when no argv can carry it (NUL, surrogates)."""
    def opt(flag: str, key: str) -> list[str]:
        return [] if body.get(key) is None else [flag, str(body[key])]

    if kind == "job":
        argv = ["submit", str(body["type"]), "--args", json.dumps(body.get("args", {})),
                *opt("--priority", "priority"), *opt("--run-after", "run_after"),
                *opt("--timeout", "timeout")]
        for pool in body.get("pools") or ():
            argv += ["--pool", str(pool)]
    elif kind == "type":
        argv = ["task-type", "add", str(body["name"]), "--handler", body["handler"],
                *opt("--timeout", "timeout"), *opt("--retry-delay", "retry_delay"),
                *opt("--retry-max-delay", "retry_max_delay"), *opt("--interval", "interval"),
                *opt("--retries", "retries")]
    elif kind == "schedule":
        argv = ["schedule", "add", str(body["name"]), "echo", "--paused",
                "--args", json.dumps(body.get("args", {})), *opt("--every", "every"),
                *opt("--cron", "cron"), *opt("--timezone", "timezone")]
    else:
        path = folder / "graph.json"
        path.write_text(json.dumps(body))
        argv = ["graph", "submit", str(path)]
    try:
        for arg in argv:
            if "\x00" in arg:
                return None
            arg.encode()
    except UnicodeEncodeError:
        return None
    return argv


def _python(api: Api, kind: str, body: dict[str, Any]) -> bool:
    yard = api.yard
    try:
        if kind == "job":
            options = {k: v for k, v in body.items() if k not in ("type", "args")}
            yard.submit(body["type"], body.get("args", {}), **options)
        elif kind == "type":
            yard.apply({"task_types": {body["name"]: {
                k: v for k, v in body.items() if k != "name"}}}, verify=False)
        elif kind == "schedule":
            yard.add_schedule(body["name"], body["type"],
                              **{k: v for k, v in body.items() if k not in ("name", "type")})
        else:
            yard.submit_graph(body)
    except (StoreError, ValueError, TypeError):
        return False
    return True


PATHS = {"job": "/api/v1/jobs", "type": "/api/v1/task-types", "schedule": "/api/v1/schedules",
         "graph": "/api/v1/graphs"}


def _send(api: Api, kind: str, body: dict[str, Any], way: str, folder: Path) -> bool:
    """Whether ``body`` was accepted; a refusal is a clear one (4xx, exit 1/2)."""
    if way == "cli" and (argv := _cli_args(kind, body, folder)) is not None:
        done = taskyard(api.db_url, *argv)
        assert done.returncode in (0, 1, 2), done.stderr
        assert "Traceback" not in done.stderr
        if done.returncode:
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        return done.returncode == 0
    if way == "python":
        return _python(api, kind, body)
    params = {"verify": "false"} if kind == "type" else {}
    try:
        content = json.dumps(body, allow_nan=False).encode()
    except ValueError:
        return False
    with api.client() as admin:
        answer = admin.post(PATHS[kind], content=content, params=params,
                            headers={"Content-Type": "application/json"})
    assert answer.status_code in (201, 400, 409, 413, 422), answer.text
    return answer.status_code == 201


def _readable_over_http(api: Api) -> None:
    with api.client() as admin:
        jobs = admin.get("/api/v1/jobs", params={"limit": 1000})
        assert jobs.status_code == 200, jobs.text
        for job in jobs.json()["items"][:3]:
            for path in (f"/api/v1/jobs/{job['id']}", f"/api/v1/jobs/{job['id']}/logs"):
                assert admin.get(path).status_code == 200, path
        for path in ("/api/v1/jobs?state=pending", "/api/v1/schedules", "/api/v1/task-types",
                     "/api/v1/graphs", "/api/v1/overview", "/api/v1/pools", "/metrics"):
            answer = admin.get(path)
            assert answer.status_code == 200, (path, answer.text)
        for graph in admin.get("/api/v1/graphs").json()["items"][:2]:
            for path in (f"/api/v1/graphs/{graph['id']}", f"/api/v1/graphs/{graph['id']}/edges"):
                assert admin.get(path).status_code == 200, path
        for schedule in admin.get("/api/v1/schedules").json()["items"][:2]:
            assert admin.get(f"/api/v1/schedules/{quote(schedule['name'], safe='')}"
                             ).status_code == 200


def _readable_by_the_cli(api: Api) -> None:
    for argv in (["jobs", "list"], ["jobs", "list", "--json"], ["schedule", "list"],
                 ["schedule", "list", "--json"], ["task-type", "list", "-v"],
                 ["task-type", "list", "--json"], ["jobs", "list-pending", "echo"]):
        done = taskyard(api.db_url, *argv)
        assert done.returncode == 0, (argv, done.stderr)
        if "--json" in argv:
            json.loads(done.stdout)
    listed = json.loads(taskyard(api.db_url, "jobs", "list", "--json").stdout)
    for job in listed[:5]:
        for extra in ([], ["--json"]):
            done = taskyard(api.db_url, "job", "show", str(job["id"]), *extra)
            assert done.returncode == 0, done.stderr


def _types(api: Api) -> None:
    for name in ("echo", "shout"):
        api.yard.add_task_type(name, "shell:echo {x}", verify=False)


def test_whatever_is_accepted_is_readable(api: Api, tmp_path: Path) -> None:
    _types(api)
    kinds = st.one_of(st.tuples(st.just("job"), job_bodies),
                      st.tuples(st.just("type"), type_bodies),
                      st.tuples(st.just("schedule"), schedule_bodies),
                      st.tuples(st.just("graph"), graph_bodies))

    @SETTINGS
    @given(kinds, WAYS)
    # The cases of F1, whatever the generated ones hold.
    @example(("job", {"type": "echo", "args": {"x": 1}, "run_after": 1e308}), "http")
    @example(("job", {"type": "echo", "args": {"x": 1}, "run_after": "99999999999d"}), "cli")
    @example(("job", {"type": "echo", "args": {"x": 1}, "timeout": 1e308}), "python")
    @example(("schedule", {"name": "s", "type": "echo", "every": 1e308, "args": {"x": 1},
                           "paused": True}), "http")
    @example(("type", {"name": "t", "handler": "shell:echo {x}", "timeout": 1e308}), "http")
    @example(("graph", {"tasks": {"a": {"type": "echo", "args": {"x": 1},
                                        "timeout": "99999999999d"}}}), "http")
    def check(entry: tuple[str, dict[str, Any]], way: str) -> None:
        kind, body = entry
        before = _totals(api)
        if not _send(api, kind, body, way, tmp_path):
            assert _totals(api) == before, (kind, way, body)  # refused: nothing stored
        _readable_over_http(api)

    check()
    _readable_by_the_cli(api)


def test_a_refusal_over_the_cli_is_one_line(api: Api, tmp_path: Path) -> None:
    """The CLI's refusals of out-of-range values: one line, exit 1 or 2, nothing stored."""
    _types(api)
    before = _totals(api)
    for argv in (["submit", "echo", "--args", '{"x": 1}', "--run-after", "1e308"],
                 ["submit", "echo", "--args", '{"x": 1}', "--timeout", "5300w"],
                 ["task-type", "add", "t", "--handler", "shell:true", "--timeout", "5300w"],
                 ["schedule", "add", "s", "echo", "--every", "99999999999d"]):
        done = taskyard(api.db_url, *argv)
        assert done.returncode in (1, 2), (argv, done.stdout)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert _totals(api) == before

"""Throwaway servers for the bridges' tests: Debian's rabbitmq-server and redis-server
(the Makefile installs them), each in a temporary folder, on 127.0.0.1 and free ports,
as processes of their own group so that stopping them stops everything they started.

RabbitMQ runs with its own Erlang port mapper (epmd, in the foreground: it goes with
the broker) on a free port, its own node name, cookie (``HOME``), data, logs and
configuration: nothing of a system-wide broker is read or disturbed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

from tests.polling import free_port, wait_for

RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
REDIS_SERVER = "/usr/bin/redis-server"


def _stop_group(proc: subprocess.Popen[bytes], sig: int, grace: float) -> None:
    """Signal the process group of ``proc``, then SIGKILL it if it outlives ``grace``."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def missing(*paths: str) -> str | None:
    """Why the servers cannot run here (None: they can)."""
    absent = [p for p in paths if not Path(p).exists()]
    return f"not installed: {', '.join(absent)} (make test installs them)" if absent else None


class RabbitBroker:
    """A RabbitMQ node in ``folder``: :meth:`start`, :meth:`kill` (SIGKILL), :meth:`stop`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}/"
        epmd_port, dist_port = free_port(), free_port()
        (folder / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            "disk_free_limit.absolute = 1MB\n")
        (folder / "enabled_plugins").write_text("[].\n")
        self.env = {
            **os.environ,
            "HOME": str(folder),  # the Erlang cookie
            "ERL_EPMD_PORT": str(epmd_port),
            "RABBITMQ_NODENAME": f"taskyard-test-{uuid.uuid4().hex[:8]}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "RABBITMQ_MNESIA_BASE": str(folder / "mnesia"),
            "RABBITMQ_LOG_BASE": str(folder / "log"),
            "RABBITMQ_CONFIG_FILE": str(folder / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(folder / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(folder / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(folder / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(folder / "rabbitmq.pid"),
        }
        self.epmd = subprocess.Popen(["epmd", "-port", str(epmd_port)], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.folder / "server.log").open("ab")
        self.proc = subprocess.Popen([RABBITMQ_SERVER], env=self.env, cwd=self.folder,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()
        wait_for("rabbitmq-server to accept AMQP connections", self._ready, timeout=120)

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            tail = (self.folder / "server.log").read_text()[-2000:]
            raise AssertionError(f"rabbitmq-server exited: {tail}")
        import amqp

        conn = amqp.Connection(host=f"127.0.0.1:{self.port}", connect_timeout=2)
        try:
            conn.connect()
        except Exception:
            return False
        conn.close()
        return True

    def kill(self) -> None:
        """SIGKILL the node (what it had confirmed to publishers is on disk)."""
        if self.proc is not None:
            _stop_group(self.proc, signal.SIGKILL, 30)

    def stop(self) -> None:
        if self.proc is not None:
            _stop_group(self.proc, signal.SIGTERM, 30)
        _stop_group(self.epmd, signal.SIGTERM, 10)


class RedisServer:
    """A redis-server without persistence in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(folder), "--daemonize", "no"],
            stdout=(folder / "redis.log").open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            wait_for("redis-server to answer PING", self._ready, timeout=60)
        except BaseException:
            self.stop()
            raise

    def _ready(self) -> bool:
        assert self.proc.poll() is None, "redis-server exited"
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        _stop_group(self.proc, signal.SIGTERM, 10)


class CeleryWorker:
    """A real ``celery worker`` (prefork, 3 processes, no ``-E``: the pool asks for
    events) running the tasks of ``tests/bridges/celery_tasks.py``."""

    def __init__(self, folder: Path, broker: str, backend: str) -> None:
        root = Path(__file__).resolve().parents[2]
        self.broker, self.backend = broker, backend
        env = {**os.environ, "PYTHONPATH": str(root), "TASKYARD_TEST_CELERY_BROKER": broker,
               "TASKYARD_TEST_CELERY_BACKEND": backend}
        celery = Path(sys.executable).with_name("celery")
        self.log = folder / "celery-worker.log"
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(celery), "-A", "tests.bridges.celery_tasks", "worker", "--pool", "prefork",
                 "--concurrency", "3", "--without-gossip", "--without-mingle",
                 "--loglevel", "INFO", "--hostname", "tests@%h"],
                cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        from tests.bridges.celery_tasks import app

        app.conf.broker_url, app.conf.result_backend = broker, backend
        self.app = app
        try:
            wait_for("the celery worker to answer a ping", self._ready, timeout=120)
        except BaseException:
            self.stop()
            raise

    def _ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()[-2000:]
        return bool(self.app.control.ping(timeout=0.5))

    def stop(self) -> None:
        _stop_group(self.proc, signal.SIGTERM, 20)

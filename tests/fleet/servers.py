"""Throwaway PostgreSQL servers and a PgBouncer for the fleet tests and ``bench.fleet``:
a cluster with the settings a case needs (``max_connections``, pg_stat_statements), a
streaming standby of it (``pg_basebackup``), promotion, SIGKILL of a primary, and
Debian's ``pgbouncer`` (the Makefile installs it) in front of one.

Each runs from a temporary folder of its own, on 127.0.0.1 and a free port. PostgreSQL
and PgBouncer refuse to run as root: as root they run as the ``postgres`` user, as
``scripts/pg-cluster`` does (their folder is made theirs). Stopping is safe to repeat;
a folder is removed by :meth:`PgServer.remove` / the caller.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.polling import free_port, wait_for

PGBOUNCER = "/usr/sbin/pgbouncer"
USER = "taskyard"
DATABASE = "taskyard"


def pg_bin() -> Path:
    """The newest installed PostgreSQL's binaries (``PG_BIN`` overrides)."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                   key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not found:
        raise FileNotFoundError("PostgreSQL binaries not found under /usr/lib/postgresql")
    return found[-1]


def _as_owner(cmd: Sequence[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else list(cmd)


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, "postgres")


def scratch(prefix: str) -> Path:
    """A folder the servers may write, outside pytest's private temporary tree (the
    ``postgres`` user cannot enter a root-only folder)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    _own(folder)
    return folder


def url_of(port: int, database: str = DATABASE, host: str = "127.0.0.1") -> str:
    return f"postgresql://{USER}@{host}:{port}/{database}"


BASE_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "full_page_writes": "off",
    "shared_buffers": "128MB",
    "max_connections": "100",
    "wal_level": "replica",
    "max_wal_senders": "5",
    "hot_standby": "on",
    "wal_keep_size": "256MB",
}
"""What every throwaway cluster runs with (fsync off: a test box, not a database that
must survive a power cut; a SIGKILL of the postmaster loses nothing either way)."""


class PgServer:
    """One PostgreSQL cluster in ``folder/data``, on ``port``."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = folder
        if not folder.exists():
            folder.mkdir(mode=0o755, parents=True)
            _own(folder)
        self.data = folder / "data"
        self.port = port or free_port()
        self.bin = pg_bin()

    @property
    def url(self) -> str:
        return url_of(self.port)

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *cmd: str, timeout: float = 120) -> str:
        done = subprocess.run(_as_owner(cmd), capture_output=True, text=True, timeout=timeout,
                              cwd=self.folder, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(cmd[0]).name} failed ({done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-800:]}")
        return done.stdout

    @classmethod
    def create(cls, folder: Path, settings: Mapping[str, str] = {}) -> PgServer:
        """initdb (trust on 127.0.0.1), the settings in postgresql.conf, started, with a
        ``taskyard`` superuser and database."""
        server = cls(folder)
        server._run(str(server.bin / "initdb"), "-D", str(server.data), "-A", "trust",
                    "-U", "postgres", "--no-sync")
        server.configure({**BASE_SETTINGS, **settings})
        with (server.data / "pg_hba.conf").open("a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")
        server.start()
        server.psql(f"CREATE ROLE {USER} SUPERUSER LOGIN",
                    f"CREATE DATABASE {DATABASE} OWNER {USER}")
        return server

    def configure(self, settings: Mapping[str, str]) -> None:
        """Append ``settings`` to postgresql.conf (the last one of a name wins); ``port``
        is always this server's."""
        lines = [f"{k} = {v}" for k, v in {**settings, "port": str(self.port)}.items()]
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("\n".join(lines) + "\n")

    def start(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.folder / "server.log"), "-w", "-t", "120", "-o",
                  f"-k {self.folder}", "start")

    def stop(self) -> None:
        """A fast shutdown; harmless if not running."""
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                          "-w", "stop", timeout=60)

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend (a crashed machine): nothing is
        shut down cleanly, connections just break."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                  text=True, check=False).stdout.split()
        for target in [pid, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGKILL)
        wait_for("the killed postmaster to go", lambda: not _alive(pid), timeout=30)

    def promote(self) -> None:
        """A standby becomes a primary (pg_ctl promote waits until it accepts writes)."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", "promote")

    def standby(self, folder: Path, *, name: str = "standby1") -> PgServer:
        """A streaming standby of this server, cloned by ``pg_basebackup -R`` into
        ``folder`` and started; it reports as ``name`` (for synchronous_standby_names)."""
        replica = PgServer(folder)
        self._run(str(self.bin / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "postgres", "-D", str(replica.data), "-R", "-X", "stream",
                  "--checkpoint=fast", timeout=300)
        replica.configure({})  # its own port
        # After what -R wrote to postgresql.auto.conf, which postgresql.conf cannot override.
        with (replica.data / "postgresql.auto.conf").open("a") as auto:
            auto.write(f"primary_conninfo = 'host=127.0.0.1 port={self.port} user=postgres "
                       f"application_name={name}'\n")
        replica.start()
        return replica

    def psql(self, *statements: str, database: str = "postgres") -> str:
        args = [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt"]
        for statement in statements:
            args += ["-c", statement]
        return self._run(*args).strip()

    def log_tail(self, lines: int = 20) -> str:
        path = self.folder / "server.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) \
            if path.exists() else ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes (its parent, pg_ctl's session, reaps it late).
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


class PgBouncer:
    """Debian's pgbouncer in front of ``server`` (``pool_mode`` transaction by default),
    on a free port of its own, trusting every client (a test box)."""

    def __init__(self, folder: Path, server: PgServer, *, pool_size: int = 20,
                 max_clients: int = 1000, settings: Mapping[str, str] = {}) -> None:
        self.folder = folder
        if not folder.exists():
            folder.mkdir(mode=0o755, parents=True)
            _own(folder)
        self.port = free_port()
        ini = {
            "listen_addr": "127.0.0.1",
            "listen_port": str(self.port),
            "unix_socket_dir": "",
            "auth_type": "trust",
            "auth_file": str(folder / "users.txt"),
            "pool_mode": "transaction",
            "default_pool_size": str(pool_size),
            "max_client_conn": str(max_clients),
            "max_db_connections": str(pool_size),
            "server_reset_query": "",
            "ignore_startup_parameters": "extra_float_digits",
            "logfile": str(folder / "pgbouncer.log"),
            "pidfile": str(folder / "pgbouncer.pid"),
            "admin_users": "postgres",
            **settings,
        }
        (folder / "users.txt").write_text(f'"{USER}" ""\n"postgres" ""\n')
        (folder / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"{DATABASE} = host=127.0.0.1 port={server.port} dbname={DATABASE}\n"
            "[pgbouncer]\n" + "".join(f"{k} = {v}\n" for k, v in ini.items()))
        for name in ("users.txt", "pgbouncer.ini"):
            _own(folder / name)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return url_of(self.port)

    def start(self) -> None:
        self.proc = subprocess.Popen(_as_owner([PGBOUNCER, str(self.folder / "pgbouncer.ini")]),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_for("pgbouncer to listen", self._listening, timeout=60)

    def _listening(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"pgbouncer exited: {self.log_tail()}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def admin(self, command: str) -> list[tuple[str, ...]]:
        """A command of PgBouncer's console (``SHOW POOLS``…), rows as text."""
        out = subprocess.run(
            [str(pg_bin() / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
             "-d", "pgbouncer", "-qAt", "-F", "\t", "-c", command],
            capture_output=True, text=True, timeout=60, check=True).stdout
        return [tuple(line.split("\t")) for line in out.splitlines() if line]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def log_tail(self, lines: int = 20) -> str:
        path = self.folder / "pgbouncer.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) \
            if path.exists() else ""


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def wait_port_closed(port: int, timeout: float = 30) -> None:
    def closed() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) != 0

    deadline = time.monotonic() + timeout
    while not closed() and time.monotonic() < deadline:
        time.sleep(0.05)

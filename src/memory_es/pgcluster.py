"""A throwaway PostgreSQL cluster for the tests and benchmarks of the PostgreSQL journal.

``initdb`` into a fresh temporary directory, ``pg_ctl start`` on 127.0.0.1 and a free port,
password (SCRAM) authentication for one superuser, and ``pg_ctl stop`` at the end. PostgreSQL
refuses to run as root, so as root the server's commands run as an unprivileged user
(``nobody`` unless told otherwise) who owns the directory. Nothing here is used by the store
itself: it is how tests get a real server, not a mock.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

BIN_ENV = "MEMORY_ES_PG_BIN"
SUPERUSER = "memory_es"


class ClusterError(RuntimeError):
    """The throwaway server could not be set up, started or stopped (the message says why)."""


def find_bin_dir() -> Path:
    """Where ``initdb`` and ``pg_ctl`` are: ``$MEMORY_ES_PG_BIN``, else the newest
    ``/usr/lib/postgresql/N/bin`` (Debian's layout), else ``PATH``."""
    candidates = [os.environ[BIN_ENV]] if os.environ.get(BIN_ENV) else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                         key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit()
                         else 0, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise ClusterError("PostgreSQL server binaries not found (initdb, pg_ctl): install the "
                       f"postgresql package or set {BIN_ENV}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ThrowawayCluster:
    """One PostgreSQL server in a temporary directory; ``with`` starts and removes it."""

    def __init__(self, *, run_as: str = "nobody", bin_dir: Path | None = None,
                 max_connections: int = 200) -> None:
        self.bin_dir = bin_dir or find_bin_dir()
        self.max_connections = max_connections  # a store holds a few (its pool)
        self.user = run_as if os.geteuid() == 0 else None
        self.password = secrets.token_urlsafe(18)
        self.port = free_port()
        # As root the server runs as another user, who must reach the directory: under /tmp,
        # not under a $TMPDIR that may sit in a root-only folder (pytest's tmp_path).
        self.base = Path(tempfile.mkdtemp(prefix="memory-es-pg-",
                                          dir="/tmp" if self.user is not None else None))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.running = False

    @property
    def dsn(self) -> str:
        return self.dsn_for("postgres")

    def dsn_for(self, dbname: str) -> str:
        return (f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{dbname}"
                "?connect_timeout=5")

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run([str(self.bin_dir / args[0]), *args[1:]], user=self.user,
                                  cwd=self.base, capture_output=True, text=True, check=True,
                                  timeout=timeout)
        except subprocess.CalledProcessError as e:
            raise ClusterError(f"{args[0]} failed ({e.returncode}): "
                               f"{(e.stderr or e.stdout).strip()[-800:]}{self._log_tail()}") from e
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f"{args[0]} did not finish in {timeout} s{self._log_tail()}") from e

    def _log_tail(self) -> str:
        try:
            return "\nserver log: " + self.log.read_text(errors="replace")[-800:]
        except OSError:
            return ""

    def init(self) -> None:
        pwfile = self.base / "pw"
        pwfile.write_text(self.password + "\n")
        if self.user is not None:
            shutil.chown(self.base, self.user)
            shutil.chown(pwfile, self.user)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, f"--pwfile={pwfile}",
                  "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        pwfile.unlink()

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 "
                f"-c max_connections={self.max_connections} -c shared_buffers=64MB -c fsync=on "
                "-c synchronous_commit=on")
        if int((self.data / "PG_VERSION").read_text().split(".")[0]) >= 14:
            # Recovery after an immediate stop first syncs the data directory: one syncfs, not
            # an fsync of each of the thousands of files a suite's databases leave (which took
            # over a minute on a busy machine).
            opts += " -c recovery_init_sync_method=syncfs"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w",
                  "-t", "300", "start", timeout=330)
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        """``fast`` (clean) or ``immediate`` (like a crash: recovery runs at the next start)."""
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
            self.running = False

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def create_database(self, name: str) -> str:
        """A new empty database; returns its DSN."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn_for(name)

    def __enter__(self) -> ThrowawayCluster:
        try:
            self.init()
            self.start()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()

    def remove(self) -> None:
        with contextlib.suppress(ClusterError):
            self.stop("immediate")
        for _ in range(3):
            shutil.rmtree(self.base, ignore_errors=True)
            if not self.base.exists():
                break
            time.sleep(0.2)

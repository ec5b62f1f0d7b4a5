"""A real, throw-away PostgreSQL server for the tests.

``pg_server()`` runs Debian's ``initdb`` and ``pg_ctl`` (``/usr/lib/postgresql/<version>/bin``, the
``postgresql`` package; ``.ci/run`` installs it when absent) in a fresh temporary directory, on a
free localhost port, with its unix socket in that directory, creates one database and yields its
``postgresql://`` URL. The server is stopped (``pg_ctl stop -m fast``) and the directory removed
when the block ends, on success and on failure.

PostgreSQL refuses to run as root: when the tests run as root the server runs as the ``postgres``
OS user (``runuser -u postgres --``), which owns the temporary directory. The cluster is
initialized with the C locale, so text sorts by bytes as it does in DuckDB, and with ``trust``
authentication (it listens on 127.0.0.1 and a private socket only, and lives for one test session).

Use it from a session-scoped fixture::

    @pytest.fixture(scope="session")
    def pg_url():
        with pg_server() as url:
            yield url

``find_bin_dir()`` returns None when no PostgreSQL binaries can be found; the fixture then skips
with that reason (``PG_BIN`` may name a bin directory elsewhere).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

DATABASE = "anonydb_test"
#: server settings for a throw-away test cluster: no durability work (the data dies with it)
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "20",
}


class PgUnavailable(RuntimeError):
    """No PostgreSQL binaries here (the fixture skips with this reason)."""


def _version(path: str) -> tuple[int, ...]:
    m = re.search(r"/postgresql/(\d+(?:\.\d+)?)/bin", path)
    return tuple(int(x) for x in m[1].split(".")) if m else (0,)


def find_bin_dir() -> Path | None:
    """The directory holding initdb and pg_ctl: $PG_BIN, the newest /usr/lib/postgresql/*/bin, or PATH."""
    env = os.environ.get("PG_BIN")
    candidates = [env] if env else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    which = shutil.which("initdb")
    if which:
        candidates.append(str(Path(which).parent))
    for c in candidates:
        d = Path(c)
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return d
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    """Run ``cmd`` as the postgres OS user when we are root (postgres refuses root)."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *cmd]
    return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(shlex.quote(c) for c in cmd)]


def _run(cmd: list[str], what: str, timeout: float = 120) -> None:
    p = subprocess.run(_as_server_user(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {p.returncode}):\n{p.stdout}")


@contextlib.contextmanager
def pg_server(database: str = DATABASE) -> Iterator[str]:
    """Start a PostgreSQL server for the block; yield a URL of a fresh database on it."""
    bindir = find_bin_dir()
    if bindir is None:
        raise PgUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) found under /usr/lib/postgresql/*/bin, "
                            "$PG_BIN or PATH: install Debian's postgresql package")
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise PgUnavailable("running as root and there is no 'postgres' OS user to run the server as") from None
    root = Path(tempfile.mkdtemp(prefix="anonydb_pg_"))
    data, log = root / "data", root / "server.log"
    started = False
    try:
        if os.geteuid() == 0:
            os.chown(root, pw.pw_uid, pw.pw_gid)
        os.chmod(root, 0o700)
        _run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
              "--locale=C", "--no-sync"], "initdb")
        opts = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
        for attempt in range(5):  # another process may take the free port before the server binds it
            port = free_port()
            try:
                _run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
                      "-o", f"-p {port} -k {root} {opts}", "start"], "pg_ctl start")
                started = True
                break
            except RuntimeError:
                if attempt == 4:
                    raise RuntimeError("pg_ctl start failed; server log:\n" + _tail(log))
                time.sleep(0.2)
        _create_database(root, port, database)
        yield f"postgresql://postgres@127.0.0.1:{port}/{database}"
    finally:
        if started:
            try:
                _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], "pg_ctl stop", timeout=60)
            except Exception:  # stop it harder rather than leave a server behind
                _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], "pg_ctl stop",
                     timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def _create_database(sockdir: Path, port: int, database: str) -> None:
    import psycopg

    with psycopg.connect(host=str(sockdir), port=port, user="postgres", dbname="postgres", autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{database}" TEMPLATE template0 ENCODING \'UTF8\' LOCALE \'C\'')


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"

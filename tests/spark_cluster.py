"""A real Spark standalone cluster from pip's pyspark, for the tests: a master and workers started
with ``$SPARK_HOME/bin/spark-class`` (``SPARK_HOME`` is the installed ``pyspark`` folder) on free
localhost ports, each its own JVM, stopped (their process groups killed) at the end.

The executors run :data:`python_without_anonydb`'s Python: this interpreter, with a
``sitecustomize`` that makes ``import anonydb`` fail. Whatever anonydb runs on an executor must
therefore be shipped with the job (``SparkEngine.per_group`` pickles its step by value), as on a
cluster whose machines have only DuckDB and pyarrow installed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: the sitecustomize the executors' Python runs first: anonydb cannot be imported there
_BLOCK = '''import sys


class _NoAnonydb:
    """anonydb is not installed on this cluster's executors (tests/spark_cluster.py)."""

    def find_spec(self, name, path=None, target=None):
        if name == "anonydb" or name.startswith("anonydb."):
            raise ModuleNotFoundError(f"No module named {name!r} (not on this cluster's executors)", name=name)
        return None


sys.meta_path.insert(0, _NoAnonydb())
'''


class ClusterUnavailable(Exception):
    """This pyspark cannot start a standalone cluster (the reason, for a skip)."""


class ClusterFailed(Exception):
    """The cluster's JVMs started but did not come up (their logs' last lines): a failure."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def python_without_anonydb(work: Path) -> Path:
    """An executable that runs this Python with ``import anonydb`` blocked (a wrapper script)."""
    site = work / "no_anonydb"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_BLOCK)
    exe = work / "python-no-anonydb"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    exe.chmod(0o755)
    return exe


def _alive_workers(ui: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
            state = json.load(r)
    except OSError:
        return -1
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@contextmanager
def standalone_cluster(work: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                       timeout: float = 180) -> Iterator[str]:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each), all on 127.0.0.1;
    yields the master's URL ``spark://127.0.0.1:P`` once every worker has registered."""
    home = spark_home()
    spark_class = home / "bin" / "spark-class"
    if not spark_class.is_file():
        raise ClusterUnavailable(f"this pyspark has no {spark_class}")
    work.mkdir(parents=True, exist_ok=True)
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(work),
               SPARK_LOCAL_DIRS=str(work / "local"), SPARK_NO_DAEMONIZE="1")
    procs: list[subprocess.Popen] = []
    logs: list[Path] = []

    def start(name: str, *args: str) -> None:
        log = work / f"{name}.log"
        logs.append(log)
        with open(log, "wb") as out:  # the child keeps its own handle
            procs.append(subprocess.Popen(["bash", str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env, cwd=work, start_new_session=True))

    def tails() -> str:
        return " | ".join(f"{p.name}: {p.read_text(errors='replace')[-400:]}" for p in logs if p.exists())

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(ui))
        for i in range(workers):
            start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                  "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                  "--work-dir", str(work / f"worker{i}"))
        deadline = time.time() + timeout
        while _alive_workers(ui) < workers:
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                raise ClusterFailed(f"the standalone cluster did not start: {tails()}")
            time.sleep(1)
        yield url
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

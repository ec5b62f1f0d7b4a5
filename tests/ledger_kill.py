"""A driver for the ledger's kill tests [issue 62]: runs anonydb's command line in its own process,
logs every statement the engine sends, and SIGKILLs itself (its whole process group: a Spark
session's JVM too) at a chosen point of the run.

    python ledger_kill.py ENGINE LOG PLAN [anonydb arguments...]

ENGINE is ``duckdb``, ``postgres`` or ``spark`` (whose engine class is watched); with ``spark`` the
driver first starts a local session whose catalog outlives it (a Hive metastore in Derby and a
warehouse folder under ``$KILL_SPARK_HOME``), so that the next process finds the tables. PLAN
says where the run dies:

* ``none``: it does not (a clean run, whose log measures the statements);
* ``at:P:N``: before the N-th statement (1-based) sent in phase P (below) is sent;
* ``in:P:N:S``: S seconds after that statement is sent (mid-statement, if it runs that long; a
  timer thread kills, wherever the run is then);
* ``ledger``: on entry to ``ledger.write`` (the release swapped in, nothing of the entry written);
* ``entry``: just before the entry's own row is inserted into ``anonydb_releases`` (its members,
  values and histories already inserted);
* ``commit``: just before the swap's COMMIT is sent; ``committed``: just after it returns;
* ``py``: the first argument is a Python file of the test's, run with globals ``spark`` (the
  session, or None), ``argv`` (the other arguments), ``cli`` (the command line's ``main``) and
  ``watch(plan)`` (from then on, kill as ``plan`` says): several steps, one JVM start.

The log (written unbuffered: it survives the kill) has one line per statement sent,
``S <n> <phase> <i> <seconds since start> <sql's first 100 characters>`` (the n-th statement
of the run, the i-th of its phase), one when it returns, ``E <n> <seconds since start>``, and,
at the kill, ``K <n> <phase> <how>`` (n: the statements sent; the phase the run was in: a kill
before the COMMIT is sent is one in ``ledger``). The phase is the run's place relative to the
release's swap (:func:`anonydb.release.publish._swap`):

* ``before``: until the release's swap begins (the call of ``_swap`` that writes a ledger entry:
  another table's rename, in a transaction of its own, comes before it);
* ``swap``: from there (``BEGIN TRANSACTION``, the renames) until ``ledger.write`` is called;
* ``ledger``: inside ``ledger.write`` (the entry and its fingerprints);
* ``commit``: the COMMIT sent and not yet returned;
* ``after``: once COMMIT has returned.

The kill's phase is what the tests judge the database by: ``before``, ``swap`` and ``ledger`` must
leave the earlier release and ledger (on Spark, which has no transactions, the swap is done at
``ledger``: the new release with no entry), ``after`` the new release with its entry, and
``commit`` either.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from jvm_flags import TEST_JVM

T0 = time.monotonic()
STATE = {"n": 0, "phase": "before", "swapping": False}
FD: int | None = None


def log(line: str) -> None:
    os.write(FD, (line.replace("\n", " ") + "\n").encode())


def die(how: str) -> None:
    log(f"K {STATE['n']} {STATE['phase']} {how}")
    os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)  # not in a group of its own: this process alone


def engine_class(name: str):
    if name == "duckdb":
        from anonydb.engines.duckdb import DuckDBEngine
        return DuckDBEngine
    if name == "postgres":
        from anonydb.engines.postgres import PostgresEngine
        return PostgresEngine
    from anonydb.engines.spark import SparkEngine
    return SparkEngine


def watch(cls, plan: str) -> None:
    """Wrap the engine class's ``_execute`` and ``_fetch``: count, log and kill as ``plan`` says."""
    how, *where = plan.split(":")
    target = (where[0], int(where[1])) if how in ("at", "in") else None
    counts: dict[str, int] = {}

    def wrap(real):
        def run(self, sql, *a, **k):
            n, text = STATE["n"] + 1, " ".join(str(sql).split())
            upper = text.upper()
            committing = upper.startswith("COMMIT") and STATE["swapping"] and STATE["phase"] in ("swap", "ledger")
            label = "commit" if committing else STATE["phase"]  # the phase this statement is sent in
            counts[label] = counts.get(label, 0) + 1
            if how == "at" and target == (label, counts[label]):
                die(f"before statement {counts[label]} of {label}")
            if how == "entry" and upper.startswith('INSERT INTO "ANONYDB_RELEASES"'):
                die("entry")
            if committing and how == "commit":
                die("commit")
            STATE["phase"], STATE["n"] = label, n
            log(f"S {n} {label} {counts[label]} {time.monotonic() - T0:.4f} {text[:100]}")
            if how == "in" and target == (label, counts[label]):
                why = f"{where[2]} s into statement {counts[label]} of {label}"
                threading.Timer(float(where[2]), die, (why,)).start()
            out = real(self, sql, *a, **k)
            log(f"E {n} {time.monotonic() - T0:.4f}")
            if committing:
                STATE["phase"] = "after"
                if how == "committed":
                    die("committed")
            return out
        return run

    cls._execute = wrap(cls._execute)
    cls._fetch = wrap(cls._fetch)

    from anonydb.release import ledger, publish

    real_swap, real_write = publish._swap, ledger.write

    def swap(*a, **k):
        if (a[4] if len(a) > 4 else k.get("then")) is None:  # no entry to write: another table's rename
            return real_swap(*a, **k)
        STATE["phase"], STATE["swapping"] = "swap", True
        try:
            return real_swap(*a, **k)
        finally:
            STATE["swapping"] = False

    def write(*a, **k):
        STATE["phase"] = "ledger"
        if plan == "ledger":
            die("ledger")
        return real_write(*a, **k)

    publish._swap, ledger.write = swap, write


def spark_session():
    """A local session whose catalog outlives the process: a Hive metastore in Derby and a
    warehouse folder, both under ``$KILL_SPARK_HOME``."""
    from pyspark.sql import SparkSession

    home = os.environ["KILL_SPARK_HOME"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("anonydb-ledger-kill")
             .config("spark.sql.warehouse.dir", os.path.join(home, "warehouse"))
             .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={home} {TEST_JVM}")
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .enableHiveSupport().getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# --- for the tests: start the driver, read its log, draw the kills ------------------------------------
#: the phases (above) by what a kill there must leave: ``before`` the swap, ``inside`` its
#: transaction (COMMIT not returned), ``after`` it
BUCKET = {"before": "before", "swap": "inside", "ledger": "inside", "commit": "inside", "after": "after"}


@dataclass
class Statement:
    n: int  # the run's n-th statement
    phase: str  # the phase it was sent in
    i: int  # the i-th of its phase
    sent: float  # seconds since the driver started
    returned: float | None  # None: it never returned
    sql: str


@dataclass
class Kill:
    n: int  # the statements sent before it
    phase: str  # where the run was
    how: str


def start(engine: str, log: Path, plan: str, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """The driver in a process group of its own (its kill takes a Spark JVM with it)."""
    return subprocess.Popen([sys.executable, __file__, engine, str(log), plan, *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def read_log(path: Path) -> tuple[list[Statement], Kill | None]:
    """The statements a run sent (in order) and where it was killed, if it was."""
    stmts: dict[int, Statement] = {}
    kill = None
    for line in Path(path).read_text().splitlines():
        tag, rest = line.split(" ", 1)
        if tag == "S":
            n, phase, i, sent, sql = (rest.split(" ", 4) + [""])[:5]
            stmts[int(n)] = Statement(int(n), phase, int(i), float(sent), None, sql)
        elif tag == "E":
            n, returned = rest.split(" ")
            stmts[int(n)].returned = float(returned)
        elif tag == "K":
            n, phase, how = rest.split(" ", 2)
            kill = Kill(int(n), phase, how)
    return [stmts[n] for n in sorted(stmts)], kill


def draw(rng: random.Random, stmts: list[Statement], timed: Statement | None = None) -> list[tuple[str, str | None]]:
    """Kills across a measured run ``stmts``: one before a statement drawn from the whole run, one
    before a statement of each bucket (before the swap, inside its transaction, after COMMIT), and
    one a random share of a statement's measured time after it is sent (``timed``, else one drawn
    from the whole run). Returns (plan, the phase the kill must be recorded in; None for the timed
    kill, which lands wherever the run is then)."""
    def at(s: Statement) -> tuple[str, str | None]:
        return f"at:{s.phase}:{s.i}", ("ledger" if s.phase == "commit" else s.phase)  # COMMIT not sent yet

    out = [at(rng.choice(stmts))]
    for bucket in ("before", "inside", "after"):
        out.append(at(rng.choice([s for s in stmts if BUCKET[s.phase] == bucket])))
    s = timed or rng.choice(stmts)
    took = (s.returned or s.sent) - s.sent
    out.append((f"in:{s.phase}:{s.i}:{rng.uniform(0, took):.4f}", None))
    return out


def main() -> int:
    global FD
    engine, path, plan, *args = sys.argv[1:]
    FD = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    session = spark_session() if engine == "spark" else None  # what --engine local[2] gets (getOrCreate)
    from anonydb.workflow.cli import main as cli

    if plan == "py":  # a script of the test's, run with the session (one JVM start for several steps)
        code = Path(args[0]).read_text()
        exec(compile(code, args[0], "exec"), {"__name__": "__kill_script__", "spark": session, "argv": args[1:],
                                              "cli": cli, "watch": lambda plan: watch(engine_class(engine), plan)})
        return 0
    watch(engine_class(engine), plan)
    return cli(args)


if __name__ == "__main__":
    sys.exit(main())

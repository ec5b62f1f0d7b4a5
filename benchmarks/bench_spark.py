"""Issue 26's scale table: every privacy-model check, a bare GROUP BY floor, Mondrian k=10 and a
Mondrian-like round loop on Spark (``local[2]``), at several census sizes, with Spark's own metrics.

For each size (``--rows 1000000,3000000,10000000``) the synthetic census
(:func:`anonydb.datasets.synthetic_census`, made by DuckDB) is written once as Parquet under
``--data-dir`` (outside the repository; reused by later runs) and registered in one local Spark
session as the temporary view ``census``, cached in memory unless ``--no-cache``. Then, per size:

* each privacy-model check of benchmarks/bench_checks.py plus tests/conftest.py's combined one
  (``anonydb.check(..., engine=SparkEngine(spark))``), target <= 60 s at 10M rows;
* the floors, written as plain SQL: ``GROUP BY`` the 8 QIs (the least work a k check does) and
  ``GROUP BY`` the 8 QIs and the sensitive attribute (the least an l / t check does);
* Mondrian k=10, ``plan="levelwise"`` (target <= 5 min at 10M rows), each round in its own Spark
  job group (the ``progress`` callback moves it on), so jobs, stages and shuffle bytes come per
  round; a failure is recorded as its one-line error and the run goes on;
* ``sim``: a Mondrian-like loop written here in Spark SQL (k only, the widest dimension only,
  strict median cuts; the same statements per round as the level-wise plan: partition stats,
  histogram + median + halves' counts, choice, final rows, children, relabel, each result locally
  checkpointed as the engine does with scratch tables, but by default without the checkpoint's
  inherited size estimate: see :func:`without_stats`, ``--sim-materialize``). All its rounds run
  at sizes up to ``--sim-full-rows``, the first ``--sim-rounds`` above. It isolates what one
  round of whole-table statements costs, apart from anonydb's own plan.

Each workload runs in its own job group; after its last run the harness reads from Spark:
the jobs of the group (``statusTracker().getJobIdsForGroup``), their stages, and per stage from
the UI's REST API (``/api/v1/applications/<id>/stages``, served on the driver, no network beyond
it) the tasks, shuffle read / write bytes, input bytes, spill, peak execution memory, and the
summed task run and CPU time; and the storage memory the executor holds afterwards (``/executors``).
With ``--no-ui`` only the status tracker's counts (jobs, stages, tasks) are kept.

A workload longer than ``--timeout`` seconds is cancelled (``cancelJobGroup``) and recorded as a
timeout. The growth exponent between the smallest and the largest size is
log(t_large / t_small) / log(rows_large / rows_small) per workload. Nothing is written into the
repository; ``--markdown`` prints the tables as a BENCHMARKS.md section, ``--json`` saves every
number (after each workload). SIGTERM (or Ctrl-C) stops the run after the running workload and
still prints the tables of what was measured (exit status 130).

    python benchmarks/bench_spark.py --rows 1000000 --repeat 1
    python benchmarks/bench_spark.py --rows 1000000,3000000,10000000 --repeat 1 --markdown --json run.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_checks: the checks and the occupation hierarchy

import anonydb  # noqa: E402
from anonydb.datasets import CENSUS_QIS, synthetic_census  # noqa: E402
from bench_checks import CHECKS, occupation_hierarchy, where_time_goes  # noqa: E402

SA = "occupation"
#: tests/conftest.py's ENGINE_MODELS that bench_checks.CHECKS does not already cover
EXTRA_CHECKS = [("several (k=3, l=2, t=0.4, delta=3)", "occupation", dict(k=3, l=2, t=0.4, delta=3.0))]
TARGETS = {"check": 60.0, "floor": 60.0, "mondrian": 300.0, "sim": None}
#: the rows the targets are stated for
TARGET_ROWS = 10_000_000
#: set by SIGTERM: the run stops after the running workload
STOP: list[int] = []
#: string QIs of the census, coded by the simulation's dictionaries (the numeric ones are their values)
STRING_QIS = ["sex", "race", "marital_status", "education", "workclass", "zip"]


# -- data ------------------------------------------------------------------------------------------

def parquet_path(data_dir: Path, rows: int, seed: int) -> Path:
    return data_dir / f"census_{rows}_s{seed}.parquet"


def make_parquet(data_dir: Path, rows: int, seed: int) -> tuple[Path, float | None]:
    """The census of ``rows`` rows as one Parquet file (made once; (path, seconds) or (path, None) if reused)."""
    path = parquet_path(data_dir, rows, seed)
    if path.exists():
        return path, None
    data_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    duck = anonydb.connect()
    synthetic_census(duck, "census", rows=rows, seed=seed)
    tmp = path.with_suffix(".tmp.parquet")
    duck.execute(f"COPY census TO '{tmp}' (FORMAT parquet)")
    duck.close()
    tmp.rename(path)
    return path, time.perf_counter() - t0


# -- Spark session and its metrics -----------------------------------------------------------------

def spark_session(args):
    from pyspark.sql import SparkSession

    # a fresh warehouse and scratch per run: a warehouse folder left by an earlier session (which
    # this session's catalog does not know) makes saveAsTable fail with LOCATION_ALREADY_EXISTS
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the grouped step's workers need anonydb and DuckDB
    work = Path(tempfile.mkdtemp(prefix="spark-work-", dir=args.data_dir))
    args.work_dir = str(work)
    b = (SparkSession.builder.master(args.master).appName("anonydb-bench-spark")
         .config("spark.driver.memory", args.driver_memory)
         .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.warehouse.dir", str(work / "warehouse"))
         .config("spark.local.dir", str(work / "local"))
         .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
         # keep every job and stage of the run in the status store (the defaults keep 1000)
         .config("spark.ui.retainedJobs", "1000000").config("spark.ui.retainedStages", "1000000")
         .config("spark.ui.retainedTasks", "100").config("spark.sql.ui.retainedExecutions", "100")
         .config("spark.ui.enabled", "false" if args.no_ui else "true")
         .config("spark.ui.port", str(args.ui_port)))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Metrics:
    """Jobs, stages and their numbers per job group: the status tracker, and the UI's REST API."""

    def __init__(self, spark, use_rest: bool):
        self.sc = spark.sparkContext
        self.base = f"{self.sc.uiWebUrl}/api/v1/applications/{self.sc.applicationId}" if use_rest and self.sc.uiWebUrl \
            else None
        self.method = "status tracker + REST API" if self.base else "status tracker only"

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=60) as r:
            return json.load(r)

    def groups(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """Per job group: jobs, stages run and skipped, tasks, and (REST) bytes and times summed over
        the stages that ran."""
        st = self.sc.statusTracker()
        jobs = {g: sorted(st.getJobIdsForGroup(g)) for g in names}
        stage_ids: dict[str, set[int]] = {}
        for g, js in jobs.items():
            ids: set[int] = set()
            for j in js:
                info = st.getJobInfo(j)
                if info is not None:
                    ids.update(int(s) for s in info.stageIds)
            stage_ids[g] = ids
        stages: dict[int, dict[str, Any]] = {}
        if self.base:
            every = set().union(*stage_ids.values()) if stage_ids else set()
            for s in self._get("/stages"):
                if s["stageId"] in every:
                    # a retried stage has several attempts: keep the sums over all of them
                    prev = stages.get(s["stageId"])
                    stages[s["stageId"]] = s if prev is None else _add_stage(prev, s)
        out = {}
        for g in names:
            m = dict(jobs=len(jobs[g]), stages=0, skipped=0, tasks=0)
            if self.base:
                m.update(shuffle_read=0, shuffle_write=0, input=0, spill_mem=0, spill_disk=0, peak_exec_mem=0,
                         task_s=0.0, cpu_s=0.0, gc_s=0.0)
            for sid in stage_ids[g]:
                if self.base:
                    s = stages.get(sid)
                    if s is None:
                        continue
                    if s["status"] == "SKIPPED":
                        m["skipped"] += 1
                        continue
                    m["stages"] += 1
                    m["tasks"] += s["numCompleteTasks"]
                    m["shuffle_read"] += s["shuffleReadBytes"]
                    m["shuffle_write"] += s["shuffleWriteBytes"]
                    m["input"] += s["inputBytes"]
                    m["spill_mem"] += s["memoryBytesSpilled"]
                    m["spill_disk"] += s["diskBytesSpilled"]
                    m["peak_exec_mem"] = max(m["peak_exec_mem"], s["peakExecutionMemory"])
                    m["task_s"] += s["executorRunTime"] / 1000.0
                    m["cpu_s"] += s["executorCpuTime"] / 1e9  # nanoseconds: the tasks' CPU, load on the machine aside
                    m["gc_s"] += s["jvmGcTime"] / 1000.0
                else:
                    info = st.getStageInfo(sid)
                    if info is None or info.numCompletedTasks == 0:
                        m["skipped"] += 1
                    else:
                        m["stages"] += 1
                        m["tasks"] += info.numCompletedTasks
            out[g] = m
        return out

    def storage(self) -> dict[str, int] | None:
        """Storage memory and disk the executors hold now (cached table, checkpointed scratch tables)."""
        if not self.base:
            return None
        ex = self._get("/executors")
        return {"memory_used": sum(e["memoryUsed"] for e in ex), "disk_used": sum(e["diskUsed"] for e in ex),
                "max_memory": sum(e["maxMemory"] for e in ex)}


def _add_stage(a: dict, b: dict) -> dict:
    out = dict(a)
    for k in ("numCompleteTasks", "shuffleReadBytes", "shuffleWriteBytes", "inputBytes", "memoryBytesSpilled",
              "diskBytesSpilled", "executorRunTime", "executorCpuTime", "jvmGcTime"):
        out[k] = a[k] + b[k]
    out["peakExecutionMemory"] = max(a["peakExecutionMemory"], b["peakExecutionMemory"])
    out["status"] = "COMPLETE" if "COMPLETE" in (a["status"], b["status"]) else a["status"]
    return out


class Group:
    """The job group of one workload run; ``move`` switches it (Mondrian's rounds); a timer cancels
    whichever group is current when the run is past its time limit."""

    def __init__(self, sc, name: str, timeout: float):
        self.sc, self.name, self.names, self.timeout = sc, name, [], timeout
        self.timed_out = False
        self._timer: threading.Timer | None = None

    def move(self, name: str) -> None:
        self.current = name
        self.names.append(name)
        self.sc.setJobGroup(name, name, interruptOnCancel=True)

    def _cancel(self) -> None:
        self.timed_out = True
        self.sc.cancelJobGroup(self.current)

    def __enter__(self):
        self.move(self.name)
        if self.timeout:
            self._timer = threading.Timer(self.timeout, self._cancel)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc):
        if self._timer:
            self._timer.cancel()
        self.sc.setLocalProperty("spark.jobGroup.id", None)
        return False


# -- the workloads ---------------------------------------------------------------------------------

def checks() -> list[tuple[str, str, Callable[[Any], Any]]]:
    hier = {"occupation": occupation_hierarchy()}
    out = []
    for name, sa, params in CHECKS + EXTRA_CHECKS:
        h = hier if params.get("distance") == "hierarchical" else None
        out.append((f"check: {name}", "check",
                    lambda e, sa=sa, params=params, h=h: anonydb.check("census", CENSUS_QIS, sa, engine=e,
                                                                       hierarchies=h, **params)))
    return out


def bq(name: str) -> str:
    """A name quoted for Spark SQL written here (Spark reads "x" as a string, not a column)."""
    return "`" + name.replace("`", "``") + "`"


def floors() -> list[tuple[str, str, Callable[[Any], Any]]]:
    qi = ", ".join(bq(q) for q in CENSUS_QIS)
    return [("floor: GROUP BY 8 QIs (min count)", "floor",
             lambda e: e.spark.sql(f"SELECT min(n) FROM (SELECT count(*) AS n FROM census GROUP BY {qi})").collect()),
            (f"floor: GROUP BY 8 QIs + {SA} (min count)", "floor",
             lambda e: e.spark.sql(f"SELECT min(n) FROM (SELECT count(*) AS n FROM census GROUP BY {qi}, {SA})")
             .collect())]


def mondrian(e, group: Group, rounds: list[dict], plan: str = "levelwise") -> Any:
    """Mondrian k=10 (level-wise, or the fragment plan); after each round the job group moves on to
    the next round's."""
    from anonydb.methods.mondrian import anonymize

    base = group.name

    def progress(p: dict) -> None:
        rounds.append(dict(p, t=time.perf_counter(), log=len(e.log), group=group.current))
        group.move(f"{base}:r{p['round'] + 1}" if p.get("open") else f"{base}:finish")

    group.move(f"{base}:setup+r1")  # the set-up (row ids, codes, work table, root check) counts with round 1
    return anonymize("census", CENSUS_QIS, SA, k=10, out="census_m10", engine=e, plan=plan, seed=1,
                     replace=True, progress=progress)


def without_stats(df):
    """The locally checkpointed ``df`` over the same blocks, without the size estimate the checkpoint
    keeps from the plan that made it (Spark 3.4+ ``LogicalRDD.originStats``). Spark estimates a join's
    size as the product of its inputs' sizes; a loop whose every table is a checkpoint of a join of the
    previous ones multiplies the estimates round after round: measured on this census, 100,000 rows,
    the relabel's estimate reached 1.2E+9717362 bytes at round 8, planning one statement took about
    60 s, and round 9 ran out of a 1 GB heap. Without it the leaf is Spark's default size and AQE
    plans the joins from the shuffles' real sizes."""
    from pyspark.sql import DataFrame

    jss = df.sparkSession._jsparkSession
    return DataFrame(jss.internalCreateDataFrame(df._jdf.queryExecution().toRdd(), df._jdf.schema(), False),
                     df.sparkSession)


class MondrianSim:
    """A Mondrian-like loop in Spark SQL: k only, the widest dimension only, strict median cuts.

    Round statements, as the level-wise plan's: (1) stats: size and code range per open partition
    and its widest cuttable dimension (cand); (2) split: histogram of that dimension per partition,
    the median cut, the halves' counts; (3) chosen: the cuts whose two halves hold >= k rows;
    (4) final: the rows of partitions without a cut; (5) children: ids of the halves; (6) relabel:
    the open rows with their child's id. Each is locally checkpointed (computed once, lineage cut),
    as SparkEngine does with a scratch table."""

    def __init__(self, spark, k: int = 10, materialize: str = "nostats"):
        self.spark, self.k, self.materialize = spark, k, materialize
        self.names: list[str] = []

    def table(self, name: str, sql: str):
        df = self.spark.sql(sql).localCheckpoint()
        if self.materialize == "nostats":
            df = without_stats(df)
        df.createOrReplaceTempView(name)
        self.names.append(name)
        return df

    def setup(self) -> None:
        codes = []
        joins = []
        for i, q in enumerate(CENSUS_QIS):
            if q in STRING_QIS:
                joins.append(f"JOIN (SELECT v, CAST(row_number() OVER (ORDER BY v) - 1 AS INT) AS code "
                             f"FROM (SELECT DISTINCT {q} AS v FROM census) AS x) AS d{i} ON b.{q} = d{i}.v")
                codes.append(f"d{i}.code AS c{i}")
            else:
                codes.append(f"CAST(b.{q} AS INT) AS c{i}")
        self.table("sim_work", f"SELECT CAST(b.person_id AS BIGINT) AS rid, CAST(0 AS BIGINT) AS pid, "
                               f"{', '.join(codes)} FROM census AS b {' '.join(joins)}")
        lohi = self.spark.sql("SELECT " + ", ".join(f"min(c{i}), max(c{i})" for i in range(len(CENSUS_QIS)))
                              + " FROM sim_work").collect()[0]
        self.range = [max(float(lohi[2 * i + 1] - lohi[2 * i]), 1.0) for i in range(len(CENSUS_QIS))]
        self.next_id, self.finals = 1, []

    def round(self, rnd: int) -> dict[str, int]:
        d, k = len(CENSUS_QIS), self.k
        stats = ", ".join(f"min(c{i}) AS lo{i}, max(c{i}) AS hi{i}" for i in range(d))
        spans = ", ".join(f"{i}, (hi{i} - lo{i}) / {self.range[i]}" for i in range(d))
        self.table("sim_cand", f"""
            SELECT pid, n, dim FROM (
              SELECT pid, n, dim, span, row_number() OVER (PARTITION BY pid ORDER BY span DESC, dim) AS r
              FROM (SELECT pid, n, stack({d}, {spans}) AS (dim, span)
                    FROM (SELECT pid, count(*) AS n, {stats} FROM sim_work GROUP BY pid) AS p) AS s
              WHERE span > 0 AND n >= {2 * k}) AS t WHERE r = 1""")
        v = "CASE c.dim " + " ".join(f"WHEN {i} THEN w.c{i}" for i in range(d)) + " END"
        self.table("sim_split", self._split_sql(v))
        self.table("sim_chosen", f"SELECT pid, first(dim) AS dim, first(m) AS m FROM sim_split GROUP BY pid "
                                 f"HAVING count(*) = 2 AND min(cnt) >= {k}")
        final = f"sim_final{rnd}"
        self.table(final, "SELECT rid, pid FROM sim_work WHERE pid NOT IN (SELECT pid FROM sim_chosen)")
        self.finals.append(final)
        self.table("sim_children", f"SELECT pid, side, CAST({self.next_id} + row_number() OVER (ORDER BY pid, side) - 1 "
                                   f"AS BIGINT) AS new, n FROM (SELECT s.pid, s.side, sum(s.cnt) AS n FROM sim_split AS s "
                                   f"JOIN sim_chosen AS c ON c.pid = s.pid GROUP BY s.pid, s.side) AS x")
        n_children, n_cut, rows_open = self.spark.sql(
            "SELECT count(*), count(DISTINCT pid), coalesce(sum(n), 0) FROM sim_children").collect()[0]
        n_open = self.spark.sql("SELECT count(*) FROM sim_cand").collect()[0][0]
        if n_children:
            wv = "CASE c.dim " + " ".join(f"WHEN {i} THEN w.c{i}" for i in range(d)) + " END"
            cols = ", ".join(f"w.c{i}" for i in range(d))
            self.table("sim_work", f"""
                SELECT w.rid, ch.new AS pid, {cols}
                FROM sim_work AS w JOIN sim_chosen AS c ON c.pid = w.pid
                JOIN sim_children AS ch ON ch.pid = w.pid AND ch.side = CASE WHEN {wv} <= c.m THEN 0 ELSE 1 END""")
        self.next_id += int(n_children)
        return {"round": rnd, "cand": int(n_open), "cut": int(n_cut), "open": int(n_children),
                "rows_open": int(rows_open)}

    def _split_sql(self, v: str) -> str:
        xv = v.replace("w.c", "x.c")
        return f"""
            WITH hist AS (SELECT w.pid, {v} AS v, count(*) AS cnt FROM sim_work AS w JOIN sim_cand AS c ON c.pid = w.pid
                          GROUP BY w.pid, {v}),
                 cum AS (SELECT pid, v, sum(cnt) OVER (PARTITION BY pid ORDER BY v ROWS UNBOUNDED PRECEDING) AS below,
                                sum(cnt) OVER (PARTITION BY pid) AS n, max(v) OVER (PARTITION BY pid) AS vmax,
                                lag(v) OVER (PARTITION BY pid ORDER BY v) AS prev FROM hist),
                 -- the median value, or the one before it when the median is the largest (both halves non-empty)
                 cuts AS (SELECT pid, min_by(CASE WHEN v < vmax THEN v ELSE prev END, v) AS m
                          FROM cum WHERE 2 * below >= n GROUP BY pid)
            SELECT x.pid, c.dim, u.m, CASE WHEN {xv} <= u.m THEN 0 ELSE 1 END AS side, count(*) AS cnt
            FROM sim_work AS x JOIN sim_cand AS c ON c.pid = x.pid JOIN cuts AS u ON u.pid = x.pid
            GROUP BY x.pid, c.dim, u.m, CASE WHEN {xv} <= u.m THEN 0 ELSE 1 END"""

    def drop(self) -> None:
        for n in set(self.names):
            self.spark.catalog.dropTempView(n)
        self.names.clear()


def run_sim(spark, group: Group, rounds: list[dict], max_rounds: int | None, materialize: str) -> Any:
    sim = MondrianSim(spark, materialize=materialize)
    base = group.name
    try:
        group.move(f"{base}:setup")
        t0 = time.perf_counter()
        sim.setup()
        rounds.append({"round": 0, "seconds": time.perf_counter() - t0, "group": group.current})
        rnd, open_ = 0, 1
        while open_ and (max_rounds is None or rnd < max_rounds):
            rnd += 1
            group.move(f"{base}:r{rnd}")
            t0 = time.perf_counter()
            info = sim.round(rnd)
            info.update(seconds=time.perf_counter() - t0, group=group.current)
            rounds.append(info)
            open_ = info["open"]
    finally:
        sim.drop()
    return rounds


# -- running ---------------------------------------------------------------------------------------

def first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"


def bench_size(args, spark, eng, metrics: Metrics, rows: int, wanted, result: dict, save) -> dict[str, Any]:
    """Every wanted workload on the census of ``rows`` rows; the size's record is in ``result`` from
    the start and ``save()`` runs after each workload, so that a run ended early keeps what it measured."""
    sc = spark.sparkContext
    path, gen_s = make_parquet(Path(args.data_dir), rows, args.seed)
    t0 = time.perf_counter()
    df = spark.read.parquet(str(path))
    if not args.no_cache:
        df = df.cache()
        df.count()
    df.createOrReplaceTempView("census")
    load_s = time.perf_counter() - t0
    qi = ", ".join(bq(q) for q in CENSUS_QIS)
    groups = spark.sql(f"SELECT count(*) FROM (SELECT 1 FROM census GROUP BY {qi})").collect()[0][0]
    size = dict(rows=rows, parquet=str(path), parquet_mb=path.stat().st_size / 2**20, generated_s=gen_s,
                load_s=load_s, qi_groups=groups, partitions=df.rdd.getNumPartitions(), storage_after_load=metrics.storage(),
                workloads={})
    result["sizes"].append(size)
    print(f"== {rows:,} rows: parquet {size['parquet_mb']:.0f} MB ({'made in %.1f s' % gen_s if gen_s else 'reused'}), "
          f"{'cached' if not args.no_cache else 'not cached'} in {load_s:.1f} s, {df.rdd.getNumPartitions()} input "
          f"partitions, {groups:,} QI groups", file=sys.stderr, flush=True)
    all_w = checks() + floors() + [("Mondrian k=10 (levelwise)", "mondrian", None),
                                   ("Mondrian k=10 (fragments)", "mondrian", "fragments"),
                                   ("sim: Mondrian-like rounds, k=10", "sim", None)]
    for idx, (name, kind, fn) in enumerate(all_w):
        if STOP:
            break
        if not wanted(name, rows):
            continue
        times, err, rounds, profile, classes = [], None, [], "", None
        repeat = 1 if kind in ("mondrian", "sim") else args.repeat
        gname = None
        for rep in range(repeat):
            rounds = []
            gname = f"w{idx}-{rows}-{rep}"
            mark, fmark = len(eng.log), len(eng.fetched)
            t1 = time.perf_counter()
            with Group(sc, gname, args.timeout) as g:
                try:
                    if kind == "mondrian":
                        classes = mondrian(eng, g, rounds, fn or "levelwise").classes
                    elif kind == "sim":
                        max_r = None if rows <= args.sim_full_rows else args.sim_rounds
                        run_sim(spark, g, rounds, max_r, args.sim_materialize)
                    else:
                        fn(eng)
                except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                    err = f"timeout > {args.timeout:g} s" if g.timed_out else first_line(e)
            secs = time.perf_counter() - t1
            group_names = list(g.names)
            fetched = eng.fetched[fmark:]  # rows each query brought to the driver
            profile = where_time_goes(eng.log[mark:]) if kind not in ("floor", "sim") else ""
            if err:
                break
            times.append(secs)
        w: dict[str, Any] = dict(name=name, kind=kind, runs=times, error=err,
                                 median=statistics.median(times) if times and not err else None, profile=profile,
                                 fetched=dict(queries=len(fetched), rows=sum(fetched), most=max(fetched, default=0)),
                                 classes=classes,
                                 log=[((x.template or " ".join(x.sql.split()[:6])[:60]), round(x.seconds, 3))
                                      for x in eng.log[mark:]] if kind == "mondrian" else None)
        try:
            per_group = metrics.groups(group_names)
            w["metrics"] = _sum_metrics(per_group.values())
            if kind in ("mondrian", "sim"):
                w["rounds"] = _rounds(kind, rounds, per_group, eng.log, mark, t1, t1 + secs)
        except Exception as e:  # noqa: BLE001
            w["metrics_error"] = first_line(e)
        w["storage_after"] = metrics.storage()
        size["workloads"][name] = w
        save()
        m = w.get("metrics", {})
        print(f"{name}: {_fmt(w['median'], err)} s (runs {', '.join(f'{x:.1f}' for x in times)}); jobs {m.get('jobs')}, "
              f"stages {m.get('stages')} (+{m.get('skipped')} skipped), tasks {m.get('tasks')}, shuffle r/w "
              f"{_mb(m.get('shuffle_read'))}/{_mb(m.get('shuffle_write'))} MB, task {m.get('task_s', 0):.1f} s"
              f"; driver fetched {w['fetched']['rows']:,} rows in {w['fetched']['queries']} queries (at most "
              f"{w['fetched']['most']:,} at once){'; ' + profile if profile else ''}", file=sys.stderr, flush=True)
        if kind in ("mondrian", "sim"):
            for r in w.get("rounds", []):
                print(f"   round {r['round']}: {r.get('seconds', 0):.1f} s, open {r.get('open')}, rows_open "
                      f"{r.get('rows_open')}, jobs {r.get('jobs')}, stages {r.get('stages')}, shuffle r/w "
                      f"{_mb(r.get('shuffle_read'))}/{_mb(r.get('shuffle_write'))} MB", file=sys.stderr, flush=True)
        # drop scratch views a failed workload may have left, so that they hold no memory
        for t in spark.catalog.listTables():
            if t.isTemporary and t.name != "census" and (t.name.startswith(("anonydb", "__adb", "sim_", "census_m10"))):
                spark.catalog.dropTempView(t.name)
    if not args.no_cache:
        df.unpersist(blocking=True)
    spark.catalog.dropTempView("census")
    return size


def _sum_metrics(ms) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in ms:
        for k, v in m.items():
            out[k] = max(out.get(k, 0), v) if k == "peak_exec_mem" else out.get(k, 0) + v
    return out


def _rounds(kind: str, rounds: list[dict], per_group: dict, log: list, mark: int, t_start: float,
            t_end: float) -> list[dict]:
    """Per round: its record (seconds, partitions) and its job group's metrics."""
    out = []
    if kind == "sim":
        for r in rounds:
            out.append(dict(r, **per_group.get(r["group"], {})))
        return out
    prev_t, prev_log, prev_round = t_start, mark, 0
    for r in rounds:  # Mondrian: progress comes after each round; the group it names holds that round's jobs
        entries = log[prev_log:r["log"]]
        label = str(r["round"]) if r["round"] == prev_round + 1 else \
            f"{prev_round + 1}-{r['round']} (one grouped step on the workers)"
        if prev_round == 0:
            label = f"set-up + {label}"
        out.append(dict(round=label, open=r.get("open"), classes=r.get("classes"), rows_open=r.get("rows_open"),
                        seconds=r["t"] - prev_t, statements=len(entries),
                        profile=where_time_goes(entries), **per_group.get(r["group"], {})))
        prev_t, prev_log, prev_round = r["t"], r["log"], r["round"]
    finish = [g for g in per_group if g.endswith(":finish")]
    if finish:
        out.append(dict(round="release, verification, utility", seconds=t_end - prev_t, statements=len(log) - prev_log,
                        profile=where_time_goes(log[prev_log:], top=10), **per_group[finish[0]]))
    return out


# -- output ----------------------------------------------------------------------------------------

def _fmt(x: float | None, err: str | None = None) -> str:
    if err:
        return err.replace("|", "/")
    return "-" if x is None else f"{x:.2f}"


def _mb(b: int | None) -> str:
    return "-" if b is None else f"{b / 2**20:.1f}"


def growth(sizes: list[dict], name: str) -> float | None:
    """log(t_last / t_first) / log(rows_last / rows_first): None unless both the smallest and the
    largest size have a time (an exponent over other sizes would be mislabelled)."""
    if len(sizes) < 2 or sizes[0]["rows"] == sizes[-1]["rows"]:
        return None
    t0 = sizes[0]["workloads"].get(name, {}).get("median")
    t1 = sizes[-1]["workloads"].get(name, {}).get("median")
    if not t0 or not t1:
        return None
    return math.log(t1 / t0) / math.log(sizes[-1]["rows"] / sizes[0]["rows"])


def report(args, result: dict) -> str:
    sizes = result["sizes"]
    names = list(dict.fromkeys(n for s in sizes for n in s["workloads"]))
    lines = []
    today = result["date"]
    head = (f"{result['machine']}; pyspark {result['pyspark']}, {args.master}, spark.driver.memory {args.driver_memory}, "
            f"{args.shuffle_partitions} shuffle partitions (AQE on, Spark's default), census from Parquet "
            f"{'cached in memory' if not args.no_cache else 'not cached'}; medians of {args.repeat} run(s) "
            f"(Mondrian and the simulation: 1 run); metrics: {result['metrics_method']}; {today}")
    sz = ", ".join(f"{s['rows']:,} rows ({s['qi_groups']:,} QI groups, {s['parquet_mb']:.0f} MB Parquet, "
                   f"{s['partitions']} input partitions, cached in {s['load_s']:.1f} s)" for s in sizes)
    if args.markdown:
        lines.append(f"### Spark, local[2] (issue 26), {today}\n")
        lines.append(f"Command: `{result['command']}`. {head}. Sizes: {sz}."
                     + (f" **{result['interrupted']}.**" if result.get("interrupted") else "") + "\n")
    else:
        lines.append(f"# {head}\n# sizes: {sz}\n# command: {result['command']}\n")
    cols = [f"{s['rows'] / 1e6:g}M s" for s in sizes]
    big = len(sizes) > 1
    lines.append("| workload | " + " | ".join(cols) + (f" | growth exponent {sizes[0]['rows'] / 1e6:g}M->"
                                                    f"{sizes[-1]['rows'] / 1e6:g}M |" if big else " |")
                 + f" target at {TARGET_ROWS / 1e6:g}M | met |")
    lines.append("|---|" + "---|" * len(cols) + ("---|" if big else "") + "---|---|")
    for n in names:
        ws = [s["workloads"].get(n) for s in sizes]
        kind = next(w["kind"] for w in ws if w)
        vals = [_fmt(w["median"], w["error"]) if w else "-" for w in ws]
        g = growth(sizes, n)
        tgt = TARGETS[kind]
        at = next((w for s, w in zip(sizes, ws) if s["rows"] == TARGET_ROWS and w), None)
        if tgt is None or at is None:
            met = "-"
        elif at["median"] is None:  # a time-out past the target is a miss, any other failure an error
            met = "no" if (at["error"] or "").startswith("timeout") and args.timeout >= tgt else "error"
        else:
            met = "yes" if at["median"] <= tgt else "no"
        lines.append(f"| {n} | " + " | ".join(vals) + (f" | {'-' if g is None else f'{g:.2f}'} |" if big else " |")
                     + f" {'-' if tgt is None else f'<= {tgt:g} s'} | {met} |")
    lines.append("")
    lines.append("Spark's metrics, the last run of each workload (stages that ran; skipped ones reuse a shuffle "
                 "already written; task s = summed executor run time of the tasks; peak = the largest stage's "
                 "peak execution memory, summed over its tasks; storage = executor storage memory held after the "
                 "workload, the cached census included; task s is wall time of the tasks, task CPU s their CPU "
                 "time, which load from other processes does not inflate):\n")
    lines.append("| workload | rows | jobs | stages (+skipped) | tasks | shuffle read MB | shuffle write MB | "
                 "input MB | spill MB | peak exec MB | task s | task CPU s | storage MB |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        for s in sizes:
            w = s["workloads"].get(n)
            if not w:
                continue
            m = w.get("metrics") or {}
            st = w.get("storage_after") or {}
            lines.append(f"| {n} | {s['rows'] / 1e6:g}M | {m.get('jobs', '-')} | {m.get('stages', '-')} "
                         f"(+{m.get('skipped', '-')}) | {m.get('tasks', '-')} | {_mb(m.get('shuffle_read'))} | "
                         f"{_mb(m.get('shuffle_write'))} | {_mb(m.get('input'))} | "
                         f"{_mb((m.get('spill_mem') or 0) + (m.get('spill_disk') or 0)) if 'spill_mem' in m else '-'} | "
                         f"{_mb(m.get('peak_exec_mem'))} | {m.get('task_s', 0):.1f} | {m.get('cpu_s', 0):.1f} | "
                         f"{_mb(st.get('memory_used'))} |")
    for n in names:
        for s in sizes:
            w = s["workloads"].get(n)
            if not w or not w.get("rounds"):
                continue
            lines.append(f"\n{n}, {s['rows']:,} rows, per round:\n")
            lines.append("| round | s | partitions cut -> open | rows open after | jobs | stages (+skipped) | tasks | "
                         "shuffle read MB | shuffle write MB | task s | task CPU s |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
            for r in w["rounds"]:
                cut = f"{r.get('cut', '-')} -> {r.get('open', '-')}" if "cut" in r else f"- -> {r.get('open', '-')}"
                lines.append(f"| {r['round']} | {r.get('seconds', 0):.2f} | {cut} | {r.get('rows_open', '-')} | "
                             f"{r.get('jobs', '-')} | {r.get('stages', '-')} (+{r.get('skipped', '-')}) | "
                             f"{r.get('tasks', '-')} | {_mb(r.get('shuffle_read'))} | {_mb(r.get('shuffle_write'))} | "
                             f"{r.get('task_s', 0):.1f} | {r.get('cpu_s', 0):.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000000", help="census sizes, comma-separated (default 1000000)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per check and floor (median reported)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--data-dir",
                    default=os.environ.get("ANONYDB_BENCH_DATA", os.path.join(tempfile.gettempdir(), "anonydb_spark_bench")),
                    help="where the Parquet files and Spark's scratch go (not the repository)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--no-cache", action="store_true", help="read the census from Parquet each time (not cached)")
    ap.add_argument("--no-ui", action="store_true", help="no Spark UI: only the status tracker's counts, no bytes")
    ap.add_argument("--ui-port", type=int, default=4050)
    ap.add_argument("--timeout", type=float, default=600, help="cancel a workload after this many seconds (0: never)")
    ap.add_argument("--only", default=None, help="run the workloads whose name contains this text ('|' separates several)")
    ap.add_argument("--skip", default=None, help="skip the workloads whose name contains this text ('|' separates several)")
    ap.add_argument("--skip-above", action="append", default=[], metavar="TEXT:ROWS",
                    help="skip the workloads whose name contains TEXT on tables of more than ROWS rows (repeatable)")
    ap.add_argument("--sim-full-rows", type=int, default=1_000_000,
                    help="up to this many rows the simulated Mondrian runs every round")
    ap.add_argument("--sim-rounds", type=int, default=3, help="rounds of the simulated Mondrian on larger tables")
    ap.add_argument("--sim-materialize", choices=("nostats", "checkpoint"), default="nostats",
                    help="the simulation's tables: local checkpoints without the plan's size estimate (default) "
                         "or plain local checkpoints, as SparkEngine makes scratch tables (planning time then "
                         "grows round after round)")
    ap.add_argument("--fragment-rows", type=int, default=None,
                    help="Mondrian: finish every open partition in one grouped step once the largest holds at most "
                         "this many rows (default: the engine's, 1M; 0: whole-table rounds to the end)")
    ap.add_argument("--markdown", action="store_true", help="print the tables as a BENCHMARKS.md section")
    ap.add_argument("--json", default=None, help="save every number to this JSON file")
    args = ap.parse_args(argv)
    sizes = [int(x.replace("_", "")) for x in args.rows.split(",") if x.strip()]

    above = [(x.rsplit(":", 1)[0], int(x.rsplit(":", 1)[1].replace("_", ""))) for x in args.skip_above]

    def wanted(name: str, rows: int) -> bool:
        if args.only and not any(o in name for o in args.only.split("|")):
            return False
        if any(p in name and rows > limit for p, limit in above):
            return False
        return not (args.skip and any(o in name for o in args.skip.split("|")))

    for rows in sizes:  # every Parquet file before Spark starts (DuckDB and the JVM do not share the memory)
        path, gen = make_parquet(Path(args.data_dir), rows, args.seed)
        if gen:
            print(f"made {path} in {gen:.1f} s", file=sys.stderr, flush=True)

    import pyspark
    from anonydb.engines.spark import SparkEngine

    t0 = time.perf_counter()
    spark = spark_session(args)
    start_s = time.perf_counter() - t0
    metrics = Metrics(spark, not args.no_ui)
    eng = SparkEngine(spark)
    if args.fragment_rows is not None:
        eng.fragment_rows = args.fragment_rows
    print(f"Spark {spark.version} session in {start_s:.1f} s; UI {spark.sparkContext.uiWebUrl}; metrics: "
          f"{metrics.method}", file=sys.stderr, flush=True)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    result = dict(date=str(dt.date.today()), pyspark=pyspark.__version__, spark=spark.version,
                  machine=f"{os.cpu_count()} cores, {mem:.0f} GiB, Python {platform.python_version()} (shared machine: "
                          f"other work ran at the same time, seconds are noisy)",
                  command="python benchmarks/bench_spark.py " + " ".join(
                      a if " " not in a and "|" not in a else repr(a) for a in (argv if argv is not None else sys.argv[1:])),
                  metrics_method=metrics.method, args=vars(args), sizes=[])
    def save() -> None:
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1, default=str))

    def stop(signum, frame):
        """SIGTERM: finish the running workload (an exception raised inside a py4j call would be
        taken for the workload's failure), then stop and print what was measured; a second one ends
        the process at once."""
        STOP.append(signum)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        print("SIGTERM: stopping after the running workload", file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, stop)
    try:
        for rows in sizes:
            if STOP:
                break
            bench_size(args, spark, eng, metrics, rows, wanted, result, save)
    except KeyboardInterrupt:
        STOP.append(signal.SIGINT)
    finally:
        if STOP:
            result["interrupted"] = "interrupted: the tables hold what was measured before"
            print(result["interrupted"], file=sys.stderr, flush=True)
            save()
        spark.stop()
        shutil.rmtree(args.work_dir, ignore_errors=True)
    print(report(args, result))
    return 0 if "interrupted" not in result else 130


if __name__ == "__main__":
    sys.exit(main())

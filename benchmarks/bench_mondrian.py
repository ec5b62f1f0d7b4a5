"""Time anonydb's Mondrian anonymizer on Adult (vs anonypy), on synthetic censuses, and in Li's thesis settings.

On Adult against the pip package anonypy in the same process, on synthetic censuses of growing
size, and in the settings of Li's thesis (Chapter 2).

    python benchmarks/bench_mondrian.py adult --repeat 3
    python benchmarks/bench_mondrian.py scale --rows 100000 1000000 10000000 --memory-limit 4GB
    python benchmarks/bench_mondrian.py thesis --repeat 3
    python benchmarks/bench_mondrian.py alone --repeat 5 [--plan levelwise] [--plan-cost]
    python benchmarks/bench_mondrian.py scale --rows 100000 400000 --plans recursive levelwise
    python benchmarks/bench_mondrian.py scale-one --rows 10000000 --memory-limit 4GB --profile --spill --shuffle-cost
    python benchmarks/bench_mondrian.py floors --rows 10000000 --memory-limit 4GB

``adult``: k=10 over 8 QIs (sensitive salary-class), anonydb (categorical="order", the flat NCP of
the Python Mondrian tools) alternated with anonypy's Mondrian (partition + generalize) and with
anonydb's round-by-round plan (plan="levelwise", which must write the same release); anonydb
with the Adult hierarchies (NCP of a categorical value = card(LCA) / |A|); and the (k,t) run
(k=5, t=0.15, equal-distance EMD over occupation) on the thesis's 6 QIs.
``scale``: every size in a fresh subprocess (``scale-one``), so that the peak RSS
(``ru_maxrss``, a process-wide high-water mark) is that size's own.
``thesis``: l-diversity / t-closeness / (n,t)-closeness releases and the similarity attack:
the tuples whose class's occupations all lie in one of three semantic groups.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "benchmarks"):  # anonydb from this checkout; the peers package beside this file
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import anonydb  # noqa: E402
from anonydb.methods import anonymize  # noqa: E402
from anonydb.methods.mondrian import PLANS  # noqa: E402
from anonydb.sqlgen import ident  # noqa: E402

ADULT_QIS = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country", "occupation"]
ADULT_SA = "salary-class"
THESIS_QIS = ["age", "workclass", "education", "marital-status", "race", "sex"]
THESIS_SA = "occupation"
NUMERIC = {"age"}

# Li's thesis, Chapter 2: the semantic groups of occupation for the similarity attack
SIMILAR = [
    ["Tech-support", "Craft-repair", "Prof-specialty", "Machine-op-inspct", "Farming-fishing"],
    ["Other-service", "Handlers-cleaners", "Transport-moving", "Priv-house-serv", "Protective-serv"],
    ["Sales", "Exec-managerial", "Adm-clerical", "Armed-Forces"],
]

THESIS_SETTINGS = [
    ("distinct 5-diversity", dict(l=5), 2471),
    ("probabilistic 5-diversity", dict(l=5, l_variant="probabilistic"), 720),
    ("5-anonymity + 0.15-closeness", dict(k=5, t=0.15), 0),
    ("5-anonymity + (1000,0.15)-closeness", dict(k=5, n=1000, t=0.15), 0),
]


def _command(argv) -> str:
    return f"python benchmarks/{' '.join(sys.argv[0].split('/')[-1:] + list(argv if argv is not None else sys.argv[1:]))}"


def _runs(xs) -> str:
    return ", ".join(f"{x:.2f}" for x in xs)


def adult_hierarchies(attrs):
    from anonydb.datasets import adult_hierarchy_paths

    paths = adult_hierarchy_paths()
    return {a: anonydb.Hierarchy.from_arx(paths[a]) for a in attrs}


def _timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


# ------------------------------------------------------------------------------------------------
def cmd_adult(args, argv) -> int:
    from anonydb.datasets import load_adult
    from peers.anonypy_peer import load_adult_frame, ncp, run_anonypy

    e = anonydb.connect()
    load_adult(e, "adult")
    df = load_adult_frame()
    rows = e.scalar("SELECT count(*) FROM adult")
    assert rows == len(df), f"anonydb loaded {rows} rows, pandas {len(df)}"
    k = 10
    cat = [q for q in ADULT_QIS if q not in NUMERIC]
    hier = adult_hierarchies(cat)

    def mine(out, **kw):
        return anonymize("adult", ADULT_QIS, ADULT_SA, out=out, engine=e, k=k, replace=True, **kw)

    ours, peer, res, parts, lw, lres = [], [], None, None, [], None
    for _ in range(args.repeat):  # alternate so all see the same machine load
        s, parts_i = run_anonypy(df, ADULT_QIS, ADULT_SA, k)
        peer.append(s)
        if parts is not None and parts_i != parts:
            print("WARNING: anonypy's partitions differ between runs", file=sys.stderr)
        parts = parts_i
        s, res = _timed(lambda: mine("adult_order", categorical="order"))
        ours.append(s)
        s, lres = _timed(lambda: mine("adult_levelwise", categorical="order", plan="levelwise"))
        lw.append(s)
    same = e.scalar("SELECT count(*) FROM (SELECT * FROM adult_order EXCEPT ALL SELECT * FROM adult_levelwise)") == 0
    if not same:
        print("WARNING: the recursive and the level-wise plans wrote different releases", file=sys.stderr)
    flat = sorted(i for p in parts for i in p)
    if flat != list(range(len(df))):
        print("WARNING: anonypy's partitions do not cover the rows exactly once", file=sys.stderr)
    if min(map(len, parts)) < k:
        print(f"WARNING: anonypy has a partition of {min(map(len, parts))} < k rows", file=sys.stderr)
    peer_ncp = ncp(df, ADULT_QIS, parts, cat)

    hier_t, hres = [], None
    for _ in range(args.repeat):
        s, hres = _timed(lambda: mine("adult_hierarchy", categorical="hierarchy", hierarchies=hier))
        hier_t.append(s)

    kt_t, kres = [], None
    for _ in range(args.repeat):
        s, kres = _timed(lambda: anonymize("adult", THESIS_QIS, THESIS_SA, out="adult_kt", engine=e, k=5, t=0.15,
                                           categorical="order", replace=True))
        kt_t.append(s)

    m_o, m_p, m_h, m_k, m_l = (statistics.median(x) for x in (ours, peer, hier_t, kt_t, lw))
    print(f"# Mondrian on Adult: {rows:,} rows; {dt.date.today()}; medians over {args.repeat} runs, "
          f"anonydb and anonypy alternated in one process")
    print(f"# command: {_command(argv)}")
    print(f"# k=10 QIs: {', '.join(ADULT_QIS)} (sensitive {ADULT_SA}); (k,t) QIs: {', '.join(THESIS_QIS)} "
          f"(sensitive {THESIS_SA}, equal-distance EMD)")
    print("| run | median s | runs (s) | ratio anonypy/run | classes | min class | NCP % | DM |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| anonypy 0.2.1 Mondrian, k=10 (partition + generalize) | {m_p:.2f} | {_runs(peer)} | 1.0 | "
          f"{len(parts):,} | {min(map(len, parts))} | {100 * peer_ncp:.2f} | {sum(len(p) ** 2 for p in parts):,} |")
    for name, m, ts, r in [("anonydb, k=10, categorical=order", m_o, ours, res),
                           ("anonydb, k=10, categorical=order, plan=levelwise", m_l, lw, lres),
                           ("anonydb, k=10, categorical=hierarchy", m_h, hier_t, hres)]:
        print(f"| {name} | {m:.2f} | {_runs(ts)} | {m_p / m:.1f} | {r.classes:,} | {_min_class(e, r.table)} | "
              f"{100 * r.utility['ncp']:.2f} | {r.utility['dm']:,} |")
    print(f"| anonydb, (k,t) k=5 t=0.15, categorical=order | {m_k:.2f} | {_runs(kt_t)} | — | {kres.classes:,} | "
          f"{_min_class(e, kres.table)} | {100 * kres.utility['ncp']:.2f} | {kres.utility['dm']:,} |")
    print(f"\nthe order release of plan=auto (one recursive statement) and plan=levelwise: "
          f"{'identical' if same else 'DIFFERENT'}")
    print(f"anonydb (order) runs: rounds {res.rounds}; anonydb (hierarchy) rounds {hres.rounds}; "
          f"(k,t) rounds {kres.rounds}; verified: {res.report.holds}, {hres.report.holds}, {kres.report.holds}")
    e.close()
    return 0


def _min_class(e, table) -> int:
    return e.scalar(f'SELECT min(n) FROM (SELECT count(*) AS n FROM "{table}" GROUP BY eq_class)')


def cmd_alone(args, argv) -> int:
    """anonydb's Adult k=10 run (categorical="order") on its own: one warm-up, then ``--repeat`` timed runs.
    ``--plan-cost``: per template, the median milliseconds DuckDB spends preparing the statement
    (parse, bind, optimize: a PREPARE of its query, timed just before it runs) and running it."""
    from anonydb.datasets import load_adult

    e = anonydb.connect()
    load_adult(e, "adult")
    prepared: dict[str, float] = {}
    if args.plan_cost:
        _time_prepare(e, prepared)

    def run():
        return anonymize("adult", ADULT_QIS, ADULT_SA, out="adult_order", engine=e, k=10, categorical="order",
                         replace=True, plan=args.plan)

    run()
    ts, mark = [], len(e.log)
    for _ in range(args.repeat):
        ts.append(_timed(run)[0])
    print(f"# anonydb Mondrian on Adult alone, k=10, categorical=order, plan={args.plan}; {dt.date.today()}; "
          f"command: {_command(argv)}")
    print(f"median {statistics.median(ts):.3f} s; runs {', '.join(f'{t:.3f}' for t in ts)}")
    if args.plan_cost:
        by: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
        for x in e.log[mark:]:
            if x.template:
                p = prepared.get(x.sql, 0.0)
                by[x.template][0].append(p)
                by[x.template][1].append(x.seconds - p)
        print("template | prepare ms | run ms (which plans again) | statements per run")
        for k, (p, r) in sorted(by.items(), key=lambda kv: -sum(kv[1][1])):
            print(f"{k} | {1000 * statistics.median(p):.1f} | {1000 * statistics.median(r):.1f} | "
                  f"{len(r) / args.repeat:g}")
    e.close()
    return 0


def _time_prepare(e, into: dict[str, float]) -> None:
    """Before each statement runs, time a PREPARE of its query (what DuckDB spends before executing)."""
    con = e.con

    def timed(raw):
        def run(sql, params=None):
            q = re.sub(r"^\s*CREATE (TEMP )?TABLE \S+ AS", "", sql)
            if params is None and q.lstrip().upper().startswith(("SELECT", "WITH")):
                t0 = time.perf_counter()
                con.execute("PREPARE _adb_bench AS " + q)
                into[sql] = time.perf_counter() - t0
                con.execute("DEALLOCATE _adb_bench")
            return raw(sql, params)
        return run

    e._execute, e._fetch = timed(e._execute), timed(e._fetch)


# ------------------------------------------------------------------------------------------------
def cmd_scale_one(args, argv) -> int:
    from anonydb.datasets import CENSUS_QIS, synthetic_census

    if args.database and os.path.exists(args.database):
        raise SystemExit(f"scale-one: {args.database} exists; name a new file (the run writes the census into it)")
    e = anonydb.connect(args.database)
    if args.memory_limit:
        e.execute(f"SET memory_limit='{args.memory_limit}'")
    if args.threads:
        e.execute(f"SET threads={int(args.threads)}")
    gen, _ = _timed(lambda: synthetic_census(e, "census", rows=args.rows, seed=args.seed))

    def progress(p):
        if args.verbose:
            print(f"  round {p.get('round')}: open {p.get('open')}, classes so far {p.get('classes')}, "
                  f"rows open {p.get('rows_open')}", file=sys.stderr, flush=True)

    spill = _SpillWatch(e) if args.spill else None
    wall, r = _timed(lambda: anonymize("census", CENSUS_QIS, "occupation", out="census_release", engine=e, k=10,
                                       categorical="order", replace=True, progress=progress, plan=args.plan))
    extra = {"peak_spill_mb": spill.stop()} if spill else {}
    min_class = _min_class(e, r.table)
    if args.profile:  # where the time went: seconds per template (or statement head), from engine.log
        by: dict[str, list] = defaultdict(lambda: [0.0, 0])
        for x in e.log:
            entry = by[x.template or " ".join(x.sql.split())[:60]]
            entry[0] += x.seconds
            entry[1] += 1
        for k, (sec, n) in sorted(by.items(), key=lambda kv: -kv[1][0])[:args.top]:
            print(f"  {sec:8.2f} s  {n:4d} x  {k}", file=sys.stderr)
    if args.shuffle_cost:  # the release's rows written again, in a random order (as released) and as they are
        for key, order in (("rewrite_shuffled_s", " ORDER BY hash(rowid + 1), rowid"), ("rewrite_unordered_s", "")):
            extra[key], _ = _timed(lambda: e.execute(f'CREATE TABLE "_bench_copy" AS SELECT * FROM {ident(r.table)}{order}'))
            e.execute('DROP TABLE "_bench_copy"')
    e.close()
    print(json.dumps({"rows": args.rows, "plan": args.plan, "gen_s": gen, "seconds": r.seconds, "wall_s": wall, "rounds": r.rounds,
                      "classes": r.classes, "min_class": min_class, "ncp": r.utility["ncp"], "dm": r.utility["dm"],
                      "verified": bool(r.report.holds),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra}), flush=True)
    return 0


class _SpillWatch:
    """The largest size DuckDB's temporary directory (where it spills what exceeds memory_limit)
    reaches while a run goes on, polled every 0.2 s from a thread: ``stop()`` returns it in MB."""

    def __init__(self, e):
        self.dir = Path(os.path.abspath(e.scalar("SELECT current_setting('temp_directory')")))
        self.peak, self.done = 0, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.done.is_set():
            size = 0
            for f in self.dir.rglob("*") if self.dir.exists() else ():
                try:
                    size += f.stat().st_size
                except OSError:  # removed while polled
                    pass
            self.peak = max(self.peak, size)
            self.done.wait(0.2)

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        return round(self.peak / 1e6, 1)


def cmd_scale(args, argv) -> int:
    from anonydb.datasets import CENSUS_QIS

    print(f"# Mondrian on synthetic censuses: k=10 over {len(CENSUS_QIS)} QIs ({', '.join(CENSUS_QIS)}), "
          f"categorical=order; memory_limit {args.memory_limit or 'default'}; {dt.date.today()}; "
          f"each size in a fresh process")
    print(f"# command: {_command(argv)}")
    print("| rows | plan | generate s | anonymize s | rounds | classes | min class | NCP % | peak RSS MB | "
          "ratio s vs previous size |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    last: dict[str, dict] = {}
    for n, plan in [(n, p) for n in args.rows for p in args.plans]:
        cmd = [sys.executable, __file__, "scale-one", "--rows", str(n), "--seed", str(args.seed), "--plan", plan]
        if args.memory_limit:
            cmd += ["--memory-limit", args.memory_limit]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        if args.verbose:
            cmd.append("--verbose")
        if args.profile:
            cmd.append("--profile")
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"| {n:,} | {plan} | timed out after {args.timeout} s | | | | | | | |", flush=True)
            continue
        line = next((x for x in reversed(p.stdout.splitlines()) if x.startswith("{")), None)
        if p.returncode != 0 or line is None:
            print(f"| {n:,} | {plan} | failed (exit {p.returncode}) | | | | | | | |", flush=True)
            continue
        r = json.loads(line)
        prev = last.get(plan)
        ratio = f"{r['seconds'] / prev['seconds']:.1f} (rows x{n / prev['rows']:g})" if prev else "—"
        last[plan] = r
        flag = "" if r["verified"] else " (NOT verified)"
        print(f"| {n:,} | {plan} | {r['gen_s']:.1f} | {r['seconds']:.2f}{flag} | {r['rounds']} | {r['classes']:,} | "
              f"{r['min_class']} | {100 * r['ncp']:.2f} | {r['peak_rss_mb']:,.0f} | {ratio} |", flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
def similarity_attack_sql(table: str) -> str:
    """The number of tuples whose equivalence class's sensitive values all lie in one semantic group."""
    values = ", ".join(f"('{v}', {g})" for g, vs in enumerate(SIMILAR) for v in vs)
    return (f"WITH grp(occupation, g) AS (VALUES {values}), "
            f"c AS (SELECT r.eq_class, count(*) AS n, count(grp.g) AS in_groups, count(DISTINCT grp.g) AS groups "
            f'FROM "{table}" AS r LEFT JOIN grp ON grp.occupation = r.occupation GROUP BY r.eq_class) '
            f"SELECT coalesce(sum(n), 0) FROM c WHERE groups = 1 AND in_groups = n")


def cmd_thesis(args, argv) -> int:
    from anonydb.datasets import load_adult

    e = anonydb.connect()
    load_adult(e, "adult")
    rows = e.scalar("SELECT count(*) FROM adult")
    hier = adult_hierarchies([q for q in THESIS_QIS if q not in NUMERIC])
    print(f"# Li's thesis, Chapter 2 settings on Adult: {rows:,} rows; QIs {', '.join(THESIS_QIS)}; "
          f"sensitive {THESIS_SA}; categorical=hierarchy (Adult hierarchies); {dt.date.today()}; "
          f"medians over {args.repeat} runs")
    print(f"# command: {_command(argv)}")
    print("| setting | median s | runs (s) | classes | min class | DM | GCP | NCP % | similarity attack | thesis |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, params, ref in THESIS_SETTINGS:
        ts, res, out = [], None, "thesis_release"
        try:
            for _ in range(args.repeat):
                s, r = _timed(lambda: anonymize("adult", THESIS_QIS, THESIS_SA, out=out, engine=e,
                                                categorical="hierarchy", hierarchies=hier, replace=True, **params))
                if res is not None and (r.classes, r.utility["dm"]) != (res.classes, res.utility["dm"]):
                    print(f"WARNING: {name}: runs differ ({res.classes} vs {r.classes} classes)", file=sys.stderr)
                ts.append(s)
                res = r
        except Exception as ex:  # report, do not hide: the table row says what failed
            import traceback

            traceback.print_exc()
            print(f"| {name} | failed: {type(ex).__name__}: {str(ex).splitlines()[0][:200]} | | | | | | | | {ref} |",
                  flush=True)
            continue
        attacked = e.scalar(similarity_attack_sql(out))
        u = res.utility
        print(f"| {name} | {statistics.median(ts):.2f} | {_runs(ts)} | {res.classes:,} | {_min_class(e, out)} | "
              f"{u['dm']:,} | {u['gcp']:,.1f} | {100 * u['ncp']:.2f} | {attacked:,} | {ref:,} |", flush=True)
    e.close()
    return 0


def cmd_floors(args, argv) -> int:
    """The least work each step of the level-wise plan and the release must do at this size, each a
    bare statement over a table shaped like Mondrian's (issue 29's profile): a round reads the open
    rows twice (the stats, the histogram) and writes them once (the relabel), all rows are open for
    about log2(rows / class size) rounds; the release reads every source row once, joins its class
    and writes the rows in a keyed-hash order; the verification groups the release."""
    from anonydb.datasets import CENSUS_QIS, synthetic_census

    if args.database and os.path.exists(args.database):
        raise SystemExit(f"floors: {args.database} exists; name a new file (the run writes the census into it)")
    e = anonydb.connect(args.database)
    e.execute(f"SET memory_limit='{args.memory_limit}'")
    synthetic_census(e, "census", rows=args.rows, seed=args.seed)
    n = args.rows
    n_classes = n * 68 // 1000  # as many classes as Mondrian's k=10 release has (680,436 of 10M rows)
    for i, q in enumerate(CENSUS_QIS):  # dense codes through a dictionary per QI (one pass, no sort of the rows)
        e.execute(f"CREATE TABLE d{i} AS SELECT v, CAST(row_number() OVER (ORDER BY v) AS INTEGER) AS c "
                  f"FROM (SELECT DISTINCT {ident(q)} AS v FROM census)")
    codes = ", ".join(f"d{i}.c AS c{i}" for i in range(len(CENSUS_QIS)))
    joins = " ".join(f"JOIN d{i} ON d{i}.v = b.{ident(q)}" for i, q in enumerate(CENSUS_QIS))
    e.execute(f"CREATE TABLE w AS SELECT CAST(b.rowid AS BIGINT) AS rid, CAST(hash(b.rowid) % 65536 AS BIGINT) AS pid, "
              f"{codes} FROM census AS b {joins}")
    c = [f"c{i}" for i in range(len(CENSUS_QIS))]
    cls = f"CAST(hash(rowid) % {n_classes} AS BIGINT)"
    e.execute("CREATE TABLE lab AS SELECT CAST(rowid AS BIGINT) AS pid, "
              + ", ".join(f"'[' || {ident(q)} || ']' AS {ident(q)}" for q in CENSUS_QIS) + f" FROM census LIMIT {n_classes}")
    steps = [
        ("stats: GROUP BY partition, min/max of 8 codes (read)",
         f"SELECT sum({' + '.join(f'a{x} + b{x}' for x in c)}) FROM (SELECT pid, "
         f"{', '.join(f'min({x}) AS a{x}, max({x}) AS b{x}' for x in c)} FROM w GROUP BY pid)"),
        ("histogram: GROUP BY partition, one code (read)", "SELECT sum(n) FROM (SELECT pid, c0, count(*) AS n FROM w GROUP BY ALL)"),
        # a plan that cuts several levels per pass: the histogram could carry the children's
        # ranges (min/max of every other code per bin), and two levels need the 2-D histograms
        # of the chosen code with every other code (the children's dimensions are not known yet)
        ("histogram + min/max of the other 7 codes per bin (the children's stats in the same pass)",
         f"SELECT sum(n) FROM (SELECT pid, c0, count(*) AS n, {', '.join(f'min({x}), max({x})' for x in c[1:])} "
         f"FROM w GROUP BY ALL)"),
        ("2-D histograms: GROUP BY partition, one code and each other code (two levels per pass)",
         f"SELECT sum(n) FROM (SELECT count(*) AS n FROM w GROUP BY GROUPING SETS "
         f"({', '.join(f'(pid, c0, {x})' for x in c[1:])}))"),
        ("relabel: copy the open rows with a new partition id (read + write)",
         "CREATE OR REPLACE TABLE w2 AS SELECT rid, pid * 2 + (c0 & 1) AS pid, " + ", ".join(c[1:]) + ", c0 FROM w"),
        ("release: source joined with its class, keyed-hash order (read + write)",
         f"CREATE OR REPLACE TABLE r AS SELECT l.*, b.occupation FROM census AS b JOIN lab AS l ON l.pid = {cls.replace('rowid', 'b.rowid')} "
         "ORDER BY md5_number(CAST(b.rowid AS VARCHAR) || 'a-secret-key-of-24-chars'), b.rowid"),
        ("verification: GROUP BY the published QIs and SA (read)",
         "SELECT sum(n), count(*) FROM (SELECT " + ", ".join(ident(q) for q in CENSUS_QIS)
         + ", occupation, count(*) AS n FROM r GROUP BY ALL)"),
    ]
    print(f"# floors of Mondrian's steps, {n:,} rows, memory_limit {args.memory_limit}, {dt.date.today()}; "
          f"command: {_command(argv)}")
    print("| step | median s | runs |")
    print("|---|---|---|")
    for name, sql in steps:
        if args.skip and args.skip in name:
            continue
        runs = []
        for _ in range(args.repeat):
            s, _ = _timed(lambda: e.fetch_rows(sql) if sql.startswith("SELECT") else e.execute(sql))
            runs.append(s)
        print(f"| {name} | {statistics.median(runs):.2f} | {_runs(runs)} |", flush=True)
    return 0


def cmd_thesis_sweep(args, argv) -> int:
    """Issue 28, part 2: the similarity attack on the l-diverse Mondrian tables under the cut
    choices the thesis leaves open. The thesis adapts LeFevre's Mondrian (binary cuts); anonydb's
    default cuts categorical QIs along their hierarchies (multiway). Configurations: multiway
    along the hierarchy (strict); binary cuts on the values' sorted order (categorical="order"),
    strict and relaxed; binary cuts in the hierarchy's depth-first leaf order (each categorical
    value prefixed by its leaf position, so that value order is leaf order), strict and relaxed."""
    from anonydb.datasets import load_adult
    from anonydb.methods.mondrian import _dfs_leaves

    e = anonydb.connect()
    load_adult(e, "adult")
    cat = [q for q in THESIS_QIS if q not in NUMERIC]
    hier = adult_hierarchies(cat)
    # the same table with every categorical QI prefixed by its depth-first leaf position
    cases = []
    for q in cat:
        leaves = _dfs_leaves(hier[q])
        cases.append(f'CASE "{q}" ' + " ".join(f"WHEN '{v}' THEN '{i:03d} {v}'" for i, v in enumerate(leaves))
                     + f' ELSE "{q}" END AS "{q}"')
    e.execute('CREATE OR REPLACE TABLE adult_leaf AS SELECT * REPLACE (' + ", ".join(cases) + ') FROM adult')
    configs = [("multiway along the hierarchy, strict", "adult", dict(categorical="hierarchy", hierarchies=hier)),
               ("binary, sorted values, strict", "adult", dict(categorical="order")),
               ("binary, sorted values, relaxed", "adult", dict(categorical="order", relaxed=True)),
               ("binary, hierarchy leaf order, strict", "adult_leaf", dict(categorical="order")),
               ("binary, hierarchy leaf order, relaxed", "adult_leaf", dict(categorical="order", relaxed=True))]
    print(f"# Li's thesis §2.4.1, similarity attack under cut choices; Adult; QIs {', '.join(THESIS_QIS)}; "
          f"sensitive {THESIS_SA}; {dt.date.today()}")
    print(f"# command: {_command(argv)}")
    print("| setting | cuts | classes | min class | NCP % | tuples in classes of <= 5 distinct occupations | "
          "similarity attack | thesis | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, params, ref in THESIS_SETTINGS[:2]:
        for label, table, kw in configs:
            res = anonymize(table, THESIS_QIS, THESIS_SA, out="sweep_rel", engine=e, replace=True, **kw, **params)
            attacked = e.scalar(similarity_attack_sql("sweep_rel"))
            # a semantic group has at most 5 values: only a class of <= 5 distinct occupations can lie in one
            few = e.scalar('SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n, count(DISTINCT occupation) AS d '
                           'FROM sweep_rel GROUP BY eq_class) WHERE d <= 5')
            print(f"| {name} | {label} | {res.classes:,} | {_min_class(e, 'sweep_rel')} | {100 * res.utility['ncp']:.2f} | "
                  f"{few:,} | {attacked:,} | {ref:,} | {attacked / ref:.2f} |", flush=True)
    e.close()
    return 0


# ------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("adult", help="anonydb vs anonypy on Adult, k=10; the hierarchy and (k,t) runs")
    a.add_argument("--repeat", type=int, default=3)
    sub.add_parser("thesis-sweep", help="issue 28: the similarity attack under binary / multiway cuts")
    s = sub.add_parser("scale", help="synthetic censuses of growing size, each in a fresh process")
    s.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    s.add_argument("--memory-limit", default="4GB")
    s.add_argument("--threads", type=int, default=None)
    s.add_argument("--seed", type=int, default=42)
    s.add_argument("--timeout", type=float, default=None, help="seconds per size before giving up")
    s.add_argument("--verbose", action="store_true", help="print Mondrian's rounds to stderr")
    s.add_argument("--plans", nargs="+", choices=PLANS, default=["auto"], help="Mondrian plans to run at each size")
    s.add_argument("--profile", action="store_true", help="print each run's seconds per template to stderr")
    o = sub.add_parser("scale-one", help="one size of `scale`; prints a JSON line")
    o.add_argument("--plan", choices=PLANS, default="auto")
    o.add_argument("--rows", type=int, required=True)
    o.add_argument("--memory-limit", default="4GB")
    o.add_argument("--threads", type=int, default=None)
    o.add_argument("--seed", type=int, default=42)
    o.add_argument("--database", default=None,
                   help="a new DuckDB file to hold the census and the release (out of core: 100M rows); default in memory")
    o.add_argument("--verbose", action="store_true")
    o.add_argument("--profile", action="store_true", help="print the seconds per template to stderr")
    o.add_argument("--top", type=int, default=12, help="with --profile: how many templates to print")
    o.add_argument("--spill", action="store_true", help="record the peak size of DuckDB's temporary (spill) directory")
    o.add_argument("--shuffle-cost", action="store_true",
                   help="write the release's rows again, shuffled and unordered (rewrite_shuffled_s, rewrite_unordered_s)")
    t = sub.add_parser("thesis", help="Li's thesis Chapter 2 settings on Adult with the similarity attack")
    t.add_argument("--repeat", type=int, default=3)
    f = sub.add_parser("floors", help="issue 29: the least work of each step at one size")
    f.add_argument("--rows", type=int, default=10_000_000)
    f.add_argument("--memory-limit", default="4GB")
    f.add_argument("--seed", type=int, default=42)
    f.add_argument("--repeat", type=int, default=3)
    f.add_argument("--database", default=None, help="a new DuckDB file for the census (out of core: 100M rows)")
    f.add_argument("--skip", default=None, help="skip the steps whose name contains this text")
    w = sub.add_parser("alone", help="anonydb's Adult k=10 run alone (no peer in the process)")
    w.add_argument("--repeat", type=int, default=5)
    w.add_argument("--plan", choices=PLANS, default="auto")
    w.add_argument("--plan-cost", action="store_true", help="per template, the median ms to prepare and to run")
    args = ap.parse_args(argv)
    return {"adult": cmd_adult, "scale": cmd_scale, "scale-one": cmd_scale_one, "thesis": cmd_thesis,
            "thesis-sweep": cmd_thesis_sweep, "floors": cmd_floors,
            "alone": cmd_alone}[args.cmd](args, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Issue 25's performance table: every workload on PostgreSQL beside DuckDB, in the same run.

Starts a throw-away PostgreSQL server (tests/pg_server.py: initdb/pg_ctl in a temporary
directory, as the ``postgres`` OS user when run as root) unless ``--url`` names one, makes the
synthetic census in an in-memory DuckDB and copies it into PostgreSQL with COPY, loads Adult into
both, then times, alternating the two engines so that load on the machine hits both:

* each privacy-model check of benchmarks/bench_checks.py on the census (8 QIs), target <= 5 s;
* Mondrian k=10 (plan="levelwise") on Adult (8 QIs, <= 5 s) and on the census (<= 60 s);
* the full-domain lattice search, k=5, on Adult with its hierarchies (<= 2 s).

A workload that fails is recorded as ``error: <first line>`` and the run goes on. For every
PostgreSQL workload the statement log (``eng.log``) of its last run is summed per template: the
"where the time goes" column. Nothing is written into the repository; ``--markdown`` prints the
table as a BENCHMARKS.md section.

    python benchmarks/bench_postgres.py --rows 1000000 --repeat 3
    python benchmarks/bench_postgres.py --rows 100000 --repeat 1 --only "t-closeness"
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_checks: the checks and the occupation hierarchy

import anonydb  # noqa: E402
from anonydb.datasets import CENSUS_QIS, synthetic_census  # noqa: E402
from anonydb.sqlgen import ident  # noqa: E402
from bench_checks import CHECKS, occupation_hierarchy, where_time_goes  # noqa: E402

ADULT_QIS = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country", "occupation"]
ADULT_SA = "salary-class"
#: DuckDB column type -> PostgreSQL column type, for the COPY of a table
TARGETS = {"check": 5.0, "mondrian-adult": 5.0, "mondrian-census": 60.0, "fulldomain-adult": 2.0}


def copy_to_pg(duck, pg, table: str) -> float:
    """The DuckDB table into PostgreSQL under the same name (CSV through COPY), analyzed; seconds."""
    from anonydb.engines.postgres import copy_from_duckdb

    t0 = time.perf_counter()
    copy_from_duckdb(duck, pg, table)
    return time.perf_counter() - t0


def run(fn: Callable[[], Any]) -> tuple[float | None, str | None]:
    t0 = time.perf_counter()
    try:
        fn()
    except Exception as e:  # record the failure and go on: the table is re-run as methods land
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return None, f"error: {type(e).__name__}: {first[:160]}"
    return time.perf_counter() - t0, None


def workloads(args) -> list[tuple[str, str, Callable[[Any], Any]]]:
    """(name, target kind, fn(engine)) for every workload."""
    from anonydb.methods import anonymize, fulldomain

    hier = {"occupation": occupation_hierarchy()}
    out: list[tuple[str, str, Callable[[Any], Any]]] = []
    for name, sa, params in CHECKS:
        h = hier if params.get("distance") == "hierarchical" else None
        out.append((f"check: {name}", "check",
                    lambda e, sa=sa, params=params, h=h: anonydb.check("census", CENSUS_QIS, sa, engine=e,
                                                                       hierarchies=h, **params)))
    out.append(("Mondrian k=10 on Adult (levelwise)", "mondrian-adult",
                lambda e: anonymize("adult", ADULT_QIS, ADULT_SA, k=10, out="adult_m10", engine=e,
                                    plan="levelwise", seed=1, replace=True)))
    for plan in ("levelwise", "fragments"):
        out.append((f"Mondrian k=10 on the census, {args.rows:,} rows ({plan})", "mondrian-census",
                    lambda e, plan=plan: anonymize("census", CENSUS_QIS, "occupation", k=10, out="census_m10",
                                                   engine=e, plan=plan, seed=1, replace=True)))

    def fd(e):
        from anonydb import Hierarchy
        from anonydb.datasets import adult_hierarchy_paths

        paths = adult_hierarchy_paths(args.adult)
        return fulldomain("adult", ADULT_QIS, ADULT_SA, hierarchies={q: Hierarchy.from_arx(paths[q]) for q in ADULT_QIS},
                          k=5, out="adult_fd5", engine=e, seed=1, replace=True)
    out.append(("full-domain search, Adult k=5", "fulldomain-adult", fd))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="census rows (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per engine and workload (median reported)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--only", default=None, help="run the workloads whose name contains this text ('|' separates several)")
    ap.add_argument("--url", default=None, help="an existing PostgreSQL database instead of a throw-away server")
    ap.add_argument("--adult", default=None, help="the Adult folder (default: anonydb.datasets.adult_dir())")
    ap.add_argument("--timeout", type=float, default=300, help="PostgreSQL statement_timeout, seconds (0: none)")
    ap.add_argument("--markdown", action="store_true", help="print the table as a BENCHMARKS.md section")
    args = ap.parse_args(argv)

    if args.url:
        return bench(args, args.url)
    sys.path.insert(0, str(HERE.parent / "tests"))
    from pg_server import pg_server  # a helper module (no tests): initdb, pg_ctl, a free port

    with pg_server("anonydb_bench") as url:
        return bench(args, url)


def bench(args, url: str) -> int:
    from anonydb.datasets import load_adult
    from anonydb.engines import connect_postgres

    duck = anonydb.connect()
    pg = connect_postgres(url)
    if args.timeout:
        pg.con.execute(f"SET statement_timeout = {int(args.timeout * 1000)}")
    server = pg.con.execute("SHOW server_version").fetchone()[0]
    t0 = time.perf_counter()
    synthetic_census(duck, "census", rows=args.rows, seed=args.seed)
    gen = time.perf_counter() - t0
    copy_s = copy_to_pg(duck, pg, "census")
    load_adult(duck, "adult", path=args.adult)
    copy_to_pg(duck, pg, "adult")
    adult_rows = duck.scalar("SELECT count(*) FROM adult")
    qi = ", ".join(ident(q) for q in CENSUS_QIS)
    groups = duck.scalar(f"SELECT count(*) FROM (SELECT 1 FROM census GROUP BY {qi})")

    rows = []
    for name, kind, fn in workloads(args):
        if args.only and not any(o in name for o in args.only.split("|")):
            continue
        times: dict[str, list[float]] = {"pg": [], "duck": []}
        err: dict[str, str | None] = {"pg": None, "duck": None}
        profile = ""
        for _ in range(args.repeat):  # alternate, so that both engines see the same load
            for which, eng in (("duck", duck), ("pg", pg)):
                if err[which]:
                    continue
                mark = len(eng.log)
                s, e = run(lambda: fn(eng))
                if e:
                    err[which] = e
                else:
                    times[which].append(s)
                if which == "pg":
                    profile = where_time_goes(eng.log[mark:])
        med = {w: statistics.median(t) if t and not err[w] else None for w, t in times.items()}
        target = TARGETS[kind]
        ratio = med["pg"] / med["duck"] if med["pg"] is not None and med["duck"] else None
        met = "error" if med["pg"] is None else ("yes" if med["pg"] <= target else "no")
        rows.append(dict(name=name, pg=med["pg"], duck=med["duck"], pg_runs=times["pg"], duck_runs=times["duck"],
                         pg_err=err["pg"], duck_err=err["duck"], ratio=ratio, target=target, met=met,
                         profile=profile))
        r = rows[-1]
        print(f"{name}: pg {_fmt(r['pg'], r['pg_err'])} duck {_fmt(r['duck'], r['duck_err'])} "
              f"ratio {'-' if ratio is None else f'{ratio:.1f}'} target <= {target:g} s: {met}; {profile}",
              file=sys.stderr, flush=True)
    pg.close()
    duck.close()

    cmd = "python benchmarks/bench_postgres.py " + " ".join(argv_display(sys.argv[1:]))
    head = (f"{args.rows:,}-row census ({len(CENSUS_QIS)} QIs, {groups:,} QI groups, generated in {gen:.1f} s, "
            f"COPY into PostgreSQL {copy_s:.1f} s); Adult {adult_rows:,} rows; PostgreSQL {server}; "
            f"DuckDB {_duck_version()}; {dt.date.today()}; medians of {args.repeat} run(s) per engine, alternating")
    if args.markdown:
        print(f"### PostgreSQL beside DuckDB (issue 25), {dt.date.today()}\n")
        print(f"Command: `{cmd.strip()}`. {head}.\n")
    else:
        print(f"# {head}\n# command: {cmd.strip()}")
    print("| workload | PostgreSQL median s | DuckDB median s | ratio PG/DuckDB | target | met | "
          "PostgreSQL runs (s) | where PostgreSQL's time goes (last run, s per template) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.1f}"
        print(f"| {r['name']} | {_fmt(r['pg'], r['pg_err'])} | {_fmt(r['duck'], r['duck_err'])} | "
              f"{ratio} | <= {r['target']:g} s | {r['met']} | "
              f"{', '.join(f'{x:.2f}' for x in r['pg_runs'])} | {r['profile'] if r['pg'] is not None else ''} |")
    return 0


def argv_display(argv: list[str]) -> list[str]:
    return [a if " " not in a and "|" not in a else repr(a) for a in argv]


def _fmt(x: float | None, err: str | None) -> str:
    if err:
        return err.replace("|", "/")
    return "-" if x is None else f"{x:.2f}"


def _duck_version() -> str:
    import duckdb

    return duckdb.__version__


if __name__ == "__main__":
    sys.exit(main())

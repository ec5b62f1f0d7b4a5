"""What fail-closed releases cost: the secret-keyed row order and the verification over every published column.

Mondrian k=10 on Adult and on a synthetic census, in one process. For each data set:

* the whole run (``anonymize(...)``), median of ``--repeat`` runs (``--repeat-census`` for the census);
* from each run's ``engine.log``: the release statement (template ``mondrian_release.sql.j2``)
  and the verification (the statements run inside ``publish.verify_published``, which this
  benchmark wraps in its own process only);
* on the last run's finished partitions (its ``joined`` and ``boxes`` scratch tables, kept past
  the run), the two steps done both ways, alternated ``--steps`` times (the order of the two
  flips every time):
  - the release statement as logged, ordered by ``md5_number(CAST(rid AS VARCHAR) || key)`` with a
    fresh 128-bit key (now) and with its ORDER BY replaced by ``hash(b._adb_rid + 0), b._adb_rid``
    (before: ``hash(rid + seed)``, seed 0);
  - ``anonydb.check`` of the final release, grouped by every published column but the sensitive one
    (now, as ``verify_published`` does) and by the QI label columns only (before).

The extra costs are the medians of the paired differences (now minus before), also as % of the
run's median.

    python benchmarks/bench_publish.py --repeat 5                    # Adult, then 10M census rows
    python benchmarks/bench_publish.py --rows 1000000                # a smaller census
    python benchmarks/bench_publish.py --datasets adult --repeat 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import resource
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # anonydb from this checkout
    sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

import anonydb  # noqa: E402
import anonydb.methods.mondrian as mondrian_mod  # noqa: E402
from anonydb.checker import build_models, check  # noqa: E402
from anonydb.methods import anonymize  # noqa: E402
from anonydb.sqlgen import ident, literal  # noqa: E402

ADULT_CSV = Path("/work/shared/datasets/adult/adult.csv")
ADULT_QIS = ["age", "sex", "race", "education"]
ADULT_SA = "occupation"
CENSUS_SA = "occupation"
RELEASE_TEMPLATE = "mondrian_release.sql.j2"
#: the ORDER BY of the release statement now (keyed MD5 of the row id), its last line
KEYED_ORDER = re.compile(r"ORDER BY md5_number\(CAST\(b\._adb_rid AS VARCHAR\) \|\| '[^']*'\), b\._adb_rid\s*$")
PLAIN_ORDER = "ORDER BY hash(b._adb_rid + 0), b._adb_rid"


def _runs(xs) -> str:
    return ", ".join(f"{x:.2f}" for x in xs)


def _runs3(xs) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


# ------------------------------------------------------------------------------------------------
class Probe:
    """Wraps ``verify_published`` (as Mondrian calls it) and ``_materialize`` in this process: per run,
    the verification's wall time and its ``engine.log`` entries; on a capture run, the ``joined``
    and ``boxes`` scratch tables are taken out of the run's scratch list, so they outlive it (two
    DROP statements fewer in that run)."""

    def __init__(self):
        self.verify_wall: list[float] = []
        self.verify_log: list[float] = []
        self.capture = False
        self.kept: tuple[str, str] | None = None  # (joined, boxes)
        self._verify = mondrian_mod.verify_published
        self._materialize = mondrian_mod._materialize

    def __enter__(self):
        probe = self

        def verify(eng, *a, **kw):
            mark, t0 = len(eng.log), time.perf_counter()
            try:
                return probe._verify(eng, *a, **kw)
            finally:
                probe.verify_wall.append(time.perf_counter() - t0)
                probe.verify_log.append(sum(x.seconds for x in eng.log[mark:]))

        def materialize(eng, s, *a, **kw):
            boxes, joined = probe._materialize(eng, s, *a, **kw)
            if probe.capture:
                for n in (boxes, joined):
                    s.names.remove(n)
                probe.kept = (joined, boxes)
            return boxes, joined

        mondrian_mod.verify_published = verify
        mondrian_mod._materialize = materialize
        return self

    def __exit__(self, *exc):
        mondrian_mod.verify_published = self._verify
        mondrian_mod._materialize = self._materialize


def _timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


def measure(e, name: str, source: str, qis: list[str], sensitive: str, repeat: int, steps: int,
            **kw) -> dict:
    """``repeat`` timed runs (the last keeps its partitions), then the alternated comparisons."""
    out = f"{name}_release"
    runs, release_s, verify_s, verify_stmt_s = [], [], [], []
    res, release_sql = None, None
    with Probe() as probe:
        for i in range(repeat):
            probe.capture = i == repeat - 1
            mark = len(e.log)
            s, res = _timed(lambda: anonymize(source, qis, sensitive, out=out, engine=e, replace=True, **kw))
            runs.append(s)
            rel = [x for x in e.log[mark:] if x.template == RELEASE_TEMPLATE]
            assert len(rel) == 1, f"{len(rel)} release statements in one run"
            release_s.append(rel[0].seconds)
            release_sql = rel[0].sql
            verify_s.append(probe.verify_wall[-1])
            verify_stmt_s.append(probe.verify_log[-1])
            print(f"  {name} run {i + 1}: {s:.2f} s (release {rel[0].seconds:.2f} s, verification "
                  f"{probe.verify_wall[-1]:.2f} s)", file=sys.stderr, flush=True)
        joined, boxes = probe.kept
    assert res.report.holds

    # the release statement, keyed (now) and plain (before), on the last run's partitions
    m = re.match(r"\s*CREATE TABLE (\"[^\"]+\"|\S+) AS", release_sql)
    assert m, release_sql[:200]
    lines = release_sql.rstrip().splitlines()
    assert KEYED_ORDER.match(lines[-1].strip()), lines[-1]
    body = "\n".join(lines[:-1])
    bench = f"_bench_publish_{name}"

    def release(order_line: str):
        sql = body.replace(m.group(1), ident(bench), 1) + "\n" + order_line
        e.execute(f"DROP TABLE IF EXISTS {ident(bench)}")
        t0 = time.perf_counter()
        e.con.execute(sql)  # the connection itself: the fresh key stays out of engine.log
        return time.perf_counter() - t0

    def keyed():
        key = secrets.token_hex(16)
        return release(f"ORDER BY md5_number(CAST(b._adb_rid AS VARCHAR) || {literal(key)}), b._adb_rid")

    def plain():
        return release(PLAIN_ORDER)

    # the verification over every published column but the sensitive one (now) and the QI labels (before)
    models = dict(k=kw["k"], **({"l": kw["l"]} if "l" in kw else {}))
    wide = [c for c, _ in e.columns(out) if c != sensitive]

    def verify(cols):
        t0 = time.perf_counter()
        rep = check(out, cols, sensitive, models=build_models(**models), engine=e, max_groups=3)
        return time.perf_counter() - t0, rep

    rk, rp, vw, vn = [], [], [], []
    groups = {}
    for i in range(steps):  # alternated; which goes first flips every time
        for f in ((plain, keyed) if i % 2 == 0 else (keyed, plain)):
            (rp if f is plain else rk).append(f())
        for cols, into in (((qis, vn), (wide, vw)) if i % 2 == 0 else ((wide, vw), (qis, vn))):
            s, rep = verify(cols)
            into.append(s)
            assert rep.holds, f"check over {cols} fails"
            groups[len(cols)] = rep.groups
    # the plain order writes the same rows (sanity)
    plain()
    diff = e.scalar(f"SELECT count(*) FROM (SELECT * FROM {ident(out)} EXCEPT ALL SELECT * FROM {ident(bench)})")
    assert diff == 0, f"{diff} rows differ between the keyed and the plain release"
    for n in (bench, joined, boxes):
        e.drop(n)
    rows = e.scalar(f"SELECT count(*) FROM {ident(out)}")
    return dict(name=name, rows=rows, classes=res.classes, rounds=res.rounds, runs=runs, release_s=release_s,
                verify_s=verify_s, verify_stmt_s=verify_stmt_s, keyed=rk, plain=rp, wide=vw, narrow=vn,
                wide_cols=wide, groups_wide=groups[len(wide)], groups_narrow=groups[len(qis)])


def summarize(r: dict) -> dict:
    run = statistics.median(r["runs"])
    shuffle = statistics.median(k - p for k, p in zip(r["keyed"], r["plain"]))
    wider = statistics.median(w - n for w, n in zip(r["wide"], r["narrow"]))
    return dict(run=run, shuffle=shuffle, wider=wider, total=shuffle + wider,
                shuffle_pct=100 * shuffle / run, wider_pct=100 * wider / run, total_pct=100 * (shuffle + wider) / run)


def report(results: list[dict], argv: list[str], notes: list[str]) -> None:
    print(f"# Fail-closed releases: the secret order and the wider verification; {dt.date.today()}; "
          f"DuckDB {duckdb.__version__}, Python {sys.version.split()[0]}")
    print(f"# command: python benchmarks/bench_publish.py {' '.join(argv)}")
    for n in notes:
        print(f"# {n}")
    print()
    print("| data set | rows | classes | runs | run median s | runs (s) | release stmt median s | "
          "verification median s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        s = summarize(r)
        print(f"| {r['name']} | {r['rows']:,} | {r['classes']:,} | {len(r['runs'])} | {s['run']:.2f} | "
              f"{_runs(r['runs'])} | {statistics.median(r['release_s']):.3f} | "
              f"{statistics.median(r['verify_s']):.3f} |")
    print()
    print("| data set | step | before median s | now median s | extra s (median of pairs) | % of run | "
          "before (s) | now (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        s = summarize(r)
        print(f"| {r['name']} | release: keyed MD5 order vs hash(rid + 0) | {statistics.median(r['plain']):.3f} | "
              f"{statistics.median(r['keyed']):.3f} | {s['shuffle']:+.3f} | {s['shuffle_pct']:+.1f} | "
              f"{_runs3(r['plain'])} | {_runs3(r['keyed'])} |")
        print(f"| {r['name']} | check: {len(r['wide_cols'])} published columns vs the QI labels | "
              f"{statistics.median(r['narrow']):.3f} | {statistics.median(r['wide']):.3f} | {s['wider']:+.3f} | "
              f"{s['wider_pct']:+.1f} | {_runs3(r['narrow'])} | {_runs3(r['wide'])} |")
        print(f"| {r['name']} | **both** | | | **{s['total']:+.3f}** | **{s['total_pct']:+.1f}** | | |")
    print()
    for r in results:
        print(f"{r['name']}: {r['rounds']} rounds; checked over {', '.join(r['wide_cols'])}: "
              f"{r['groups_wide']:,} groups; over the QI labels: {r['groups_narrow']:,} groups; "
              f"verification in the runs (statements only): {_runs3(r['verify_stmt_s'])} s")
    print(f"peak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


# ------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", choices=["adult", "census"], default=["adult", "census"])
    ap.add_argument("--repeat", type=int, default=3, help="Adult runs (the median is reported)")
    ap.add_argument("--repeat-census", type=int, default=1, help="census runs")
    ap.add_argument("--rows", type=int, default=10_000_000, help="census rows")
    ap.add_argument("--steps", type=int, default=9, help="alternations of the comparisons on Adult")
    ap.add_argument("--steps-census", type=int, default=5, help="alternations of the comparisons on the census")
    ap.add_argument("--memory-limit", default="4GB", help="DuckDB memory_limit of the census connection")
    args = ap.parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)
    results, notes = [], []
    if "adult" in args.datasets:
        e = anonydb.connect()
        e.execute(f"CREATE TABLE adult AS SELECT * FROM read_csv({literal(str(ADULT_CSV))}, delim = ';', header = true)")
        hier = {"education": anonydb.Hierarchy.from_arx(ADULT_CSV.parent / "adult_hierarchy_education.csv")}
        notes.append(f"Adult: {ADULT_CSV} ({e.scalar('SELECT count(*) FROM adult'):,} rows); Mondrian k=10, l=3 "
                     f"(distinct), QIs {', '.join(ADULT_QIS)} (education along adult_hierarchy_education.csv), "
                     f"sensitive {ADULT_SA}; {args.repeat} runs, {args.steps} alternations")
        results.append(measure(e, "adult", "adult", ADULT_QIS, ADULT_SA, args.repeat, args.steps,
                               k=10, l=3, hierarchies=hier))
        e.close()
    if "census" in args.datasets:
        from anonydb.datasets import CENSUS_QIS, synthetic_census

        e = anonydb.connect()
        e.execute(f"SET memory_limit = {literal(args.memory_limit)}")
        gen, _ = _timed(lambda: synthetic_census(e, "census", rows=args.rows, seed=42))
        notes.append(f"census: synthetic_census(rows={args.rows:,}, seed=42), generated in {gen:.1f} s; Mondrian "
                     f"k=10, QIs {', '.join(CENSUS_QIS)}, categorical=order, sensitive {CENSUS_SA}; memory_limit "
                     f"{args.memory_limit}; {args.repeat_census} run(s), {args.steps_census} alternations")
        results.append(measure(e, "census", "census", CENSUS_QIS, CENSUS_SA, args.repeat_census, args.steps_census,
                               k=10, categorical="order"))
        e.close()
    report(results, argv, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())

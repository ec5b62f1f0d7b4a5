"""anonydb's Mondrian against qiyuangong/Mondrian, the classic pure-Python strict Mondrian (MIT), in
one process, interleaved (issue 29's peer targets).

    python benchmarks/bench_peer.py adult --repeat 5
    python benchmarks/bench_peer.py census --rows 1000000 --repeat 3
    python benchmarks/bench_peer.py census --rows 1000000 --repeat 3 --floors

Both run k = 10 on 8 QIs with strict cuts; anonydb with categorical="order", the peer on the same
rows with every categorical QI coded by its rank in sorted value order (as anonydb codes it), the
data read out of the database before the peer's clock starts. ``adult``: Adult's 8 QIs
(age numeric), sensitive salary-class. ``census``: anonydb's synthetic census of ROWS rows
(age and hours_per_week numeric), sensitive occupation, as ``../shared/peers/side_synthetic.py``.
Prints each run, the medians, both NCPs and the ratio of medians peer / anonydb. The peer is read
from ``../shared/peers/qiyuangong`` (it is not vendored here); without it the script says so and
exits 2.

``--floors``: in the same process, after each pair of runs, the least work any plan must do on
these rows, each a bare statement (issue 29: is the target out of reach on this machine?):
the dictionaries (each categorical QI's distinct values coded by rank); the set-up (the QIs read
once and written as integer codes through those dictionaries); per level, the histogram of every
partition over its own cut dimension (a lookup of the partition's dimension) and the relabel of
its rows (a lookup of the partition's cut and first child), counted for the rows anonydb actually
cut (the sum over rounds of the rows cut, from a level-wise run before the clock); the labels
(each class's lowest and highest value per QI, from its rows' codes); the release (source rows
joined with their class's labels, written in keyed-hash order); the verification (GROUP BY the
published columns). Their sum is compared with the time the target allows (the peer's median /
the target ratio). Also the rounds as one recursive statement at their leanest: k only and the
widest dimension only (not the peer's algorithm); and every dimension tried in width order, the
algorithm both Mondrians run, on the rows and on the distinct QI tuples with their counts; the
sum with the faster of these two is the floor of the algorithm both run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peers" / "qiyuangong"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anonydb  # noqa: E402
from anonydb.methods import anonymize  # noqa: E402
from anonydb.sqlgen import ident  # noqa: E402

ADULT_QIS = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country", "occupation"]


def _peer():
    if not (PEER / "mondrian.py").exists():
        print(f"the peer is not here: {PEER} (qiyuangong/Mondrian from ../shared/peers)", file=sys.stderr)
        raise SystemExit(2)
    sys.path.insert(0, str(PEER))
    from mondrian import mondrian  # the peer's module
    return mondrian


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", choices=["adult", "census"])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--floors", action="store_true", help="the floors of every step, measured beside the runs")
    ap.add_argument("--target", type=float, default=None, help="the target ratio peer/anonydb (default: adult 1.5, census 8)")
    a = ap.parse_args(argv)
    mondrian = _peer()
    e = anonydb.connect()
    if a.data == "adult":
        from anonydb.datasets import load_adult
        load_adult(e, "t")
        qis, sa, num, ids = ADULT_QIS, "salary-class", {"age"}, []
    else:
        from anonydb.datasets import CENSUS_QIS, synthetic_census
        synthetic_census(e, "t", rows=a.rows, seed=a.seed)
        qis, sa, num, ids = list(CENSUS_QIS), "occupation", {"age", "hours_per_week"}, ["person_id", "name"]
    rows = e.scalar("SELECT count(*) FROM t")
    sel = ", ".join(ident(q) if q in num else f"dense_rank() OVER (ORDER BY {ident(q)}) - 1" for q in qis)
    data = [list(r) for r in e.con.execute(f"SELECT {sel}, {ident(sa)} FROM t").fetchall()]
    ours, theirs, res, peer_ncp = [], [], None, None
    floors = _Floors(e, qis, sa, ids, num) if a.floors else None
    for i in range(a.repeat):  # alternate, so both see the same machine load
        t0 = time.perf_counter()
        res = anonymize("t", qis, sa, out="rel", engine=e, k=10, categorical="order", identifiers=ids, replace=True)
        ours.append(time.perf_counter() - t0)
        copy = [list(r) for r in data]  # the peer may change its input
        t0 = time.perf_counter()
        _, (peer_ncp, _) = mondrian(copy, 10, False)
        theirs.append(time.perf_counter() - t0)
        print(f"run {i + 1}: anonydb {ours[-1]:.3f} s, peer {theirs[-1]:.3f} s", flush=True)
        if floors:
            floors.measure()
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"{a.data} {rows} rows, k=10, {len(qis)} QIs: anonydb median {mo:.3f} s (NCP {100 * res.utility['ncp']:.2f}%, "
          f"{res.classes} classes) | qiyuangong median {mt:.3f} s (NCP {peer_ncp:.2f}%) | peer/anonydb {mt / mo:.2f}x")
    if floors:
        target = a.target or (1.5 if a.data == "adult" else 8.0)
        floors.report(mt / target, target)
    return 0


class _Floors:
    """The floors of Mondrian's steps on the benchmark's own rows (see the module's docstring)."""

    def __init__(self, e, qis, sa, ids, num=()):
        self.e, self.qis, self.sa = e, qis, sa
        rows = e.scalar("SELECT count(*) FROM t")
        cut = []  # rows cut per round, from a level-wise run (its progress reports each round)
        r = anonymize("t", qis, sa, out="rel_floor", engine=e, k=10, categorical="order", identifiers=ids,
                      replace=True, plan="levelwise", progress=lambda p: cut.append(p["rows_open"]))
        self.passes = sum(cut) / rows  # the table read and rewritten this many times over by the rounds
        self.rounds, self.classes, self.rows = r.rounds, r.classes, rows
        d = len(qis)
        parts = max(1, self.classes // 2)  # partitions of a level in the busiest rounds
        codes = ", ".join(f"CAST(dense_rank() OVER (ORDER BY {ident(q)}) - 1 AS INTEGER) AS c{i}" for i, q in enumerate(qis))
        e.execute(f"CREATE OR REPLACE TABLE _fw AS SELECT CAST(rowid AS BIGINT) AS rid, CAST(hash(rowid) % {parts} AS BIGINT) "
                  f"AS pid, {codes} FROM t")
        e.execute(f"CREATE OR REPLACE TABLE _fcut AS SELECT CAST(range AS BIGINT) AS pid, CAST(range % {d} AS INTEGER) AS dim, "
                  f"CAST(1 AS DOUBLE) AS m, CAST(2 * range AS BIGINT) AS new0 FROM range({parts})")
        e.execute(f"CREATE OR REPLACE TABLE _flab AS SELECT CAST(rowid AS BIGINT) AS cls, "
                  + ", ".join(f"'[' || CAST({ident(q)} AS VARCHAR) || ']' AS {ident(q)}" for q in qis)
                  + f" FROM t LIMIT {self.classes}")
        self.v = "CASE k.dim " + " ".join(f"WHEN {i} THEN w.c{i}" for i in range(d)) + " END"  # each row's cut code
        self.cols = ", ".join(f"w.c{i}" for i in range(d))
        v, cols = self.v, self.cols
        for i, q in enumerate(qis):  # per-QI dictionaries (not timed): the codes the rounds cut on
            e.execute(f"CREATE OR REPLACE TABLE _fd{i} AS SELECT v, CAST(row_number() OVER (ORDER BY v) - 1 AS INTEGER) AS c "
                      f"FROM (SELECT DISTINCT {ident(q)} AS v FROM t)")
        coded = ", ".join(f"d{i}.c AS c{i}" for i in range(d))
        joins = " ".join(f"JOIN _fd{i} AS d{i} ON d{i}.v IS NOT DISTINCT FROM b.{ident(q)}" for i, q in enumerate(qis))
        published = ", ".join(ident(c) for c in qis + [sa])
        self.steps = {  # key: (what it is, the statement)
            "setup": ("set-up: the QIs read once and written as integer codes (what the rounds read)",
                      f"CREATE OR REPLACE TABLE _fw0 AS SELECT CAST(b.rowid AS BIGINT) AS rid, {coded} FROM t AS b {joins}"),
            "hist": ("histogram, each partition on its own dimension (per pass)",
                     f"SELECT sum(n) FROM (SELECT w.pid, {v} AS v, count(*) AS n FROM _fw AS w JOIN _fcut AS k "
                     f"ON k.pid = w.pid GROUP BY ALL)"),
            "relabel": ("relabel, each row by its partition's cut (per pass)",
                        f"CREATE OR REPLACE TABLE _fw2 AS SELECT w.rid, k.new0 + CAST({v} > k.m AS BIGINT) AS pid, {cols} "
                        f"FROM _fw AS w JOIN _fcut AS k ON k.pid = w.pid"),
            "release": ("release: rows joined with their class's labels, keyed-hash order",
                        f"CREATE OR REPLACE TABLE _frel AS SELECT l.*, b.{ident(sa)} FROM t AS b JOIN _flab AS l "
                        f"ON l.cls = CAST(hash(b.rowid) % {self.classes} AS BIGINT) "
                        f"ORDER BY md5_number(CAST(b.rowid AS VARCHAR) || 'a-secret-key-of-24-chars'), b.rowid"),
            "verify": ("verification: GROUP BY the published columns",
                       f"SELECT count(*), min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY {published})"),
            "lean": ("one-statement rounds at their leanest (k only, widest dimension only)", self._rounds()),
            "dicts": ("dictionaries: each categorical QI's distinct values coded by rank, a statement each", [
                f"CREATE OR REPLACE TABLE _fdx{i} AS SELECT v, CAST(row_number() OVER (ORDER BY v) - 1 AS INTEGER) AS c "
                f"FROM (SELECT DISTINCT {ident(q)} AS v FROM t)" for i, q in enumerate(qis) if q not in num]),
            "lean_all": ("one-statement rounds at their leanest, every dimension tried in width order", self._rounds(every=True)),
            "lean_all_w": ("the same on the distinct QI tuples with their counts", self._rounds(every=True, weighted=True)),
            "labels": ("labels: each class's [lowest, highest] value per QI, from its rows' codes", self._labels()),
        }
        self.runs: dict[str, list[float]] = {k: [] for k in self.steps}
        self.found: dict[str, tuple] = {}

    def _rounds(self, every: bool = False, weighted: bool = False) -> str:
        """Every round in one recursive statement with nothing but what k-anonymity's strict cut
        needs: each open partition's size and spans, its candidate dimensions (``every``: each of
        nonzero span, ranked by span, ties by position, as both Mondrians try them; else the widest
        only, not the peer's algorithm), their histograms and medians, the narrowest-ranked cut with
        both halves >= k, the rows relabelled pid * 2 + side (unique among a level's open
        partitions; a final partition is named by its level and id); no verdict templates, no class
        numbering (a lower bound on the recursive plan's rounds). ``weighted``: on the distinct QI
        tuples with their counts (strict cuts never separate equal tuples), grouped inside."""
        d, k = len(self.qis), 10
        rng = self.e.fetch_rows("SELECT " + ", ".join(f"greatest(max(c{i}) - min(c{i}), 1)" for i in range(d)) + " FROM _fw")[1][0]
        span = ", ".join(f"(max(c{i}) - min(c{i})) / {r}.0 AS s{i}" for i, r in enumerate(rng))
        rank = {i: " + ".join(f"CAST(s{j} {'>=' if j < i else '>'} s{i} AS INTEGER)" for j in range(d) if j != i) for i in range(d)}
        cand = " UNION ALL ".join(f"SELECT pid, n, {i} AS dim, {rank[i]} AS rk FROM st WHERE s{i} > 0"
                                  + ("" if every else f" AND {rank[i]} = 0") for i in range(d))
        codes = ", ".join(f"c{i}" for i in range(d))
        size, cnt = ("sum(wt)", "sum(w.wt)") if weighted else ("count(*)", "count(*)")
        src = f"(SELECT min(rid) AS rid, count(*) AS wt, {codes} FROM _fw GROUP BY {codes})" if weighted else "_fw"
        wt, wwt = ("wt, ", "w.wt, ") if weighted else ("", "")
        return f"""
WITH RECURSIVE r USING KEY (rid) AS (
  SELECT rid, {wt}CAST(0 AS BIGINT) AS pid, {codes}, 0 AS lvl, FALSE AS done FROM {src}
  UNION ALL
  (WITH o AS (SELECT * EXCLUDE (lvl, done) FROM r WHERE NOT done),
   lv AS (SELECT max(lvl) + 1 AS l FROM r),
   st AS (SELECT pid, {size} AS n, {span} FROM o GROUP BY pid HAVING {size} >= {2 * k}),
   k AS ({cand}),
   h AS (SELECT w.pid, k.dim, k.n, {self.v} AS v, {cnt} AS c FROM o AS w JOIN k ON k.pid = w.pid GROUP BY ALL),
   cu AS (SELECT pid, dim, n, v, sum(c) OVER (PARTITION BY pid, dim ORDER BY v) AS cum FROM h),
   m0 AS (SELECT pid, dim, min(v) FILTER (WHERE 2 * cum >= n) AS m1, max(v) AS vmax, max(n) AS n FROM cu GROUP BY pid, dim),
   m AS (SELECT cu.pid, cu.dim, max(m0.n) AS n,
                CASE WHEN max(m0.m1) = max(m0.vmax) THEN max(cu.v) FILTER (WHERE cu.v < m0.vmax) ELSE max(m0.m1) END AS m,
                CASE WHEN max(m0.m1) = max(m0.vmax) THEN max(cu.cum) FILTER (WHERE cu.v < m0.vmax)
                     ELSE min(cu.cum) FILTER (WHERE 2 * cu.cum >= cu.n) END AS left_n
         FROM cu JOIN m0 ON m0.pid = cu.pid AND m0.dim = cu.dim GROUP BY cu.pid, cu.dim),
   ok AS (SELECT k.pid, arg_min(k.dim, k.rk) AS dim, arg_min(m.m, k.rk) AS m FROM k JOIN m ON m.pid = k.pid AND m.dim = k.dim
          WHERE m.left_n >= {k} AND m.n - m.left_n >= {k} GROUP BY k.pid)
   SELECT w.rid, {wwt}w.pid * 2 + CAST({self.v} > k.m AS BIGINT), {self.cols}, lv.l, FALSE
   FROM o AS w JOIN ok AS k ON k.pid = w.pid CROSS JOIN lv
   UNION ALL
   SELECT w.*, lv.l, TRUE FROM o AS w CROSS JOIN lv WHERE w.pid NOT IN (SELECT pid FROM ok))
) SELECT count(DISTINCT (lvl, pid)), max(lvl), {'sum(wt)' if weighted else 'count(*)'} FROM r"""

    def _labels(self) -> str:
        """Per class (a class per row's hash, as many as the release's), each QI's lowest and
        highest code and their values, formatted as one label, a string per QI."""
        d = len(self.qis)
        lohi = ", ".join(f"min(c{i}) AS lo{i}, max(c{i}) AS hi{i}" for i in range(d))
        lab = ", ".join(f"CASE WHEN g.lo{i} = g.hi{i} THEN CAST(l{i}.v AS VARCHAR) ELSE '[' || CAST(l{i}.v AS VARCHAR) || ', ' "
                        f"|| CAST(h{i}.v AS VARCHAR) || ']' END AS q{i}" for i in range(d))
        joins = " ".join(f"JOIN _fd{i} AS l{i} ON l{i}.c = g.lo{i} JOIN _fd{i} AS h{i} ON h{i}.c = g.hi{i}" for i in range(d))
        return (f"CREATE OR REPLACE TABLE _flabx AS SELECT g.cls, {lab} FROM (SELECT CAST(hash(rid) % {self.classes} AS BIGINT) "
                f"AS cls, {lohi} FROM _fw GROUP BY 1) AS g {joins}")

    def measure(self) -> None:
        for key, (_, sql) in self.steps.items():
            t0 = time.perf_counter()
            for x in [sql] if isinstance(sql, str) else sql:
                got = self.e.fetch_rows(x)[1][0] if x.lstrip().startswith(("SELECT", "WITH")) else self.e.execute(x)
            self.runs[key].append(time.perf_counter() - t0)
            if key.startswith("lean"):  # (partitions, rounds, rows): what the rounds' floors found
                self.found[key] = got

    def report(self, allowed: float, target: float) -> None:
        med = {k: statistics.median(v) for k, v in self.runs.items()}
        per_pass = med["hist"] + med["relabel"]
        rounds = self.passes * per_pass
        rest = med["setup"] + med["dicts"] + med["labels"] + med["release"] + med["verify"]  # what every plan pays beside its rounds
        total = rest + rounds
        print(f"floors ({self.rows} rows; a level-wise run: {self.rounds} rounds, {self.classes} classes, "
              f"the rows cut add up to {self.passes:.2f} passes over the table):")
        for k, (label, _) in self.steps.items():
            found = f" [{self.found[k][0]} classes, {self.found[k][1]} rounds]" if k in self.found else ""
            print(f"  {label}: median {med[k]:.4f} s ({', '.join(f'{x:.4f}' for x in self.runs[k])}){found}")
        print(f"  rounds: {self.passes:.2f} passes x {per_pass:.4f} s = {rounds:.3f} s")
        print(f"  sum of the floors (set-up + dictionaries + rounds + labels + release + verification): {total:.3f} s; "
              f"the target ({target:g}x the peer) allows {allowed:.3f} s: "
              + ("out of reach" if total >= allowed else f"{allowed - total:.3f} s left for everything else"))
        print(f"  with the leanest one-statement rounds instead: {rest + med['lean']:.3f} s")
        every = min(med["lean_all"], med["lean_all_w"])
        both = rest + every
        print(f"  the algorithm both run (every dimension tried in width order), each step at its floor: set-up + "
              f"dictionaries + rounds ({'distinct tuples' if med['lean_all_w'] < med['lean_all'] else 'rows'}) + labels + release + "
              f"verification = {med['setup']:.3f} + {med['dicts']:.3f} + {every:.3f} + {med['labels']:.3f} + "
              f"{med['release']:.3f} + {med['verify']:.3f} = {both:.3f} s; allowed {allowed:.3f} s: "
              + (f"out of reach (the floors alone are {both / allowed:.2f}x what the target allows)" if both >= allowed
                 else f"{allowed - both:.3f} s left for everything else"))


if __name__ == "__main__":
    raise SystemExit(main())

"""anonydb's Mondrian against qiyuangong/Mondrian, the classic pure-Python strict Mondrian (MIT), in
one process, interleaved (issue 29's peer targets).

    python benchmarks/bench_peer.py adult --repeat 5
    python benchmarks/bench_peer.py census --rows 1000000 --repeat 3

Both run k = 10 on 8 QIs with strict cuts; anonydb with categorical="order", the peer on the same
rows with every categorical QI coded by its rank in sorted value order (as anonydb codes it), the
data read out of the database before the peer's clock starts. ``adult``: Adult's 8 QIs
(age numeric), sensitive salary-class. ``census``: anonydb's synthetic census of ROWS rows
(age and hours_per_week numeric), sensitive occupation, as ``../shared/peers/side_synthetic.py``.
Prints each run, the medians, both NCPs and the ratio of medians peer / anonydb. The peer is read
from ``../shared/peers/qiyuangong`` (it is not vendored here); without it the script says so and
exits 2.
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
    for i in range(a.repeat):  # alternate, so both see the same machine load
        t0 = time.perf_counter()
        res = anonymize("t", qis, sa, out="rel", engine=e, k=10, categorical="order", identifiers=ids, replace=True)
        ours.append(time.perf_counter() - t0)
        copy = [list(r) for r in data]  # the peer may change its input
        t0 = time.perf_counter()
        _, (peer_ncp, _) = mondrian(copy, 10, False)
        theirs.append(time.perf_counter() - t0)
        print(f"run {i + 1}: anonydb {ours[-1]:.3f} s, peer {theirs[-1]:.3f} s", flush=True)
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"{a.data} {rows} rows, k=10, {len(qis)} QIs: anonydb median {mo:.3f} s (NCP {100 * res.utility['ncp']:.2f}%, "
          f"{res.classes} classes) | qiyuangong median {mt:.3f} s (NCP {peer_ncp:.2f}%) | peer/anonydb {mt / mo:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

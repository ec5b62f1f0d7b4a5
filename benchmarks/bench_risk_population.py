"""Time anonydb.risk.population.uniqueness (Zayatz, Pitman, SNB, Dankar) on synthetic class-size
histograms of 10, 300 and 3,000 distinct sizes, for populations of 1e6 to 1e10 records.

    python benchmarks/bench_risk_population.py --repeat 5

Each histogram is a power law (c_j ~ j^-2.2, the shape where every model converges) or, with
--shape flat, equal counts for every size (where Pitman has no root and every solver start runs to
its end: the slow case). The sample has n records; N is at least n. Prints the median seconds over
--repeat calls per row, and each row's Dankar model. Target: 0.5 s at any size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from anonydb.risk.population import uniqueness  # noqa: E402


def histogram(distinct: int, shape: str) -> dict[int, int]:
    """Class sizes 1..distinct, c_j ~ 200,000 j^-2.2 (at least 1) or 3 each (flat)."""
    if shape == "flat":
        return {j: 3 for j in range(1, distinct + 1)}
    return {j: max(1, round(200_000 * j ** -2.2)) for j in range(1, distinct + 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shape", choices=["power", "flat", "both"], default="both")
    args = ap.parse_args()
    shapes = ["power", "flat"] if args.shape == "both" else [args.shape]
    print(f"{'shape':6} {'sizes':>6} {'n':>10} {'N':>8} {'median s':>9} {'max s':>7}  dankar")
    for shape in shapes:
        for distinct in (10, 300, 3000):
            hist = histogram(distinct, shape)
            n = sum(j * c for j, c in hist.items())
            for N in (10**6, 10**7, 10**8, 10**9, 10**10):
                N = max(N, n)
                times = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    result = uniqueness(hist, N)
                    times.append(time.perf_counter() - t0)
                print(f"{shape:6} {len(hist):>6} {n:>10} {N:>8.0e} {statistics.median(times):>9.4f} "
                      f"{max(times):>7.4f}  {result['dankar_model']}")


if __name__ == "__main__":
    main()

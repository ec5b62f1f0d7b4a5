"""Peer harness: the pip package ``anonypy`` (Mondrian k-anonymity) on Adult, for comparison with anonydb.

anonypy 0.2.1 (``Mondrian.partition``): top-down, strict Mondrian over a BFS queue. Per partition it
sorts the QIs by normalized span (numeric: range / global range; categorical: #distinct / global #distinct)
and takes the first QI whose split leaves both halves with >= k rows. Numeric split: ``< median`` vs
``>= median``. Categorical split (only for pandas ``category`` dtype; object columns are treated as
numeric and fail): the partition's distinct values in order of first appearance (``Series.unique()``,
not sorted), first half vs second half. It returns a list of ``pd.Index`` (row labels); ``anonymize``
then generalizes each partition (numeric "min-max", categorical comma-joined set) into one row per
(partition, sensitive value) with a count.

    python benchmarks/peers/anonypy_peer.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pandas as pd
from anonypy import anonypy as ap
from anonypy import mondrian

ROOT = Path(__file__).resolve().parents[2]
QI = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country", "occupation"]
NUMERIC = {"age"}


def load_adult_frame() -> pd.DataFrame:
    """Adult (ARX extract, 30,162 rows, ';'-separated) as read from the file, default RangeIndex."""
    try:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        from anonydb.datasets import adult_dir
        folder = adult_dir()
    except Exception:  # anonydb not importable here: the layout beside the checkout
        folder = ROOT.parent / "shared" / "datasets" / "adult"
    return pd.read_csv(folder / "adult.csv", sep=";", skipinitialspace=True)


def _prepare(df: pd.DataFrame, qi: list[str], sensitive: str) -> pd.DataFrame:
    """anonypy keys categorical handling on the ``category`` dtype and works on index labels:
    cast the non-numeric QIs and the sensitive column, and make labels = positions."""
    out = df.reset_index(drop=True)
    for c in [*qi, sensitive]:
        if not pd.api.types.is_numeric_dtype(out[c]):
            out[c] = out[c].astype("category")
    return out


def run_anonypy(df, qi, sensitive, k, generalize: bool = True):
    """Seconds for anonypy's Mondrian partitioning (+ its generalization step, ``anonymize``, unless
    ``generalize=False``) and the partitions as lists of positional row indices. Data preparation
    (dtype casts) is not timed."""
    data = _prepare(df, list(qi), sensitive)
    m = mondrian.Mondrian(data, list(qi), sensitive)
    t0 = time.perf_counter()
    parts = m.partition(k)
    if generalize:
        ap.anonymize(data, parts, list(qi), sensitive)
    seconds = time.perf_counter() - t0
    return seconds, [p.tolist() for p in parts]


def ncp(df, qi, partitions, categorical) -> float:
    """Average NCP over records and QIs, GCP / (n * d). Numeric: range_P / range_T; categorical (flat,
    no hierarchy): 0 for one distinct value, else #distinct_P / #distinct_T."""
    data = df.reset_index(drop=True)
    n = sum(len(p) for p in partitions)
    gid = pd.Series(0, index=data.index)
    for i, p in enumerate(partitions):
        gid.iloc[p] = i
    size = gid.value_counts().sort_index()
    gcp = 0.0
    for a in qi:
        g = data[a].groupby(gid.values)
        if a in categorical:
            d = g.nunique()
            per = (d / data[a].nunique()).where(d > 1, 0.0)
        else:
            span = data[a].max() - data[a].min()
            per = (g.max() - g.min()) / span if span else g.max() * 0.0
        gcp += float((per * size).sum())
    return gcp / (n * len(qi))


if __name__ == "__main__":
    df = load_adult_frame()
    sensitive = next((c for c in ("income", "salary-class") if c in df.columns), df.columns[-1])
    k, repeat = 10, 3
    cat = [q for q in QI if q not in NUMERIC]
    runs = [run_anonypy(df, QI, sensitive, k) for _ in range(repeat)]
    part_only = [run_anonypy(df, QI, sensitive, k, generalize=False)[0] for _ in range(repeat)]
    parts = runs[0][1]
    flat = sorted(i for p in parts for i in p)
    assert flat == list(range(len(df))), "partitions do not cover the rows exactly once"
    assert all(r[1] == parts for r in runs), "runs differ"
    print(f"anonypy Mondrian on Adult: {len(df)} rows, k={k}, QIs={QI}, sensitive={sensitive}")
    print(f"median seconds (partition + generalize) over {repeat}: {statistics.median(r[0] for r in runs):.3f}")
    print(f"median seconds (partition only)        over {repeat}: {statistics.median(part_only):.3f}")
    print(f"partitions: {len(parts)}, min size: {min(map(len, parts))}, max size: {max(map(len, parts))}")
    print(f"NCP: {100 * ncp(df, QI, parts, cat):.2f}%")

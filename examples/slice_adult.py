"""Slice the Adult extract (../shared/datasets/adult) into an l-diverse sliced release, then compare it
with an Anatomy release of the same l: membership disclosure (fake tuples, matching buckets) and
the error of random COUNT queries.

    python examples/slice_adult.py
"""

from __future__ import annotations

import anonydb
from anonydb.datasets import load_adult
from anonydb.attacks.membership import anatomy_membership
from anonydb.methods import anatomy, slicing
from anonydb.utility.queries import query_error, workload

QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]


def main() -> None:
    e = anonydb.connect()
    load_adult(e, "adult")
    r = slicing("adult", QI, "occupation", l=5, columns=3, out="adult_sliced", engine=e, membership=True)
    print(r.format())
    print(r.membership.format())
    print("\nphi^2 with occupation:", ", ".join(
        f"{a} {v:.3f}" for (a, b), v in sorted(r.phi2.items(), key=lambda kv: -kv[1]) if b == "occupation"))
    print("\nthe sliced table (first rows):")
    for row in e.fetch_rows("SELECT * FROM adult_sliced LIMIT 4")[1]:
        print(" ", row)

    a = anatomy("adult", QI, "occupation", l=5, out="adult_anatomy", engine=e)
    print("\n" + a.format())
    print(anatomy_membership(e, "adult", a.qit, a.st, QI, "occupation").format())

    qs = workload(e, "adult", QI, "occupation", n=500, dim=2, sel=0.1, seed=1)
    sliced = query_error(e, "adult", qs, columns=r.tables, sensitive="occupation")
    anat = query_error(e, "adult", qs, qit=a.qit, st=a.st, sensitive="occupation")
    print(f"\n500 COUNT queries: relative error {sliced['rho']:.1f}% on the slicing, {anat['rho']:.1f}% on Anatomy "
          f"(medians {sliced['median']:.1f}% / {anat['median']:.1f}%)")


if __name__ == "__main__":
    main()

"""Check the Adult extract (../shared/datasets/adult) against several privacy models, raw and
after generalizing it with the ARX hierarchies shipped beside it.

    python examples/check_adult.py
"""

from __future__ import annotations

from pathlib import Path

import anonydb
from anonydb.datasets import adult_hierarchy_paths, load_adult

QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]


def main() -> None:
    e = anonydb.connect()
    load_adult(e, "adult")
    hier = {attr: anonydb.Hierarchy.from_arx(path) for attr, path in adult_hierarchy_paths().items()}

    print("== raw Adult ==")
    print(anonydb.check("adult", QI, "occupation", engine=e, k=5, l=3, t=0.2, max_groups=3).format(3))

    levels = {"age": 2, "sex": 0, "race": 1, "marital-status": 1, "education": 2, "native-country": 1, "workclass": 1}
    anonydb.generalize(e, "adult", levels, hier, out="adult_release")
    print(f"\n== generalized to {levels} ==")
    report = anonydb.check("adult_release", QI, "occupation", engine=e, k=5, l=3, t=0.2,
                           hierarchies={"occupation": hier["occupation"]}, max_groups=3)
    print(report.format(3))
    Path("adult_release_report.json").write_text(report.to_json())
    e.close()


if __name__ == "__main__":
    main()

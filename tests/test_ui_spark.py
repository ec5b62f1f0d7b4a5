"""The workbench on a local Spark session: the session's views listed from its catalog, a
column's profile against plain counts, and a check, through the same paths as on DuckDB."""

from __future__ import annotations

import pytest

from anonydb.workflow.ui.workbench import Workbench, model_params  # noqa: E402

from conftest import spark_view  # noqa: E402
from test_spark_methods import duck, sp  # noqa: E402,F401  (fixtures)

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


def test_the_workbench_on_spark(duck, sp, spark):
    duck.execute("CREATE OR REPLACE TABLE uisp AS SELECT i AS rid, 20 + i % 9 AS age, CASE WHEN i % 2 = 0 THEN 'F' "
                 "ELSE 'M' END AS sex, 'd' || CAST(i % 4 AS VARCHAR) AS diagnosis FROM range(300) t(i)")
    spark_view(duck, spark, "uisp")
    wb = Workbench(sp, "spark")
    assert {"name": "uisp", "rows": 300, "columns": 4} in wb.sources()
    got = {c["column"]: (c["distinct"], c["nulls"]) for c in wb.profile("uisp")}
    assert got == {"rid": (300, 0), "age": (9, 0), "sex": (2, 0), "diagnosis": (4, 0)}
    labels, counts = wb.histogram("uisp", "diagnosis")
    assert dict(zip(labels, counts)) == {"d0": 75, "d1": 75, "d2": 75, "d3": 75}
    rep = wb.check("uisp", {"rid": "identifier", "age": "qi", "sex": "qi", "diagnosis": "sensitive"},
                   model_params({"k": "10"}), suda=False)  # SUDA2 on Spark: tests/test_risk_spark.py
    assert rep["holds"] and rep["riskiest"]["rows"][0][2] == pytest.approx(1 / 16)


def test_a_data_frame_on_spark_is_a_view_for_the_call(sp):
    """A pandas frame checked on Spark: a temporary view of the session for the call, gone after;
    the verdict counts the frame's rows as plain Python does."""
    import collections

    pd = pytest.importorskip("pandas", reason="pandas is not installed (the test extra has it)")
    import anonydb

    rows = [{"age": 20 + i % 5, "sex": "FM"[i % 2]} for i in range(60)]
    r = anonydb.check(pd.DataFrame(rows), qi="age,sex", k=1, engine=sp)
    smallest = min(collections.Counter((x["age"], x["sex"]) for x in rows).values())
    assert r.rows == 60 and r["k-anonymity"].achieved == {"k": smallest} and r.source == "a pandas DataFrame"
    assert not [t.name for t in sp.spark.catalog.listTables() if t.name.startswith("__frame")]

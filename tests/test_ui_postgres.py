"""The workbench on a real PostgreSQL server (tests/pg_server.py): the tables listed, a column's
profile against plain counts, a check and a release through the same paths as on DuckDB."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

from anonydb.workflow.ui.workbench import Workbench, model_params  # noqa: E402

from test_postgres import copy_to_pg, duck, pg  # noqa: E402,F401  (fixtures)

pytestmark = pytest.mark.xdist_group("postgres")


def test_the_workbench_on_postgres(duck, pg):
    duck.execute("CREATE OR REPLACE TABLE uipg AS SELECT i AS rid, 20 + i % 9 AS age, CASE WHEN i % 2 = 0 THEN 'F' "
                 "ELSE 'M' END AS sex, 'd' || CAST(i % 4 AS VARCHAR) AS diagnosis FROM range(300) t(i)")
    copy_to_pg(duck, pg, "uipg")
    wb = Workbench(pg, "postgresql://")
    try:
        assert {"name": "uipg", "rows": 300, "columns": 4} in wb.sources()
        got = {c["column"]: (c["distinct"], c["hint"]) for c in wb.profile("uipg")}
        assert got == {"rid": (300, "likely identifier"), "age": (9, ""), "sex": (2, ""), "diagnosis": (4, "")}
        roles = {"rid": "identifier", "age": "qi", "sex": "qi", "diagnosis": "sensitive"}
        rep = wb.check("uipg", roles, model_params({"k": "10", "l": "2"}))
        assert rep["holds"] and rep["riskiest"]["rows"][0][2] == pytest.approx(1 / 16)  # 18 cells of 16 or 17
        spec = wb.spec("uipg", roles, {}, "mondrian", {"k": 20}, "uipg_release")
        assert "database" not in spec  # a server's URL (and its password) never goes into a spec
        out = wb.release(spec)
        assert out["rows"] == 300 and pg.exists("uipg_release")
    finally:
        for t in ("uipg", "uipg_release"):
            pg.drop(t)

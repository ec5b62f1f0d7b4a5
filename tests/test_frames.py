"""Data frames as sources (pandas, Polars, Arrow): DuckDB reads them in place, PostgreSQL and Spark
load a temporary table and drop it; the verdicts and releases are those of the same rows as a
table, counted here in plain Python; anything else is one line naming the accepted types. The
notebook views (``_repr_html_``) reuse the report page's parts, and a notebook runs end to end."""

from __future__ import annotations

import collections

import pytest

import anonydb

pd = pytest.importorskip("pandas", reason="pandas is not installed (the test extra has it)")
pl = pytest.importorskip("polars", reason="Polars is not installed (the test extra has it)")
pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (the test extra has it)")

ROWS = [{"age": 20 + i % 6, "sex": "FM"[i % 2], "zip": f"z{i % 3}", "dx": ["flu", "cold", "gout"][i % 4 % 3]}
        for i in range(120)]


def frames():
    df = pd.DataFrame(ROWS)
    return {"pandas": df, "polars": pl.from_pandas(df), "lazy": pl.from_pandas(df).lazy(),
            "arrow": pa.Table.from_pandas(df, preserve_index=False)}


def smallest(rows, qi):
    return min(collections.Counter(tuple(r[q] for q in qi) for r in rows).values())


@pytest.mark.parametrize("kind", ["pandas", "polars", "lazy", "arrow"])
def test_check_and_anonymize_take_a_frame(kind):
    frame = frames()[kind]
    qi = ["age", "sex", "zip"]
    want = smallest(ROWS, qi)  # 6 x 2 x 3 cells over 120 rows, correlated: the oracle counts them
    r = anonydb.check(frame, qi=qi, sensitive="dx", k=want + 1)
    assert not r.holds and r["k-anonymity"].achieved == {"k": want} and r.rows == 120
    assert r.source == {"pandas": "a pandas DataFrame", "polars": "a Polars DataFrame", "lazy": "a Polars LazyFrame",
                        "arrow": "an Arrow Table"}[kind]
    rel = anonydb.anonymize(frame, qi=qi, sensitive="dx", out="rel", k=10)
    got = rel.to_pandas()
    assert len(got) == 120 and got.groupby(qi).size().min() >= 10
    assert rel.to_polars().shape == got.shape and rel.to_arrow().num_rows == 120


def test_duckdb_reads_a_frame_in_place():
    """No row of the frame passes through an INSERT: DuckDB scans the registered frame, and the
    registration is gone after the call."""
    eng = anonydb.connect(None)
    r = anonydb.check(frames()["pandas"], qi="age,sex", k=2, engine=eng)
    assert r.rows == 120 and not any(x.sql.lstrip().upper().startswith("INSERT") for x in eng.log)
    assert not [n for n, in eng.fetch_rows("SELECT view_name FROM duckdb_views() WHERE NOT internal")[1]
                if n.startswith("__frame")]


def test_anything_else_is_one_line():
    for bad in ([1, 2], {"age": [1]}, 42):
        with pytest.raises(anonydb.InputError, match="a source is a table or view name, a CSV or Parquet path, a "
                                                     "pandas or Polars DataFrame") as e:
            anonydb.check(bad, qi="age", k=2)
        assert "\n" not in str(e.value)


def test_the_notebook_views_reuse_the_report_page():
    frame = frames()["pandas"]
    r = anonydb.check(frame, qi="age,sex,zip", sensitive="dx", k=2, l=2)
    table = r.to_pandas()
    assert list(table["model"]) == ["k-anonymity", "l-diversity (distinct)"]
    assert table["holds"].tolist() == [v.holds for v in r.verdicts]
    html = r._repr_html_()
    assert '<table id="verdicts">' in html and "k-anonymity" in html and "<html" not in html
    rel = anonydb.anonymize(frame, qi="age,sex,zip", sensitive="dx", out="rel", k=5)
    page = rel._repr_html_()
    assert '<table id="verdicts">' in page and 'id="class-histogram"' in page and "<body" not in page
    from anonydb.risk.assess import assess

    assert "Re-identification risk by attacker model" in assess(frame, ["age", "sex"])._repr_html_()


def test_a_frame_on_postgres_is_a_temporary_table_dropped_after(pg_url):
    """On PostgreSQL the frame is a temporary table for the call: the verdict is DuckDB's, and no
    table of it is left."""
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")
    pg = anonydb.connect(pg_url)
    frame = frames()["polars"]
    r = anonydb.check(frame, qi="age,sex,zip", k=1, engine=pg)
    assert r.rows == 120 and r["k-anonymity"].achieved == {"k": smallest(ROWS, ["age", "sex", "zip"])}
    left = pg.fetch_rows("SELECT count(*) FROM pg_class WHERE relname LIKE '\\_\\_frame%'")[1][0][0]
    pg.close()
    assert left == 0


def test_a_notebook_from_a_frame_to_a_release(tmp_path):
    """A notebook (nbclient, a real kernel) checks a DataFrame, releases it and displays both: the
    outputs are the HTML views, and the release's classes hold k."""
    why = "a notebook needs nbformat, nbclient and ipykernel (the test extra has them)"
    nbformat = pytest.importorskip("nbformat", reason=why)
    nbclient = pytest.importorskip("nbclient", reason=why)
    pytest.importorskip("ipykernel", reason=why)
    cells = [
        "import pandas as pd\nimport anonydb\n"
        "df = pd.DataFrame({'age': [20 + i % 6 for i in range(120)], 'sex': ['FM'[i % 2] for i in range(120)],"
        " 'dx': [['flu', 'cold', 'gout'][i % 3] for i in range(120)]})",
        "anonydb.check(df, qi=['age', 'sex'], sensitive='dx', k=5)",
        "rel = anonydb.anonymize(df, qi=['age', 'sex'], sensitive='dx', out='rel', k=25)\nrel",
        "int(rel.to_pandas().groupby(['age', 'sex']).size().min())",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                            ).execute()
    outputs = [c.outputs for c in nb.cells]
    check_html = outputs[1][0]["data"]["text/html"]
    assert '<table id="verdicts">' in check_html and "every model holds" in check_html
    release_html = outputs[2][0]["data"]["text/html"]
    assert "anonydb release rel" in release_html and 'id="class-histogram"' in release_html
    assert int(outputs[3][0]["data"]["text/plain"]) >= 25

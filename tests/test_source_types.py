"""Fail closed on sources: a CSV column's type does not depend on where a value sits, a file that
cannot be read is one InputError line naming it (and the line), and a declared kind that the values
contradict names the offending values with their row numbers."""

from __future__ import annotations

import random

import pytest

import anonydb.sources as sources
from anonydb import InputError
from anonydb.checker import check
from anonydb.workflow.cli import main
from anonydb.schema import validate_roles
from anonydb.sources import open_source
from conftest import DATASETS, make_table, need_shared

ROWS = 30_000


def write_ages(path, bad: dict[int, str] | None = None, rows: int = ROWS, extra: dict[int, str] | None = None):
    """age,sex with integer ages; ``bad`` puts a value in age at a 1-based data row, ``extra``
    replaces a whole data row's text."""
    bad, extra = bad or {}, extra or {}
    lines = ["age,sex"]
    for i in range(1, rows + 1):
        lines.append(extra[i] if i in extra else f"{bad.get(i, 20 + i % 50)},{'mf'[i % 2]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def read_error(engine, path) -> str:
    with pytest.raises(InputError) as e:
        open_source(engine, path)
    msg = str(e.value)
    assert "\n" not in msg and "\r" not in msg
    assert repr(str(path)) in msg  # names the file
    return msg


# --- 1. types from the whole column --------------------------------------------------------------
@pytest.mark.parametrize("row", [5, 778, 25_000])
def test_csv_type_does_not_depend_on_where_a_value_sits(engine, tmp_path, row):
    """DuckDB's default sample (20,480 rows, from a few places) typed 'age' as text when 'abc'
    sat at row 5 or 778 and failed with a conversion error at row 25,000."""
    path = write_ages(tmp_path / f"ages_{row}.csv", bad={row: "abc"})
    with pytest.warns(UserWarning, match=f"column 'age' of ages_{row}.csv is read as text: 1 of its {ROWS:,} values "
                                         f"are not numbers, the first on row {row:,} "):
        rel = open_source(engine, path)  # and said so: issue 53's "no silent guesses"
    assert dict(engine.columns(rel)) == {"age": "VARCHAR", "sex": "VARCHAR"}
    assert engine.scalar(f'SELECT count(*) FROM "{rel}"') == ROWS
    assert engine.scalar(f"SELECT rowid + 1 FROM \"{rel}\" WHERE age = 'abc'") == row  # file order kept
    with pytest.raises(InputError) as e:
        validate_roles(engine, rel, ["age"], None, {"age": "numeric"})
    assert str(e.value) == f"numeric attribute 'age' holds non-numeric values: 'abc' (row {row}) (1 row in all)"


def test_clean_csv_column_stays_numeric(engine, tmp_path):
    rel = open_source(engine, write_ages(tmp_path / "clean.csv"))
    assert dict(engine.columns(rel)) == {"age": "BIGINT", "sex": "VARCHAR"}


# --- 2. unreadable files: one line, the file, the line --------------------------------------------
@pytest.mark.parametrize("row, text, says", [
    (100, "21,m,extra", "line 101: more fields than the header's 2 ('21,m,extra')"),
    (100, "21", "line 101: 1 field where the header has 2 ('21')"),
    (25_000, "21,m,x,y", "line 25001: more fields than the header's 2 ('21,m,x,y')"),
])
def test_ragged_row_is_one_line_with_its_line_number(engine, tmp_path, row, text, says):
    path = write_ages(tmp_path / "ragged.csv", extra={row: text})
    assert read_error(engine, path) == f"cannot read CSV file {str(path)!r}: {says}"


def test_unterminated_quote_names_its_line(engine, tmp_path):
    path = write_ages(tmp_path / "quotes.csv", rows=3_000, extra={1: '21,"m"', 2: '22,"f, x"', 2_000: '23,"oops'})
    assert read_error(engine, path) == f"cannot read CSV file {str(path)!r}: line 2001: a quoted value is never closed"


def test_non_utf8_row_names_its_line(engine, tmp_path):
    path = write_ages(tmp_path / "latin1.csv", rows=3_000)
    lines = path.read_bytes().split(b"\n")
    lines[1500] = "33,caf\xe9".encode("latin-1")  # data row 1500 = file line 1501
    path.write_bytes(b"\n".join(lines))
    assert read_error(engine, path) == (f"cannot read CSV file {str(path)!r}: line 1501: not UTF-8 text "
                                        f"(a binary, compressed or differently encoded file?)")


def test_garbage_csv_is_one_line(engine, tmp_path):
    path = tmp_path / "garbage.csv"
    path.write_bytes(random.Random(7).randbytes(5_000))
    msg = read_error(engine, path)
    assert msg.startswith(f"cannot read CSV file {str(path)!r}: ") and len(msg) < 300


def test_parquet_file_read_as_csv_is_one_line(engine, tmp_path):
    pq = tmp_path / "real.parquet"
    engine.execute(f"COPY (SELECT 1 AS a, 'x' AS b) TO '{pq}' (FORMAT parquet)")
    disguised = tmp_path / "disguised.csv"
    disguised.write_bytes(pq.read_bytes())
    msg = read_error(engine, disguised)
    assert msg.startswith(f"cannot read CSV file {str(disguised)!r}: ") and len(msg) < 300


@pytest.mark.parametrize("content, says", [
    (random.Random(3).randbytes(5_000), "No magic bytes found at end of file"),
    (b"a,b\n1,2\n", "too small to be a Parquet file"),
])
def test_garbage_parquet_is_one_line(engine, tmp_path, content, says):
    path = tmp_path / "garbage.parquet"
    path.write_bytes(content)
    msg = read_error(engine, path)
    assert msg.startswith(f"cannot read Parquet file {str(path)!r}: ") and says in msg


def test_unreadable_file_is_an_input_error(engine, tmp_path, monkeypatch):
    path = write_ages(tmp_path / "locked.csv", rows=10)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sources, "open", denied, raising=False)  # root reads a chmod 000 file anyway
    assert read_error(engine, path) == f"cannot read file {str(path)!r}: Permission denied"


def test_cli_prints_the_read_error_on_one_line(tmp_path, capsys):
    path = write_ages(tmp_path / "ragged.csv", extra={777: "21,m,extra"})
    code = main(["check", str(path), "--qi", "age", "--k", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"anonydb: error: cannot read CSV file {str(path)!r}: line 778: more fields than the header's 2 " \
                  f"('21,m,extra')\n"


# --- 3. declared kinds the values contradict: values and rows ---------------------------------------
def test_numeric_kind_lists_values_with_rows_and_the_count(engine):
    ages = ["30", "x1", "31", "", "32"] + [f"b{i}" for i in range(12)] + ["33"]
    t = make_table(engine, "people", ["age", "sex"], [(a, "m") for a in ages] + [(None, "f")])
    with pytest.raises(InputError) as e:
        validate_roles(engine, t, ["age"], None, {"age": "numeric"})
    shown = ", ".join(f"'b{i}' (row {6 + i})" for i in range(8))
    assert str(e.value) == (f"numeric attribute 'age' holds non-numeric values: 'x1' (row 2), '' (row 4), "
                            f"{shown} ... (14 rows in all)")


def test_row_numbers_of_a_view_and_of_a_shadowing_rowid_column(engine):
    make_table(engine, "base", ["rowid", "age"], [(100, "1"), (101, "two"), (102, "3"), (103, "four")])
    engine.execute("CREATE VIEW v AS SELECT age FROM base")
    for rel in ("base", "v"):
        with pytest.raises(InputError) as e:
            validate_roles(engine, rel, ["age"], None, {"age": "numeric"})
        assert str(e.value) == "numeric attribute 'age' holds non-numeric values: 'two' (row 2), 'four' (row 4) " \
                               "(2 rows in all)"


def test_date_kind_lists_values_with_rows(engine):
    days = ["2020-01-01", "2020-02-30", "2021-06-01 10:00:00", "soon", None, "2020-13-01", "2022-12-31"]
    t = make_table(engine, "visits", ["day", "zip"], [(d, "476") for d in days])
    with pytest.raises(InputError) as e:
        validate_roles(engine, t, ["day"], None, {"day": "date"})
    assert str(e.value) == ("date attribute 'day' holds values that are not dates: '2020-02-30' (row 2), "
                            "'soon' (row 4), '2020-13-01' (row 6) (3 rows in all)")
    good = make_table(engine, "visits2", ["day"], [(d,) for d in ["2020-01-01", "2021-06-01 10:00:00", None]])
    assert validate_roles(engine, good, ["day"], None, {"day": "date"}) == {"day": "VARCHAR"}
    engine.execute("CREATE TABLE typed AS SELECT DATE '2020-01-01' AS day")
    assert validate_roles(engine, "typed", ["day"], None, {"day": "date"}) == {"day": "DATE"}


def test_date_kind_on_a_number_column(engine):
    t = make_table(engine, "years", ["year"], [(1999,), (2000,)])
    with pytest.raises(InputError, match=r"date attribute 'year' holds values that are not dates: 1999 \(row 1\), "
                                         r"2000 \(row 2\) \(2 rows in all\)$"):
        validate_roles(engine, t, ["year"], None, {"year": "date"})


def test_file_rows_are_data_rows_of_the_file(engine):
    need_shared()
    with pytest.raises(InputError) as e:
        check(str(DATASETS / "toy" / "test_dirty.csv"), "age,gender", engine=engine, k=2, kinds={"age": "numeric"})
    assert str(e.value) == ("numeric attribute 'age' holds non-numeric values: '4e' (row 2), '7f' (row 6) "
                            "(2 rows in all)")


def test_cli_numeric_names_the_rows(tmp_path, capsys):
    path = write_ages(tmp_path / "ages.csv", bad={25_000: "abc", 778: "x"})
    code = main(["check", str(path), "--qi", "age,sex", "--k", "2", "--numeric", "age"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == ("anonydb: error: numeric attribute 'age' holds non-numeric values: 'x' (row 778), "
                   "'abc' (row 25000) (2 rows in all)\n")

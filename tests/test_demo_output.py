"""``anonydb demo`` reads well (issue 53): what a new user sees in the demo's output.

- the sample rows of both releases are the first rows as the tables hold them (the generalized
  release and Mondrian's each in a secret random order), not re-sorted;
- a level vector prints as ``age=1 sex=0 ...`` (every QI, in order), never as a Python dict;
- a long value set is cut only after a whole value, then ``+N more`` with N the values left out;
- every fraction (t and the like) prints one way: ``a/b (0.dddd)``, in the check reports and in
  the Mondrian result alike.

One demo run (5000 rows, t = 0.4: the last rung of the ladder passes) serves the module; its
engine is kept open so that the tests read the tables it wrote on their own.
"""

from __future__ import annotations

import contextlib
import io
import re
from fractions import Fraction

import pytest

from anonydb.datasets import CENSUS_QIS
from anonydb.engines.duckdb import DuckDBEngine
from anonydb.workflow import demo

ROWS, T = 5000, 0.4


class _KeptOpen(DuckDBEngine):
    """The demo's engine, left open when the demo closes it (the fixture closes it)."""

    made: list["_KeptOpen"] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _KeptOpen.made.append(self)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def run():
    """(the demo's output, its exit code, its engine with tables census, release, mondrian_release)."""
    _KeptOpen.made.clear()
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setattr(demo, "DuckDBEngine", _KeptOpen)
        code = demo.run_demo(rows=ROWS, t=T)
    (engine,) = _KeptOpen.made
    yield out.getvalue(), code, engine
    DuckDBEngine.close(engine)


def _sample(out: str, table: str) -> list[str]:
    """The sample rows printed under "first rows of table <table>" (up to the next blank line)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"first rows of table {table},"))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(line.strip())
    return rows


def _as_printed(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in row.items()) + "}"


def test_the_demo_passes_and_prints_both_samples(run):
    out, code, _ = run
    assert code == 0, out
    assert "ALL MODELS HOLD" in out
    assert len(_sample(out, "release")) == 5 and len(_sample(out, "mondrian_release")) == 3


def test_release_rows_are_shown_as_stored_not_sorted(run):
    """The generalized release's rows as the table holds them (read here by rowid, DuckDB's
    storage order): a secret shuffle, neither ORDER BY age, zip, occupation nor the census table's
    order (person_id), which would give the dropped id away."""
    out, _, engine = run
    shown = _sample(out, "release")
    stored = engine.fetch("SELECT * FROM release ORDER BY rowid LIMIT 5")
    assert all(len(str(v)) <= 32 for r in stored for v in r.values())  # printed unabbreviated
    assert shown == [_as_printed(r) for r in stored]
    old = engine.fetch("SELECT * FROM release ORDER BY age, zip, occupation LIMIT 5")
    assert shown != [_as_printed(r) for r in old]
    printed_occupations = [re.search(r"occupation: ([^,}]+)}$", line).group(1) for line in shown]
    assert printed_occupations != sorted(printed_occupations)
    published = [r["occupation"] for r in engine.fetch("SELECT occupation FROM release ORDER BY rowid")]
    census = [r["occupation"] for r in engine.fetch("SELECT occupation FROM census ORDER BY person_id")]
    assert published != census and sorted(published) == sorted(census)  # every row, in another order


def test_mondrian_rows_are_shown_in_their_secret_order(run):
    """Mondrian's sample is the first rows as stored (its secret shuffle): the same classes, in the
    same order, as the table read here by rowid."""
    out, _, engine = run
    shown = _sample(out, "mondrian_release")
    stored = engine.fetch("SELECT eq_class, age, sex, zip, education, occupation FROM mondrian_release "
                          "ORDER BY rowid LIMIT 3")
    assert [int(re.match(r"\{eq_class: (\d+),", line).group(1)) for line in shown] == [r["eq_class"] for r in stored]
    assert [re.search(r"occupation: ([^,}]+)}$", line).group(1) for line in shown] == [r["occupation"] for r in stored]
    assert [re.search(r"age: (\[\d+, \d+\])", line).group(1) for line in shown] == [r["age"] for r in stored]


def test_levels_print_as_name_equals_level(run):
    out, _, _ = run
    assert "{'" not in out and "':" not in out
    ladder = [line for line in out.splitlines() if line.startswith("levels")]
    assert ladder and len(ladder) <= len(demo.LADDER)
    for line, vector in zip(ladder, demo.LADDER):
        assert re.match(r"^levels (\w+=\d+ ?)+: \d+ groups \(\d+\.\d\d s\)$", line), line
        assert line.split(":")[0] == "levels " + " ".join(f"{q}={n}" for q, n in zip(CENSUS_QIS, vector))


def _check_cut(full: str, printed: str) -> bool:
    """``printed`` is ``full`` or a cut of the value set ``full``: a prefix of its values, whole, then
    "+N more" with N counted here from ``full``. Returns whether it was cut."""
    if printed == full:
        return False
    values = full[1:-1].split(", ")
    m = re.fullmatch(r"\{(.*), \+(\d+) more\}", printed)
    assert m, printed
    shown = m.group(1).split(", ")
    assert shown == values[:len(shown)] and len(shown) >= 1
    assert int(m.group(2)) == len(values) - len(shown) > 0
    return True


def test_short_cuts_a_set_at_a_whole_value_with_the_count_left_out():
    zips = [f"{2139 + i:05d}" for i in range(130)]
    full = "{" + ", ".join(zips) + "}"
    printed = demo.short(full)
    assert printed == "{02139, 02140, 02141, +127 more}" and len(printed) <= 32
    assert _check_cut(full, printed)
    assert demo.short(full, 40) == "{02139, 02140, 02141, 02142, +126 more}"
    for width in range(10, 60):  # whatever the width, only whole values and the exact rest
        _check_cut(full, demo.short(full, width))
    education = "{10th, 11th, 12th, 1st-4th, 5th-6th, 7th-8th, 9th, Assoc-acdm, Assoc-voc}"
    assert _check_cut(education, demo.short(education)) and "+" in demo.short(education)
    assert demo.short("{a, b, c}") == "{a, b, c}"
    one_long = "{" + "x" * 50 + ", y}"  # the first value is shown whole however long
    assert demo.short(one_long) in (one_long, "{" + "x" * 50 + ", +1 more}")


def test_short_cuts_other_labels_at_a_whole_word():
    text = "the quick brown fox jumps over the lazy dog, twice over"
    printed = demo.short(text)
    assert printed == "the quick brown fox jumps ..." and len(printed) <= 32
    assert printed[:-4] == " ".join(text.split()[:len(printed[:-4].split())])
    assert demo.short("short label") == "short label"


def test_long_sets_in_the_mondrian_sample_are_cut_at_whole_values(run):
    """Every abbreviated set of the printed sample against the full label in the table."""
    out, _, engine = run
    cuts = 0
    for line in _sample(out, "mondrian_release"):
        cls = int(re.match(r"\{eq_class: (\d+),", line).group(1))
        full = engine.fetch(f"SELECT zip, education FROM mondrian_release WHERE eq_class = {cls} LIMIT 1")[0]
        for col, nxt in (("zip", "education"), ("education", "occupation")):
            printed = re.search(rf"{col}: (.*?), {nxt}: ", line).group(1)
            assert len(printed) <= 32
            cuts += _check_cut(full[col], printed)
    assert cuts >= 1  # the sample shows at least one cut set (zip sets of a class run long)


FIGURE = re.compile(r"\b(\d+)/(\d+)\b(?! more)( \([^)]*\))?")


def test_fractions_print_one_way(run):
    """No "~" and no other decimal format: each a/b is followed by its decimal to 4 places, in the
    check reports (raw table, release) and in the Mondrian result."""
    out, _, _ = run
    assert "~" not in out
    figures = FIGURE.findall(out)
    assert figures
    for num, den, dec in figures:
        assert dec == f" ({float(Fraction(int(num), int(den))):.4f})", (num, den, dec)
    t_lines = [line for line in out.splitlines() if "achieved t = " in line]
    assert len(t_lines) >= 3 and any(line.lstrip().startswith("verified:") for line in t_lines)
    for line in t_lines:
        for rest in line.split("achieved t = ")[1:]:
            assert re.match(r"(\d+/\d+ \(\d\.\d{4}\)|\d+)([;),]|$)", rest), line

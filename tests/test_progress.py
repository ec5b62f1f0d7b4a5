"""What a person sees while a release runs, and the guesses it must not make silently (issue 53).

1. The progress display (anonydb.workflow.progress): one line per phase with its time off a
   terminal; on one, a live line with a bar and the share done that ticks while a statement runs
   and is cleared before the result; a failed or interrupted run names the phase it stopped in; a
   run quicker than the delay prints only its result, so an input error stays one line.
2. The command's phases in order, off a terminal, under a pseudo-terminal, and in tmux on 3M rows
   (the slow tier).
3. A CSV column of numbers with a few text values: a warning naming it, the count and the first
   row; --numeric makes those values an error.
4. An export of several files names them; the notes come after a successful build, never before an
   error.
"""

from __future__ import annotations

import io
import os
import random
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import anonydb
from anonydb import events
from anonydb.errors import InputError
from anonydb.workflow import progress as progress_mod
from anonydb.workflow.cli import main
from anonydb.workflow.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
PHASES = ["reading", "coding", "rounds", "output", "verification", "loss", "writing"]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Utf8(io.StringIO):
    """A terminal's stream that says it is UTF-8."""

    encoding = "utf-8"


# --- 1. the display --------------------------------------------------------------------------------

def test_one_line_a_phase_off_a_terminal():
    buf, clock = io.StringIO(), Clock()
    p = Progress(buf, live=False, clock=clock, delay=0)
    p({"phase": "reading"})
    p({"rows": 3000})
    clock.now += 1.5
    p({"phase": "coding", "qis": 8})
    clock.now += 0.5
    p({"phase": "rounds", "total": 100, "unit": "rows closed"})
    p({"round": 3, "open": 5, "classes": 7, "rows_open": 60, "done": 40})
    clock.now += 63
    p.done()
    assert buf.getvalue().splitlines() == [
        "anonydb: reading done in 1.5 s: 3,000 rows",
        "anonydb: coding done in 0.5 s: 8 quasi-identifiers",
        "anonydb: rounds done in 1:03: round 3, 7 classes",  # what is still open is not a result
    ]


def test_a_quick_run_prints_only_its_result_but_warnings_always():
    buf, clock = io.StringIO(), Clock()
    p = Progress(buf, live=False, clock=clock, delay=2.0)
    p({"phase": "reading"})
    p({"warning": "column 'age' of a.csv is read as text"})
    clock.now += 0.5
    p({"phase": "rounds"})
    clock.now += 0.5
    p.done()
    assert buf.getvalue() == "anonydb: warning: column 'age' of a.csv is read as text\n"
    quiet = io.StringIO()
    q = Progress(quiet, enabled=False, delay=0)
    q({"phase": "reading"})
    q({"warning": "w"})
    q.done()
    assert quiet.getvalue() == "anonydb: warning: w\n"


def test_held_lines_show_once_the_run_is_older_than_the_delay():
    buf, clock = io.StringIO(), Clock()
    p = Progress(buf, live=False, clock=clock, delay=2.0)
    p({"phase": "reading"})
    clock.now += 0.5
    p({"phase": "coding"})
    assert buf.getvalue() == ""
    clock.now += 2.0
    p({"phase": "rounds"})  # 2.5 s in: both lines, in order
    assert buf.getvalue() == "anonydb: reading done in 0.5 s\nanonydb: coding done in 2.0 s\n"


def test_live_line_has_a_bar_and_is_cleared_before_the_result(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # the terminal's width: a wider line would be cut to fit
    buf, clock = Utf8(), Clock()
    p = Progress(buf, live=True, clock=clock, tick=None, delay=0)
    p({"phase": "rounds", "total": 200, "unit": "rows closed"})
    clock.now += 4
    p({"round": 2, "classes": 3, "done": 50})
    live = buf.getvalue().split("\r\033[K")[-1]
    # 50 of 200: a quarter, 5 of the bar's 20 cells
    assert live == "  rounds       " + "\u2588" * 5 + "\u2591" * 15 + "  25%  50 of 200 rows closed, round 2, " \
                   "3 classes  4.0 s"
    p.done()
    out = buf.getvalue()
    # the live line cleared, then the phase's line: its facts in a column, its time at the right
    assert out.endswith("\r\033[K  rounds       " + "round 2, 3 classes".ljust(52) + " " + "4.0 s".rjust(8) + "\n")
    ascii_buf = io.StringIO()  # a terminal that is not UTF-8 gets ASCII cells
    a = Progress(ascii_buf, live=True, clock=clock, tick=None, delay=0)
    a({"phase": "lattice", "total": 8, "unit": "nodes settled", "done": 2})
    assert "#####---------------  25%  2 of 8 nodes settled" in ascii_buf.getvalue()


def test_live_line_ticks_while_a_statement_runs():
    buf = io.StringIO()
    ticks = iter(range(1000))
    p = Progress(buf, live=True, clock=lambda: float(next(ticks)), tick=0.01, delay=0)
    p({"phase": "verification"})
    time.sleep(0.3)  # no event: only the ticker draws
    p.done()
    drawn = [x for x in buf.getvalue().split("\r\033[K") if x.startswith("  verification")]
    times = {re.search(r"(\d+\.\d) s$", x.strip()).group(1) for x in drawn if x.strip()}
    assert len(times) >= 3, drawn


def test_a_failed_run_names_where_it_stopped_an_input_error_does_not():
    buf, clock = io.StringIO(), Clock()
    p = Progress(buf, live=False, clock=clock, delay=2.0)
    with pytest.raises(RuntimeError):
        with p.running():
            events.phase("reading")
            clock.now += 0.25
            events.phase("rounds", total=10, unit="rows closed")
            events.update(round=4, done=6)
            clock.now += 0.5
            raise RuntimeError("the machine ran out of memory")
    assert buf.getvalue().splitlines() == ["anonydb: reading done in 0.2 s",
                                           "anonydb: rounds: stopped after 0.5 s (6 of 10 rows closed, round 4)"]
    buf2 = io.StringIO()
    q = Progress(buf2, live=False, clock=clock, delay=2.0)
    with pytest.raises(InputError):
        with q.running():
            events.phase("reading")
            raise InputError("bad")
    assert buf2.getvalue() == ""


# --- 2. the command's phases -------------------------------------------------------------------------

def _census_csv(path: Path, rows: int, seed: int = 7) -> Path:
    rnd = random.Random(seed)
    with path.open("w") as f:
        f.write("age,zip,sex,disease\n")
        for _ in range(rows):
            f.write(f"{rnd.randint(17, 90)},{rnd.choice(['13053', '13068', '14850', '14853'])},"
                    f"{rnd.choice('MF')},{rnd.choice(['flu', 'cancer', 'hiv', 'gastritis', 'ulcer'])}\n")
    return path


def test_anonymize_logs_every_phase_off_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress_mod, "DELAY", 0)
    src = _census_csv(tmp_path / "people.csv", 2000)
    code = main(["anonymize", str(src), "--qi", "age,zip,sex", "--sensitive", "disease", "--k", "5",
                 "--out", "rel", "--db", str(tmp_path / "w.db")])
    out, err = capsys.readouterr()
    assert code == 0, err
    names = [m.group(1) for m in re.finditer(r"^anonydb: (\w+) done in \d+\.\d s", err, re.M)]
    assert names == PHASES, err
    assert "\r" not in err and "\033" not in err  # no terminal codes in a log
    assert out.startswith("release rel: 2000 rows")


def test_quiet_shows_no_phases(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress_mod, "DELAY", 0)
    src = _census_csv(tmp_path / "people.csv", 500)
    assert main(["anonymize", str(src), "--qi", "age,zip", "--k", "5", "--out", "rel", "--db",
                 str(tmp_path / "w.db"), "--quiet"]) == 0
    assert "done in" not in capsys.readouterr().err


def test_pseudo_terminal_sees_the_live_line_then_every_phase(tmp_path):
    import pty

    src = _census_csv(tmp_path / "people.csv", 3000)
    code = ("import sys; import anonydb.workflow.progress as p; p.DELAY = 0; "
            "from anonydb.workflow.cli import main; sys.exit(main(sys.argv[1:]))")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code, "anonymize", str(src), "--qi", "age,zip,sex", "--sensitive",
                             "disease", "--k", "5", "--out", "rel", "--db", str(tmp_path / "w.db")],
                            stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(60) == 0
    text = b"".join(chunks).decode()
    assert "\r\033[K  rounds " in text  # the live line was drawn in place
    assert re.search(r"rounds +\S+ +\d+%  [\d,]+ of 3,000 rows closed", text), text
    final = [x for x in text.replace("\r\n", "\n").split("\n")]
    done = [x.split("\r\033[K")[-1] for x in final if x.split("\r\033[K")[-1].startswith("  ")]
    listed = [x.split()[0] for x in done if x.split() and x.split()[0] in PHASES]
    assert listed == PHASES, text
    result = next(i for i, x in enumerate(final) if x.startswith("release rel:"))
    assert all(p in "\n".join(final[:result]) for p in PHASES)


@pytest.mark.slow
def test_tmux_shows_a_3m_release_through_its_phases(tmp_path):
    """The issue's own check: 3M rows in a real terminal, watched with tmux capture-pane."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    db = tmp_path / "census.db"
    eng = anonydb.connect(str(db))
    from anonydb.datasets import synthetic_census

    synthetic_census(eng, "census", rows=3_000_000, seed=1)
    eng.close()
    script = tmp_path / "run.sh"
    script.write_text(f"cd {tmp_path} && PYTHONPATH={ROOT} {sys.executable} -m anonydb anonymize census --db {db} "
                      "--qi age,sex,race,marital_status,education,workclass,zip,hours_per_week "
                      "--sensitive occupation --identifiers person_id,name --k 10 --out rel; "
                      "echo EXIT=$?; sleep 600\n")
    session = f"anonydb-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "40", f"bash {script}"], check=True)
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 600
        pane = ""
        while time.monotonic() < deadline:
            pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                  text=True).stdout
            seen.update(m.group(1) for m in re.finditer(r"^  (\w+) ", pane, re.M))
            if re.search(r"rounds +\S+ +\d+%", pane):
                seen.add("bar")
            if "EXIT=" in pane:
                break
            time.sleep(0.5)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session])
    assert "EXIT=0" in pane, pane
    lines = [x for x in pane.splitlines() if x.strip()]
    at = next(i for i, x in enumerate(lines) if x.startswith("release rel: 3000000 rows"))
    ended = [x.split()[0] for x in lines[:at]]
    assert ended[-len(PHASES):] == PHASES, pane  # every phase's line, in order, right above the result
    assert "bar" in seen, seen  # the rounds were watched with their share done


# --- 3. a column of numbers with a few text values -----------------------------------------------------

def _ages_csv(path: Path) -> tuple[Path, int, int]:
    """2,000 ages; from row 1,501 every 25th is 'unknown'. Returns the file, the text values'
    count and the first one's row (1 = the first row after the header)."""
    rnd = random.Random(3)
    bad, first = 0, None
    with path.open("w") as f:
        f.write("age,zip,disease\n")
        for row in range(1, 2001):
            if row >= 1501 and row % 25 == 1:
                age, bad, first = "unknown", bad + 1, first or row
            else:
                age = str(rnd.randint(17, 90))
            f.write(f"{age},{rnd.choice(['13053', '14850'])},{rnd.choice(['flu', 'hiv', 'ulcer'])}\n")
    return path, bad, first


def test_mostly_numeric_column_is_named_with_count_and_first_row(tmp_path, capsys):
    src, bad, first = _ages_csv(tmp_path / "ages.csv")
    assert (bad, first) == (20, 1501)
    main(["check", str(src), "--qi", "age,zip", "--sensitive", "disease", "--k", "2"])
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"anonydb: warning: column 'age' of ages.csv is read as text: {bad} of its 2,000 values are not numbers, "
        f"the first on row {first:,} ('unknown'); to refuse them, give --numeric age"]


def test_numeric_makes_the_text_values_an_error(tmp_path, capsys):
    src, _, first = _ages_csv(tmp_path / "ages.csv")
    code = main(["anonymize", str(src), "--qi", "age,zip", "--sensitive", "disease", "--k", "2", "--out", "rel",
                 "--numeric", "age"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1 and "warning" not in err  # the error alone, no warning nor note
    assert err.startswith("anonydb: error: numeric attribute 'age' holds non-numeric values: 'unknown' "
                          f"(row {first})")


def test_library_callers_get_a_python_warning(tmp_path):
    src, bad, _ = _ages_csv(tmp_path / "ages.csv")
    with pytest.warns(UserWarning, match=rf"column 'age' of ages.csv is read as text: {bad} of its 2,000 .* to "
                                         r"refuse them, give kinds=\{'age': 'numeric'\}$"):
        anonydb.check(str(src), ["age", "zip"], "disease", k=2)


def test_text_columns_and_numeric_columns_are_not_warned_of(tmp_path):
    path = tmp_path / "mixed.csv"
    with path.open("w") as f:  # zip: 3 numbers among 100 codes; age: all numbers
        f.write("age,zip\n")
        for i in range(100):
            f.write(f"{20 + i % 50},{'1305' + str(i % 10) if i < 3 else 'Z' + str(i)}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        anonydb.check(str(path), ["age", "zip"], k=1)


# --- 4. exports and notes ----------------------------------------------------------------------------

def test_export_of_a_pair_names_both_files(tmp_path, capsys):
    src = _census_csv(tmp_path / "people.csv", 300)
    target = tmp_path / "anat.csv"
    assert main(["anonymize", str(src), "--qi", "age,zip,sex", "--sensitive", "disease", "--method", "anatomy",
                 "--l", "3", "--out", "rel", "--export", str(target)]) == 0
    out = capsys.readouterr().out
    qit, st = tmp_path / "anat_qit.csv", tmp_path / "anat_st.csv"
    assert qit.exists() and st.exists() and not target.exists()
    assert f"  exported 2 files for --export {target}: {qit}, {st}" in out.splitlines()
    assert main(["anonymize", str(src), "--qi", "age,zip", "--k", "5", "--out", "rel", "--export",
                 str(tmp_path / "one.csv")]) == 0
    assert f"  exported: {tmp_path / 'one.csv'}" in capsys.readouterr().out.splitlines()


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The command as a user runs it, stderr into stdout (the order a terminal shows)."""
    return subprocess.run([sys.executable, "-m", "anonydb", *args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_note_comes_after_the_release_and_never_before_an_error(tmp_path):
    src = _census_csv(tmp_path / "people.csv", 300)
    r = _cli(tmp_path, "anonymize", src.name, "--qi", "age,zip", "--k", "5", "--out", "rel")
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0].startswith("release rel: 300 rows")
    assert lines[-1] == ("anonydb: note: no --db and no --export: the release was built and verified in memory, "
                         "then discarded; keep it with --db FILE or --export out.csv")
    bad = _cli(tmp_path, "anonymize", src.name, "--qi", "age,zip", "--k", "1000", "--out", "rel")
    assert bad.returncode == 2
    assert len(bad.stdout.splitlines()) == 1 and bad.stdout.startswith("anonydb: error: infeasible"), bad.stdout

"""The README and the docs pages show commands that run as written and print what the page shows.

The replay (slow tier) runs each page's commands in order, as a user would type them, in a fresh
folder of its own where ``adult.csv``, the subset and the ARX hierarchies sit (links into
``../shared``) and ``../shared`` resolves too:

- every ``anonydb ...`` line of a ```bash block (continuations joined, ``  # comments`` dropped),
  ``A=...`` assignments (kept for the page's later commands), and inline ``anonydb <command> <source>
  --options`` spans of the prose; a ```yaml block headed ``# name.yaml`` is written to that file;
  the README's ```python blocks run as scripts;
- a ```text block right after a command block is that block's last command's output: each shown
  line must appear, in order, in what the command printed (``...`` marks lines left out), timings
  masked;
- exit code 0, or 1 for a ``check`` or ``report`` whose models fail on the raw data; never an error.

Not run: lines with placeholders (``...``, ``[``, ``<``, NAMES in capitals), the PostgreSQL lines
(``$PG``: tests/test_postgres_cli.py runs them against a real server), pip/dbt/psql lines. The fast
test checks, without running anything, that every ``anonydb`` subcommand and option a page names
exists.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ROOT, need_shared

PAGES = ["README.md", "docs/models.md", "docs/methods.md", "docs/engines.md", "docs/sql-only.md", "docs/dbt.md",
         "docs/releases.md", "docs/evaluate.md", "docs/cli.md", "docs/fail-closed.md", "docs/design.md",
         "docs/persons.md", "docs/risk.md", "docs/dp.md"]
#: the pages whose Python blocks run (the other docs' run in the method tests: test_mondrian.py, ...)
PYTHON_PAGES = {"README.md", "docs/persons.md", "docs/risk.md", "docs/releases.md", "docs/dp.md"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n?", re.S | re.M)
PLACEHOLDER = re.compile(r"\.\.\.|\[|<|\$PG|\b[A-Z]{2,}\b(?!=)")
DURATION = re.compile(r"\d+(?:\.\d+)? s\b")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")  # a ledger entry's time
# anonydb tradeoff's table: "* mondrian k=10   0.4873   0.0017   0.56"; the last column is seconds
TRADEOFF_ROW = re.compile(r"^[* ] (?:mondrian|fulldomain|anatomy|slicing|injector) .*\s\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+$")
# Anatomy deals its groups from a secret random order: its U_loss moves in the fourth decimal
LOOSE = re.compile(r"^[* ] anatomy ")


@dataclass
class Step:
    kind: str                  # "sh", "file", "py"
    text: str
    name: str = ""             # the file a yaml block is written to
    expect: list[str] = field(default_factory=list)


def _prose_commands(prose: str) -> list[str]:
    """Inline ``anonydb ...`` spans of the prose, whitespace folded."""
    return [" ".join(s.split()) for s in re.findall(r"`(anonydb [^`]+)`", prose)]


def _bash_lines(block: str) -> list[str]:
    lines = block.replace("\\\n", " ").splitlines()
    return [" ".join(line.split("  #")[0].split()) for line in lines if line.strip()]


def page_steps(page: str) -> list[Step]:
    """The runnable steps of a page, in document order, with the output the page shows."""
    text = (ROOT / page).read_text()
    steps: list[Step] = []
    pos, last_block_ran = 0, False

    def prose_steps(prose: str) -> None:
        for cmd in _prose_commands(prose):
            if re.match(r"anonydb \w+ [^-\s]", cmd) and " --" in cmd and not PLACEHOLDER.search(cmd):
                steps.append(Step("sh", cmd))

    for m in FENCE.finditer(text):
        prose = text[pos:m.start()]
        prose_steps(prose)
        lang, body = m.group(1), m.group(2)
        follows = prose.strip() == "" and last_block_ran
        last_block_ran = False
        pos = m.end()
        if lang == "bash":
            for line in _bash_lines(body):
                if re.fullmatch(r"A=\S+", line):
                    steps.append(Step("sh", line))
                elif line.startswith("anonydb ") and not PLACEHOLDER.search(line):
                    steps.append(Step("sh", line))
                    last_block_ran = True
        elif lang == "text" and follows:
            steps[-1].expect = [x.rstrip() for x in body.splitlines()]
        elif lang == "yaml" and (head := re.match(r"# ([\w.-]+\.yaml)\n", body)):
            steps.append(Step("file", body, name=head.group(1)))
        elif lang == "python" and page in PYTHON_PAGES:
            steps.append(Step("py", body))
    prose_steps(text[pos:])
    return steps


def _mask(line: str) -> str:
    line = TIMESTAMP.sub("<time>", DURATION.sub("<seconds>", line.rstrip()))
    if TRADEOFF_ROW.match(line):
        line = line.rsplit(None, 1)[0]
    return line


def _same(want: str, got: str) -> bool:
    want, got = _mask(want), _mask(got)
    if not LOOSE.match(want):
        return want == got
    w, g = want.split(), got.split()
    if len(w) != len(g):
        return False
    for a, b in zip(w, g):
        if a != b:
            try:
                if abs(float(a) - float(b)) > 0.001:
                    return False
            except ValueError:
                return False
    return True


def assert_shows(cmd: str, expect: list[str], output: str) -> None:
    """Each shown line appears, in order, in the printed output (``...`` and blank lines skipped)."""
    got = output.splitlines()
    at = 0
    for want in expect:
        if not want.strip() or want.strip() == "...":
            continue
        for i in range(at, len(got)):
            if _same(want, got[i]):
                at = i + 1
                break
        else:
            raise AssertionError(f"{cmd}\nthe page shows\n  {want}\nbut the command printed (from line {at + 1}):\n"
                                 + "\n".join(got[at:at + 40]))


def test_pages_listed_exist_and_the_readme_links_them():
    for page in PAGES:
        assert (ROOT / page).is_file(), page
    readme = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\((docs/[\w.-]+\.md)", readme):
        assert (ROOT / link).is_file(), link
    for page in PAGES[1:]:
        assert f"({page})" in readme, f"the README does not point to {page}"
    assert len(readme.splitlines()) <= 300, "the README shows the product first: keep it to 300 lines"


def test_every_anonydb_command_and_option_shown_exists():
    """Cheap: every `anonydb <command> --option` of the pages names a real command and option."""
    from anonydb.workflow.cli import _parser

    ap = _parser()
    subs = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction").choices
    seen = 0
    for page in PAGES:
        text = (ROOT / page).read_text()
        cmds = _prose_commands(FENCE.sub("", text))
        for m in FENCE.finditer(text):
            if m.group(1) in ("bash", "sql"):
                cmds += [re.sub(r"^.*?&& (anonydb )", r"\1", x) for x in _bash_lines(m.group(2))
                         if re.search(r"(^|&& )anonydb ", x)]
        for cmd in cmds:
            cmd = cmd.split(" && ")[0]
            argv = shlex.split(cmd.replace("'", "").replace('"', ""))
            if len(argv) < 2 or argv[1].startswith("<"):
                continue
            assert argv[1] in subs, f"{page}: {cmd}: no command {argv[1]!r}"
            options = set(subs[argv[1]]._option_string_actions) | set(ap._option_string_actions)
            for tok in argv[2:]:
                if tok.startswith("--"):
                    assert tok.split("=")[0] in options, f"{page}: {cmd}: anonydb {argv[1]} has no {tok}"
            seen += 1
    assert seen >= 40, seen


def test_pages_parse_into_runnable_steps():
    """Cheap: the replay finds the commands and the shown outputs it is meant to replay."""
    steps = {page: page_steps(page) for page in PAGES}
    runs = [s for ss in steps.values() for s in ss if s.kind == "sh" and s.text.startswith("anonydb ")]
    shown = [s for ss in steps.values() for s in ss if s.expect]
    verbs = {s.text.split()[1] for s in runs}
    assert {"check", "anonymize", "audit", "evaluate", "tradeoff", "release", "releases", "plan", "report"} <= verbs, verbs
    assert len(runs) >= 30 and len(shown) >= 15, (len(runs), len(shown))
    assert any("--db" in s.text for s in runs if s.text.split()[1] == "check")
    first = steps["README.md"][0]
    assert first.text.startswith("anonydb anonymize ../shared/datasets/adult/adult.csv")
    assert any(x.startswith("release release: 30162 rows in ") for x in first.expect)
    assert [s.name for ss in steps.values() for s in ss if s.kind == "file"] == ["monthly.yaml", "release.yaml"]


def test_output_comparison_masks_timings_only():
    assert _same("release r: 30162 rows in 917 equivalence classes (14 rounds, 0.85 s)",
                 "release r: 30162 rows in 917 equivalence classes (14 rounds, 12.50 s)")
    assert not _same("release r: 30162 rows in 917 equivalence classes (14 rounds, 0.85 s)",
                     "release r: 30162 rows in 918 equivalence classes (14 rounds, 0.85 s)")
    assert _same("* mondrian k=10                      0.4873   0.0017   0.56",
                 "* mondrian k=10                      0.4873   0.0017   1.02")
    assert not _same("* mondrian k=10                      0.4873   0.0017   0.56",
                     "* mondrian k=10                      0.4874   0.0017   0.56")
    assert _same("  anatomy l=4                        0.3692   0.0462   0.19",
                 "  anatomy l=4                        0.3692   0.0460   0.23")
    with pytest.raises(AssertionError, match="the page shows"):
        assert_shows("x", ["a", "...", "c"], "c\na\nb")
    assert_shows("x", ["a", "...", "c"], "a\nb\nc")


def _runnable_pages() -> list[str]:
    return [p for p in PAGES if any(s.kind != "file" for s in page_steps(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", _runnable_pages())
def test_page_replays_as_written(page: str, tmp_path: Path):
    adult = need_shared() / "adult"
    work = tmp_path / "repo"
    work.mkdir()
    (tmp_path / "shared").symlink_to(adult.parents[1])
    for f in adult.iterdir():
        (work / f.name).symlink_to(f)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    prefix = ""
    for step in page_steps(page):
        if step.kind == "file":
            (work / step.name).write_text(step.text)
            continue
        if step.kind == "py":
            r = subprocess.run([sys.executable, "-c", step.text], cwd=work, capture_output=True, text=True,
                               env=env, timeout=600)
            assert r.returncode == 0, f"{page}:\n{step.text}\n{r.stderr[-2000:]}"
            continue
        if step.text.startswith("A="):
            prefix = step.text + "; "
            continue
        r = subprocess.run(["bash", "-c", prefix + step.text], cwd=work, capture_output=True, text=True,
                           env=env, timeout=900)
        verb = step.text.split()[1]
        if step.expect and step.expect[0].startswith("anonydb: error:"):  # a refusal the page shows
            assert r.returncode == 2 and r.stdout == "", f"{page}: {step.text}\n-> {r.returncode}\n{r.stdout[-2000:]}"
            assert_shows(f"{page}: {step.text}", step.expect, r.stderr)
            continue
        failing_models = verb in ("check", "report") and r.returncode == 1 and "FAIL" in r.stdout
        assert r.returncode == 0 or failing_models, f"{page}: {step.text}\n-> {r.returncode}\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr
        if step.expect:
            assert_shows(f"{page}: {step.text}", step.expect, r.stdout)

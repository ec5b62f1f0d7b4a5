"""Every README command that names the Adult data runs as written, as a user would type it.

The commands of the README's bash blocks run in a fresh folder where ``adult.csv``, the subset and
the ARX hierarchies sit (links into ``../shared``), and ``../shared`` resolves too. A command may
find that a model fails on the raw data (exit 1: check, report); none may end in an error
(exit 2). Lines with placeholders (``...``, ``[--options]``, a user's own tables) are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, need_shared

PLACEHOLDERS = ("...", " [", "people", "warehouse", "release.yaml", "adult_rel ", "dbt ", "pip ", "cd ",
                "$PG")  # the PostgreSQL section runs in tests/test_postgres_cli.py, against a real server


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        lines = block.replace("\\\n", " ").splitlines()
        for line in lines:
            line = line.split("  #")[0].strip()
            if line.startswith("A="):
                out.append(line)
            elif line.startswith("anonydb ") and "adult" in line and not any(p in line for p in PLACEHOLDERS):
                out.append(line)
    return out


def test_readme_adult_commands_run(tmp_path: Path):
    adult = need_shared() / "adult"
    work = tmp_path / "repo"
    work.mkdir()
    (tmp_path / "shared").symlink_to(adult.parents[1])
    for f in adult.iterdir():
        (work / f.name).symlink_to(f)
    cmds = readme_commands()
    ran = [c for c in cmds if c.startswith("anonydb ")]
    assert len(ran) >= 11, ran  # the README keeps its runnable examples
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    prefix = ""
    for cmd in cmds:
        if cmd.startswith("A="):
            prefix = cmd + "; "
            continue
        r = subprocess.run(["bash", "-c", prefix + cmd], cwd=work, capture_output=True, text=True, env=env,
                           timeout=600)
        verb = cmd.split()[1]
        allowed = (0, 1) if verb in ("check", "report") else (0,)
        assert r.returncode in allowed, f"{cmd}\n-> {r.returncode}\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr

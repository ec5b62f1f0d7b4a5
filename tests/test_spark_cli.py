"""The command line on Spark, as a user runs it: ``--engine local[2]`` reads Adult's CSV with Spark,
checks it with the same answers as DuckDB, and releases it to a Parquet folder that an independent
reader (DuckDB over the part files) finds k-anonymous, row for row; what Spark cannot do, or an
engine beside --db, is one line and exit 2 before anything starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import ROOT
from jvm_flags import TEST_JVM

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")

ADULT = ROOT.parent / "shared" / "datasets" / "adult" / "adult.csv"
QI = "sex,age,race,marital-status"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "anonydb", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=900)


@pytest.fixture(scope="module")
def adult():
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'anonydb[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for Spark: install a JDK 17 (apt-get install openjdk-17-jre-headless)")
    if not ADULT.is_file():
        pytest.skip(f"the Adult data set is not at {ADULT} (../shared/datasets/adult)")
    return str(ADULT)


@pytest.mark.slow
def test_check_same_as_duckdb(adult):
    args = ["check", adult, "--qi", QI, "--sensitive", "occupation", "--k", "5", "--l", "2", "--t", "0.3", "--json"]
    d, s = run(*args), run(*args, "--engine", "local[2]")
    assert (d.returncode, s.returncode) == (1, 1), s.stderr[-2000:]
    dj, sj = json.loads(d.stdout), json.loads(s.stdout)
    assert sj["verdicts"] == dj["verdicts"] and sj["rows"] == dj["rows"] == 30162


@pytest.mark.slow
def test_release_to_parquet_folder(adult, tmp_path):
    out = tmp_path / "adult_k10.parquet"
    args = ["anonymize", adult, "--engine", "local[2]", "--qi", QI, "--sensitive", "occupation", "--k", "10",
            "--l", "2", "--out", "adult_k10", "--export", str(out), "--quiet"]
    r = run(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "verified: k-anonymity holds" in r.stdout and (out / "_SUCCESS").is_file()
    parts = str(out / "*.parquet")
    con = duckdb.connect()
    cols = [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{parts}')").fetchall()]
    assert "education" not in cols and "salary-class" not in cols  # no role: not published
    n, k, l = con.execute(f"SELECT sum(n), min(n), min(d) FROM (SELECT count(*) AS n, count(DISTINCT occupation) AS d "
                          f"FROM read_parquet('{parts}') GROUP BY eq_class)").fetchone()
    assert (n, k >= 10, l >= 2) == (30162, True, True)
    # the sensitive values are released unchanged, one per source row; every age range is a range
    src = con.execute(f"SELECT occupation, count(*) FROM read_csv('{adult}', delim=';', header=true) "
                      f"GROUP BY ALL ORDER BY ALL").fetchall()
    rel = con.execute(f"SELECT occupation, count(*) FROM read_parquet('{parts}') GROUP BY ALL ORDER BY ALL").fetchall()
    assert rel == src
    assert con.execute(f"SELECT count(*) FROM read_parquet('{parts}') WHERE NOT (age_lo <= age_hi)").fetchone()[0] == 0
    # Spark's Parquet folder is a source as it is, on Spark and on DuckDB
    for engine in (["--engine", "local[2]"], []):
        c = run("check", str(out), "--qi", "eq_class", "--sensitive", "occupation", "--k", "10", "--l", "2", *engine)
        assert c.returncode == 0, c.stderr[-2000:]
    before = sorted(p.name for p in out.iterdir())
    again = run(*args)  # the folder exists: refused without --replace, untouched
    assert again.returncode == 2 and "already exists" in again.stderr and again.stderr.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_refusals_are_one_line(adult, tmp_path):
    r = run("anonymize", adult, "--engine", "local[2]", "--qi", QI, "--k", "5", "--out", "x", "--export",
            str(tmp_path / "x.csv"))
    assert r.returncode == 2 and r.stderr.startswith("anonydb: error: not available on spark: --export to .csv")
    assert r.stderr.count("\n") == 1 and not (tmp_path / "x.csv").exists()
    r = run("check", adult, "--engine", "spark", "--db", str(tmp_path / "w.duckdb"), "--qi", QI, "--k", "2")
    assert r.returncode == 2 and "drop --db" in r.stderr and r.stderr.count("\n") == 1
    r = run("check", adult, "--engine", "mysql://x", "--qi", QI, "--k", "2")
    assert r.returncode == 2 and "--engine must be" in r.stderr
    r = run("anonymize", adult, "--engine", "local[2]", "--qi", QI, "--sensitive", "occupation", "--l", "2",
            "--method", "slicing", "--out", "x")
    errors = [x for x in r.stderr.splitlines() if x.startswith("anonydb: error")]  # after Spark's start-up lines
    assert r.returncode == 2 and len(errors) == 1 and errors[0].startswith("anonydb: error: not available on spark: "
                                                                          "slicing"), r.stderr[-500:]
    r = run("evaluate", "x.csv", "--qi", "a", "--sensitive", "b", "--engine", "spark")  # refused before Spark starts
    assert r.returncode == 2 and r.stderr.startswith("anonydb: error: ") and r.stderr.count("\n") == 1


@pytest.fixture(scope="module")
def connect_url(adult, tmp_path_factory):
    """A Spark Connect server (pyspark's own sbin/start-connect-server.sh, local[2]) on a free port,
    stopped at the end of the module."""
    pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect] (pip install 'anonydb[spark]')")
    import socket

    import pyspark

    home = Path(pyspark.__file__).parent
    script = home / "sbin" / "start-connect-server.sh"
    if not script.is_file():
        pytest.skip(f"this pyspark has no {script.name}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = tmp_path_factory.mktemp("connect")
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOG_DIR=str(work), SPARK_PID_DIR=str(work),
               SPARK_IDENT_STRING=f"anonydb{port}", PYSPARK_PYTHON=sys.executable)
    subprocess.run(["bash", str(script), "--master", "local[2]", "--conf", f"spark.connect.grpc.binding.port={port}",
                    "--conf", "spark.ui.enabled=false", "--conf", f"spark.sql.warehouse.dir={work / 'warehouse'}",
                    "--driver-java-options", TEST_JVM],
                   env=env, check=True, capture_output=True, timeout=120)
    try:
        import time

        deadline = time.time() + 180
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(1)
        else:
            pytest.fail("the Spark Connect server did not start: " + " ".join(p.read_text()[-500:] for p in work.glob("*.out")))
        yield f"sc://localhost:{port}"
    finally:
        subprocess.run(["bash", str(home / "sbin" / "stop-connect-server.sh")], env=env, capture_output=True, timeout=120)


@pytest.mark.slow
def test_spark_connect_check_and_release(adult, connect_url, tmp_path):
    """--engine sc://: the check answers as DuckDB does; Mondrian's release (its last step a grouped
    step on the server's workers) is the one a local session makes, and is exported by the server."""
    args = ["check", adult, "--qi", QI, "--sensitive", "occupation", "--k", "5", "--l", "2", "--json"]
    d, s = run(*args), run(*args, "--engine", connect_url)
    assert s.returncode == 1, s.stderr[-2000:]
    assert json.loads(s.stdout)["verdicts"] == json.loads(d.stdout)["verdicts"]
    out = tmp_path / "rel.parquet"
    r = run("anonymize", adult, "--engine", connect_url, "--qi", QI, "--sensitive", "occupation", "--k", "10",
            "--out", "connect_rel", "--export", str(out), "--quiet", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    local = run("anonymize", adult, "--qi", QI, "--sensitive", "occupation", "--k", "10", "--out", "x", "--quiet",
                "--json")
    assert json.loads(r.stdout)["classes"] == json.loads(local.stdout)["classes"]
    con = duckdb.connect()
    n, k = con.execute(f"SELECT sum(n), min(n) FROM (SELECT count(*) AS n FROM read_parquet('{out}/*.parquet') "
                       f"GROUP BY eq_class)").fetchone()
    assert n == 30162 and k >= 10


def latest_members(url: str) -> dict:
    """The latest ledger entry's members, read in a process of its own: this worker may already hold a
    local Spark session, beside which pyspark refuses a remote one."""
    code = ("import json, sys, anonydb\n"
            "eng = anonydb.connect(sys.argv[1])\n"
            "rows = eng.fetch_rows('SELECT fp, grp FROM anonydb_release_members WHERE release_id = "
            "(SELECT max(id) FROM anonydb_releases)')[1]\n"
            "eng.close()\n"
            "print(json.dumps([[str(f), g] for f, g in rows]))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return {f: g for f, g in json.loads(r.stdout)}


@pytest.mark.slow
def test_a_file_per_month_over_spark_connect(connect_url, tmp_path, monkeypatch):
    """Issue 62's file-per-month flow on Spark through the command line: each month's CSV released
    into one output of the Connect server's warehouse, refused exactly when the oracle finds a
    person exposed (the same outcomes as on DuckDB and PostgreSQL), the ledger kept beside it."""
    import ledger_flows as lf

    monkeypatch.setenv("ANONYDB_SECRET", lf.SECRET)
    months = lf.population(seed=3, months=4)
    accepted: list[dict] = []
    outcomes = []
    for m, month in enumerate(months):
        lf.write_csv(tmp_path / f"m{m}.csv", month)
        cand = lf.probe(month)
        why = lf.verdict(accepted, cand)
        r = run("anonymize", f"m{m}.csv", "--qi", "age,zip", "--sensitive", "dis", "--k", str(lf.K), "--l",
                str(lf.L), "--person", "rid", "--out", "flow_rel", "--replace", "--engine", connect_url, "--quiet",
                cwd=tmp_path)
        if why:
            assert r.returncode == 2 and "composed verification failed" in r.stderr, (m, r.stderr[-2000:])
            outcomes.append("refused")
            continue
        assert r.returncode == 0, (m, r.stderr[-2000:])
        assert f"verified together with {len(accepted)} earlier" in r.stdout
        members = latest_members(connect_url)
        by_fp = {lf.fingerprint(p): g for p, g in cand["members"].items()}
        assert lf.partition({"members": members}) == lf.partition({"members": by_fp}), m
        accepted.append(cand)
        outcomes.append("ok")
    assert outcomes == ["ok", "ok", "ok", "refused"], outcomes

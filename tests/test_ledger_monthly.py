"""The README's monthly job (issue 51's "done when"): its spec, run twelve times on a table whose
rows come and go (a six-month window of visits sliding month by month), writes twelve releases
that each pass the composed check, and the series is m-invariant under the plain-Python oracle
(tests/series_oracle.py), which reads what was published: the groups' values (counterfeits
included) and, from the ledger's fingerprints recomputed here with Python's hmac, each visit's
group. Every visit of each month is published once, and its group's labels cover its values.
"""

from __future__ import annotations

import hmac
import re
from collections import defaultdict

import duckdb

import anonydb
from anonydb.datasets import synthetic_visits
from anonydb.workflow.jobs import run_spec

from conftest import ROOT
from series_oracle import exposed, m_invariant

M = 3


def _readme_spec() -> str:
    text = (ROOT / "README.md").read_text()
    return re.search(r"```yaml\n(# monthly\.yaml\n.*?)```", text, re.S).group(1)


def _window(db: str, month: int) -> None:
    eng = anonydb.connect(db)
    try:
        eng.execute(f"CREATE OR REPLACE VIEW recent_visits AS SELECT * FROM visits "
                    f"WHERE visit_month > {month - 6} AND visit_month <= {month}")
    finally:
        eng.close()


def test_readme_monthly_spec_twelve_times(tmp_path):
    db = str(tmp_path / "visits.duckdb")
    eng = anonydb.connect(db)
    synthetic_visits(eng, persons=1500, seed=11)
    eng.close()
    secret = b"0123456789abcdef-monthly-secret"
    (tmp_path / "key.txt").write_bytes(secret)
    spec = tmp_path / "monthly.yaml"
    spec.write_text(_readme_spec())
    series = []
    for month in range(1, 13):
        _window(db, month)
        rel = run_spec(spec)
        rel.engine.close()
        con = duckdb.connect(db, read_only=True)
        try:
            source = con.execute("SELECT visit_id, age, sex, zip3, diagnosis FROM recent_visits").fetchall()
            published = con.execute("SELECT eq_class, age_lo, age_hi, sex, zip3_lo, zip3_hi, diagnosis "
                                    "FROM visits_monthly").fetchall()
            cf = dict(con.execute("SELECT eq_class, counterfeits FROM visits_monthly_counterfeits").fetchall())
            (rid,) = con.execute("SELECT max(id) FROM anonydb_releases WHERE series = 'visits_monthly'").fetchone()
            fps = dict(con.execute("SELECT fp, grp FROM anonydb_release_members WHERE release_id = ?", [rid]).fetchall())
            entries = con.execute("SELECT count(*) FROM anonydb_releases").fetchone()[0]
        finally:
            con.close()
        assert entries == month
        # the visits' groups, from fingerprints recomputed independently
        members = {}
        for vid, *_ in source:
            fp = hmac.new(secret, str(vid).encode(), "sha256").hexdigest()
            members[vid] = fps[fp]
        assert len(fps) == len(source)
        values, labels = defaultdict(list), {}
        for g, alo, ahi, sex, zlo, zhi, dx in published:
            values[g].append(dx)
            labels[g] = (alo, ahi, sex, zlo, zhi)
        # every visit published once: real rows = the month's visits, the rest counterfeits
        assert len(published) == len(source) + sum(cf.values())
        for vid, age, sex, zip3, dx in source:
            alo, ahi, s, zlo, zhi = labels[members[vid]]
            assert alo <= age <= ahi and zlo <= zip3 <= zhi and s in (sex, "*")
            assert dx in values[members[vid]]
        series.append({"members": members, "values": dict(values), "counterfeits": cf})
        assert m_invariant(series, M) == []
        assert exposed(series, M) == {}
    # visits came and went: persistent, deleted and inserted visits all occurred
    first, last = set(series[0]["members"]), set(series[-1]["members"])
    assert first - last and last - first
    assert any(c for s in series for c in s["counterfeits"].values())

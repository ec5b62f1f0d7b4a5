"""Linked tables (MultiR k-anonymity over a person table and its event tables, issue 48): one
generalization of the person-level QIs, every published table verified by persons on its join.
Judged by a plain-Python oracle (no anonydb import): each class is the box its labels name; the
persons a class holds are those whose QIs it covers (QI tuples unique per person in these tables),
and per table every released class holds >= k of its persons, with all their records, or none."""

from __future__ import annotations

from collections import defaultdict

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st

from anonydb.errors import InfeasibleError, InputError
from anonydb.methods.linked import linked

from conftest import examples


def load(con, people, visits, claims):
    con.execute("CREATE OR REPLACE TABLE patients (pid INTEGER, age INTEGER, zip INTEGER)")
    con.executemany("INSERT INTO patients VALUES (?, ?, ?)", people)
    con.execute("CREATE OR REPLACE TABLE visits (vid INTEGER, patient INTEGER, dx VARCHAR)")
    if visits:
        con.executemany("INSERT INTO visits VALUES (?, ?, ?)", visits)
    con.execute("CREATE OR REPLACE TABLE claims (cid INTEGER, member INTEGER, amount INTEGER)")
    if claims:
        con.executemany("INSERT INTO claims VALUES (?, ?, ?)", claims)


tables = st.integers(6, 30).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from("abc")), min_size=n, max_size=4 * n),
    st.lists(st.integers(0, n - 1), max_size=3 * n)))


def oracle_classes(people, visits, k, l):
    """The classes (sets of persons) of a linked release whose models are judged on visits, in plain
    Python: None where the persons with visits, as one class, fail the models (k persons; with l,
    l diagnoses held by someone): both are monotone, so that is exactly "no partition holds", and
    no release is possible. Otherwise the reference Mondrian's partition of those persons
    (tests/mondrian_reference.py, strict median cuts on age and zip, a cut allowed when both halves
    hold), which the release must publish."""
    from mondrian_reference import mondrian_reference

    dx_of = defaultdict(set)
    for p, dx in visits:
        dx_of[p].add(dx)
    units = [{"p": p, "age": a, "zip": z} for p, a, z in people if p in dx_of]

    def ok(ids):
        return len(ids) >= k and (not l or len({dx for i in ids for dx in dx_of[units[i]["p"]]}) >= l)

    if not ok(range(len(units))):
        return None
    parts = mondrian_reference(units, ["age", "zip"], {"age": "numeric", "zip": "numeric"}, ok)
    return sorted(sorted(units[i]["p"] for i in part) for part in parts)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # shrinking a release takes minutes
@example(data=(6, [(0, "a"), (1, "a"), (2, "b")], [0, 3]), k=3, l=2)  # released: 3 persons with visits, a and b
@example(data=(6, [(0, "a"), (1, "a"), (2, "a"), (3, "a")], [0]), k=2, l=2)  # refused: one diagnosis
@given(data=tables, k=st.integers(2, 3), l=st.sampled_from([None, 2]))
def test_linked_release_by_persons(data, k, l):
    """Refused exactly where the oracle (oracle_classes) finds no release; a release publishes the
    oracle's classes, read back from the published boxes (each class holds the persons whose QIs
    it covers: (age, zip) is unique per person), and per table every released class holds >= k of
    its persons with all their records, or none of them. The visits' release is judged on what it
    publishes: every class holds >= l diagnoses, and its diagnoses are, as a multiset, those of its
    persons' visits in the source (the release names no person, so a class's records are what a
    person's published values can be compared with: altering any diagnosis changes some class's)."""
    n, visits, claims = data
    people = [(p, 20 + p % 7, 100 + p) for p in range(n)]  # (age, zip) unique per person
    con = duckdb.connect()
    load(con, people, [(i, p, dx) for i, (p, dx) in enumerate(visits)], [(i, p, 10 * i) for i, p in enumerate(claims)])
    want = oracle_classes(people, visits, k, l)
    try:
        r = linked("patients", "pid", {"visits": "patient", "claims": "member"}, ["age", "zip"], "dx",
                   outs={"visits": "v_rel", "claims": "c_rel", "patients": "p_rel"}, engine=con, k=k,
                   max_suppression=1.0, seed=1, **({"l": l} if l else {}))
    except InfeasibleError as e:
        event("refused")
        assert want is None, f"the oracle finds classes {want}, yet refused: {e}"
        assert "\n" not in str(e)
        assert not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '%_rel'").fetchone()[0]
        return
    event("released")
    assert want is not None, "the persons with visits fail the models as one class, yet released"
    boxes = {c: (alo, ahi, zlo, zhi) for c, alo, ahi, zlo, zhi in
             con.execute("SELECT DISTINCT eq_class, age_lo, age_hi, zip_lo, zip_hi FROM p_rel").fetchall()}
    classed = {p for p, _ in visits}  # the classes are cut on the persons of the judged table (visits)
    holds: dict[int, set] = {c: {p for p, a, z in people if p in classed and b[0] <= a <= b[1] and b[2] <= z <= b[3]}
                             for c, b in boxes.items()}
    owner = {}
    for c, ps in holds.items():
        for p in ps:
            assert p not in owner  # the boxes partition the persons
            owner[p] = c
    assert set(owner) == classed
    assert sorted(sorted(ps) for ps in holds.values()) == want
    recs = {"v_rel": defaultdict(list), "c_rel": defaultdict(list), "p_rel": defaultdict(list)}
    for p, dx in visits:
        recs["v_rel"][p].append(dx)
    for p in claims:
        recs["c_rel"][p].append(None)
    for p in range(n):
        recs["p_rel"][p].append(None)
    for out in ("v_rel", "c_rel", "p_rel"):
        got = dict(con.execute(f"SELECT eq_class, count(*) FROM {out} GROUP BY 1").fetchall())
        for c, ps in holds.items():
            here = [p for p in ps if recs[out][p]]
            rows = sum(len(recs[out][p]) for p in here)
            if got.get(c, 0):  # released: every record of the class, of >= k persons
                assert got[c] == rows and len(here) >= k, (out, c)
            else:
                assert out != "v_rel" and len(here) < k, (out, c)  # only thin classes go
    published: dict[int, list] = defaultdict(list)  # the visits' release as it is published
    for c, dx in con.execute("SELECT eq_class, dx FROM v_rel").fetchall():
        published[c].append(dx)
    assert set(published) == set(holds)
    for c, ps in holds.items():
        assert sorted(published[c]) == sorted(dx for p in ps for dx in recs["v_rel"][p]), c
        assert not l or len(set(published[c])) >= l, c
    assert r.persons == n
    for out in ("c_rel", "p_rel"):  # a person without visits has no class: none of their records leave
        assert sum(1 for p in range(n) if p not in classed for _ in recs[out][p]) + \
            con.execute(f"SELECT count(*) FROM {out}").fetchone()[0] <= sum(len(v) for v in recs[out].values())


def test_linked_bad_inputs():
    con = duckdb.connect()
    load(con, [(0, 20, 100), (1, 21, 101), (2, 22, 102)], [(0, 0, "a"), (1, 1, "b"), (2, 7, "a")], [(0, 2, 1)])
    kw = dict(qi=["age", "zip"], outs={"visits": "v_rel"}, engine=con, k=1)
    with pytest.raises(InputError, match=r"visits.patient dangles on 1 rows"):
        linked("patients", "pid", {"visits": "patient"}, **kw)
    con.execute("UPDATE visits SET patient = NULL WHERE vid = 2")
    with pytest.raises(InputError, match=r"visits.patient is NULL on 1 rows"):
        linked("patients", "pid", {"visits": "patient"}, **kw)
    con.execute("DELETE FROM visits WHERE vid = 2")
    con.execute("INSERT INTO patients VALUES (1, 21, 101)")
    with pytest.raises(InputError, match=r"person key 'pid' repeats in patients \(1 extra rows\)"):
        linked("patients", "pid", {"visits": "patient"}, **kw)
    con.execute("DELETE FROM patients WHERE rowid = 3")
    con.execute("CREATE TABLE v2 AS SELECT *, CASE WHEN vid = 0 THEN 99 ELSE 20 + patient END AS age FROM visits")
    with pytest.raises(InputError, match=r"'age' disagrees between patients and v2 for person 0"):
        linked("patients", "pid", {"v2": "patient"}, qi=["age"], outs={"v2": "r"}, engine=con, k=1)
    with pytest.raises(InputError, match=r"'nope' is in none of the tables"):
        linked("patients", "pid", {"visits": "patient"}, qi=["nope"], outs={"visits": "r"}, engine=con, k=1)
    with pytest.raises(InputError, match=r"has no release name"):
        linked("patients", "pid", {"visits": "patient"}, qi=["age"], outs={}, engine=con, k=1)
    assert not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '%rel%' "
                           "OR table_name LIKE '__anonydb%'").fetchone()[0]


def test_linked_spec(tmp_path):
    """A spec names the person table (source, its key by role person) and its event tables (linked:)."""
    from anonydb.workflow.jobs import run_spec
    from anonydb.workflow.spec import SpecError, load_spec

    db = tmp_path / "l.duckdb"
    con = duckdb.connect(str(db))
    people = [(p, 20 + p % 3, 100 + p % 2) for p in range(12)]
    load(con, people, [(i, i % 12, "abc"[i % 3]) for i in range(30)], [(i, i % 6, i) for i in range(10)])
    con.close()
    spec = tmp_path / "linked.yaml"
    spec.write_text(f"""source: patients
database: {db}
attributes:
  pid: person
  age: {{role: qi, kind: numeric}}
  zip: {{role: qi, kind: numeric}}
  dx: sensitive
linked:
  visits: {{key: patient, table: v_rel}}
  claims: {{key: member, table: c_rel}}
  max_suppression: 1.0
method: mondrian
privacy: {{k: 3}}
output: {{table: p_rel}}
""")
    rel = run_spec(str(spec))
    assert set(rel.tables.values()) == {"p_rel", "v_rel", "c_rel"} and rel.holds
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM v_rel").fetchone()[0] == 30
    assert con.execute("SELECT count(*) FROM p_rel").fetchone()[0] == 12
    assert "pid" not in {r[0] for r in con.execute("DESCRIBE v_rel").fetchall()}
    con.close()
    spec.write_text(spec.read_text().replace("method: mondrian", "method: fulldomain").replace("  pid: person\n", ""))
    with pytest.raises(SpecError) as e:
        load_spec(str(spec))
    assert "linked tables are released with mondrian" in str(e.value) and "role person" in str(e.value)

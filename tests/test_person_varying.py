"""Record owners whose QIs vary per record (issue 48, shape (b)): Mondrian with varying=True cuts
records, each class counting its distinct persons; with the person's pseudonym published, every
person's set of classes must be shared by at least k persons (the intersection attack), the
persons that break it suppressed with all their records within max_suppression, or refused.

Judged by plain-Python oracles that import nothing from anonydb: the release is mapped back to
its persons through the published pseudonym (Python's hmac with the same key), then classes,
persons per class, the sets of classes and the suppressed persons are recounted."""

from __future__ import annotations

import hmac
from collections import defaultdict

import duckdb
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import anonydb
from anonydb.errors import InfeasibleError, InputError
from anonydb.linkage import unshared
from anonydb.methods.mondrian import anonymize

from conftest import examples

KEY = b"a test key of 32 bytes, not used elsewhere"
SETTINGS = settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))


def oracle_unshared(pairs: list[tuple[int, int]], k: int) -> dict[int, int]:
    """{person: how many persons' sets of groups contain theirs} for the persons in more than one
    group whose set is shared by fewer than k persons."""
    sets: dict[int, set] = defaultdict(set)
    for p, g in pairs:
        sets[p].add(g)
    out = {}
    for p, sp in sets.items():
        if len(sp) < 2:
            continue
        sharing = sum(1 for q in sets.values() if sp <= q)
        if sharing < k:
            out[p] = sharing
    return out


@SETTINGS
@given(pairs=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 5)), min_size=1, max_size=60),
       k=st.integers(1, 5))
def test_unshared_equals_the_oracle(pairs, k):
    eng = anonydb.connect()
    eng.execute("CREATE TABLE l AS SELECT * FROM (VALUES " + ", ".join(f"({p}, {g})" for p, g in pairs)
                + ") AS v(p, g)")
    with eng.scratch("t") as s:
        bad, n = unshared(eng, s, "l", "p", "g", k)
        got = dict(eng.fetch_rows(f'SELECT _adb_p, _adb_sharing FROM "{bad}"')[1])
    assert got == oracle_unshared(pairs, k) and n == len(got)


def load(con, persons):
    """persons: [[(age, month, dx), ...] per person]: age constant per person, month varying."""
    rows = [(p, age, month, dx) for p, recs in enumerate(persons) for age, month, dx in recs]
    con.execute("CREATE OR REPLACE TABLE v (pid INTEGER, age INTEGER, month INTEGER, dx VARCHAR)")
    con.executemany("INSERT INTO v VALUES (?, ?, ?, ?)", rows)
    return rows


person = st.tuples(st.integers(20, 30), st.lists(st.tuples(st.integers(1, 6), st.sampled_from("abc")),
                                                 min_size=1, max_size=5))


def oracle_release(rows: list[tuple], k: int, limit: float, sensitive: bool):
    """What a varying-QI release of ``rows`` (pid, age, month, dx) with the person's pseudonym
    published must be, in plain Python: ("refused", why) or ("released", {class: [record indexes]},
    the suppressed persons).

    The models (k persons per class; with ``sensitive`` distinct 2-diversity by persons, at least 2
    diagnoses held in a class) are monotone: the whole table failing them is exactly "no partition
    holds". Otherwise the classes are the reference Mondrian's (tests/mondrian_reference.py: strict
    median cuts of the records, a cut allowed when both halves hold). The intersection attack is not
    monotone (a class cut in two can single a person out), so whether some other partition would
    survive it decides nothing: the method unlinks these classes (anonydb/methods/unlink.py), and
    the oracle follows it: round by round, the persons in more than one class whose set of classes
    fewer than k remaining persons' sets contain are suppressed with all their records; refused
    past max_suppression (floor(limit * persons)), when no person would be left, or when the
    classes left fail the models."""
    from mondrian_reference import mondrian_reference

    recs = [{"p": p, "age": a, "month": m, "dx": d} for p, a, m, d in rows]

    def ok(ids):
        return len({recs[i]["p"] for i in ids}) >= k and (not sensitive or len({recs[i]["dx"] for i in ids}) >= 2)

    if not ok(range(len(recs))):
        return "refused", "the whole table fails the models"
    parts = mondrian_reference(recs, ["age", "month"], {"age": "numeric", "month": "numeric"}, ok)
    of = {i: c for c, part in enumerate(parts) for i in part}
    persons = {r["p"] for r in recs}
    live, limit_n = set(persons), int(limit * len(persons) + 1e-9)
    while True:
        bad = set(oracle_unshared([(recs[i]["p"], of[i]) for i in of if recs[i]["p"] in live], k))
        if not bad:
            break
        if len(persons - live) + len(bad) > limit_n:
            return "refused", "suppression past max_suppression"
        if not live - bad:
            return "refused", "every person suppressed"
        live -= bad
    classes = {c: [i for i in part if recs[i]["p"] in live] for c, part in enumerate(parts)}
    classes = {c: ids for c, ids in classes.items() if ids}
    if not all(ok(ids) for ids in classes.values()):
        return "refused", "the classes left fail the models"
    return "released", classes, persons - live


#: a release that suppresses every person (issue 62): three persons in three classes of two
#: persons each, months 1, 3 and 5; each person's set of two classes is theirs alone at k = 2
EVERYONE_SUPPRESSED = [(20, [(1, "a"), (3, "b")]), (20, [(1, "b"), (5, "a")]), (20, [(3, "a"), (5, "b")])]


@SETTINGS
@example(people=EVERYONE_SUPPRESSED, k=2, limit=1.0, sensitive=False)
@example(people=EVERYONE_SUPPRESSED, k=2, limit=1.0, sensitive=True)
@given(people=st.lists(person, min_size=4, max_size=25), k=st.integers(2, 3), limit=st.sampled_from([0.0, 0.5, 1.0]),
       sensitive=st.booleans())
def test_varying_release_by_persons(tmp_path_factory, people, k, limit, sensitive):
    """Refused exactly where the oracle (oracle_release) finds no release, in one line naming the
    problem; a release is the oracle's: its classes and suppressed persons, every released person
    with all their records, each published row's QI ranges covering its record and its diagnosis
    the record's, and, read from the published table alone, k persons in every class, 2 diagnoses
    in every class (with the sensitive attribute), and every person's set of classes shared by k."""
    persons = [[(age, m, dx) for m, dx in recs] for age, recs in people]
    con = duckdb.connect()
    rows = load(con, persons)
    key_file = tmp_path_factory.mktemp("key") / "key"
    key_file.write_bytes(KEY)
    want = oracle_release(rows, k, limit, sensitive)
    try:
        anonymize("v", ["age", "month"], "dx" if sensitive else None, out="r", engine=con, person="pid",
                  varying=True, pseudonymize="pid", secret_file=str(key_file), max_suppression=limit, k=k,
                  **({"l": 2} if sensitive else {}), seed=1)
    except InfeasibleError as e:
        event(f"refused: {want[1]}")
        assert want[0] == "refused", f"the oracle finds a release, yet refused: {e}"
        assert "\n" not in str(e)
        if want[1] == "every person suppressed":
            assert "would remove all of them" in str(e)
        assert "r" not in {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        return
    event("released" + (" with suppression" if want[0] == "released" and want[2] else ""))
    assert want[0] == "released", f"the oracle refuses ({want[1]}), yet released"
    _, want_classes, want_suppressed = want
    who = {hmac.new(KEY, str(p).encode(), "sha256").hexdigest(): p for p in range(len(persons))}
    released = con.execute("SELECT pid, eq_class, age_lo, age_hi, month_lo, month_hi"
                           + (", dx" if sensitive else "") + " FROM r").fetchall()
    by_person: dict[int, list] = defaultdict(list)
    classes: dict[int, set] = defaultdict(set)
    dxs: dict[int, set] = defaultdict(set)
    for r in released:
        p = who[r[0]]  # every pseudonym is a person's HMAC
        by_person[p].append(r)
        classes[r[1]].add(p)
        if sensitive:
            dxs[r[1]].add(r[6])
    source: dict[int, list] = defaultdict(list)
    for p, age, m, dx in rows:
        source[p].append((age, m, dx))
    suppressed = set(source) - set(by_person)
    assert suppressed == want_suppressed and len(suppressed) <= int(limit * len(source) + 1e-9)
    for p, recs in by_person.items():  # a released person has all their records, each in the row covering it
        assert len(recs) == len(source[p])
        assert all(r[2] <= r[3] and r[4] <= r[5] for r in recs)
        # the classes' boxes are disjoint (a strict partition), so each record has one box; within
        # it the person's rows are matched to their records by the published diagnosis
        left = list(recs)
        for age, m, dx in sorted(source[p]):
            hit = next((r for r in left if r[2] <= age <= r[3] and r[4] <= m <= r[5]
                        and (not sensitive or r[6] == dx)), None)
            assert hit is not None, f"person {p}'s record {(age, m, dx)} is not published as it is"
            left.remove(hit)
    # the published classes are the oracle's: per class, its persons' (QI, diagnosis) records
    got = sorted(sorted((who[r[0]],) + ((r[6],) if sensitive else ()) for r in released if r[1] == c) for c in classes)
    want_got = sorted(sorted((rows[i][0],) + ((rows[i][3],) if sensitive else ()) for i in ids)
                      for ids in want_classes.values())
    assert got == want_got
    for c, ps in classes.items():  # from the published table: k persons and 2 diagnoses in every class
        assert len(ps) >= k
        assert not sensitive or len(dxs[c]) >= 2
    sets = {p: frozenset(r[1] for r in recs) for p, recs in by_person.items()}
    for p, sp in sets.items():  # the intersection attack: every set shared by k persons
        assert sum(1 for q in sets.values() if sp <= q) >= k


def test_varying_needs_a_person_and_constant_qis_are_checked():
    con = duckdb.connect()
    load(con, [[(20, 1, "a"), (20, 2, "b")], [(21, 1, "a")]])
    with pytest.raises(InputError, match="name the person column"):
        anonymize("v", ["age", "month"], out="r", engine=con, varying=True, k=1)
    with pytest.raises(InputError, match=r"'month' varies within person 0 .*--varying-qis|varying="):
        anonymize("v", ["age", "month"], out="r", engine=con, person="pid", k=1)


def test_the_intersection_by_hand():
    """Groups 1 = {P0, P1, P2}, 2 = {P0, P1, P4}, 3 = {P2, P3, P5}, k = 2. S(P0) = S(P1) = {1, 2}: shared
    by P0 and P1; S(P2) = {1, 3}: only P2 is in both, so P2 alone is singled out (sharing 1); the
    others are in one group each (k-anonymity's business)."""
    eng = anonydb.connect()
    pairs = [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (4, 2), (2, 3), (3, 3), (5, 3)]
    eng.execute("CREATE TABLE l AS SELECT * FROM (VALUES " + ", ".join(f"({p}, {g})" for p, g in pairs)
                + ") AS v(p, g)")
    with eng.scratch("t") as s:
        bad, n = unshared(eng, s, "l", "p", "g", 2)
        assert eng.fetch_rows(f'SELECT _adb_p, _adb_sharing FROM "{bad}"')[1] == [(2, 1)] and n == 1
        bad, n = unshared(eng, s, "l", "p", "g", 3)  # k = 3: P0 and P1 too
        assert sorted(eng.fetch_rows(f'SELECT _adb_p, _adb_sharing FROM "{bad}"')[1]) == [(0, 2), (1, 2), (2, 1)]

"""The release ledger and composed verification on DuckDB [issue 51], judged by the plain-Python
series oracle (tests/series_oracle.py) and by hand.

* the survey's Table VI join attack through ``anonydb.composition.join_candidates``;
* random sequences of tracked Anatomy (groups the test picks) and Mondrian releases of one source,
  each a new series (a new projection or recipient: written as asked, then judged with every
  earlier release of the source): accepted exactly when the oracle finds nobody exposed across the
  accepted releases and it; a refusal writes nothing;
* re-runs of one key-tracked series, which continue its groups, and m-invariant series written by
  ``minvariant`` (both forms), read back and judged by the oracle; a hand-built series whose
  counterfeits are counted by hand;
* a tampered ledger, another secret, a changed key type, no secret, repeated keys: one line, exit 2;
* the CLI (``anonymize --key``, ``releases``, ``--json``, ``--drop``) and specs with ``series:``.

What was published is read back from the released tables (members of Anatomy releases from the
groups the test chose; of Mondrian releases by matching each record to the one class box holding
it; of continued and minvariant releases from the ledger's fingerprints, recomputed here with
Python's hmac).
"""

from __future__ import annotations

import contextlib
import hmac
import io
import json
import random
import shutil
from collections import Counter, defaultdict

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonydb
import series_oracle as so
from anonydb import composition
from anonydb.errors import AnonyDBError, InputError
from anonydb.workflow.cli import main
from anonydb.workflow.jobs import run_spec
from conftest import examples
from test_series_oracle import JOB, LEAVES, T1, T2, T2_LOSSY
from test_spec import problems

SECRET = "0123456789abcdef-ledger-tests"
LEDGER_TABLES = ("anonydb_releases", "anonydb_release_members", "anonydb_release_values", "anonydb_release_hists")
DIS = ["flu", "hiv", "cold", "cancer", "ulcer", "gastritis"]
CITIES = ["north", "south", "east", "west"]
CITY_COLUMNS = "id BIGINT, age BIGINT, city VARCHAR, dis VARCHAR"


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ANONYDB_SECRET", SECRET)


def fp(value, secret: str = SECRET) -> str:
    """The ledger's fingerprint of a key, written from its definition: HMAC-SHA256 of the value's text."""
    return hmac.new(secret.encode(), str(value).encode(), "sha256").hexdigest()


def put(con, name: str, columns: str, rows) -> None:
    con.execute(f"CREATE OR REPLACE TABLE {name} ({columns})")
    if rows:
        con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(rows[0]))})", [list(r) for r in rows])


def ledger_counts(con) -> dict:
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] if t in have else None for t in LEDGER_TABLES}


# ---------------------------------------------------------------------------------------------
# 1. Table VI: the join attack on two views, and the lossy-join fix


def _views(con, view_b):
    put(con, "t1", "link BIGINT, Age BIGINT, Job VARCHAR, Class VARCHAR",
        [(r["link"], r["Age"], r["Job"], r["Class"]) for r in T1])
    put(con, "t2", "link BIGINT, Job VARCHAR, Birthplace VARCHAR, Disease VARCHAR",
        [(r["link"], r["Job"], r["Birthplace"], r["Disease"]) for r in view_b])


def _oracle_rows(cands):
    return [(p, n, len(vals)) for p, (n, vals) in sorted(cands.items())]


def test_table_vi_join_attack_and_lossy_fix():
    con = duckdb.connect()
    eng = anonydb.connect(con)
    _views(con, T2)
    plain = composition.join_candidates(eng, "t1", "t2", "link", ["Age"], ["Birthplace"], ["Job"], "Disease")
    want = so.join_candidates(T1, T2, ["Age"], ["Birthplace"], ["Job"], "Disease")
    assert plain == _oracle_rows(want)
    # k = 2 refuses the plain join: the {40, France} owner (link 2) and three others have 1 pair
    assert {p for p, n, _ in plain if n < 2} == set(so.join_exposed(want, k=2)) == {2, 3, 4, 5}
    # the lossy join: T2's Job generalized, matched on the generalization path
    _views(con, T2_LOSSY)
    lossy = composition.join_candidates(eng, "t1", "t2", "link", ["Age"], ["Birthplace"], ["Job"], "Disease",
                                        {"Job": JOB})
    want = so.join_candidates(T1, T2_LOSSY, ["Age"], ["Birthplace"], ["Job"], "Disease", {"Job": JOB})
    assert lossy == _oracle_rows(want)
    assert min(n for _, n, _ in lossy) >= 2 and so.join_exposed(want, k=2) == {}  # accepted at k = 2
    # without the taxonomy the generalized Job matches no T1 job: nobody has a pair
    assert composition.join_candidates(eng, "t1", "t2", "link", ["Age"], ["Birthplace"], ["Job"], "Disease") == []


@pytest.mark.parametrize("seed", range(6))
def test_random_join_candidates_match_the_oracle(seed):
    rng = random.Random(3000 + seed)
    n = rng.randint(3, 10)
    va = [{"link": i, "A": rng.randint(0, 2), "J": rng.choice(["L1", "L2", "L3", "T1", "T2"])} for i in range(n)]
    level = rng.choice([0, 1, 2])
    vb = [{"link": i, "B": rng.randint(0, 2), "S": rng.choice("xyz"),
           "J": va[i]["J"] if level == 0 else LEAVES[va[i]["J"]] if level == 1 else "*"} for i in range(n)]
    con = duckdb.connect()
    put(con, "va", "link BIGINT, A BIGINT, J VARCHAR", [(r["link"], r["A"], r["J"]) for r in va])
    put(con, "vb", "link BIGINT, B BIGINT, J VARCHAR, S VARCHAR", [(r["link"], r["B"], r["J"], r["S"]) for r in vb])
    got = composition.join_candidates(anonydb.connect(con), "va", "vb", "link", ["A"], ["B"], ["J"], "S",
                                      {"J": LEAVES})
    assert got == _oracle_rows(so.join_candidates(va, vb, "A", "B", "J", "S", {"J": LEAVES}))


# ---------------------------------------------------------------------------------------------
# reading a release back into the oracle's format


def mondrian_groups(con, out: str, records: dict) -> dict:
    """person -> eq_class of a Mondrian release of (age, zip): the one class box holding the record
    (strict Mondrian's boxes are disjoint) whose published values include the record's."""
    rows = con.execute(f"SELECT eq_class, age_lo, age_hi, zip_lo, zip_hi, dis FROM {out}").fetchall()
    boxes = {r[0]: r[1:5] for r in rows}
    members = {}
    for pid, (age, zip_, _dis) in records.items():
        hit = [g for g, (alo, ahi, zlo, zhi) in boxes.items() if alo <= age <= ahi and zlo <= zip_ <= zhi]
        assert len(hit) == 1, (pid, hit)
        members[pid] = hit[0]
    values = defaultdict(list)
    for g, *_, dis in rows:
        values[g].append(dis)
    release = {"members": members, "values": dict(values)}
    assert so.well_formed(release) == []
    for pid, (_, _, dis) in records.items():
        assert dis in values[members[pid]]
    return release


def partition(release: dict) -> set:
    by = defaultdict(set)
    for p, g in release["members"].items():
        by[g].add(p)
    return {(frozenset(ps), tuple(sorted(release["values"][g]))) for g, ps in by.items()}


def probe_mondrian(records: dict, l: int) -> dict:
    """The release Mondrian would write for these records, written untracked into a database of its own."""
    con = duckdb.connect()
    put(con, "src", "id BIGINT, age BIGINT, zip BIGINT, dis VARCHAR",
        [(p, *r) for p, r in sorted(records.items())])
    anonydb.anonymize("src", ["age", "zip"], "dis", out="probe", engine=con, l=l)
    return mondrian_groups(con, "probe", records)


def snapshot(con) -> dict:
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return {t: sorted(map(str, con.execute(f"SELECT * FROM {t}").fetchall()))
            for t in sorted(have) if not t.startswith("src")}


# ---------------------------------------------------------------------------------------------
# 2. random series of tracked releases, judged by the oracle


def _repair(groups: list[list], value, l: int, rng) -> list[list]:
    """Merge groups holding fewer than l distinct values into others until each holds l."""
    groups = [g for g in groups if g]
    while True:
        bad = [i for i, g in enumerate(groups) if len({value[p] for p in g}) < l]
        if not bad or len(groups) == 1:
            return groups
        i = bad[0]
        j = rng.choice([x for x in range(len(groups)) if x != i])
        groups[j] = groups[j] + groups[i]
        del groups[i]


def _anatomy_groups(rng, alive, value, l, last):
    """Groups chosen by the test: 'keep' (persistent records keep their last accepted group, new
    ones join a random group or form new ones) or 'shuffle' (a random partition)."""
    if last is not None and rng.random() < 0.7:
        by = defaultdict(list)
        new = []
        for p in alive:
            (by[last["members"][p]] if p in last["members"] else new).append(p)
        groups = list(by.values())
        rng.shuffle(new)
        if rng.random() < 0.5:  # the new records in groups of their own (safe from the difference attack)
            fresh = _repair([new[i:i + l + 1] for i in range(0, len(new), l + 1)], value, l, rng)
            groups += fresh if all(len({value[p] for p in g}) >= l for g in fresh) else [new]
            new = []
        for p in new:
            if groups and rng.random() < 0.5:
                rng.choice(groups).append(p)
            else:
                groups.append([p])
    else:
        ps = list(alive)
        rng.shuffle(ps)
        groups, i = [], 0
        while i < len(ps):
            size = rng.randint(l, l + 2)
            groups.append(ps[i:i + size])
            i += size
    return _repair(groups, value, l, rng)


def _release_series(seed: int) -> Counter:
    rng = random.Random(seed)
    con = duckdb.connect()
    l = rng.choice([2, 3])
    records, nxt = {}, 0  # id -> (age, zip, dis); a persistent record keeps its values
    accepted: list[dict] = []
    outcomes = Counter()
    for i in range(rng.randint(2, 3)):
        if i:
            churn = rng.choice([0, 0.1, 0.3])
            records = {p: r for p, r in records.items() if rng.random() >= churn}
        for _ in range(rng.randint(24, 32) if i == 0 else rng.randint(0, 10)):
            records[nxt] = (rng.randint(20, 60), rng.randint(0, 9), rng.choice(DIS[:5]))
            nxt += 1
        value = {p: r[2] for p, r in records.items()}
        assert len(set(value.values())) >= l
        method = "mondrian" if rng.random() < 0.35 else "anatomy"
        if method == "anatomy":
            groups = _anatomy_groups(rng, sorted(records), value, l, accepted[-1] if accepted else None)
            group_of = {p: gi * 7 + 3 for gi, g in enumerate(groups) for p in g}  # any labels
            cand = {"members": group_of, "values": {}}
            for p, g in group_of.items():
                cand["values"].setdefault(g, []).append(value[p])
        else:
            group_of = {p: 0 for p in records}
            cand = probe_mondrian(records, l)
        put(con, "src", "id BIGINT, age BIGINT, zip BIGINT, dis VARCHAR, g BIGINT",
            [(p, *r, group_of[p]) for p, r in sorted(records.items())])
        exposed = so.exposed(accepted + [cand], l)
        new_exposed = {} if exposed else so.byun_new_exposed(accepted + [cand], l)  # the difference attack
        before, counts = snapshot(con), ledger_counts(con)
        kw = dict(method="anatomy", groups="g", out="arel") if method == "anatomy" else dict(out="mrel")
        where = f"seed {seed}, release {i} ({method}, l = {l})"
        if exposed:
            with pytest.raises(AnonyDBError) as e:
                anonydb.anonymize("src", ["age", "zip"], "dis", engine=con, key="id", series=f"s{i}", l=l,
                                  replace=True, **kw)
            msg = str(e.value)
            # the earliest last-release of an exposed person, as a ledger id (accepted releases: 1, 2, ...)
            worst = min(max(so.holding(accepted, p)) for p in exposed) + 1
            assert "\n" not in msg and msg.startswith("composed verification failed"), where
            assert f"read with ledger release {worst} " in msg, (where, msg)
            assert (f"{len(exposed)} records are left with fewer than {l} possible sensitive values "
                    f"(as few as {min(exposed.values())})") in msg, (where, msg, exposed)
            assert snapshot(con) == before and ledger_counts(con) == counts, where
            outcomes["refused"] += 1
            continue
        if new_exposed:
            with pytest.raises(AnonyDBError) as e:
                anonydb.anonymize("src", ["age", "zip"], "dis", engine=con, key="id", series=f"s{i}", l=l,
                                  replace=True, **kw)
            msg = str(e.value)
            first = min(r for r, _ in new_exposed.values())
            hit = [n for r, n in new_exposed.values() if r == first]
            assert "\n" not in msg and f"read with ledger release {first + 1} " in msg, (where, msg)
            assert (f"{len(hit)} records new since it are left with fewer than {l} possible sensitive values "
                    f"(as few as {min(hit)})") in msg, (where, msg, new_exposed)
            assert snapshot(con) == before and ledger_counts(con) == counts, where
            outcomes["refused"] += 1
            outcomes["difference"] += 1
            continue
        anonydb.anonymize("src", ["age", "zip"], "dis", engine=con, key="id", series=f"s{i}", l=l, replace=True, **kw)
        if method == "anatomy":  # the ST read back, its groups named by the ledger's fingerprints
            fps = dict(con.execute("SELECT fp, grp FROM anonydb_release_members WHERE release_id = "
                                   "(SELECT max(id) FROM anonydb_releases)").fetchall())
            gid = {g: {fps[fp(p)] for p in records if group_of[p] == g} for g in cand["values"]}
            assert all(len(x) == 1 for x in gid.values()) and len(set.union(*gid.values())) == len(gid), where
            st = defaultdict(list)
            for g, dis, n in con.execute("SELECT group_id, dis, count FROM arel_st").fetchall():
                st[g] += [dis] * n
            assert {g: sorted(v) for g, v in cand["values"].items()} == {g: sorted(st[min(gid[g])]) for g in
                                                                          cand["values"]}, where
        else:  # the release written is the probe's partition
            assert partition(mondrian_groups(con, "mrel", records)) == partition(cand), where
        after = ledger_counts(con)
        assert after["anonydb_releases"] == len(accepted) + 1, where
        entry = con.execute("SELECT series, method, rows, members, groups, mode FROM anonydb_releases "
                            "ORDER BY id DESC LIMIT 1").fetchone()
        assert entry == (f"s{i}", method, len(records), len(records), len(cand["values"]), "intersection"), where
        accepted.append(cand)
        outcomes["accepted"] += 1
        outcomes["later"] += i > 0
    return outcomes


@pytest.mark.parametrize("chunk", range(2))
def test_random_series_accepted_exactly_when_the_oracle_finds_nobody_exposed(chunk):
    seen = Counter()
    for seed in range(chunk * 8, chunk * 8 + 8):
        seen += _release_series(seed)
    # both outcomes, later releases accepted too (the first release of a source always is), and
    # refusals by the difference attack alone
    assert seen["later"] >= 1 and seen["refused"] >= 3 and seen["difference"] >= 1, seen


# ---------------------------------------------------------------------------------------------
# 3. re-runs of a series continue it; m-invariance


def read_tracked(con, out: str, form: str, records: dict, qis: list[str], series: str) -> dict:
    """The last release of ``series`` in the oracle's format (counterfeits included), checked against
    its source (``records``: id -> (QI values..., dis)): every record published once, its group's
    labels covering its QIs (a numeric QI in [lo, hi], a categorical one equal or '*'), its value
    among its group's. Members come from the ledger's fingerprints, recomputed here."""
    rid = con.execute(f"SELECT max(id) FROM anonydb_releases WHERE series = '{series}'").fetchone()[0]
    fps = dict(con.execute("SELECT fp, grp FROM anonydb_release_members WHERE release_id = ?", [rid]).fetchall())
    assert len(fps) == len(records)
    members = {p: fps[fp(p)] for p in records}
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    gcol = "eq_class" if form == "generalized" else "group_id"
    cf = dict(con.execute(f"SELECT {gcol}, counterfeits FROM {out}_counterfeits").fetchall()) \
        if f"{out}_counterfeits" in have else {}
    values = defaultdict(list)
    if form == "generalized":
        cur = con.execute(f"SELECT * FROM {out}")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        labels = {}
        for r in rows:
            values[r["eq_class"]].append(r["dis"])
            lab = tuple((r[f"{q}_lo"], r[f"{q}_hi"]) if f"{q}_lo" in r else r[q] for q in qis)
            assert labels.setdefault(r["eq_class"], lab) == lab  # one label per group
        assert len(rows) == len(records) + sum(cf.values())  # real rows = the source's records
        published = len(rows)
        for p, rec in records.items():
            for lab, v in zip(labels[members[p]], rec):
                assert (lab[0] <= v <= lab[1]) if isinstance(lab, tuple) else lab in (v, "*"), (p, lab, v)
    else:
        qit = Counter(con.execute(f"SELECT {', '.join(qis)}, group_id FROM {out}_qit").fetchall())
        assert qit == Counter((*rec[:-1], members[p]) for p, rec in records.items())
        published = len(records)
        for g, dis, n in con.execute(f"SELECT group_id, dis, count FROM {out}_st").fetchall():
            values[g] += [dis] * n
    release = {"members": members, "values": dict(values), "counterfeits": cf}
    assert so.well_formed(release) == []
    real = defaultdict(Counter)
    for p, rec in records.items():
        real[members[p]][rec[-1]] += 1
    for g, vals in values.items():
        assert not real[g] - Counter(vals)  # each record's value is published in its group
    entry = con.execute(f"SELECT counterfeits, rows, members FROM anonydb_releases WHERE id = {rid}").fetchone()
    assert entry == (sum(cf.values()), published, len(records))
    return release


def _changing(rng, records, nxt, first: int, churn: float, qi):
    """The next state of a table: each record leaves with probability ``churn`` (the others keep
    every value), new ones arrive (``qi(rng)``: their QI values)."""
    if records:
        records = {p: r for p, r in records.items() if rng.random() >= churn}
    for _ in range(first if not records else rng.randint(first // 5, first // 3)):
        records[nxt] = (*qi(rng), rng.choice(DIS))
        nxt += 1
    return records, nxt


def _age_city(rng):
    return rng.randint(20, 70), rng.choice(CITIES)


def _age_zip(rng):
    return rng.randint(20, 70), rng.randint(0, 9)


def test_rerun_of_a_key_tracked_series_continues_it():
    # Mondrian (k = 3, l = 2), then two re-runs of series 's' on a changing table: each continues the
    # earlier groups (their values kept, padded to k with counterfeits), so nobody is exposed
    rng = random.Random(11)
    con = duckdb.connect()
    records, nxt, series = {}, 0, []
    for i in range(3):
        records, nxt = _changing(rng, records, nxt, 60, 0.3, _age_zip)
        put(con, "src", "id BIGINT, age BIGINT, zip BIGINT, dis VARCHAR", [(p, *r) for p, r in sorted(records.items())])
        anonydb.anonymize("src", ["age", "zip"], "dis", out="rel", engine=con, key="id", series="s", k=3, l=2,
                          replace=True)
        series.append(read_tracked(con, "rel", "generalized", records, ["age", "zip"], "s"))
        if i == 0:  # the first release is Mondrian's: its members found again by their class boxes
            assert partition(mondrian_groups(con, "rel", records)) == partition(series[0])
        for g, vals in series[-1]["values"].items():
            assert len(vals) >= 3 and len(set(vals)) >= 2, (i, g, vals)
        assert so.exposed(series, 2) == {}, i
        # a person's groups keep one set of values (the m-unique entries aside: values may repeat)
        assert [v for v in so.m_invariant(series, 1) if v[0] != "m-unique"] == [], i
    assert sum(sum(r["counterfeits"].values()) for r in series) > 0
    assert con.execute("SELECT count(*), count(DISTINCT series), min(mode) FROM anonydb_releases").fetchone() == (
        3, 1, "intersection")


@pytest.mark.parametrize("form, seed, m", [("generalized", 1, 3), ("anatomy", 2, 2)])
def test_minvariant_series_is_m_invariant(form, seed, m):
    rng = random.Random(seed)
    con = duckdb.connect()
    records, nxt, series = {}, 0, []
    for i in range(4):
        records, nxt = _changing(rng, records, nxt, 60, 0.2, _age_city)
        put(con, "src", CITY_COLUMNS, [(p, *r) for p, r in sorted(records.items())])
        anonydb.anonymize("src", ["age", "city"], "dis", method="minvariant", form=form, out="mi", engine=con,
                          key="id", m=m, replace=True, compare=False)
        series.append(read_tracked(con, "mi", form, records, ["age", "city"], "mi"))
        assert so.m_unique(series[-1], m) == []  # >= m values per group, all different
        assert so.m_invariant(series, m) == [] and so.exposed(series, m) == {}, (form, i)
    assert sum(sum(r["counterfeits"].values()) for r in series[1:]) > 0  # deletions needed counterfeits
    assert con.execute("SELECT count(*), min(method), min(mode), min(m) FROM anonydb_releases").fetchone() == (
        4, "minvariant", "m-invariance", m)


def test_minvariant_hand_built_counterfeits():
    # m = 3. R1: ids 1..6 hold a, a, b, b, c, c: two groups of {a, b, c} (6 records, 3 values).
    # R2: 1 (a) and 3 (b) leave, 7 (a) arrives: 7 fills the a hole of 1's group, 3's b hole takes a
    #     counterfeit b (whether or not 1 and 3 shared a group): 1 counterfeit, 5 real rows.
    # R3: 5 (c) leaves, 8 (b) fills the b hole, 5's c hole takes a counterfeit c (its group keeps a
    #     record: it held 3, at most one other left, and 7 or the b in it stays);
    #     9, 10, 11 (d, e, f) hold no signature's value: one new group of 3. 1 counterfeit.
    base = {1: (30, "x", "a"), 2: (31, "x", "a"), 3: (32, "x", "b"), 4: (33, "x", "b"), 5: (34, "x", "c"),
            6: (35, "x", "c")}
    r2 = {p: r for p, r in base.items() if p not in (1, 3)} | {7: (36, "x", "a")}
    r3 = {p: r for p, r in r2.items() if p != 5} | {8: (37, "x", "b"), 9: (40, "y", "d"), 10: (41, "y", "e"),
                                                    11: (42, "y", "f")}
    expect = [(0, 2, Counter()), (1, 2, Counter(b=1)), (1, 3, Counter(c=1))]  # counterfeits, groups, their values
    con = duckdb.connect()
    series = []
    for records, (n_cf, n_groups, cf_values) in zip((base, r2, r3), expect):
        put(con, "src", CITY_COLUMNS, [(p, *r) for p, r in sorted(records.items())])
        anonydb.anonymize("src", ["age", "city"], "dis", method="minvariant", out="mi", engine=con, key="id", m=3,
                          replace=True, compare=False)
        rel = read_tracked(con, "mi", "generalized", records, ["age", "city"], "mi")
        series.append(rel)
        assert sum(rel["counterfeits"].values()) == n_cf and len(rel["values"]) == n_groups
        published = Counter(v for vals in rel["values"].values() for v in vals)
        assert published - Counter(r[2] for r in records.values()) == cf_values
        assert so.m_invariant(series, 3) == [] and so.exposed(series, 3) == {}
    # every person keeps the signature of their first group
    assert so.intersection(series, 2) == so.intersection(series, 7) == {"a", "b", "c"}
    assert so.intersection(series, 9) == {"d", "e", "f"}


def _viii_rows(release: dict) -> list[tuple]:
    """Table VIII as a source: (name, age, dis, g); a person's value is the one their group holds
    for them (each group's values dealt to its members in name order)."""
    rows, by = [], defaultdict(list)
    for p, g in sorted(release["members"].items()):
        by[g].append(p)
    for gi, (g, ps) in enumerate(sorted(by.items())):
        for p, v in zip(ps, release["truth"][g]):
            rows.append((p, 30 + gi, v, gi))
    return rows


@pytest.mark.parametrize("case", ["same", "deletion", "insertion", "repeat"])
def test_m_invariance_judged_against_the_oracle_on_table_viii(case):
    # Table VIII, tracked by person (a person-tracked series is judged as written, not continued):
    # T1 (Beth Cancer, Cara Diabetes | Ed Fever, Finn Cancer), then T1 again, Table VIII(c) (Cara
    # leaves, Gina Fever joins: Beth's group becomes {Cancer, Fever}), VIII(b) (Alice HIV joins:
    # {Cancer, Diabetes, HIV}) or Dora (Cancer) joining Beth's group (a value repeated).
    pf, am = "Professional/Female", "Artist/Male"
    t1 = {"members": {"Beth": pf, "Cara": pf, "Ed": am, "Finn": am},
          "truth": {pf: ["Cancer", "Diabetes"], am: ["Fever", "Cancer"]}}
    second = {
        "same": t1,
        "deletion": {"members": {"Beth": pf, "Gina": pf, "Ed": am, "Finn": am},
                     "truth": {pf: ["Cancer", "Fever"], am: ["Fever", "Cancer"]}},
        "insertion": {"members": {"Alice": pf, "Beth": pf, "Cara": pf, "Ed": am, "Finn": am},
                      "truth": {pf: ["HIV", "Cancer", "Diabetes"], am: ["Fever", "Cancer"]}},
        "repeat": {"members": {"Beth": pf, "Cara": pf, "Dora": pf, "Ed": am, "Finn": am},
                   "truth": {pf: ["Cancer", "Diabetes", "Cancer"], am: ["Fever", "Cancer"]}},
    }[case]
    series = [{"members": r["members"], "values": r["truth"]} for r in (t1, second)]
    bad = so.m_invariant(series, 2)
    changed = sum(1 for v in bad if v[0] != "m-unique")
    not_unique = sum(1 for v in bad if v[0] == "m-unique")
    assert (changed, not_unique) == {"same": (0, 0), "deletion": (1, 0), "insertion": (2, 0), "repeat": (0, 1)}[case]
    con = duckdb.connect()
    kw = dict(method="anatomy", groups="g", person="name", composition="m-invariance", m=2, l=2, out="viii",
              series="viii", engine=con, replace=True)
    for i, rel in enumerate((t1, second)):
        put(con, "src", "name VARCHAR, age BIGINT, dis VARCHAR, g BIGINT", _viii_rows(rel))
        if i == 0 or not bad:
            anonydb.anonymize("src", ["age"], "dis", **kw)
            continue
        before = snapshot(con)
        with pytest.raises(AnonyDBError) as e:
            anonydb.anonymize("src", ["age"], "dis", **kw)
        msg = str(e.value)
        assert msg.startswith("composed verification failed") and "is not 2-invariant" in msg
        assert (f"{not_unique} groups are not 2-unique" if not_unique else
                f"{changed} persons present in earlier releases of src are in a group whose sensitive values "
                f"differ") in msg, msg
        assert snapshot(con) == before
    assert con.execute("SELECT count(*) FROM anonydb_releases").fetchone()[0] == (1 if bad else 2)


# ---------------------------------------------------------------------------------------------
# 4. bad input: one line, exit 2


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def _people(n: int = 60, key_type: str = "BIGINT", key=lambda i: i):
    return ([(key(i), 20 + (i * 13) % 40, (i * 7) % 11, DIS[i % 4], i // 4) for i in range(n)],
            f"id {key_type}, age BIGINT, zip BIGINT, dis VARCHAR, g BIGINT")


def _database(folder):
    """A database file with the table src (id, age, zip, dis, g) and a secret file beside it."""
    path = folder / "db.duckdb"
    rows, cols = _people()
    with duckdb.connect(str(path)) as con:
        put(con, "src", cols, rows)
    (folder / "key.txt").write_text(SECRET)
    return path


@pytest.fixture
def db(tmp_path):
    return _database(tmp_path)


@pytest.fixture(scope="module")
def _released(tmp_path_factory):
    path = _database(tmp_path_factory.mktemp("released"))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(anonymize_args(path)) == 0
    return path


@pytest.fixture
def released(_released, tmp_path):
    """``db`` after one tracked release (series 'rel', Mondrian, l = 3, key id): a copy per test."""
    for f in _released.parent.iterdir():
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / _released.name


def anonymize_args(db, qi="age,zip", out="rel", *extra):
    return ["anonymize", "src", "--db", str(db), "--qi", qi, "--sensitive", "dis", "--l", "3", "--out", out,
            "--key", "id", "--secret-file", str(db.parent / "key.txt"), "--quiet", *extra]


def _edit(db, sql):
    with duckdb.connect(str(db)) as con:
        con.execute(sql)


def _retype(db):
    rows, cols = _people(key_type="VARCHAR", key=str)
    with duckdb.connect(str(db)) as con:
        put(con, "src", cols, rows)


def _other_secret(db):
    (db.parent / "key.txt").write_text("another secret, also long enough")


@pytest.mark.parametrize("change, message", [
    (lambda db: None, None),  # control: the same release again is accepted
    (lambda db: _edit(db, "UPDATE anonydb_releases SET achieved = '{}'"),
     "ledger release 1 (series 'rel') fails its checksum: the ledger was edited by hand"),
    (lambda db: _edit(db, "UPDATE anonydb_release_members SET grp = grp + 1 WHERE fp = "
                          "(SELECT min(fp) FROM anonydb_release_members)"),
     "ledger release 1 (series 'rel') fails its checksum"),
    # the histories and every value are covered too: one value added to a history, and two groups'
    # values swapped (count, sums and extremes unchanged), each fail the checksum
    (lambda db: _edit(db, "INSERT INTO anonydb_release_hists SELECT release_id, hist, 'cancer' FROM "
                          "anonydb_release_hists WHERE value <> 'cancer' LIMIT 1"),
     "ledger release 1 (series 'rel') fails its checksum"),
    (lambda db: _edit(db, "UPDATE anonydb_release_values SET grp = (SELECT min(grp) + max(grp) FROM "
                          "anonydb_release_values) - grp WHERE grp IN ((SELECT min(grp) FROM anonydb_release_values), "
                          "(SELECT max(grp) FROM anonydb_release_values))"),
     "ledger release 1 (series 'rel') fails its checksum"),
    # an entry deleted by hand: its fingerprints are left without it
    (lambda db: _edit(db, "DELETE FROM anonydb_releases WHERE id = 1"),
     "ledger release 1 has fingerprints but no entry: the entry was deleted by hand"),
    (_other_secret, "ledger release 1 (series 'rel') of src was keyed by another secret"),
    (_retype, "the tracked column 'id' of src is VARCHAR now but was BIGINT in ledger release 1"),
])
def test_ledger_checked_before_the_next_release(released, capsys, change, message):
    db = released
    change(db)
    with duckdb.connect(str(db)) as con:
        before = con.execute("SELECT count(*) FROM anonydb_releases").fetchone()[0]
    code, _, err = run(anonymize_args(db, "age,zip", "rel", "--replace"), capsys)
    if message is None:
        assert code == 0
        return
    assert code == 2 and message in err and err.count("\n") == 1, err
    with duckdb.connect(str(db)) as con:
        assert con.execute("SELECT count(*) FROM anonydb_releases").fetchone()[0] == before
    # anonydb releases --verify names it and exits 1; the listing marks it
    code, out, _ = run(["releases", "--db", str(db), "--verify", "--secret-file", str(db.parent / "key.txt")], capsys)
    if "another secret" not in message and "VARCHAR" not in message:
        assert code == 1 and "PROBLEM: release 1" in out, out


def test_tracked_release_needs_a_secret(db, capsys, monkeypatch):
    monkeypatch.delenv("ANONYDB_SECRET")
    args = anonymize_args(db)
    i = args.index("--secret-file")
    code, _, err = run(args[:i] + args[i + 2:], capsys)
    assert code == 2 and "a tracked release needs the publisher's secret" in err and err.count("\n") == 1
    with duckdb.connect(str(db)) as con:
        assert ledger_counts(con)["anonydb_releases"] is None
        assert not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'rel'").fetchone()[0]


def test_repeated_keys_split_across_groups_refused(db, capsys):
    rows, cols = _people(key=lambda i: i % 30)  # records i and i + 30: groups i // 4 and i // 4 + 7 (or 8)
    with duckdb.connect(str(db)) as con:
        put(con, "src", cols, rows)
    code, _, err = run(anonymize_args(db, "age,zip", "rel", "--method", "anatomy", "--groups", "g"), capsys)
    assert code == 2 and "'id' must name each record once: 0 NULL and 30 repeated values" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("key", [lambda i: i // 2, lambda i: None if i == 0 else i], ids=["repeated", "null"])
def test_repeated_or_null_keys_in_one_group_refused(db, capsys, key):
    rows, cols = _people(key=key)
    with duckdb.connect(str(db)) as con:
        put(con, "src", cols, rows)  # g = i // 4: the two records of a key share Anatomy's group
    code, _, err = run(anonymize_args(db, "age,zip", "rel", "--method", "anatomy", "--groups", "g"), capsys)
    assert code == 2 and "id" in err and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# 5. the CLI: two projections, the ledger listed, an entry dropped


def test_cli_second_projection_refused_and_releases_listed(db, capsys):
    with duckdb.connect(str(db)) as con:
        records = {p: (a, z, d) for p, a, z, d in con.execute("SELECT id, age, zip, dis FROM src").fetchall()}
    assert run(anonymize_args(db), capsys)[0] == 0
    with duckdb.connect(str(db)) as con:
        first = mondrian_groups(con, "rel", records)
    # what the age-only projection would publish (untracked, elsewhere): Mondrian over one QI
    pcon = duckdb.connect()
    put(pcon, "src", "id BIGINT, age BIGINT, zip BIGINT, dis VARCHAR", [(p, *r) for p, r in records.items()])
    anonydb.anonymize("src", ["age"], "dis", out="probe", engine=pcon, l=3)
    rows = pcon.execute("SELECT eq_class, age_lo, age_hi, dis FROM probe").fetchall()
    second = {"members": {p: next(g for g, lo, hi, _ in rows if lo <= a <= hi) for p, (a, _, _) in records.items()},
              "values": {}}
    for g, *_, dis in rows:
        second["values"].setdefault(g, []).append(dis)
    exposed = so.exposed([first, second], 3)
    assert exposed  # the projection narrows someone down
    code, out, err = run(anonymize_args(db, "age", "rel2"), capsys)
    assert code == 2 and err.count("\n") == 1 and out == ""
    assert "composed verification failed: read with ledger release 1 (series 'rel'," in err
    assert f"{len(exposed)} records are left with fewer than 3 possible sensitive values" in err

    code, out, _ = run(["releases", "--db", str(db)], capsys)
    assert code == 0
    header, line, achieved = out.splitlines()
    assert header.split()[:7] == ["id", "created", "series", "source", "method", "mode", "rows"]
    f = line.split()
    assert (f[0], f[2], f[3], f[4], f[5], f[6]) == ("1", "rel", "src", "mondrian", "intersection", "60")
    assert line.endswith("nothing earlier") and achieved.strip().startswith("achieved: l-diversity")
    code, out, _ = run(["releases", "--db", str(db), "--json"], capsys)
    (e,) = json.loads(out)
    assert (e["id"], e["series"], e["method"], e["rows"], e["source"], e["tracked"], e["members"]) == (
        1, "rel", "mondrian", 60, "src", "id", 60)
    assert e["groups"] == len(first["values"]) and e["counterfeits"] == 0
    assert run(["releases", "--db", str(db), "--series", "other"], capsys)[1].strip() == \
        "no releases in the ledger for series 'other'"

    code, out, _ = run(["releases", "--db", str(db), "--drop", "1"], capsys)
    assert code == 0 and "dropped ledger release(s) 1" in out
    with duckdb.connect(str(db)) as con:  # a tombstone keeps the chain; the fingerprints go
        assert ledger_counts(con) == {**dict.fromkeys(LEDGER_TABLES, 0), "anonydb_releases": 1}
        assert con.execute("SELECT id, mode FROM anonydb_releases").fetchall() == [(1, "dropped")]
        assert con.execute("SELECT count(*) FROM rel").fetchone()[0] == 60  # the released table stays
    assert run(["releases", "--db", str(db)], capsys)[1].strip() == "no releases in the ledger"
    code, _, err = run(["releases", "--db", str(db), "--drop", "1"], capsys)
    assert code == 2 and "no ledger release 1" in err


# ---------------------------------------------------------------------------------------------
# 6. specs with a series

SPEC = """\
source: visits
database: db.duckdb
secret_file: key.txt
series: {name: monthly, composition: m-invariance, m: 3}
attributes: {id: key, age: qi, city: qi, dis: sensitive}
method: minvariant
privacy: {k: 3}
output: {table: rel, replace: true}
"""


def test_spec_series_four_runs(tmp_path):
    (tmp_path / "key.txt").write_text(SECRET)
    (tmp_path / "spec.yaml").write_text(SPEC)
    rng = random.Random(7)
    records, nxt, series = {}, 0, []
    for month in range(4):
        records, nxt = _changing(rng, records, nxt, 40, 0.25, _age_city)
        with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
            put(con, "visits", CITY_COLUMNS, [(p, *r) for p, r in sorted(records.items())])
        rel = run_spec(tmp_path / "spec.yaml")
        rel.engine.close()
        with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
            series.append(read_tracked(con, "rel", "generalized", records, ["age", "city"], "monthly"))
            entries = con.execute("SELECT series, source, mode, m, method FROM anonydb_releases ORDER BY id").fetchall()
        assert entries == [("monthly", "visits", "m-invariance", 3, "minvariant")] * (month + 1)
        assert so.m_invariant(series, 3) == [] and so.exposed(series, 3) == {}


@pytest.mark.parametrize("old, new, where, what", [
    ("composition: m-invariance, m: 3}", "composition: m-invariance}", "series (line 4)",
     "m-invariance needs m (series.m)"),
    ("m: 3}", "m: 1}", "series.m (line 4)", "must be at least 2, got 1"),
    ("m: 3}", "m: 3, every: month}", "series.every (line 4)", "unknown key 'every'"),
    ("composition: m-invariance", "composition: union", "series.composition (line 4)",
     "expected intersection, insert-only or m-invariance, got 'union'"),
    ("{id: key, age: qi", "{id: key, age: key", "attributes (line 5)", "one key column is supported, got id, age"),
    ("{id: key, age: qi", "{id: qi, age: qi", "attributes (line 5)",
     "a release in a series is tracked by a record key"),
    ("method: minvariant", "method: {name: minvariant, form: sideways}", "method.form (line 6)",
     "expected generalized or anatomy, got 'sideways'"),
    ("replace: true}", "replace: true, format: parquet, path: r.parquet}", "output.format (line 8)",
     "a tracked release lives beside its ledger, in the database: format duckdb"),
])
def test_bad_series_spec_named_with_its_line(tmp_path, old, new, where, what):
    assert old in SPEC
    got = dict(problems(tmp_path, SPEC.replace(old, new)))
    assert where in got and got[where].startswith(what), got


def test_spec_series_refused_run_writes_nothing(tmp_path):
    # a second run whose tracked key now repeats a value: refused before anything is written
    (tmp_path / "key.txt").write_text(SECRET)
    (tmp_path / "spec.yaml").write_text(SPEC)
    rows = [(i, 20 + i % 30, CITIES[i % 4], DIS[i % 6]) for i in range(40)]
    with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
        put(con, "visits", CITY_COLUMNS, rows)
    run_spec(tmp_path / "spec.yaml").engine.close()
    with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
        put(con, "visits", CITY_COLUMNS, rows + [(0, 99, "north", "flu")])
        before = snapshot(con)
    with pytest.raises(InputError, match="must name each record once: 0 NULL and 1 repeated values"):
        run_spec(tmp_path / "spec.yaml")
    with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
        assert snapshot(con) == before



@given(seed=st.integers(0, 10_000), m=st.integers(2, 3), form=st.sampled_from(["generalized", "anatomy"]),
       churn=st.sampled_from([0.0, 0.1, 0.4]), months=st.integers(2, 3),
       qi=st.sampled_from([_age_city, _age_zip]))
@settings(max_examples=examples(5, slow=30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_minvariant_property(seed, m, form, churn, months, qi):
    """Any changing table: every minvariant release publishes each record once, its group's labels
    cover its values (read_tracked), and the series is m-invariant under the oracle."""
    rng = random.Random(seed)
    con = duckdb.connect()
    cols = CITY_COLUMNS if qi is _age_city else "id BIGINT, age BIGINT, zip BIGINT, dis VARCHAR"
    names = ["age", "city"] if qi is _age_city else ["age", "zip"]
    records, nxt, series = {}, 0, []
    for _ in range(months):
        records, nxt = _changing(rng, records, nxt, 40, churn, qi)
        put(con, "src", cols, [(p, *r) for p, r in sorted(records.items())])
        anonydb.anonymize("src", names, "dis", method="minvariant", form=form, out="mi", engine=con, key="id", m=m,
                          replace=True, compare=False)
        series.append(read_tracked(con, "mi", form, records, names, "mi"))
        assert so.m_unique(series[-1], m) == []
        assert so.m_invariant(series, m) == [] and so.exposed(series, m) == {}

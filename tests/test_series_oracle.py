"""The series oracle (tests/series_oracle.py) against vectors derived by hand from the papers.

Survey (seeds/004) §6.1-6.3: Example 6.1/6.2 with Table VI (join attack, lossy join), Examples
6.3/6.4 with Table VIII (insertion; deletion + insertion; erratum E12 in spec §3.6: 6.3's
"Flu, Fever, or HIV" means T2's Cancer, Diabetes, HIV and 6.4 means Table VIII(c)); Byun et al.
2006 and m-invariance (Xiao & Tao 2007) as spec-presence-survey.md §3.2 states them. Every expected
value below is written out from the tables, with its derivation in the comments.
"""

from __future__ import annotations

import random

import pytest

import series_oracle as so

# ---------------------------------------------------------------------------------------------
# Table VI: T1(Age, Job, Class) and T2(Job, Birthplace, Disease); row i of both = person i.

T1 = [
    {"link": 0, "Age": 30, "Job": "Lawyer", "Class": "c1"},
    {"link": 1, "Age": 30, "Job": "Lawyer", "Class": "c1"},
    {"link": 2, "Age": 40, "Job": "Carpenter", "Class": "c2"},
    {"link": 3, "Age": 40, "Job": "Electrician", "Class": "c3"},
    {"link": 4, "Age": 50, "Job": "Engineer", "Class": "c4"},
    {"link": 5, "Age": 50, "Job": "Clerk", "Class": "c4"},
]
T2 = [
    {"link": 0, "Job": "Lawyer", "Birthplace": "US", "Disease": "Cancer"},
    {"link": 1, "Job": "Lawyer", "Birthplace": "US", "Disease": "Cancer"},
    {"link": 2, "Job": "Carpenter", "Birthplace": "France", "Disease": "HIV"},
    {"link": 3, "Job": "Electrician", "Birthplace": "UK", "Disease": "Cancer"},
    {"link": 4, "Job": "Engineer", "Birthplace": "France", "Disease": "HIV"},
    {"link": 5, "Job": "Clerk", "Birthplace": "US", "Disease": "HIV"},
]
JOB = {"Lawyer": "Professional", "Engineer": "Professional", "Clerk": "Professional",
       "Carpenter": "Tradesman", "Electrician": "Tradesman",
       "Professional": "*", "Tradesman": "*"}
T2_LOSSY = [dict(r, Job=JOB[r["Job"]]) for r in T2]


def table_vi(view_b=T2, parents=None):
    return so.join_candidates(T1, view_b, ["Age"], ["Birthplace"], ["Job"], "Disease", parents)


def test_table_vi_each_view_alone_has_groups_of_two():
    # "When T1 and T2 are examined separately, the Age = 40 group and the Birthplace = France
    # group have size 2."
    assert sum(r["Age"] == 40 for r in T1) == 2
    assert sum(r["Birthplace"] == "France" for r in T2) == 2


def test_table_vi_join_attack():
    # Age 30 = rows {0,1} (Lawyer, Lawyer); US = rows {0,1,5} (Lawyer, Lawyer, Clerk):
    #   2 x 2 Lawyer pairs, Clerk matches nothing -> 4 pairs, all Cancer (survey: 100% confidence).
    # Age 40 = {2 Carpenter, 3 Electrician}; France = {2 Carpenter, 4 Engineer}: only
    #   Carpenter-Carpenter -> 1 pair, HIV ({40, France} "uniquely identified").
    # Age 40 x UK = {3 Electrician}: Electrician-Electrician -> 1 (the survey does not mention it).
    # Age 50 = {4 Engineer, 5 Clerk}; x France {Carpenter, Engineer} -> 1 (HIV);
    #   x US {Lawyer, Lawyer, Clerk} -> Clerk-Clerk, 1 (HIV).
    assert table_vi() == {
        0: (4, {"Cancer"}), 1: (4, {"Cancer"}), 2: (1, {"HIV"}),
        3: (1, {"Cancer"}), 4: (1, {"HIV"}), 5: (1, {"HIV"}),
    }
    # the pairs themselves (row indices of T1, T2), as Table VI(c) lists the join
    pairs = so.candidate_pairs(T1, T2, "Age", "Birthplace", "Job")
    assert pairs[0] == pairs[1] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert pairs[2] == [(2, 2)]
    # k = 2 refuses it: four persons have one candidate; l = 2 also catches the {30, US} pair
    assert set(so.join_exposed(table_vi(), k=2)) == {2, 3, 4, 5}
    assert so.join_exposed(table_vi(), k=2, l=2) == {
        0: (4, 1), 1: (4, 1), 2: (1, 1), 3: (1, 1), 4: (1, 1), 5: (1, 1)}


def test_table_vi_lossy_join_fix():
    # T2's Job generalized: Professional = {Lawyer, Engineer, Clerk}, Tradesman = {Carpenter,
    # Electrician}. T2 becomes 0,1 Prof/US/Cancer; 2 Trades/France/HIV; 3 Trades/UK/Cancer;
    # 4 Prof/France/HIV; 5 Prof/US/HIV. A T1 job matches a T2 category iff it lies under it.
    # (30, US): {Lawyer, Lawyer} x {Prof, Prof, Prof} -> 6 pairs; diseases Cancer, Cancer, HIV.
    # (40, France): {Carpenter, Electrician} x {Trades, Prof} -> 2 pairs (both with Trades: HIV).
    # (40, UK): {Carpenter, Electrician} x {Trades} -> 2 pairs, Cancer.
    # (50, France): {Engineer, Clerk} x {Trades, Prof} -> 2 pairs (both with Prof: HIV).
    # (50, US): {Engineer, Clerk} x {Prof, Prof, Prof} -> 6 pairs, Cancer/HIV.
    got = table_vi(T2_LOSSY, {"Job": JOB})
    assert got == {
        0: (6, {"Cancer", "HIV"}), 1: (6, {"Cancer", "HIV"}), 2: (2, {"HIV"}),
        3: (2, {"Cancer"}), 4: (2, {"HIV"}), 5: (6, {"Cancer", "HIV"}),
    }
    assert all(n >= 2 for n, _ in got.values())
    assert so.join_exposed(got, k=2) == {}  # accepted under k = 2 ...
    # ... but the pairs of 2, 3, 4 share one T2 row each, so their disease stays certain: the lossy
    # join weakens identification (Example 6.2), not attribute linkage, which l = 2 still catches.
    assert so.join_exposed(got, k=2, l=2) == {2: (2, 1), 3: (2, 1), 4: (2, 1)}
    # the {30, US} group has size 4 after the plain join; the survey's Example 6.2 sentence
    assert table_vi()[0][0] == 4


def test_join_match_paths():
    assert so.join_match("Lawyer", "Professional", "Job", {"Job": JOB})
    assert so.join_match("Professional", "Lawyer", "Job", {"Job": JOB})
    assert so.join_match("Lawyer", "*", "Job", {"Job": JOB})
    assert so.join_match("*", "Carpenter", "Job", {"Job": {}})
    assert not so.join_match("Lawyer", "Tradesman", "Job", {"Job": JOB})
    assert not so.join_match("Lawyer", "Clerk", "Job", {"Job": JOB})  # siblings: different paths
    assert not so.join_match("Lawyer", "Professional", "Job")  # no taxonomy: equality only
    assert not so.join_match("Lawyer", "Professional", "Age", {"Job": JOB})  # other column


def test_join_only_persons_in_both_views():
    got = so.join_candidates(T1, T2[:4], "Age", "Birthplace", "Job", "Disease")
    assert set(got) == {0, 1, 2, 3}
    with pytest.raises(ValueError):
        so.join_candidates(T1, T1, "Age", "Age", "Job", "Disease")


# ---------------------------------------------------------------------------------------------
# Table VIII: Professional/Female and Artist/Male groups.

PF, AM = "Professional/Female", "Artist/Male"
VIII_A = {"members": {"Beth": PF, "Cara": PF, "Ed": AM, "Finn": AM},
          "values": {PF: ["Cancer", "Diabetes"], AM: ["Fever", "Cancer"]}}
VIII_B = {"members": {"Beth": PF, "Cara": PF, "Alice": PF, "Ed": AM, "Finn": AM},
          "values": {PF: ["Cancer", "Diabetes", "HIV"], AM: ["Fever", "Cancer"]}}
# VIII(c): Cara (Diabetes) deleted, Gina (Professional, Female, Fever) inserted; Beth (Cancer) stays
VIII_C = {"members": {"Beth": PF, "Gina": PF, "Ed": AM, "Finn": AM},
          "values": {PF: ["Cancer", "Fever"], AM: ["Fever", "Cancer"]}}


def test_table_viii_each_release_is_2_diverse():
    for t in (VIII_A, VIII_B, VIII_C):
        assert so.m_unique(t, 2) == []
        assert so.well_formed(t) == []


def test_example_6_3_insertion():
    series = [VIII_A, VIII_B]
    # Persons in both releases, Byun's pairwise intersection: PF {C, D} & {C, D, HIV} = {C, D};
    # AM {Fever, Cancer} & same = 2 values. At l = 2 nobody present in both is exposed.
    assert so.intersection(series, "Beth") == {"Cancer", "Diabetes"}
    assert so.intersection(series, "Ed") == {"Fever", "Cancer"}
    assert so.byun_exposed(series, 2) == {}
    assert so.exposed(series, 2) == {}  # Alice's own group alone holds 3 values
    assert so.intersection(series, "Alice") == {"Cancer", "Diabetes", "HIV"}
    # The attack on the new Alice subtracts the old records: T1's PF group (Beth, Cara) lies
    # whole in T2's PF group, so {C, D, HIV} - {C, D} = {HIV}: "Alice must have contracted HIV".
    assert so.new_record_values(series, 0, "Alice") == {"HIV": 1}
    assert so.byun_new_exposed(series, 2) == {"Alice": (0, 1)}


def test_example_6_4_deletion_and_insertion():
    series = [VIII_A, VIII_C]
    # Beth: T1 {Cancer, Diabetes} & T2 {Cancer, Fever} = {Cancer}: exposed at l = 2.
    assert so.intersection(series, "Beth") == {"Cancer"}
    assert so.exposed(series, 2) == {"Beth": 1}
    assert so.byun_exposed(series, 2) == {"Beth": (0, 1)}
    # Gina is new; T1's PF group is not whole in T2's (Cara left), so nothing is subtracted.
    assert so.new_record_values(series, 0, "Gina") == {"Cancer": 1, "Fever": 1}
    assert so.byun_new_exposed(series, 2) == {}
    # the signature of Beth's group changed: not 2-invariant
    assert so.m_invariant(series, 2) == [("Beth", 1)]


# ---------------------------------------------------------------------------------------------
# m-invariance, built by hand from Xiao & Tao's definition (m = 2)
#
# R0: Alice Flu + Bob HIV | Carol Gastritis + Dave Dyspepsia | Eve Bronchitis + Fred Flu
# R1: Bob deleted -> his group keeps its signature {Flu, HIV} with one HIV counterfeit;
#     Gina Pneumonia + Hank Bronchitis inserted as a new group.
# R2: Eve and Fred deleted (their whole group goes); Ivan (HIV) inserted into Alice's group,
#     filling the counterfeit's hole; Gina and Hank split, each joined by a new person whose value
#     completes the same signature {Pneumonia, Bronchitis} (Lena Bronchitis, Mia Pneumonia);
#     Judy Cancer + Kate Flu + Nora Ulcer start a new group of 3.


def m_series():
    r0 = {"members": {"Alice": "g1", "Bob": "g1", "Carol": "g2", "Dave": "g2",
                      "Eve": "g3", "Fred": "g3"},
          "values": {"g1": ["Flu", "HIV"], "g2": ["Gastritis", "Dyspepsia"],
                     "g3": ["Bronchitis", "Flu"]}}
    r1 = {"members": {"Alice": "h1", "Carol": "h2", "Dave": "h2", "Eve": "h3", "Fred": "h3",
                      "Gina": "h4", "Hank": "h4"},
          "values": {"h1": ["Flu", "HIV"], "h2": ["Gastritis", "Dyspepsia"],
                     "h3": ["Bronchitis", "Flu"], "h4": ["Pneumonia", "Bronchitis"]},
          "counterfeits": {"h1": 1}}
    r2 = {"members": {"Alice": "k1", "Ivan": "k1", "Carol": "k2", "Dave": "k2",
                      "Gina": "k3", "Lena": "k3", "Hank": "k4", "Mia": "k4",
                      "Judy": "k5", "Kate": "k5", "Nora": "k5"},
          "values": {"k1": ["HIV", "Flu"], "k2": ["Dyspepsia", "Gastritis"],
                     "k3": ["Pneumonia", "Bronchitis"], "k4": ["Bronchitis", "Pneumonia"],
                     "k5": ["Cancer", "Flu", "Ulcer"]},
          "counterfeits": {"k1": 0}}
    return [r0, r1, r2]


def test_m_invariant_hand_series():
    s = m_series()
    for r in s:
        assert so.well_formed(r) == []  # members + counterfeits = published values, per group
    assert so.m_invariant(s, 2) == []
    assert so.exposed(s, 2) == {}
    assert so.byun_exposed(s, 2) == {}
    # every person keeps the signature they were born with
    assert so.intersection(s, "Alice") == {"Flu", "HIV"}     # R0, R1 (counterfeit HIV), R2
    assert so.intersection(s, "Bob") == {"Flu", "HIV"}       # R0 only
    assert so.intersection(s, "Eve") == {"Bronchitis", "Flu"}  # R0, R1
    assert so.intersection(s, "Hank") == {"Pneumonia", "Bronchitis"}  # h4, then k4
    assert so.intersection(s, "Nora") == {"Cancer", "Flu", "Ulcer"}
    assert so.holding(s, "Eve") == [0, 1] and so.holding(s, "Ivan") == [2]
    # m = 3 fails m-uniqueness on every 2-group, and exposes everyone with 2 values
    assert so.m_invariant(s, 3) == [("m-unique", 0, g) for g in ("g1", "g2", "g3")] + [
        ("m-unique", 1, g) for g in ("h1", "h2", "h3", "h4")] + [
        ("m-unique", 2, g) for g in ("k1", "k2", "k3", "k4")]
    assert set(so.exposed(s, 3)) == set(s[2]["members"]) - {"Judy", "Kate", "Nora"}


def test_m_invariance_broken_by_wrong_counterfeit():
    # R1's counterfeit for the deleted Bob carries Cancer instead of HIV: h1 = {Flu, Cancer}.
    s = m_series()
    s[1]["values"]["h1"] = ["Flu", "Cancer"]
    assert so.well_formed(s[1]) == []
    assert so.m_unique(s[1], 2) == []  # each release is still 2-unique on its own
    assert so.m_invariant(s, 2) == [("Alice", 1)]  # R2's {Flu, HIV} equals her first signature
    # {Flu, HIV} & {Flu, Cancer} & {Flu, HIV} = {Flu}
    assert so.exposed(s, 2) == {"Alice": 1}
    # pairwise with the last release: R0 & R2 = {Flu, HIV} keeps 2; R1 & R2 = {Flu, Cancer} &
    # {Flu, HIV} = {Flu}, so the earliest exposing earlier release is R1
    assert so.byun_exposed(s, 2) == {"Alice": (1, 1)}
    # R0 and R1 alone: {Flu, HIV} & {Flu, Cancer} = {Flu} as well
    assert so.byun_exposed(s[:2], 2) == {"Alice": (0, 1)}


def test_m_invariance_broken_by_missing_counterfeit():
    # R1 publishes Alice alone after Bob's deletion, without a counterfeit: h1 = [Flu].
    s = m_series()
    s[1]["values"]["h1"] = ["Flu"]
    del s[1]["counterfeits"]
    assert so.m_unique(s[1], 2) == ["h1"]
    assert so.m_invariant(s, 2) == [("m-unique", 1, "h1"), ("Alice", 1)]
    assert so.exposed(s, 2) == {"Alice": 1}


def test_m_invariance_broken_by_regrouping():
    # R2 puts Hank (born {Pneumonia, Bronchitis}) with Judy: k4 = {Bronchitis, Cancer};
    # Mia joins Kate and Nora: k5 = {Pneumonia, Flu, Ulcer}.
    s = m_series()
    r2 = s[2]
    r2["members"]["Judy"] = "k4"
    r2["members"]["Mia"] = "k5"
    r2["values"]["k4"] = ["Bronchitis", "Cancer"]
    r2["values"]["k5"] = ["Pneumonia", "Flu", "Ulcer"]
    assert so.well_formed(r2) == []
    assert so.m_invariant(s, 2) == [("Hank", 2)]
    # Hank: {P, B} & {B, C} = {Bronchitis}; Judy and Mia are new, their single groups hold 2 and 3
    assert so.exposed(s, 2) == {"Hank": 1}
    assert so.byun_exposed(s, 2) == {"Hank": (1, 1)}  # R1 is the first release holding Hank


def test_well_formed_counts_counterfeits():
    s = m_series()
    s[1]["counterfeits"]["h1"] = 0  # one member, two values, no counterfeit declared
    assert so.well_formed(s[1]) == [("h1", 1, 0, 2)]


# ---------------------------------------------------------------------------------------------
# random series


DOMAIN = ["a", "b", "c", "d", "e", "f", "g"]


def random_m_invariant(rng: random.Random, m: int, n_releases: int):
    """An m-invariant series built as Xiao & Tao do: each person's signature is fixed at birth
    (their value plus m-1 or more others, or an existing signature holding their value, which fills
    a hole); each release partitions the live persons of one signature into groups holding each
    value of the signature once, counterfeits filling the missing values."""
    truth, sig, alive, series, nxt = {}, {}, [], [], 0
    for i in range(n_releases):
        if i:
            alive = [p for p in alive if rng.random() >= 0.3]
        for _ in range(rng.randint(4, 8) if i == 0 else rng.randint(0, 5)):
            p, nxt = f"p{nxt}", nxt + 1
            v = rng.choice(DOMAIN)
            truth[p] = v
            old = [sig[q] for q in alive if v in sig[q]]
            if old and rng.random() < 0.5:
                sig[p] = rng.choice(old)
            else:
                others = rng.sample([x for x in DOMAIN if x != v], m - 1 + rng.randint(0, 1))
                sig[p] = frozenset([v, *others])
            alive.append(p)
        members, values, cf = {}, {}, {}
        for s in sorted({sig[p] for p in alive}, key=sorted):
            slots = {v: [p for p in alive if sig[p] == s and truth[p] == v] for v in sorted(s)}
            for sl in slots.values():
                rng.shuffle(sl)
            for j in range(max(len(sl) for sl in slots.values())):
                g = f"r{i}g{len(values)}"
                vals, n_cf = [], 0
                for v, sl in slots.items():
                    vals.append(v)
                    if j < len(sl):
                        members[sl[j]] = g
                    else:
                        n_cf += 1
                rng.shuffle(vals)
                values[g], cf[g] = vals, n_cf
        series.append({"members": members, "values": values, "counterfeits": cf})
    return series, truth, sig


def mutate(rng: random.Random, series):
    """Change one published value of one random group to a random domain value."""
    s = [{"members": dict(r["members"]), "values": {g: list(v) for g, v in r["values"].items()},
          "counterfeits": dict(r.get("counterfeits", {}))} for r in series]
    r = rng.choice([r for r in s if r["values"]])
    g = rng.choice(sorted(r["values"]))
    r["values"][g][rng.randrange(len(r["values"][g]))] = rng.choice(DOMAIN)
    return s


@pytest.mark.parametrize("seed", range(40))
def test_random_m_invariant_series_never_expose(seed):
    rng = random.Random(seed)
    m = rng.choice([2, 3])
    s, truth, sig = random_m_invariant(rng, m, rng.randint(2, 4))
    for r in s:
        assert so.well_formed(r) == []
    assert so.m_invariant(s, m) == []
    assert so.exposed(s, m) == {}
    assert so.byun_exposed(s, m) == {}
    for p in truth:
        if so.holding(s, p):
            # the intersection is the birth signature: never below m, never losing the true value
            assert so.intersection(s, p) == set(sig[p])
            assert len(so.intersection(s, p)) >= m and truth[p] in so.intersection(s, p)


@pytest.mark.parametrize("seed", range(60))
def test_random_series_properties(seed):
    rng = random.Random(1000 + seed)
    m = rng.choice([2, 3])
    s, _, _ = random_m_invariant(rng, m, rng.randint(2, 4))
    for _ in range(rng.randint(0, 2)):
        s = mutate(rng, s)
    viol = so.m_invariant(s, m)
    persons = {p for r in s for p in r["members"]}
    # a person violates iff their groups' signatures differ, i.e. the intersection of their value
    # sets is smaller than the union (written from the union, not from the oracle's first signature)
    def union(p):
        return set().union(*(set(r["values"][r["members"][p]]) for r in s if p in r["members"]))
    assert {v[0] for v in viol if len(v) == 2} == {p for p in persons
                                                   if so.intersection(s, p) != union(p)}
    assert {(v[1], v[2]) for v in viol if len(v) == 3} == {
        (i, g) for i, r in enumerate(s) for g in so.m_unique(r, m)}
    if viol == []:
        assert so.exposed(s, m) == {} and so.byun_exposed(s, m) == {}
    # pairwise composition is weaker than the whole series: Byun-exposed => exposed
    ex = so.exposed(s, m)
    by = so.byun_exposed(s, m)
    assert set(by) <= set(ex)
    for p, (r_i, n) in by.items():
        assert p in s[r_i]["members"] and n >= ex[p]
    # with two releases the pairwise check is the whole intersection for persons in both
    two = s[:2]
    assert so.byun_exposed(two, m) == {p: (0, n) for p, n in so.exposed(two, m).items()
                                       if p in two[0]["members"]}


LEAVES = {"L1": "P", "L2": "P", "L3": "P", "T1": "T", "T2": "T", "P": "*", "T": "*"}


@pytest.mark.parametrize("seed", range(30))
def test_random_join_properties(seed):
    rng = random.Random(2000 + seed)
    n = rng.randint(3, 9)
    jobs = [rng.choice(["L1", "L2", "L3", "T1", "T2"]) for _ in range(n)]
    va = [{"link": i, "A": rng.randint(0, 2), "J": jobs[i]} for i in range(n)]
    vb = [{"link": i, "B": rng.randint(0, 2), "J": jobs[i], "S": rng.choice("xyz")}
          for i in range(n)]
    level = rng.choice([0, 1, 2])
    gen = [dict(r, J=r["J"] if level == 0 else LEAVES[r["J"]] if level == 1 else "*") for r in vb]
    plain = so.join_candidates(va, vb, "A", "B", "J", "S")
    lossy = so.join_candidates(va, gen, "A", "B", "J", "S", {"J": LEAVES})
    for p in range(n):
        # the person's own pair always survives the join: at least 1 pair, true value included
        assert plain[p][0] >= 1 and vb[p]["S"] in plain[p][1]
        # generalizing the join attribute only adds matches (Example 6.2: the join gets lossy)
        assert lossy[p][0] >= plain[p][0] and lossy[p][1] >= plain[p][1]
        # brute force, written apart: pairs of (A-group row, B-group row) with a compatible job
        ga = [r for r in va if r["A"] == va[p]["A"]]
        gb = [r for r in gen if r["B"] == gen[p]["B"]]
        up = lambda v: {v, LEAVES.get(v), LEAVES.get(LEAVES.get(v))} - {None}  # noqa: E731
        ok = [(ra, rb) for ra in ga for rb in gb if rb["J"] in up(ra["J"]) or ra["J"] in up(rb["J"])]
        assert lossy[p] == (len(ok), {rb["S"] for _, rb in ok})
        if level == 2:  # everything matches '*': the pairs are the product of the two groups
            assert lossy[p][0] == len(ga) * len(gb)
    if len(set(jobs)) == n:
        # distinct join values: the equality join is lossless, so the candidates are exactly the
        # persons sharing both X values with p (their own rows joined)
        for p in range(n):
            same = [q for q in range(n) if va[q]["A"] == va[p]["A"] and vb[q]["B"] == vb[p]["B"]]
            assert plain[p] == (len(same), {vb[q]["S"] for q in same})

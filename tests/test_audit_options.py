"""``anonydb audit`` takes the adversary's options that ``anonymize --method injector`` takes, and a
release names the rules it was made against [issue 47, part 5].

The audits' counts are checked against the brute force of tests/injector_oracle.py: the rules
enumerated itemset by itemset at the given support (thesis §3.3.3), every tuple's valid values by
Fig 3.1's matchings, over the release's tables read with duckdb alone."""

from __future__ import annotations

import json
import math
import random

import duckdb
import pytest

from anonydb.workflow.cli import main

from conftest import need_shared
from injector_oracle import mine, valid_sets

# TV6's table [spec-injector 2.2] three times over: each age value is an itemset of 3 tuples
TOY = [(69, "M", "Emphysema"), (45, "F", "Cancer"), (52, "F", "Flu"), (43, "F", "Gastritis"), (42, "F", "Flu"),
       (47, "F", "Cancer"), (50, "M", "Flu"), (56, "M", "Emphysema"), (52, "M", "Gastritis")] * 3


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def write_csv(path, rows):
    path.write_text("age,sex,disease\n" + "".join(f"{a},{x},{d}\n" for a, x, d in rows))
    return str(path)


def thresholds(rows, min_exp):
    """thr(s) = ln(1 - minExp) / ln(1 - P(s)) [thesis §3.3.1]."""
    n, counts = len(rows), {}
    for *_, s in rows:
        counts[s] = counts.get(s, 0) + 1
    return {s: (0.0 if c == n else math.log(1 - min_exp) / math.log(1 - c / n)) for s, c in counts.items()}


def oracle_vulnerable(rows, min_exp, min_count, db, release, l):
    """Tuples of the QIT/ST release ``release`` in ``db`` with fewer than l valid values (Fig 3.1,
    brute force) under the rules mined from ``rows`` (age, sex by value) at ``min_count``."""
    _, _, ivs = mine([([[str(a)], [x]], s) for a, x, s in rows], [1, 1], min_exp, min_count)
    ivs_of = {(a, x): v for (a, x, _), v in zip(rows, ivs)}
    con = duckdb.connect(str(db), read_only=True)
    try:
        tuples = con.execute(f"SELECT group_id, age, sex FROM {release}_qit").fetchall()
        counts = con.execute(f"SELECT group_id, disease, count FROM {release}_st").fetchall()
    finally:
        con.close()
    values: dict = {}
    for g, s, c in counts:
        values.setdefault(g, []).extend([s] * c)
    members: dict = {}
    for g, a, x in tuples:
        members.setdefault(g, []).append(ivs_of[(a, x)])
    return sum(len(v) < l for g, m in members.items() for v in valid_sets(values[g], m))


def audit(db, src, release, capsys, *extra):
    code, out, err = run(["audit", release, "--source", src, "--qi", "age,sex", "--sensitive", "disease", "--l", "2",
                          "--db", str(db), *extra, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_audit_at_the_release_support_agrees_with_the_oracle(tmp_path, capsys):
    """An Injector release made at itemset support 9 names it; the audit given --itemset-support 9
    counts what the brute force counts at support 9 (no tuple vulnerable: the release was made
    against those rules), while the default audit (minSup: every age value's 3 tuples form rules)
    counts what the brute force counts at minSup, which is a different adversary."""
    src, db = write_csv(tmp_path / "toy.csv", TOY), tmp_path / "t.duckdb"
    code, out, err = run(["anonymize", src, "--method", "injector", "--qi", "age,sex", "--sensitive", "disease",
                          "--l", "2", "--min-exp", "0.5", "--itemset-support", "9", "--out", "inj", "--seed", "1",
                          "--db", str(db)], capsys)
    assert code == 0, err
    assert ("rules: minExp 0.5, itemset support 9, no hierarchies (audit with --min-exp 0.5 --itemset-support 9)"
            in out)
    at9 = audit(db, src, "inj", capsys, "--min-exp", "0.5", "--itemset-support", "9")
    want9 = oracle_vulnerable(TOY, 0.5, 9, db, "inj", 2)
    assert (at9["vulnerable"], at9["rows"]) == (want9, 27) and want9 == 0
    assert at9["itemset_support"] == 9 and at9["knowledge"]["min_count"] == 9
    default = audit(db, src, "inj", capsys, "--min-exp", "0.5")
    want_min = oracle_vulnerable(TOY, 0.5, 0, db, "inj", 2)  # minSup prunes no rule: no floor at all
    assert default["vulnerable"] == want_min and want_min > want9
    # minSup is the smallest threshold, Flu's (9 of 27 tuples): ln(0.5) / ln(2/3) = 1.71, so 2 tuples
    assert default["itemset_support"] == "min" and default["knowledge"]["min_count"] == 2
    # the text names the rules it used
    code, out, err = run(["audit", "inj", "--source", src, "--qi", "age,sex", "--sensitive", "disease", "--l", "2",
                          "--min-exp", "0.5", "--itemset-support", "9", "--db", str(db)], capsys)
    assert code == 0, err
    assert out.startswith("2 minimal rules mined at minExp 0.5, itemset support 9, no hierarchies\n")
    # anonymize --json names them in its verification
    code, out, err = run(["anonymize", src, "--method", "injector", "--qi", "age,sex", "--sensitive", "disease",
                          "--l", "2", "--min-exp", "0.5", "--itemset-support", "9", "--out", "inj2",
                          "--db", str(db), "--json"], capsys)
    assert code == 0, err
    v = json.loads(out)["verification"]["verdicts"][0]
    assert v["params"] == {"l": 2, "min_exp": 0.5, "itemset_support": 9}
    assert "itemset support 9" in v["note"] and "--itemset-support 9" in v["note"]


@pytest.mark.parametrize("seed", range(5))
def test_audit_supports_match_the_oracle_on_random_tables(tmp_path, capsys, seed):
    """An Anatomy release of a random table audited at min, max and two counts: each audit counts
    the vulnerable tuples the brute force counts at that support; max's count is the largest
    threshold rounded up."""
    rnd = random.Random(seed)
    while True:  # skewed values (their thresholds 1.4 to 7 tuples apart), none in more than half the rows
        rows = [(rnd.choice([20, 30, 40, 50]), rnd.choice("MF"), rnd.choices("abcd", weights=[5, 3, 2, 1])[0])
                for _ in range(rnd.randint(24, 36))]
        counts = [sum(r[2] == v for r in rows) for v in "abcd"]
        if sum(c > 0 for c in counts) >= 3 and 2 * max(counts) <= len(rows):
            break
    src, db = write_csv(tmp_path / "r.csv", rows), tmp_path / "r.duckdb"
    code, _, err = run(["anonymize", src, "--method", "anatomy", "--qi", "age,sex", "--sensitive", "disease",
                        "--l", "2", "--out", "ana", "--seed", "1", "--db", str(db)], capsys)
    assert code == 0, err
    top = math.ceil(max(thresholds(rows, 0.5).values()) - 1e-9)
    for support, floor in (("min", 0), ("max", top), ("1", 1), (str(rnd.randint(2, 8)), None)):
        got = audit(db, src, "ana", capsys, "--min-exp", "0.5", "--itemset-support", support)
        floor = int(support) if floor is None else floor
        assert got["vulnerable"] == oracle_vulnerable(rows, 0.5, floor, db, "ana", 2), support
        if support == "max":
            assert got["knowledge"]["min_count"] == top


@pytest.mark.parametrize("extra, message", [
    (["--l", "2", "--itemset-support", "lots"], "--itemset-support must be min, max or a count, got 'lots'"),
    (["--l", "2", "--itemset-support", "0"], "--itemset-support must be 'min', 'max' or a count >= 1, got 0"),
    (["--l", "2", "--min-exp", "1.5"], "--min-exp (minExp) must lie strictly between 0 and 1, got 1.5"),
    (["--b", "0.3", "--t", "0.2", "--itemset-support", "10"],
     "--itemset-support: options of the rule-based audit's mined rules (--l)"),
])
def test_audit_refuses_bad_rule_options_in_one_line(tmp_path, capsys, extra, message):
    src, db = write_csv(tmp_path / "toy.csv", TOY), tmp_path / "t.duckdb"
    code, out, err = run(["anonymize", src, "--method", "injector", "--qi", "age,sex", "--sensitive", "disease",
                          "--l", "2", "--min-exp", "0.5", "--itemset-support", "9", "--out", "inj", "--db", str(db)],
                         capsys)
    assert code == 0, err
    code, out, err = run(["audit", "inj", "--source", src, "--qi", "age,sex", "--sensitive", "disease",
                          "--db", str(db), *extra], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.slow
def test_audit_of_the_thesis_injector_release_of_adult(tmp_path, capsys):
    """Done when [issue 47]: Injector at the thesis's setting on Adult (6 QIs of Table 2.6 with the
    ARX hierarchies, l = 6, minExp 0.9, itemsets of >= 1000 tuples) names its rules; audited under
    the same rules no tuple is vulnerable, and the rules are the thesis's kind (within 2x of its
    |R| = 22). The default audit (minSup) is another adversary: there the release leaks."""
    d = need_shared() / "adult"
    qi = ["age", "workclass", "education", "marital-status", "race", "sex"]
    hs = [x for q in qi for x in ("--hierarchy", f"{q}={d / f'adult_hierarchy_{q}.csv'}")]
    db, src = str(tmp_path / "a.duckdb"), str(d / "adult.csv")
    common = ["--qi", ",".join(qi), "--sensitive", "occupation", "--l", "6", *hs, "--db", db]
    code, out, err = run(["anonymize", src, "--method", "injector", "--itemset-support", "1000", "--out", "adult",
                          *common], capsys)
    assert code == 0, err
    assert ("rules: minExp 0.9, itemset support 1000, hierarchies on age, workclass, education, marital-status, "
            "race, sex (audit with --min-exp 0.9 --itemset-support 1000 and the same --hierarchy files)") in out
    code, out, err = run(["audit", "adult", "--source", src, "--itemset-support", "1000", *common, "--json"], capsys)
    assert code == 0, err
    same = json.loads(out)
    assert (same["vulnerable"], same["rows"]) == (0, 30162) and 11 <= same["rules"] <= 44
    code, out, err = run(["audit", "adult", "--source", src, *common, "--json"], capsys)
    assert code == 0, err
    other = json.loads(out)
    assert other["rows"] == 30162 and other["vulnerable"] > 0 and other["rules"] > 44

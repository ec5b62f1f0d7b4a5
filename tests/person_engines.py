"""Record owners on every engine: the shared cases of test_person_postgres.py and
test_person_spark.py. A visits table (persons with 1-6 visits, QIs constant per person) made by
DuckDB and handed to the engine; check(person=) gives the same report, and Mondrian, full-domain
and Anatomy with person= give the same releases (as multisets of classes; Anatomy's groups are
dealt in an order that differs by engine, so the same persons per value) as on DuckDB."""

from __future__ import annotations

import random

import anonydb
from anonydb.hierarchy import Hierarchy
from anonydb.methods import anatomy, anonymize, fulldomain
from anonydb.sqlgen import ident

from conftest import make_table, same_values

#: the model parameters every engine's record-owner check runs
CHECKS = [dict(k=3, l=2, t=0.3, alpha=0.7, delta=2.0), dict(l=2, l_variant="entropy", t=0.4, distance="ordered"),
          dict(l=2, l_variant="recursive", c=2), dict(l=1.5, l_variant="probabilistic")]
AGE = Hierarchy.from_rows([(str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*") for a in range(20, 80)])
SEX = Hierarchy.from_rows([("M", "*"), ("F", "*")])


def visits(duck, name: str = "pv_visits", persons: int = 60, seed: int = 48) -> str:
    """Persons with 1-6 visits; age and sex constant per person; a diagnosis code per visit."""
    rnd = random.Random(seed)
    rows = []
    for p in range(persons):
        age, sex = rnd.randint(20, 79), rnd.choice("MF")
        for _ in range(rnd.randint(1, 6)):
            rows.append((f"p{p:03d}", age, sex, rnd.choice([1, 2, 3, 4])))
    make_table(duck, name, ["pid", "age", "sex", "dx"], rows)
    duck.execute(f"CREATE OR REPLACE TABLE {name}_t AS SELECT pid, CAST(age AS VARCHAR) AS age, sex, dx FROM {name}")
    return name


def same_check(duck, other, table: str, norm=lambda d: d, checks=CHECKS) -> None:
    for params in checks:
        d = anonydb.check(table, ["age", "sex"], "dx", engine=duck, person="pid", max_groups=5, **params)
        o = anonydb.check(table, ["age", "sex"], "dx", engine=other, person="pid", max_groups=5, **params)
        assert same_values(norm(o.to_dict()), norm(d.to_dict())), params


def classes(eng, table: str) -> list[tuple]:
    """The release's classes as sorted tuples of their rows (without the class id)."""
    cols = [c for c, _ in eng.columns(table) if c not in ("eq_class", "group_id")]
    key_col = "eq_class" if "eq_class" in {c for c, _ in eng.columns(table)} else "group_id"
    groups: dict = {}
    for r in eng.fetch_rows(f"SELECT {ident(key_col)}, {', '.join(ident(c) for c in cols)} FROM {ident(table)}")[1]:
        groups.setdefault(r[0], []).append(tuple(str(x) for x in r[1:]))
    return sorted(tuple(sorted(g)) for g in groups.values())


def same_releases(duck, other, table: str, mondrian=(dict(k=3), dict(k=2, l=2), dict(k=2, t=0.5)),
                  others: bool = True) -> None:
    kw = dict(qi=["age", "sex"], sensitive="dx", person="pid", replace=True, seed=7)
    for params in mondrian:
        d = anonymize(table, out="pv_mon", engine=duck, **kw, **params)
        o = anonymize(table, out="pv_mon", engine=other, **kw, **params)
        assert (o.rows, o.classes) == (d.rows, d.classes)
        assert classes(other, "pv_mon") == classes(duck, "pv_mon")
        assert "pid" not in {c for c, _ in other.columns("pv_mon")}
    if not others:
        return
    fd = dict(hierarchies={"age": AGE, "sex": SEX}, max_suppression=0.1, k=3, l=2, **kw)
    d, o = fulldomain(f"{table}_t", out="pv_fd", engine=duck, **fd), fulldomain(f"{table}_t", out="pv_fd", engine=other, **fd)
    assert (o.levels, o.suppressed, o.persons, o.rows) == (d.levels, d.suppressed, d.persons, d.rows)
    assert classes(other, "pv_fd") == classes(duck, "pv_fd")
    an = dict(l=2, **kw)
    d, o = anatomy(table, out="pv_an", engine=duck, **an), anatomy(table, out="pv_an", engine=other, **an)
    assert (o.rows, o.groups) == (d.rows, d.groups)
    # the groups are dealt in a keyed hash order, which differs by engine (PostgreSQL's md5 stands in
    # for DuckDB's): the same persons per value over the groups, and every group of >= l persons
    st = 'SELECT "dx", sum("count") FROM "pv_an_st" GROUP BY 1 ORDER BY 1'
    assert [tuple(map(int, r)) for r in other.fetch_rows(st)[1]] == [tuple(map(int, r)) for r in duck.fetch_rows(st)[1]]
    assert o.report.holds and o.report["l-diversity"].achieved == d.report["l-diversity"].achieved


def linked_tables(duck, prefix: str = "pl") -> dict[str, str]:
    """A person table, visits (diagnosis per visit) and claims (a third of the visits), DuckDB-made."""
    rnd = random.Random(51)
    people = [(p, rnd.randint(20, 79), rnd.choice("MF")) for p in range(60)]
    make_table(duck, f"{prefix}_patients", ["pid", "age", "sex"], people)
    visits = [(i, p, rnd.choice([1, 2, 3, 4])) for i, (p, _, _) in enumerate(people * 3) if rnd.random() < 0.8]
    make_table(duck, f"{prefix}_visits", ["vid", "patient", "dx"], visits)
    make_table(duck, f"{prefix}_claims", ["cid", "member"], [(v, p) for v, p, _ in visits if v % 3 == 0])
    return {"patients": f"{prefix}_patients", "visits": f"{prefix}_visits", "claims": f"{prefix}_claims"}


def same_linked(duck, other, t: dict[str, str]) -> None:
    from anonydb.methods.linked import linked

    outs = {t["patients"]: "pl_p_rel", t["visits"]: "pl_v_rel", t["claims"]: "pl_c_rel"}
    kw = dict(outs=outs, k=3, l=2, max_suppression=1.0, seed=3, replace=True)
    d = linked(t["patients"], "pid", {t["visits"]: "patient", t["claims"]: "member"}, ["age", "sex"], "dx",
               engine=duck, **kw)
    o = linked(t["patients"], "pid", {t["visits"]: "patient", t["claims"]: "member"}, ["age", "sex"], "dx",
               engine=other, **kw)
    assert (o.persons, o.classes, o.rows, o.suppressed) == (d.persons, d.classes, d.rows, d.suppressed)
    for out in outs.values():
        assert classes(other, out) == classes(duck, out), out


def same_varying(duck, other, table: str) -> None:
    kw = dict(qi=["age", "dx"], person="pid", replace=True, seed=7, varying=True)
    d = anonymize(table, out="pv_var", engine=duck, k=3, **kw)
    o = anonymize(table, out="pv_var", engine=other, k=3, **kw)
    assert (o.rows, o.classes, o.utility["persons"]) == (d.rows, d.classes, d.utility["persons"])
    assert classes(other, "pv_var") == classes(duck, "pv_var")

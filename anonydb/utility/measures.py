"""Utility measures of a released table (more arrive with the anonymizers).

* Discernibility metric [Bayardo & Agrawal 2005; Li thesis §1.2.3; spec-closeness-slicing 6.1]:
  DM = sum over groups E of |E|^2 (suppressed records, when any, cost |T| each).
* Average equivalence-class size [LeFevre et al. 2006]: C_AVG = (|T| / #groups) / k.
* A Mondrian release's figures (:func:`class_utility`): DM, C_AVG, GCP, NCP and the KL-divergence
  [Kifer & Gehrke 2006; spec-closeness-slicing 6.6] between the original distribution over the
  (QI tuple, sensitive value) cells and the one the release gives under the uniform assumption
  (each class's count of a value spread evenly over the QI tuples its box stands for). By record
  owners (:func:`person_kl`) the cells count each person's distinct (QI tuple, value) facts, the
  distribution that sums to one by persons (:mod:`anonydb.models.base`): with one record a person
  it is the row-level KL.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..engines import connect
from ..schema import split_list, validate_roles
from ..sources import open_source
from ..sqlgen import ident


def discernibility(source: str, qi: str | Iterable[str], *, engine: Any = None, suppressed: int = 0) -> int:
    """DM = sum_E |E|^2 + suppressed * |T|."""
    eng = connect(engine)
    rel = open_source(eng, source)
    cols = split_list(qi, "quasi-identifiers")
    validate_roles(eng, rel, cols, None)
    keys = ", ".join(ident(c) for c in cols)
    dm = eng.scalar(f"SELECT coalesce(sum(n * n), 0) FROM (SELECT count(*) AS n FROM {ident(rel)} GROUP BY {keys}) AS g")
    total = eng.scalar(f"SELECT count(*) FROM {ident(rel)}") + suppressed
    return int(dm) + suppressed * int(total)


def average_class_size(source: str, qi: str | Iterable[str], k: int, *, engine: Any = None) -> float:
    """C_AVG = (|T| / number of groups) / k."""
    eng = connect(engine)
    rel = open_source(eng, source)
    cols = split_list(qi, "quasi-identifiers")
    validate_roles(eng, rel, cols, None)
    keys = ", ".join(ident(c) for c in cols)
    n, g = eng.fetch_rows(f"SELECT sum(n), count(*) FROM (SELECT count(*) AS n FROM {ident(rel)} GROUP BY {keys}) AS x")[1][0]
    return (n / g) / k


def class_utility(eng: Any, rows: str, boxes: str, qis: Sequence[Any], sensitive: str | None, source: Any,
                  total: int, k: int | None, relaxed: bool, counts: str | None = None) -> dict[str, Any]:
    """DM, C_AVG, GCP and NCP, KL-divergence [Li thesis 1.2.3; spec-closeness-slicing 6.1, 6.2, 6.6]
    of a Mondrian release, from the final rows' codes and the boxes (``sql/mondrian_utility.sql.j2``).
    The rows carry the sensitive value (``_adb_sa``) when a model read it; else ``source`` (relation,
    row id) gives it, joined once (cheaper than carrying it through every round); without a
    sensitive attribute the KL is over the QI tuples alone. ``total``: the rows counted.
    NCP = GCP / (|T| * d), the average over records and QIs (the Python Mondrian tools' figure);
    ``ncp_by_qi``: per QI the average over records of NCP_i. ``counts`` (partition, size): the
    classes weighed by other sizes (record owners: the records of classes of persons); no KL."""
    base, rid = source or (None, None)
    r = eng.fetch(eng.render("mondrian_utility.sql.j2", rows=rows, boxes=boxes, qis=qis, relaxed=relaxed,
                             sensitive=sensitive, base=base, rid=rid, total=total, counts=counts))[0]
    n, classes = int(r["n"]), int(r["classes"])
    gcp = float(r["gcp"] or 0.0)
    return {"dm": int(r["dm"]), "classes": classes, "avg_class_size": n / classes,
            "cavg": n / classes / k if k else n / classes, "gcp": gcp,
            "ncp": gcp / (n * len(qis)), **({} if counts else {"kl": float(r["kl"] or 0.0)}),
            "ncp_by_qi": {q.column: float(r[f"gcp_{i}"] or 0.0) / n for i, q in enumerate(qis)}}


def person_kl(eng: Any, s: Any, rows: str, base: str, rid: str, boxes: str, qis: Sequence[Any], person: str,
              events: str, sensitive: str) -> float:
    """The KL-divergence of a release of persons (QIs constant per person), over the (QI tuple,
    sensitive value) cells of the distinct (person, value) facts: ``rows`` hold each person's
    partition and codes (one row a person, or a fact; ``base`` by ``rid`` names the person) and
    ``events`` the records, whose values each person's facts are. The same KL as
    :func:`class_utility`'s over rows, with facts for rows: equal to it with one record a person."""
    codes = ", ".join(f"r._adb_c{i}" for i in range(len(qis)))
    r = rid if rid == "rowid" else ident(rid)
    facts = s.table(f"SELECT DISTINCT r._adb_pid, {codes}, e.{ident(person)} AS _adb_p, "
                    f"e.{ident(sensitive)} AS _adb_sa FROM {ident(rows)} AS r "
                    f"JOIN {ident(base)} AS b ON b.{r} = r._adb_rid "
                    f"JOIN {ident(events)} AS e ON e.{ident(person)} = b.{ident(person)}")
    n = eng.scalar(f"SELECT count(*) FROM {ident(facts)}")
    return class_utility(eng, facts, boxes, qis, sensitive, None, int(n), None, False)["kl"]

"""Mondrian by record owners: what changes when the rows belong to persons.

Every model then judges distinct persons (:mod:`anonydb.models.base`; spec-presence-survey §3.2,
the survey's person-level models). Two shapes:

* QIs constant per person (the default): the cuts partition persons. The input is one row per
  person, or per (person, sensitive value) when a model reads the sensitive attribute
  (``sql/person_facts.sql.j2``, ``_adb_own = 1`` on each person's first row), and every record
  then takes its person's class (``sql/person_classes.sql.j2``). A QI that varies within a person
  is refused up front (:func:`anonydb.release.publish.constant_qis`).
* ``varying``: the QIs may vary within a person (a visit month). The cuts partition records, each
  class counting its distinct persons; with the person's pseudonym published, the persons the
  intersection attack singles out are suppressed (:func:`anonydb.methods.unlink.unlink`).

Loss is reported per person (the rows partitioned) and per record (each class weighed by its
records): DM, C_AVG and NCP as in Li's thesis 1.2.3, KL over the persons' (QI tuple, value) facts
(:func:`anonydb.utility.measures.person_kl`), which is the row-level KL with one record a person.
"""

from __future__ import annotations

from typing import Any

from ..release.publish import constant_qis
from ..sqlgen import ident
from ..utility.measures import class_utility, person_kl
from .unlink import unlink


class Owners:
    """The person path of one Mondrian run: its input, its unit count, its release and its loss.
    ``sa``: the sensitive column when a model reads it, else None."""

    def __init__(self, eng: Any, s: Any, person: str, varying: bool, sa: str | None) -> None:
        self.eng, self.s, self.person, self.varying, self.sa = eng, s, person, varying, sa
        self.events: str | None = None  # the records, when the rows partitioned are persons
        self.owners: str | None = None  # record id -> partition, when the rows partitioned are persons
        self.records = 0

    def facts(self, relation: str, qi_cols: list[str]) -> str:
        """The relation the cuts partition: ``relation`` itself when the QIs vary, else the
        persons' facts (a QI that varies within a person is refused here, in one line)."""
        if self.varying:
            return relation
        self.events = relation
        facts = self.s.table(self.eng.render("person_facts.sql.j2", person=self.person, qis=qi_cols,
                                             sensitive=self.sa, source=relation))
        constant_qis(self.eng, facts, self.person, qi_cols, facts=not self.sa)
        return facts

    def count(self, base: str) -> int:
        """The persons of ``base``: its rows (one a person), the persons' first rows (one a
        (person, value) fact), or its distinct persons (varying QIs: the rows are records)."""
        b = ident(base)
        if self.varying:
            return int(self.eng.scalar(f"SELECT count(DISTINCT {ident(self.person)}) FROM {b}"))
        if not self.sa:
            return int(self.eng.scalar(f"SELECT count(*) FROM {b}"))
        return int(self.eng.scalar(f"SELECT count(*) FROM {b} WHERE _adb_own = 1"))

    def release(self, base: str, rid: str, rows: str) -> tuple[str, dict[str, Any]]:
        """(the rows whose boxes label the classes, the arguments of Mondrian's ``_materialize``):
        with varying QIs the records themselves; else every record takes its person's class, and
        with (person, value) facts the boxes count each person once (their first fact)."""
        eng, s = self.eng, self.s
        if self.varying:
            self.records = int(eng.scalar(f"SELECT count(*) FROM {ident(base)}"))
            return rows, {"person": self.person}
        ebase, erid = eng.row_ids(s, self.events)
        self.records = int(eng.scalar(f"SELECT count(*) FROM {ident(ebase)}"))
        self.owners = s.table(eng.render("person_classes.sql.j2", rows=rows, base=base, rid=rid, person=self.person,
                                         events=ebase, erid=erid))
        if self.sa:
            rows = s.table(f"SELECT * FROM {ident(rows)} WHERE _adb_own = 1")
        return rows, {"release": (ebase, erid, self.owners), "person": self.person}

    def unlink(self, pub: Any, stage: str, ks: list[int], max_suppression: float, total: int) -> tuple[str, int]:
        """Varying QIs with the pseudonym published: suppress the persons whose set of classes is
        shared by fewer than k persons (:func:`~anonydb.methods.unlink.unlink`)."""
        limit = int(max_suppression * total + 1e-9)
        return unlink(self.eng, self.s, pub, stage, max(ks) if ks else 1, limit, total)

    def utility(self, rows: str, boxes: str, qis: Any, total: int, kmin: int | None, relaxed: bool,
                suppressed: int, base: str, rid: str, sensitive: str | None) -> dict[str, Any]:
        """Loss per person (the classes count persons) and, under ``per_record``, per record."""
        eng, s = self.eng, self.s
        if self.varying:  # the rows partitioned are records: per record, and per person of each class
            counts = s.table(f"SELECT _adb_pid, count(DISTINCT _adb_p) AS _adb_n FROM {ident(rows)} GROUP BY 1")
            return {"persons": total, "suppressed_persons": suppressed,
                    **class_utility(eng, rows, boxes, qis, None, None, total, kmin, relaxed, counts),
                    "per_record": class_utility(eng, rows, boxes, qis, None, None, self.records, kmin, relaxed)}
        utility = class_utility(eng, rows, boxes, qis, None, None, total, kmin, relaxed)
        if sensitive:  # KL over the persons' (QI tuple, value) facts, as the row-level one over rows
            utility["kl"] = person_kl(eng, s, rows, base, rid, boxes, qis, self.person, self.events, sensitive)
        counts = s.table(f"SELECT _adb_pid, count(*) AS _adb_n FROM {ident(self.owners)} GROUP BY _adb_pid")
        return {"persons": total, **utility,
                "per_record": class_utility(eng, rows, boxes, qis, None, None, self.records, kmin, relaxed, counts)}

"""Linked records across groups: the intersection attack [Fung et al. survey §2.1; issue 48].

When the QIs vary per record (a visit month), one person's records fall in several groups. If the
release also links them (a published pseudonym of the person), an attacker who knows the victim's
QI values knows the set S(P) of groups that hold the victim's records, and the victim is one of the
persons present in all of them: {Q : S(Q) contains S(P)}. A release bounds the attack when every
person's set is shared by at least k persons (the victim included). A person in one group is
shared by that group's persons, which k-anonymity by persons already bounds.
"""

from __future__ import annotations

from typing import Any

from .engines.base import Engine
from .sqlgen import ident


def unshared(eng: Engine, s: Any, rel: str, person: str, group: str, k: int) -> tuple[str, int]:
    """(a scratch table of the persons of ``rel`` whose set of ``group`` values is shared by fewer
    than ``k`` persons (_adb_p, _adb_sharing), their number), in one statement."""
    bad = s.table(eng.render("intersection.sql.j2", rel=rel, person=person, group=group, k=k))
    return bad, int(eng.scalar(f"SELECT count(*) FROM {ident(bad)}"))

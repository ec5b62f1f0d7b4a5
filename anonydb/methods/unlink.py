"""Unlinking a varying-QI release: the persons the intersection attack singles out are suppressed.

Mondrian with ``varying=True`` cuts records, so one person's records may fall in several classes;
when the person's pseudonym is published, an attacker who knows the victim's records knows the set
of classes that hold them (:mod:`anonydb.linkage`). The persons whose set is shared by fewer than k
persons go, with all their records, round by round (a suppressed person can leave another
unshared), within the method's ``max_suppression``; past it, or when no person would be left,
the release is refused in one line and nothing is written.
"""

from __future__ import annotations

from ..errors import InfeasibleError
from ..linkage import unshared
from ..release.publish import PERSON_COLUMN
from ..sqlgen import ident


def unlink(eng, s, pub, stage: str, k: int, limit: int, persons: int) -> tuple[str, int]:
    """Suppress, round by round, the persons whose set of classes in ``stage`` (their records linked
    by the staged person key) is shared by fewer than ``k`` persons. Refused (InfeasibleError) past
    ``limit`` persons, and when every person would go (an empty release protects no one and is
    not one). Returns (the stage, the persons suppressed)."""
    done = 0
    while True:
        bad, n = unshared(eng, s, stage, PERSON_COLUMN, "eq_class", k)
        if not n:
            return stage, done
        if done + n > limit:
            raise InfeasibleError(
                f"the intersection attack: {n} persons' records lie in sets of classes shared by fewer than k = {k} "
                f"persons (the published pseudonym links them), and suppressing them would take {done + n} of "
                f"{persons} persons, more than max_suppression allows ({limit}); raise it, publish no pseudonym "
                f"of the person, or generalize the varying QIs further")
        if done + n >= persons:
            raise InfeasibleError(
                f"suppressing the persons the intersection attack singles out would remove all of them ({persons} "
                f"persons at k = {k}); publish no pseudonym of the person, or generalize the varying QIs further")
        pub.keep_rows(stage, f"{ident(PERSON_COLUMN)} NOT IN (SELECT _adb_p FROM {ident(bad)})")
        done += n

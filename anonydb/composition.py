"""Several releases read together [Fung et al. survey §6.1-6.3; spec-presence-survey §3.2
"Extended-scenario models"].

**Sequential and continuous releases** of one source (§6.2-6.3). An attacker who knows a person's
QIs finds the person's group in every release that holds them and intersects the groups' sets of
sensitive values: the person's sensitive value lies in

    V_n(P) = V_r(P) ∩ sig_n(g_n(P))                          (r: P's last earlier release)

with V the intersection over every earlier release holding P and sig_n(g) the distinct values of
group g in release n (counterfeits included: the attacker cannot tell them apart). Each person's
V is kept in the ledger as a *history*: an id per release with its set of values, so release n
costs one join with the earlier members whatever n is.

* every person of release n keeps at least l distinct values (Byun et al. 2006 require it of any
  earlier release with the current one; the history's intersection over all of them is stronger);
* m-invariance (Xiao & Tao 2007): every group holds at least m values, pairwise different
  (m-unique), and a person's groups across their lifespan have one signature:
  sig_n(g_n(P)) = V_r(P) (= sig_r(g_r(P)), by induction).

**Multiple views** (§6.1, the join attack of Table VI): :func:`join_candidates` joins two views
over their shared columns (equal, or on one generalization path) and counts, for every person,
the pairs of rows in the person's two groups that the join matches, and the sensitive values they
leave. Between two anonydb releases of one source that both publish the sensitive attribute, every
row of a group shares the group's labels, so the join of a person's two groups pairs rows of equal
sensitive value only: the values left are the intersection above, which is why the ledger folds
every release of a source (any series) into one history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .engines.base import Engine
from .sqlgen import ident, literal


@dataclass
class Exposure:
    """Release n read with the earlier ones: the persons left with too few values, and the
    m-invariance breaches (persons whose group changed signature; groups that are not m-unique)."""

    persons: int  # persons present in an earlier release too
    exposed: int  # persons whose values left are fewer than l
    min_values: int | None  # the fewest values any person keeps (None: no person seen before)
    changed: int = 0  # persons whose group's signature differs from their history (m-invariance)
    not_unique: int = 0  # groups with fewer than m values or a repeated value (m-invariance)
    worst_release: int | None = None  # the earlier release (ledger id) of an exposed person


def histories(eng: Engine, s: Any, members: str, values: str, last: str, hist_values: str,
              keep: Any = None) -> tuple[str, str]:
    """The current release's histories. ``members`` (fp, grp), ``values`` (grp, value, n) of the
    release being written; ``last`` (fp, release_id, hist): each person's last earlier appearance;
    ``hist_values`` (release_id, hist, value) of the earlier releases. Returns (members with
    ``hist`` and the earlier (``prev_release``, ``prev_hist``), the new histories' values (hist,
    value)). A person seen before gets hist ``dense_rank`` of (last release, last hist, group);
    a new person the negative group id (the group's signature). ``keep(role, select)`` makes the
    two results (role "tagged", "values") where they outlive ``s`` (default: scratch tables)."""
    keep = keep or (lambda role, select: s.table(select))
    pairs = s.table(f"SELECT DISTINCT l.release_id AS r, l.hist AS h, m.grp FROM {ident(members)} AS m "
                    f"JOIN {ident(last)} AS l ON l.fp = m.fp")
    pid = s.table(f"SELECT r, h, grp, CAST(dense_rank() OVER (ORDER BY r, h, grp) AS BIGINT) AS hist "
                  f"FROM {ident(pairs)}")
    tagged = keep("tagged", f"SELECT m.fp, m.grp, COALESCE(p.hist, -1 - m.grp) AS hist, l.release_id AS prev_release, "
                     f"l.hist AS prev_hist FROM {ident(members)} AS m LEFT JOIN {ident(last)} AS l ON l.fp = m.fp "
                     f"LEFT JOIN {ident(pid)} AS p ON p.r = l.release_id AND p.h = l.hist AND p.grp = m.grp")
    # distinct as they stand: (release, hist, value) and (grp, value) are keys of their tables
    hv = keep("values", f"SELECT p.hist, v.value FROM {ident(pid)} AS p JOIN {ident(hist_values)} AS hv "
                        f"ON hv.release_id = p.r AND hv.hist = p.h JOIN {ident(values)} AS v "
                        f"ON v.grp = p.grp AND v.value = hv.value "
                        f"UNION ALL SELECT -1 - grp AS hist, value FROM {ident(values)}")
    return tagged, hv


def exposure(eng: Engine, s: Any, tagged: str, hv: str, values: str, hist_values: str, l: int | None,
             m: int | None) -> Exposure:
    """Judge the histories :func:`histories` built: persons with fewer than ``l`` values left,
    and (``m``) the m-invariance breaches, in three statements."""
    sizes = s.table(f"SELECT hist, count(*) AS n FROM {ident(hv)} GROUP BY hist")
    per = s.table(f"SELECT t.prev_release, t.prev_hist, t.grp, t.hist, count(*) AS persons "
                  f"FROM {ident(tagged)} AS t WHERE t.prev_release IS NOT NULL GROUP BY 1, 2, 3, 4")
    lim = int(l or 0)
    row = eng.fetch_rows(
        f"SELECT COALESCE(sum(p.persons), 0), min(COALESCE(z.n, 0)), "
        f"COALESCE(sum(CASE WHEN COALESCE(z.n, 0) < {lim} THEN p.persons ELSE 0 END), 0), "
        f"min(CASE WHEN COALESCE(z.n, 0) < {lim} THEN p.prev_release END), "
        f"COALESCE(sum(CASE WHEN COALESCE(z.n, 0) <> ph.n OR COALESCE(z.n, 0) <> g.n THEN p.persons ELSE 0 END), 0) "
        f"FROM {ident(per)} AS p LEFT JOIN {ident(sizes)} AS z ON z.hist = p.hist "
        f"JOIN (SELECT release_id, hist, count(*) AS n FROM {ident(hist_values)} GROUP BY 1, 2) AS ph "
        f"ON ph.release_id = p.prev_release AND ph.hist = p.prev_hist "
        f"JOIN (SELECT grp, count(DISTINCT value) AS n FROM {ident(values)} GROUP BY 1) AS g ON g.grp = p.grp")[1][0]
    persons, least, exposed, worst, changed = row
    not_unique = 0
    if m is not None:
        not_unique = int(eng.scalar(f"SELECT count(*) FROM (SELECT grp FROM {ident(values)} GROUP BY grp "
                                    f"HAVING sum(n) < {int(m)} OR max(n) > 1) AS x"))
    return Exposure(int(persons), int(exposed), None if least is None else int(least),
                    int(changed) if m is not None else 0, not_unique, None if worst is None else int(worst))


def difference_exposed(eng: Engine, s: Any, members: str, values: str, earlier_members: str, earlier_values: str,
                       release_id: int, l: int) -> tuple[int, int | None]:
    """Byun et al.'s difference attack on the records new since earlier release r [survey §6.3,
    Example 6.3, Table VIII(b)]: a group h of r whose members all sit in one group g of release n
    (and that has no counterfeits) brings its whole multiset of values into g, so the attacker
    subtracts it; a person of g absent from r keeps

        left(g) = sig_n(g) - sum over such h of sig_r(h)             (multisets, floored at 0)

    and is exposed when left(g) holds fewer than l distinct values. ``members`` (fp, grp) and
    ``values`` (grp, value, n, counterfeits included) of release n; ``earlier_members`` /
    ``earlier_values``: the ledger's tables as SQL. Returns (persons exposed, fewest values left)."""
    r = int(release_id)
    em = f"(SELECT fp, grp AS h FROM {earlier_members} WHERE release_id = {r})"
    whole = s.table(f"SELECT e.h, min(c.grp) AS g FROM {em} AS e LEFT JOIN {ident(members)} AS c ON c.fp = e.fp "
                    f"GROUP BY e.h HAVING count(c.fp) = count(*) AND count(DISTINCT c.grp) = 1")
    sub = s.table(f"SELECT w.g, v.value, sum(v.n) AS n FROM {ident(whole)} AS w JOIN {earlier_values} AS v "
                  f"ON v.release_id = {r} AND v.grp = w.h WHERE NOT EXISTS (SELECT 1 FROM {earlier_values} AS x "
                  f"WHERE x.release_id = {r} AND x.grp = w.h AND x.counterfeits > 0) GROUP BY w.g, v.value")
    left = s.table(f"SELECT c.grp, count(*) AS d FROM {ident(values)} AS c LEFT JOIN {ident(sub)} AS b "
                   f"ON b.g = c.grp AND b.value = c.value WHERE c.n - COALESCE(b.n, 0) > 0 GROUP BY c.grp")
    n, least = eng.fetch_rows(
        f"SELECT count(*), min(COALESCE(d.d, 0)) FROM {ident(members)} AS c LEFT JOIN {ident(left)} AS d "
        f"ON d.grp = c.grp WHERE COALESCE(d.d, 0) < {int(l)} AND NOT EXISTS (SELECT 1 FROM {earlier_members} AS e "
        f"WHERE e.release_id = {r} AND e.fp = c.fp)")[1][0]
    return int(n), None if least is None else int(least)


def join_candidates(eng: Engine, a: str, b: str, link: str, x_a: list[str], x_b: list[str], join: list[str],
                    sensitive: str | None = None, parents: dict[str, dict[Any, Any]] | None = None,
                    s: Any = None) -> list[tuple[Any, int, int]]:
    """The join attack on two views ``a`` and ``b`` of one table [survey §6.1, Example 6.1]: per
    person (``link``, present in both views; the attacker does not see it), the number of pairs
    of rows (ra, rb) with ra in the person's group of ``a`` (the rows sharing its ``x_a`` values),
    rb in its group of ``b``, whose ``join`` columns match, and the number of distinct
    ``sensitive`` values (of whichever view publishes it) over those pairs. Two values match when
    equal or on one generalization path of ``parents[col]`` (value -> parent; ``'*'`` matches
    everything) [Wang & Fung 2006, the lossy join]. Returns (link, pairs, values), by link."""
    conds = []
    for c in join:
        par = (parents or {}).get(c)
        if par:  # on one path: one is an ancestor-or-self of the other
            closure: set[tuple[Any, Any]] = set()
            for v in set(par) | set(par.values()):
                u = v
                seen = set()
                while u is not None and u not in seen:
                    closure.add((v, u))
                    seen.add(u)
                    u = par.get(u)
            rows = " UNION ALL ".join(f"SELECT {literal(str(v))} AS d, {literal(str(u))} AS u" for v, u in sorted(
                closure, key=str))
            conds.append(f"(ra.{ident(c)} = rb.{ident(c)} OR ra.{ident(c)} = '*' OR rb.{ident(c)} = '*' OR EXISTS "
                         f"(SELECT 1 FROM ({rows}) AS z WHERE (z.d = CAST(ra.{ident(c)} AS VARCHAR) AND "
                         f"z.u = CAST(rb.{ident(c)} AS VARCHAR)) OR (z.d = CAST(rb.{ident(c)} AS VARCHAR) AND "
                         f"z.u = CAST(ra.{ident(c)} AS VARCHAR))))")
        else:
            conds.append(f"ra.{ident(c)} = rb.{ident(c)}")
    sa_cols = {c for c, _ in eng.columns(a)}
    side = "ra" if sensitive and sensitive in sa_cols else "rb"
    ga = " AND ".join(f"ra.{ident(c)} = pa.{ident(c)}" for c in x_a) or "TRUE"
    gb = " AND ".join(f"rb.{ident(c)} = pb.{ident(c)}" for c in x_b) or "TRUE"
    sens = f"count(DISTINCT {side}.{ident(sensitive)})" if sensitive else "0"
    sql = (f"SELECT pa.{ident(link)} AS link, count(*) AS pairs, {sens} AS vals "
           f"FROM {ident(a)} AS pa JOIN {ident(b)} AS pb ON pa.{ident(link)} = pb.{ident(link)} "
           f"JOIN {ident(a)} AS ra ON {ga} JOIN {ident(b)} AS rb ON {gb} AND {' AND '.join(conds) or 'TRUE'} "
           f"GROUP BY pa.{ident(link)} ORDER BY 1")
    return [(r[0], int(r[1]), int(r[2])) for r in eng.fetch_rows(sql)[1]]


__all__ = ["Exposure", "exposure", "histories", "join_candidates"]

-- The sample-based risk summary (anonydb.risk.sample; El Emam's attacker models as ARX's
-- RiskModelSampleSummary reports them): one row of prosecutor, journalist and marketer risk and
-- sample uniqueness of tbl over the key columns qis. A record's class is the records sharing its
-- key values (NULL is a value); f its size in tbl, F its size in population (a table in the same
-- coding holding tbl), or F = f without one (ARX's convention: journalist = prosecutor, marketer =
-- classes / n). A record is at risk when 1/f > threshold, decided exactly (threshold read as the
-- fraction of its first nine decimals). Example:
--   FROM anonydb_risk_summary('adult', ['age', 'sex', 'zip'], threshold := 0.2);
CREATE OR REPLACE MACRO anonydb_risk_summary(tbl, qis, threshold := 0.2, population := NULL) AS TABLE
WITH _adb_rs AS (
    SELECT k, count(*) AS f
    FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains(qis, c))) AS k FROM query_table(tbl))
    GROUP BY k
), _adb_rq AS (
    SELECT k, count(*) AS pf
    FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains(qis, c))) AS k
          FROM query_table(coalesce(population, tbl)) WHERE population IS NOT NULL)
    GROUP BY k
), _adb_rc AS (
    SELECT s.f, CASE WHEN population IS NULL THEN s.f ELSE coalesce(q.pf, 0) END AS pf
    FROM _adb_rs AS s LEFT JOIN _adb_rq AS q ON s.k IS NOT DISTINCT FROM q.k
), _adb_rn AS (
    SELECT struct_keys(struct_pack(*COLUMNS(*))) AS names
    FROM (SELECT 1 AS _adb_one) AS o LEFT JOIN (FROM query_table(tbl) LIMIT 1) AS x ON TRUE
), _adb_rt AS (
    SELECT CAST(round(CAST(threshold AS DOUBLE) * 1000000000) AS HUGEINT) AS tn
), _adb_ra AS (
    SELECT count(*) AS classes, sum(f) AS n, min(f) AS min_f, max(f) AS max_f, min(pf) AS min_pf, max(pf) AS max_pf,
           sum(pf) AS sum_pf, sum(f * 1.0 / pf) AS sum_f_over_pf,
           coalesce(sum(f) FILTER (WHERE f = 1), 0) AS uniques,
           coalesce(sum(f) FILTER (WHERE 1000000000 > (SELECT tn FROM _adb_rt) * f), 0) AS p_at_risk,
           coalesce(sum(f) FILTER (WHERE 1000000000 > (SELECT tn FROM _adb_rt) * pf), 0) AS j_at_risk,
           count(*) FILTER (WHERE pf < f) AS short
    FROM _adb_rc
)
SELECT CASE WHEN len(list_filter(qis, lambda q: NOT list_contains(names, q))) > 0
            THEN error('anonydb: key variables not found in ' || tbl || ': ' ||
                       array_to_string(list_filter(qis, lambda q: NOT list_contains(names, q)), ', '))
            WHEN threshold IS NULL OR threshold <= 0 OR threshold > 1
            THEN error('anonydb: threshold must lie in (0, 1], got ' || coalesce(CAST(threshold AS VARCHAR), 'NULL'))
            WHEN short > 0
            THEN error('anonydb: the population holds fewer records than the table in ' || short ||
                       ' of its classes: it must contain the table, in the same coding')
            ELSE CAST(n AS BIGINT) END AS n,
       classes,
       p_at_risk / n AS prosecutor_records_at_risk, 1.0 / min_f AS prosecutor_highest,
       1.0 / max_f AS prosecutor_lowest, classes / n AS prosecutor_average,
       j_at_risk / n AS journalist_records_at_risk, 1.0 / min_pf AS journalist_highest,
       1.0 / max_pf AS journalist_lowest, greatest(classes / sum_pf, sum_f_over_pf / n) AS journalist_average,
       sum_f_over_pf / n AS marketer, uniques / n AS sample_uniqueness
FROM _adb_ra, _adb_rn;

-- Anatomy in SQL [Xiao & Tao, VLDB 2006; Li thesis 1.2.2, Tables 1.4/1.5]: the records dealt into
-- g = floor(n / l) groups, bucket after bucket (one bucket per sensitive value, largest first; in a
-- bucket in the order of md5(key || the row)), record number pos to group pos mod g + 1, as
-- anonydb's Anatomy does (sql/anatomy_groups.sql.j2). Every group then holds >= l records with
-- pairwise different sensitive values. The QIT publishes the QI values exactly (and the `keep`
-- columns) with group_id, in an order keyed by `key`; the ST publishes (group_id, sensitive value,
-- count). The two macros deal the same groups when given the same `key`, a secret of at least 16
-- characters (e.g. SET VARIABLE anatomy_key = gen_random_uuid()::VARCHAR; then
-- getvariable('anatomy_key') in both calls). Infeasible (a value in more than n/l records), an
-- unknown column or a bad argument stops the query with error(); the groups are checked (>= l
-- records, no value twice) before a row is returned.

-- a row of _adb_s as text (the order inside a bucket, and its tie-break: equal texts are equal rows)
CREATE OR REPLACE MACRO anonydb_anatomy_row(nq, nk) AS
    'CAST(struct_pack(' || array_to_string(list_transform(range(nq), lambda i: '_adb_q' || i || ' := s._adb_q' || i)
    || list_transform(range(nk), lambda i: '_adb_k' || i || ' := s._adb_k' || i), ', ') || ') AS VARCHAR)';

-- the groups, as SQL text: columns _adb_q0.., _adb_sa, _adb_k0.., _adb_pos, group_id
CREATE OR REPLACE MACRO anonydb_anatomy_sql(tbl, qis, sa, l, key, keep) AS
    'WITH _adb_s AS (SELECT '
    || array_to_string(list_transform(range(len(qis)), lambda i: anonydb_col(qis[i + 1]) || ' AS _adb_q' || i), ', ')
    || ', ' || anonydb_col(sa) || ' AS _adb_sa'
    || array_to_string(list_transform(range(len(keep)), lambda i: ', ' || anonydb_col(keep[i + 1]) || ' AS _adb_k' || i), '')
    || ' FROM (SELECT *, CAST(NULL AS BOOLEAN) AS _adb_pad FROM ' || anonydb_ident(tbl) || ')), '
    || '_adb_names AS (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS n FROM (SELECT 1 AS _adb_one) AS o '
    || 'LEFT JOIN (FROM ' || anonydb_ident(tbl) || ' LIMIT 1) AS t ON TRUE), '
    || '_adb_b AS (SELECT _adb_sa, count(*) AS _adb_cnt FROM _adb_s GROUP BY 1), '
    || '_adb_n AS (SELECT coalesce(sum(_adb_cnt), 0) AS n, max(_adb_cnt) AS top, arg_max(_adb_sa, _adb_cnt) AS topv FROM _adb_b), '
    || '_adb_check AS (SELECT CASE '
    || 'WHEN len(list_filter(' || anonydb_texts(CAST(qis AS VARCHAR[]) || CAST(keep AS VARCHAR[]) || [CAST(sa AS VARCHAR)])
    || ', lambda c: NOT list_contains(m.n, c))) > 0 THEN error(''anonydb: unknown column '' || list_filter('
    || anonydb_texts(CAST(qis AS VARCHAR[]) || CAST(keep AS VARCHAR[]) || [CAST(sa AS VARCHAR)])
    || ', lambda c: NOT list_contains(m.n, c))[1] || '' in '' || ' || anonydb_text(tbl) || ') '
    || 'WHEN x.n = 0 THEN error(' || anonydb_text('anonydb: ' || tbl || ' is empty: there is nothing to release') || ') '
    || 'WHEN x.top * ' || l || ' > x.n THEN error(''anonydb: Anatomy with l = ' || l || ' is infeasible: the most frequent value of '
    || replace(sa, chr(39), chr(39) || chr(39)) || ', '' || coalesce(CAST(x.topv AS VARCHAR), ''NULL'') || '', is in '' || x.top || '' of '' || x.n '
    || '|| '' records (each may appear at most once in l records); the largest feasible l is '' || (x.n // x.top)) '
    || 'ELSE TRUE END AS ok FROM _adb_names AS m, _adb_n AS x), '
    || '_adb_r AS (SELECT s.*, row_number() OVER (ORDER BY b._adb_cnt DESC, b._adb_sa NULLS LAST, '
    || 'md5(' || anonydb_text(key) || ' || ' || anonydb_anatomy_row(len(qis), len(keep)) || '), '
    || anonydb_anatomy_row(len(qis), len(keep)) || ') - 1 AS _adb_pos '
    || 'FROM _adb_s AS s JOIN _adb_b AS b ON b._adb_sa IS NOT DISTINCT FROM s._adb_sa), '
    || '_adb_g0 AS (SELECT r.*, CAST(r._adb_pos % (x.n // ' || l || ') + 1 AS BIGINT) AS group_id FROM _adb_r AS r, _adb_n AS x), '
    || '_adb_gate AS (SELECT CASE WHEN NOT c.ok THEN FALSE '
    || 'WHEN (SELECT count(*) FROM (SELECT group_id FROM _adb_g0 GROUP BY group_id '
    || 'HAVING count(*) < ' || l || ' OR count(DISTINCT _adb_sa) + max(CASE WHEN _adb_sa IS NULL THEN 1 ELSE 0 END) < count(*))) > 0 '
    || 'THEN error(''anonydb: internal error: a group is not l-diverse; nothing is returned'') ELSE TRUE END AS ok FROM _adb_check AS c), '
    || '_adb_g AS (SELECT g.* FROM _adb_g0 AS g, _adb_gate AS ok WHERE ok.ok) ';

CREATE OR REPLACE MACRO anonydb_anatomy_error(l, key) AS
    CASE WHEN l IS NULL OR l < 2 OR l <> floor(l)
              THEN 'SELECT error(' || anonydb_text('anonydb: l must be an integer >= 2 for Anatomy (a group needs l different sensitive values), got ' || coalesce(CAST(l AS VARCHAR), 'NULL')) || ') AS group_id'
         WHEN key IS NULL OR length(CAST(key AS VARCHAR)) < 16
              THEN 'SELECT error(''anonydb: key must be a secret of at least 16 characters, the same for the QIT and the ST (e.g. SET VARIABLE anatomy_key = gen_random_uuid()::VARCHAR)'') AS group_id'
    END;

-- anonydb_anatomy_qit(tbl, qis, sa, l, key, keep := []): the QI values exactly, the kept columns, group_id
CREATE OR REPLACE MACRO anonydb_anatomy_qit(tbl, qis, sa, l, key, keep := []) AS TABLE
FROM query(coalesce(anonydb_anatomy_error(l, key),
    anonydb_anatomy_sql(tbl, qis, sa, l, key, keep) || 'SELECT '
    || array_to_string(list_transform(range(len(qis)), lambda i: '_adb_q' || i || ' AS ' || anonydb_ident(qis[i + 1])), ', ')
    || array_to_string(list_transform(range(len(keep)), lambda i: ', _adb_k' || i || ' AS ' || anonydb_ident(keep[i + 1])), '')
    || ', group_id FROM _adb_g ORDER BY md5(' || anonydb_text(key || ':qit') || ' || CAST(_adb_pos AS VARCHAR))'));

-- anonydb_anatomy_st(tbl, qis, sa, l, key): (group_id, the sensitive value, count)
CREATE OR REPLACE MACRO anonydb_anatomy_st(tbl, qis, sa, l, key) AS TABLE
FROM query(coalesce(anonydb_anatomy_error(l, key),
    anonydb_anatomy_sql(tbl, qis, sa, l, key, []) || 'SELECT group_id, _adb_sa AS ' || anonydb_ident(sa)
    || ', count(*) AS count FROM _adb_g GROUP BY ALL ORDER BY group_id, 2 NULLS LAST'));

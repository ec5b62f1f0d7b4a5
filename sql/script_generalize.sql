-- A full-domain release in SQL [Samarati 2001; Li thesis 1.2.3]: each quasi-identifier replaced by
-- its ancestor at its level of its hierarchy (level 0: the value as it is), the sensitive attribute
-- and the `keep` columns unchanged, no other column, rows in random order. Verified in the same
-- statement, over every published column but the sensitive one (the kept columns included): a class below k, a class with fewer than l distinct sensitive values (NULL a value of
-- its own), a value its hierarchy does not cover or a level above its root stops the query with
-- error() instead of returning rows. The statement is built as text from the arguments (every name
-- quoted as an identifier or a string) and run by query(); a bad argument known from the arguments
-- alone makes the whole statement an error().

-- a name quoted as an identifier, a value as a string literal, for SQL built as text
CREATE OR REPLACE MACRO anonydb_ident(x) AS '"' || replace(CAST(x AS VARCHAR), '"', '""') || '"';
CREATE OR REPLACE MACRO anonydb_text(x) AS chr(39) || replace(CAST(x AS VARCHAR), chr(39), chr(39) || chr(39)) || chr(39);
CREATE OR REPLACE MACRO anonydb_texts(xs) AS
    '[' || array_to_string(list_transform(xs, lambda x: anonydb_text(x)), ', ') || ']::VARCHAR[]';
-- a column of the source by name, or NULL when it has none (the name is then reported, not a binder error)
CREATE OR REPLACE MACRO anonydb_col(c) AS
    'struct_extract_at(struct_pack(*COLUMNS(lambda c: c = ' || anonydb_text(c) || ' OR c = ''_adb_pad'')), 1)';

-- anonydb_generalize(tbl, qis, hierarchies, levels, sa := NULL, keep := [], k := 1, l := NULL):
-- hierarchies[i] names a table of (value, level1, ..., root) for qis[i] (NULL: none, and its level
-- must be 0); levels[i] is its level. Example:
--   CREATE TABLE rel AS FROM anonydb_generalize('adult', ['age', 'sex'], ['h_age', NULL], [2, 0],
--                                               sa := 'occupation', k := 5, l := 2);
CREATE OR REPLACE MACRO anonydb_generalize(tbl, qis, hierarchies, levels, sa := NULL, keep := [], k := 1,
                                           l := NULL) AS TABLE
FROM query(CASE
    WHEN len(qis) = 0 THEN 'SELECT error(''anonydb: give at least one quasi-identifier'')'
    WHEN len(qis) <> len(hierarchies) OR len(qis) <> len(levels)
        THEN 'SELECT error(''anonydb: qis, hierarchies and levels must have the same length'')'
    WHEN k IS NULL OR k < 1 OR k <> floor(k)
        THEN 'SELECT error(' || anonydb_text('anonydb: k must be an integer >= 1, got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) || ')'
    WHEN l IS NOT NULL AND sa IS NULL
        THEN 'SELECT error(''anonydb: l-diversity needs the sensitive attribute (sa := ...)'')'
    WHEN l IS NOT NULL AND l < 1 THEN 'SELECT error(' || anonydb_text('anonydb: l must be >= 1, got ' || l) || ')'
    WHEN len(list_filter(levels, lambda v: v IS NULL OR v < 0 OR v <> floor(v))) > 0
        THEN 'SELECT error(''anonydb: every level must be an integer >= 0'')'
    WHEN len(list_filter(range(len(qis)), lambda i: levels[i + 1] > 0 AND hierarchies[i + 1] IS NULL)) > 0
        THEN 'SELECT error(' || anonydb_text('anonydb: a level above 0 is given for '
             || qis[list_filter(range(len(qis)), lambda i: levels[i + 1] > 0 AND hierarchies[i + 1] IS NULL)[1] + 1]
             || ', which has no hierarchy') || ')'
    ELSE
    'WITH _adb_s AS (SELECT struct_keys(struct_pack(*COLUMNS(* EXCLUDE (_adb_pad)))) AS _adb_names, '
    || array_to_string(list_transform(range(len(qis)), lambda i: anonydb_col(qis[i + 1]) || ' AS _adb_q' || i), ', ')
    || CASE WHEN sa IS NULL THEN '' ELSE ', ' || anonydb_col(sa) || ' AS _adb_sa' END
    || array_to_string(list_transform(range(len(keep)), lambda i: ', ' || anonydb_col(keep[i + 1]) || ' AS _adb_k' || i), '')
    || ' FROM (SELECT *, CAST(NULL AS BOOLEAN) AS _adb_pad FROM ' || anonydb_ident(tbl) || ')), '
    || '_adb_names AS (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS n FROM (SELECT 1 AS _adb_one) AS o '
    || 'LEFT JOIN (FROM ' || anonydb_ident(tbl) || ' LIMIT 1) AS t ON TRUE), '
    || '_adb_guard AS (SELECT CASE WHEN len(list_filter('
    || anonydb_texts(CAST(qis AS VARCHAR[]) || CAST(keep AS VARCHAR[]) || CASE WHEN sa IS NULL THEN []::VARCHAR[] ELSE [CAST(sa AS VARCHAR)] END)
    || ', lambda q: NOT list_contains(n, q))) > 0 THEN error(''anonydb: unknown column '' || list_filter('
    || anonydb_texts(CAST(qis AS VARCHAR[]) || CAST(keep AS VARCHAR[]) || CASE WHEN sa IS NULL THEN []::VARCHAR[] ELSE [CAST(sa AS VARCHAR)] END)
    || ', lambda q: NOT list_contains(n, q))[1] || '' in '' || ' || anonydb_text(tbl) || ') ELSE TRUE END AS ok FROM _adb_names), '
    || array_to_string(list_transform(range(len(qis)), lambda i:
           CASE WHEN levels[i + 1] > 0 THEN
               '_adb_h' || i || ' AS (SELECT l[1] AS _adb_leaf, l[' || (levels[i + 1] + 1) || '] AS _adb_node, len(l) AS _adb_w '
               || 'FROM (SELECT list_value(*COLUMNS(*)) AS l FROM (SELECT CAST(COLUMNS(*) AS VARCHAR) FROM '
               || anonydb_ident(hierarchies[i + 1]) || '))), '
           ELSE '' END), '')
    || '_adb_g AS (SELECT '
    || array_to_string(list_transform(range(len(qis)), lambda i:
           CASE WHEN levels[i + 1] > 0
                THEN '_adb_h' || i || '._adb_node AS _adb_q' || i
                     || ', CASE WHEN s._adb_q' || i || ' IS NOT NULL AND _adb_h' || i || '._adb_leaf IS NULL THEN '
                     || anonydb_text('the hierarchy ' || hierarchies[i + 1] || ' does not cover ' || qis[i + 1] || ' = ')
                     || ' || CAST(s._adb_q' || i || ' AS VARCHAR) WHEN _adb_h' || i || '._adb_w <= ' || levels[i + 1] || ' THEN '
                     || anonydb_text('level ' || levels[i + 1] || ' of ' || qis[i + 1] || ' is above the root of '
                                     || hierarchies[i + 1]) || ' END AS _adb_bad' || i
                ELSE 's._adb_q' || i END), ', ')
    || CASE WHEN sa IS NULL THEN '' ELSE ', s._adb_sa' END
    || array_to_string(list_transform(range(len(keep)), lambda i: ', s._adb_k' || i), '')
    || ' FROM _adb_s AS s '
    || array_to_string(list_transform(range(len(qis)), lambda i:
           CASE WHEN levels[i + 1] > 0
                THEN 'LEFT JOIN _adb_h' || i || ' ON CAST(s._adb_q' || i || ' AS VARCHAR) = _adb_h' || i || '._adb_leaf '
                ELSE '' END), '')
    || '), _adb_bad AS (SELECT coalesce(' || array_to_string(list_transform(range(len(qis)), lambda i:
           CASE WHEN levels[i + 1] > 0 THEN 'min(_adb_bad' || i || ')' ELSE 'NULL' END), ', ') || ', NULL) AS b FROM _adb_g), '
    || '_adb_classes AS (SELECT count(*) AS n'
    || CASE WHEN l IS NULL THEN ''
            ELSE ', count(DISTINCT _adb_sa) + max(CASE WHEN _adb_sa IS NULL THEN 1 ELSE 0 END) AS d' END
    -- the classes of every published column but the sensitive one: a kept column is published as it is
    || ' FROM _adb_g GROUP BY ' || array_to_string(list_transform(range(len(qis)), lambda i: '_adb_q' || i)
                                                   || list_transform(range(len(keep)), lambda i: '_adb_k' || i), ', ') || '), '
    || '_adb_verdict AS (SELECT count(*) FILTER (WHERE n < ' || k || ') AS small, min(n) AS kmin'
    || CASE WHEN l IS NULL THEN ', 0 AS narrow' ELSE ', count(*) FILTER (WHERE d < ' || l || ') AS narrow' END
    || ' FROM _adb_classes), '
    || '_adb_gate AS (SELECT CASE WHEN b.b IS NOT NULL THEN error(''anonydb: '' || b.b) '
    || 'WHEN v.small > 0 THEN error(''anonydb: the release is not ' || k || '-anonymous: '' || v.small '
    || '|| '' classes are smaller (the smallest has '' || v.kmin || '' rows)' || CASE WHEN len(keep) > 0
       THEN ' over the quasi-identifiers and the kept columns ' || replace(array_to_string(CAST(keep AS VARCHAR[]), ', '),
            chr(39), chr(39) || chr(39)) || '; raise the levels or keep fewer columns'') ' ELSE '; raise the levels'') ' END
    || 'WHEN v.narrow > 0 THEN error(' || anonydb_text('anonydb: the release is not distinct ' || coalesce(CAST(l AS VARCHAR), '')
    || '-diverse: ') || ' || v.narrow || ' || anonydb_text(' classes have fewer values of ' || coalesce(sa, '') || '; raise the levels') || ') '
    || 'ELSE TRUE END AS ok FROM _adb_bad AS b, _adb_verdict AS v) '
    || 'SELECT ' || array_to_string(list_transform(range(len(qis)), lambda i: 'g._adb_q' || i || ' AS ' || anonydb_ident(qis[i + 1])), ', ')
    || CASE WHEN sa IS NULL THEN '' ELSE ', g._adb_sa AS ' || anonydb_ident(sa) END
    || array_to_string(list_transform(range(len(keep)), lambda i: ', g._adb_k' || i || ' AS ' || anonydb_ident(keep[i + 1])), '')
    || ' FROM _adb_g AS g, _adb_guard AS x, _adb_gate AS y WHERE x.ok AND y.ok ORDER BY random()'
    END
);

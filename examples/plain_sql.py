"""The checks from plain SQL: register anonydb's UDFs and table macros on a DuckDB connection.

    python examples/plain_sql.py
"""

import duckdb

import anonydb

con = duckdb.connect()
con.execute("""CREATE TABLE patients AS SELECT * FROM (VALUES
    ('476**', '2*', 'Heart Disease', 3), ('476**', '2*', 'Heart Disease', 4), ('476**', '2*', 'Heart Disease', 5),
    ('4790*', '>=40', 'Flu', 6), ('4790*', '>=40', 'Heart Disease', 11), ('4790*', '>=40', 'Cancer', 8),
    ('476**', '3*', 'Heart Disease', 7), ('476**', '3*', 'Cancer', 9), ('476**', '3*', 'Cancer', 10))
    AS t(zip, age, disease, salary)""")
anonydb.register(con)
for sql in [
    "FROM anonydb_privacy('patients', ['zip', 'age'], 'disease')",
    "SELECT group_key, size, distinct_values, distribution FROM anonydb_group_stats('patients', ['zip', 'age'], 'disease')",
    "FROM anonydb_t_closeness('patients', ['zip', 'age'], 'salary')",
    "FROM anonydb_recursive_cl('patients', ['zip', 'age'], 'disease', 3.0, 2)",
]:
    print(sql)
    for row in con.execute(sql).fetchall():
        print("   ", row)
anonydb.unregister(con)
con.close()

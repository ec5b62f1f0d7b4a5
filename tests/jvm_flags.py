"""The test JVMs' flags: the client compiler only and the serial collector.

The tests run many short queries on small tables, where the JIT's optimizing tier and a parallel
collector cost more CPU than they save on two cores. The flags change how fast a driver warms up,
never what a query returns. Every Spark JVM the tests start takes them: the session fixture
(conftest.py), the ledger kill driver (ledger_kill.py) and the Spark Connect server
(test_spark_cli.py).
"""

TEST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

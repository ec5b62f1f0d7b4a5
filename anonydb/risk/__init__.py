"""Re-identification risk as privacy officers read it, computed in SQL on any table (raw or
released): the sample-based summary (prosecutor, journalist, marketer, sample uniqueness; El Emam,
as ARX reports them), population uniqueness (Zayatz, Pitman, SNB and Dankar et al.'s rule),
sdcMicro's individual and household risk under sampling weights, and SUDA2's special uniques.

Every per-record quantity is a GROUP BY in the database; Python only solves the population
models' equations from the class-size histogram (a few hundred numbers)."""

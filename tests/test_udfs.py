"""The vectorized UDFs (udfs/): worked examples of Li's thesis and the t-closeness / l-diversity
papers, an LP oracle for the three EMDs, and batch behaviour inside DuckDB (10,000-row vectors,
NULLs, integer lists, errors, registration)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy.optimize import linprog

from anonydb import udfs
from anonydb.udfs import core

EXACT = dict(abs=1e-12)
ROOT = Path(__file__).resolve().parents[1]
DISEASE_CSV = ROOT.parent / "shared" / "datasets" / "toy" / "test2_hierarchy_Disease.csv"

# Li thesis Table 2.1 / t-closeness paper Fig. 3: the Disease hierarchy, H = 3
_CHAINS = [
    ("gastric ulcer", "stomach disease", "digestive system disease", "respiratory&digestive disease"),
    ("gastritis", "stomach disease", "digestive system disease", "respiratory&digestive disease"),
    ("stomach cancer", "stomach disease", "digestive system disease", "respiratory&digestive disease"),
    ("flu", "respiratory infection", "vascular lung disease", "respiratory&digestive disease"),
    ("bronchitis", "respiratory infection", "vascular lung disease", "respiratory&digestive disease"),
    ("pneumonia", "respiratory infection", "vascular lung disease", "respiratory&digestive disease"),
]
DISEASES = [c[0] for c in _CHAINS]
Q_DISEASE = {"gastric ulcer": 1, "gastritis": 2, "stomach cancer": 2, "flu": 1, "bronchitis": 2, "pneumonia": 1}


def disease_paths() -> list[list[str]]:
    """The hierarchy file when the shared datasets are present, else the same chains inline."""
    if DISEASE_CSV.is_file():
        paths = [line.strip().split(";") for line in DISEASE_CSV.read_text().splitlines() if line.strip()]
        assert sorted(map(tuple, paths)) == sorted(_CHAINS)
        return paths
    return [list(c) for c in _CHAINS]


@pytest.fixture
def con():
    c = duckdb.connect()
    udfs.register(c)
    try:
        yield c
    finally:
        udfs.unregister(c)
        c.close()


def lit(x) -> str:
    """SQL literal of a (nested) list of numbers / strings."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return "[" + ", ".join(lit(v) for v in x) + "]"
    if isinstance(x, str):
        return "'" + x.replace("'", "''") + "'"
    return repr(float(x))


def one(con, expr: str):
    return con.sql(f"SELECT {expr}").fetchall()[0][0]


def core1(fn, p, q, *extra, **kw) -> float:
    """A core function on one row."""
    pv, off = core.flatten([p])
    qv, _ = core.flatten([q])
    return float(fn(pv, qv, off, *extra, **kw)[0])


# --------------------------------------------------------------------------- worked examples

SALARY = [3, 4, 5, 6, 7, 8, 9, 10, 11]  # Li thesis Table 2.1, in K; each value once -> Q uniform


@pytest.mark.parametrize("group, expected", [
    ({3, 4, 5}, 3 / 8), ({6, 8, 11}, 1 / 6), ({7, 9, 10}, 17 / 72), ({3, 5, 9}, 1 / 6), ({4, 7, 10}, 1 / 12),
])
def test_emd_ordered_salary_table_2_1(con, group, expected):
    p = [1 if s in group else 0 for s in SALARY]
    q = [1] * len(SALARY)
    assert one(con, f"emd_ordered({lit(p)}, {lit(q)})") == pytest.approx(expected, **EXACT)
    assert core1(core.emd_ordered, p, q) == pytest.approx(expected, **EXACT)


HIER_CASES = [
    ({"gastric ulcer", "gastritis", "stomach cancer"}, 4 / 9),
    ({"gastric ulcer", "stomach cancer", "pneumonia"}, 7 / 27),
    ({"gastritis", "flu", "bronchitis"}, 8 / 27),
    ({"bronchitis", "pneumonia", "stomach cancer"}, 8 / 27),
    ({"gastritis", "bronchitis", "stomach cancer"}, 5 / 27),
]


@pytest.mark.parametrize("group, expected", HIER_CASES)
def test_emd_hierarchical_disease(con, group, expected):
    paths = disease_paths()
    leaves = [c[0] for c in paths]
    p = [1 if d in group else 0 for d in leaves]
    q = [Q_DISEASE[d] for d in leaves]
    assert one(con, f"emd_hierarchical({lit(p)}, {lit(q)}, {lit(paths)})") == pytest.approx(expected, **EXACT)
    h = core.Hierarchy(paths)
    for method in ("matrix", "reduceat"):
        assert core1(core.emd_hierarchical, p, q, h, method=method) == pytest.approx(expected, **EXACT)
    flat = [x for c in paths for x in c]
    offs = np.arange(len(paths) + 1) * 4
    assert core1(core.emd_hierarchical_per_row, p, q, offs, flat) == pytest.approx(expected, **EXACT)


@pytest.mark.parametrize("group, expected", [
    ({"gastric ulcer", "gastritis", "stomach cancer"}, 1 / 2),
    ({"gastritis", "flu", "bronchitis"}, 5 / 18),
    ({"bronchitis", "pneumonia", "stomach cancer"}, 5 / 18),
])
def test_emd_hierarchical_disease_paper_compatible_weighting_uniform_q(con, group, expected):
    paths = disease_paths()
    p = [1 if c[0] in group else 0 for c in paths]
    assert one(con, f"emd_hierarchical({lit(p)}, {lit([1] * 6)}, {lit(paths)})") == pytest.approx(expected, **EXACT)


@pytest.mark.parametrize("p, q, expected", [
    ([0.01, 0.99], [0.11, 0.89], 0.1),
    ([0.4, 0.6], [0.5, 0.5], 0.1),
    # Li thesis Table 1.3 vs Q = (heart disease 5/9, flu 1/9, cancer 3/9)
    ([3, 0, 0], [5, 1, 3], 4 / 9),
    ([1, 1, 1], [5, 1, 3], 2 / 9),
    ([1, 0, 2], [5, 1, 3], 1 / 3),
])
def test_emd_equal_examples(con, p, q, expected):
    assert one(con, f"emd_equal({lit(p)}, {lit(q)})") == pytest.approx(expected, **EXACT)
    assert core1(core.emd_equal, p, q) == pytest.approx(expected, **EXACT)


def test_entropy_and_l_entropy(con):
    assert one(con, "hist_entropy([1, 1, 1])") == pytest.approx(np.log(3), **EXACT)
    assert one(con, "hist_entropy([2, 1])") == pytest.approx(0.6365142, abs=1e-7)
    assert one(con, "hist_entropy([0, 2, 0, 1])") == pytest.approx(0.6365142, abs=1e-7)  # 0 ln 0 = 0
    assert one(con, "hist_entropy([5])") == 0.0
    # survey Table II(c): (2 Hepatitis, 1 HIV) and (1 Flu, 3 HIV)
    assert one(con, "l_entropy([2, 1])") == pytest.approx(1.8899, abs=1e-4)
    assert one(con, "l_entropy([1, 3])") == pytest.approx(1.7548, abs=1e-4)
    assert one(con, "l_entropy([4, 4, 4, 4])") == pytest.approx(4.0, **EXACT)
    v, off = core.flatten([[1, 1, 1], [2, 1], [1, 3]])
    assert core.entropy(v, off) == pytest.approx([np.log(3), 0.6365142, 0.5623351], abs=1e-7)
    assert core.l_entropy(v, off) == pytest.approx(np.exp(core.entropy(v, off)), **EXACT)


@pytest.mark.parametrize("counts, c, l, expected", [
    ([2, 1], 2, 2, False), ([2, 1], 2.0001, 2, True),
    ([3, 1], 3, 2, False), ([3, 1], 3.01, 2, True),
    ([1, 3], 3.01, 2, True),  # sorted descending first
    ([5, 0, 0], 100, 2, False),  # zeros dropped: m = 1 < l
    ([1, 1], 100, 3, False),  # m < l
    ([4, 2, 1, 1], 2.0001, 3, True), ([4, 2, 1, 1], 2, 3, False),  # r1 < c (r3 + r4)
    ([2, 1], 1.0001, 1, True),  # l = 1: r1 < c * (r1 + ... + rm)
])
def test_recursive_cl(con, counts, c, l, expected):
    assert one(con, f"recursive_cl({lit(counts)}, {c}, {l})") is expected
    v, off = core.flatten([counts])
    assert bool(core.recursive_cl(v, off, c, l)[0]) is expected


def test_recursive_cl_per_row_parameters(con):
    rows = con.sql("""
        SELECT recursive_cl(counts, c, l) FROM (VALUES ([2, 1], 2.0001, 2), ([2, 1], 2.0, 2), ([3, 2, 1], 1.0, 3),
                                                       ([3, 2, 1], 3.01, 3), ([3, 2, 1], 100.0, 4)) v(counts, c, l)
    """).fetchall()
    assert [r[0] for r in rows] == [True, False, False, True, False]


# --------------------------------------------------------------------------- LP oracle


def lp_emd(p, q, dist) -> float:
    """Transportation problem: min sum d_ij f_ij, row sums p, column sums q, f >= 0 (Li thesis §2.3.3)."""
    p = np.asarray(p, float) / np.sum(p)
    q = np.asarray(q, float) / np.sum(q)
    m = p.size
    a_eq = np.zeros((2 * m, m * m))
    for i in range(m):
        a_eq[i, i * m:(i + 1) * m] = 1  # sum_j f_ij = p_i
        a_eq[m + i, i::m] = 1  # sum_i f_ij = q_i
    res = linprog(np.asarray(dist, float).ravel(), A_eq=a_eq, b_eq=np.concatenate([p, q]), bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return float(res.fun)


def random_paths(rng, m: int, height: int) -> list[list[str]]:
    """A random balanced hierarchy over m leaves; labels are reused across levels on purpose
    (node identity is (level, label))."""
    current = np.arange(m)
    chains = [[str(i)] for i in range(m)]
    for _ in range(1, height):
        k = int(rng.integers(1, current.max() + 2))
        mapping = rng.integers(0, k, size=current.max() + 1)
        _, current = np.unique(mapping[current], return_inverse=True)
        for chain, node in zip(chains, current):
            chain.append(str(node))
    for chain in chains:
        if height:
            chain.append("0")
    return chains


def hierarchical_distance(paths) -> np.ndarray:
    height = len(paths[0]) - 1
    m = len(paths)
    d = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            lca = next(level for level in range(height + 1) if paths[i][level] == paths[j][level])
            d[i, j] = lca / height if height else 0.0
    return d


def random_histogram(rng, m: int) -> np.ndarray:
    if rng.random() < 0.5:
        h = rng.integers(0, 5, size=m).astype(float)
    else:
        h = rng.random(m) * (rng.random(m) < 0.8)
    if h.sum() == 0:
        h[rng.integers(m)] = 1.0
    return h


def random_case(seed: int):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 9))
    height = int(rng.integers(1, 4))
    return random_histogram(rng, m), random_histogram(rng, m), random_paths(rng, m, height)


SEEDS = range(150)


@pytest.mark.parametrize("seed", SEEDS)
def test_emds_match_lp_oracle(seed):
    p, q, paths = random_case(seed)
    m = p.size
    idx = np.arange(m)
    equal = (idx[:, None] != idx[None, :]).astype(float)
    ordered = np.abs(idx[:, None] - idx[None, :]) / max(m - 1, 1)
    hier = hierarchical_distance(paths)
    assert core1(core.emd_equal, p, q) == pytest.approx(lp_emd(p, q, equal), abs=1e-7)
    assert core1(core.emd_ordered, p, q) == pytest.approx(lp_emd(p, q, ordered), abs=1e-7)
    expected = lp_emd(p, q, hier)
    h = core.Hierarchy(paths)
    np.testing.assert_allclose(h.ground_distance(), hier, atol=1e-15)
    for method in ("matrix", "reduceat"):
        assert core1(core.emd_hierarchical, p, q, h, method=method) == pytest.approx(expected, abs=1e-7)
    offs = np.arange(m + 1) * len(paths[0])
    assert core1(core.emd_hierarchical_per_row, p, q, offs, [x for c in paths for x in c]) == \
        pytest.approx(expected, abs=1e-7)


def test_emds_match_lp_oracle_in_one_sql_batch(con):
    """All oracle cases in one vector: per-row hierarchies (the general path), ragged lengths."""
    cases = [random_case(s) for s in SEEDS]
    tbl = pa.table({
        "p": [c[0].tolist() for c in cases],
        "q": [c[1].tolist() for c in cases],
        "paths": [c[2] for c in cases],
    })
    con.register("cases", tbl)
    try:
        got = con.sql("SELECT emd_equal(p, q), emd_ordered(p, q), emd_hierarchical(p, q, paths) FROM cases").fetchall()
    finally:
        con.unregister("cases")
    for (p, q, paths), (eq, od, hi) in zip(cases, got):
        m = p.size
        idx = np.arange(m)
        assert eq == pytest.approx(lp_emd(p, q, (idx[:, None] != idx[None, :]).astype(float)), abs=1e-7)
        assert od == pytest.approx(lp_emd(p, q, np.abs(idx[:, None] - idx[None, :]) / max(m - 1, 1)), abs=1e-7)
        assert hi == pytest.approx(lp_emd(p, q, hierarchical_distance(paths)), abs=1e-7)


@pytest.mark.parametrize("seed", range(30))
def test_height_one_hierarchy_is_equal_distance(seed):
    rng = np.random.default_rng(1000 + seed)
    m = int(rng.integers(1, 9))
    p, q = random_histogram(rng, m), random_histogram(rng, m)
    paths = [[f"v{i}", "*"] for i in range(m)]
    assert core1(core.emd_hierarchical, p, q, paths) == pytest.approx(core1(core.emd_equal, p, q), **EXACT)


@pytest.mark.parametrize("seed", range(30))
def test_two_values_all_emds_agree(con, seed):
    rng = np.random.default_rng(2000 + seed)
    p, q = random_histogram(rng, 2), random_histogram(rng, 2)
    expected = abs(p[0] / p.sum() - q[0] / q.sum())
    paths = [["a", "*"], ["b", "*"]]
    got = con.sql(f"SELECT emd_equal({lit(p)}, {lit(q)}), emd_ordered({lit(p)}, {lit(q)}), "
                  f"emd_hierarchical({lit(p)}, {lit(q)}, {lit(paths)})").fetchall()[0]
    assert got == pytest.approx((expected,) * 3, **EXACT)


def test_single_value_domain_is_zero(con):
    assert one(con, "emd_ordered([3], [7])") == 0.0
    assert one(con, "emd_equal([3], [7])") == 0.0
    assert one(con, "emd_hierarchical([3], [7], [['x', '*']])") == 0.0
    assert one(con, "emd_hierarchical([3, 1], [1, 3], [['x'], ['x']])") == 0.0  # H = 0


# --------------------------------------------------------------------------- vectorized batches in SQL

N = 10_000


@pytest.fixture
def batch(con):
    """10,000 rows of ragged count lists (lengths 1..7); every 997th row has a NULL p."""
    con.execute(f"""
        CREATE TABLE b AS
        SELECT i,
               CASE WHEN i % 997 = 5 THEN NULL
                    ELSE list_transform(range(1 + i % 7), lambda x: ((x * 7 + i) % 5 + (x = 0)::INT)::DOUBLE) END AS p,
               list_transform(range(1 + i % 7), lambda x: ((x * 3 + i * 11) % 4 + 1)::DOUBLE) AS q,
               list_transform(range(6), lambda x: ((x * 5 + i) % 4)::BIGINT) AS p6,
               list_transform(range(6), lambda x: ((x + 2 * i) % 3 + 1)::BIGINT) AS q6
        FROM range({N}) t(i)
    """)
    return con


def fetch_lists(con, cols: str):
    rows = con.sql(f"SELECT {cols} FROM b ORDER BY i").fetchall()
    return [list(col) for col in zip(*rows)]


def test_vectorized_two_list_emds_and_null_rows(batch):
    con = batch
    res = con.sql("SELECT i, p, q, emd_equal(p, q), emd_ordered(p, q) FROM b ORDER BY i").fetchall()
    assert len(res) == N
    nulls = [r for r in res if r[1] is None]
    assert len(nulls) == len(range(5, N, 997))
    assert all(r[3] is None and r[4] is None for r in nulls)
    ok = [r for r in res if r[1] is not None]
    pv, off = core.flatten([r[1] for r in ok])
    qv, _ = core.flatten([r[2] for r in ok])
    np.testing.assert_allclose([r[3] for r in ok], core.emd_equal(pv, qv, off), rtol=0, atol=1e-12)
    np.testing.assert_allclose([r[4] for r in ok], core.emd_ordered(pv, qv, off), rtol=0, atol=1e-12)
    for r in ok[:50:7]:  # spot checks against the LP
        m = len(r[1])
        idx = np.arange(m)
        assert r[4] == pytest.approx(lp_emd(r[1], r[2], np.abs(idx[:, None] - idx[None, :]) / max(m - 1, 1)),
                                     abs=1e-7)


def test_vectorized_entropy_and_recursive_cl(batch):
    con = batch
    res = con.sql("SELECT p, hist_entropy(p), l_entropy(p), recursive_cl(p, 1.5 + (i % 3), (1 + i % 3)::INT), i "
                  "FROM b ORDER BY i").fetchall()
    assert all(r[1] is None and r[2] is None and r[3] is None for r in res if r[0] is None)
    ok = [r for r in res if r[0] is not None]
    v, off = core.flatten([r[0] for r in ok])
    i = np.array([r[4] for r in ok])
    np.testing.assert_allclose([r[1] for r in ok], core.entropy(v, off), rtol=0, atol=1e-12)
    np.testing.assert_allclose([r[2] for r in ok], core.l_entropy(v, off), rtol=0, atol=1e-12)
    expected = core.recursive_cl(v, off, 1.5 + i % 3, 1 + i % 3)
    assert [r[3] for r in ok] == expected.tolist()
    assert 0 < expected.sum() < expected.size  # both outcomes occur
    for r in ok[:40]:  # direct definition, row by row
        counts = sorted((x for x in r[0] if x > 0), reverse=True)
        c, l = 1.5 + r[4] % 3, 1 + r[4] % 3
        assert r[3] is (len(counts) >= l and counts[0] < c * sum(counts[l - 1:]))


def test_vectorized_hierarchical_constant_paths_and_bigint_lists(batch):
    con = batch
    paths = disease_paths()
    res = con.sql(f"SELECT p6, q6, emd_hierarchical(p6, q6, {lit(paths)}), "
                  f"emd_hierarchical(p6::DOUBLE[], q6::DOUBLE[], {lit(paths)}) FROM b ORDER BY i").fetchall()
    assert con.sql("SELECT typeof(p6) FROM b LIMIT 1").fetchall()[0][0] == "BIGINT[]"
    got = np.array([r[2] if r[2] is not None else np.nan for r in res])
    pv, off = core.flatten([r[0] for r in res])
    qv, _ = core.flatten([r[1] for r in res])
    expected = core.emd_hierarchical(pv, qv, off, core.Hierarchy(paths))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)
    assert [r[2] for r in res] == [r[3] for r in res]
    assert np.isnan(expected).sum() == sum(1 for r in res if sum(r[0]) == 0)  # all-zero p -> NULL
    d = hierarchical_distance(paths)
    for r in res[:30:3]:
        if r[2] is not None:
            assert r[2] == pytest.approx(lp_emd(r[0], r[1], d), abs=1e-7)


def test_vectorized_hierarchical_per_row_paths(batch):
    con = batch
    paths = disease_paths()
    other = [["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"], ["d", "y", "*"], ["e", "y", "*"], ["f", "z", "*"]]
    res = con.sql(f"SELECT i, p6, q6, emd_hierarchical(p6, q6, CASE WHEN i % 3 = 0 THEN {lit(other)} "
                  f"ELSE {lit(paths)} END) FROM b ORDER BY i").fetchall()
    for which, chains in ((0, other), (1, paths)):
        rows = [r for r in res if (r[0] % 3 != 0) == which]
        pv, off = core.flatten([r[1] for r in rows])
        qv, _ = core.flatten([r[2] for r in rows])
        expected = core.emd_hierarchical(pv, qv, off, chains)
        got = np.array([r[3] if r[3] is not None else np.nan for r in rows])
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)


def test_udfs_receive_whole_vectors(batch):
    con = batch
    sizes = []

    def counted(p, q):
        sizes.append(len(p))
        return udfs.UDFS["emd_equal"](p, q)

    con.create_function("emd_equal_counted", counted, ["DOUBLE[]", "DOUBLE[]"], "DOUBLE", type="arrow",
                        null_handling="special")
    try:
        a = con.sql("SELECT sum(emd_equal_counted(p, q)) FROM b").fetchall()[0][0]
        b = con.sql("SELECT sum(emd_equal(p, q)) FROM b").fetchall()[0][0]
    finally:
        con.remove_function("emd_equal_counted")
    assert a == pytest.approx(b, **EXACT)
    assert sum(sizes) == N and len(sizes) <= N // 1024  # a few calls of up to 2048 rows, not one per row


# --------------------------------------------------------------------------- NULLs, integers, errors


def test_nulls_and_empty_histograms(con):
    assert one(con, "emd_equal(NULL, [1.0])") is None
    assert one(con, "emd_ordered([1.0], NULL)") is None
    assert one(con, "emd_hierarchical([1.0], [1.0], NULL)") is None
    assert one(con, "recursive_cl([1.0], NULL, 2)") is None
    assert one(con, "recursive_cl([1.0], 2, NULL)") is None
    assert one(con, "hist_entropy(NULL)") is None
    assert one(con, "emd_equal([0, 0], [1, 1])") is None  # no distribution
    assert one(con, "emd_equal([], [])") is None
    assert one(con, "hist_entropy([0, 0])") is None
    assert one(con, "l_entropy([])") is None
    assert one(con, "recursive_cl([], 2, 1)") is False
    assert one(con, "emd_equal([1, NULL, 1], [1, 1, 1])") == pytest.approx(1 / 3, **EXACT)  # NULL element = 0
    assert con.sql("SELECT emd_equal(p, p) FROM (SELECT [1.0] AS p) WHERE false").fetchall() == []


def test_integer_and_array_inputs_cast_implicitly(con):
    con.execute("CREATE TABLE ints AS SELECT [3, 0, 0]::BIGINT[] AS p, [5, 1, 3]::BIGINT[] AS q, "
                "[1, 0, 2]::INTEGER[3] AS a")
    assert con.sql("SELECT emd_equal(p, q), emd_equal(p::DOUBLE[], q::DOUBLE[]), emd_equal(a, q) "
                   "FROM ints").fetchall()[0] == pytest.approx((4 / 9, 4 / 9, 1 / 3), **EXACT)
    assert con.sql("SELECT hist_entropy(q), recursive_cl(q, 2, 2) FROM ints").fetchall()[0][1] is True


def test_errors_name_the_function(con):
    with pytest.raises(duckdb.Error, match=r"emd_equal: p and q must have the same length \(got 2 and 3\)"):
        one(con, "emd_equal([1, 2], [1, 2, 3])")
    with pytest.raises(duckdb.Error, match=r"emd_ordered: p and q must have the same length \(got 3 and 1\)"):
        one(con, "emd_ordered([1, 2, 3], [1])")
    with pytest.raises(duckdb.Error, match=r"emd_hierarchical: p, q and paths must have the same length"):
        one(con, "emd_hierarchical([1, 2], [1, 2], [['a', '*']])")
    with pytest.raises(duckdb.Error, match=r"emd_hierarchical: all paths must have the same length"):
        one(con, "emd_hierarchical([1, 2], [1, 2], [['a', 'r'], ['b']])")
    with pytest.raises(duckdb.Error, match=r"emd_hierarchical: the paths must end in a single root"):
        one(con, "emd_hierarchical([1, 2], [1, 2], [['a', 'r'], ['b', 's']])")
    with pytest.raises(duckdb.Error, match=r"emd_hierarchical: inconsistent hierarchy: 'u' at level 1"):
        one(con, "emd_hierarchical([1, 2, 3], [1, 2, 3], [['a', 'u', 'r'], ['b', 'u', 'r'], ['c', 'u', 's']])")
    with pytest.raises(duckdb.Error, match=r"emd_equal: p holds a negative mass"):
        one(con, "emd_equal([1, -2], [1, 2])")
    with pytest.raises(duckdb.Error, match=r"recursive_cl: l must be >= 1"):
        one(con, "recursive_cl([1, 2], 2, 0)")
    with pytest.raises(ValueError, match=r"all paths must have the same length \(got 2 and 3\)"):
        core.Hierarchy([["a", "*"], ["b", "x", "*"]])


def test_register_is_idempotent_and_unregister_removes(con):
    assert udfs.UDF_NAMES == ("emd_equal", "emd_ordered", "emd_hierarchical", "hist_entropy", "l_entropy",
                              "recursive_cl", "matching_pairing")
    udfs.register(con)  # again: replaced, not an error
    names = {r[0] for r in con.sql("SELECT function_name FROM duckdb_functions() WHERE function_type = 'scalar'")
             .fetchall()}
    assert set(udfs.UDF_NAMES) <= names
    assert one(con, "emd_equal([1, 0], [0, 1])") == 1.0
    udfs.unregister(con)
    udfs.unregister(con)  # nothing left: no error
    with pytest.raises(duckdb.Error):
        one(con, "emd_equal([1, 0], [0, 1])")
    udfs.register(con)  # the fixture unregisters at the end
    assert one(con, "l_entropy([1, 1])") == pytest.approx(2.0, **EXACT)


def test_core_needs_no_duckdb_and_handles_empty_batches():
    v, off = core.flatten([])
    assert off.tolist() == [0] and v.size == 0
    for fn in (core.emd_equal, core.emd_ordered):
        assert fn(v, v, off).size == 0
    assert core.emd_hierarchical(v, v, off, [["a", "*"]]).size == 0
    assert core.entropy(v, off).size == 0
    assert core.recursive_cl(v, off, 2.0, 2).size == 0
    # ragged and uniform lengths take different cumulative-sum paths; both agree with rows one by one
    rows_p = [[1, 2, 3], [4], [0, 1], [2, 2, 2, 2]]
    rows_q = [[3, 2, 1], [1], [1, 0], [1, 2, 3, 4]]
    pv, off = core.flatten(rows_p)
    qv, _ = core.flatten(rows_q)
    batch = core.emd_ordered(pv, qv, off)
    single = [core1(core.emd_ordered, p, q) for p, q in zip(rows_p, rows_q)]
    np.testing.assert_allclose(batch, single, rtol=0, atol=1e-15)
    assert batch == pytest.approx([1 / 3, 0.0, 1.0, 1 / 6], **EXACT)

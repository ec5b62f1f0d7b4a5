"""Vectorized DuckDB scalar UDFs for t-closeness and l-diversity, computed with numpy.

``register(con)`` adds, on a DuckDB connection, Arrow-vectorized scalar functions (each call
receives a whole vector of lists and computes on the flattened values and offsets, see
:mod:`.core`):

====================================================  =========================================
``emd_equal(p DOUBLE[], q DOUBLE[]) -> DOUBLE``          EMD, equal ground distance
``emd_ordered(p DOUBLE[], q DOUBLE[]) -> DOUBLE``        EMD, ordered distance |i-j|/(m-1)
``emd_hierarchical(p, q, paths VARCHAR[][]) -> DOUBLE``  EMD, hierarchical distance (LCA height/H)
``hist_entropy(counts DOUBLE[]) -> DOUBLE``              natural-log entropy of a histogram
``l_entropy(counts DOUBLE[]) -> DOUBLE``                 exp(entropy): effective number of values
``recursive_cl(counts DOUBLE[], c DOUBLE, l INTEGER)``   recursive (c,l)-diversity (BOOLEAN)
====================================================  =========================================

The entropy function is named ``hist_entropy`` because DuckDB already has a built-in aggregate
``entropy(x)`` and will not let a scalar function take that name.

Histograms may be raw counts; they are normalized per row.  Integer lists (``INTEGER[]``,
``BIGINT[]``, fixed-size ``DOUBLE[k]`` arrays) are cast to ``DOUBLE[]`` implicitly by DuckDB,
so no overloads are needed.  A NULL argument gives NULL (DuckDB's default NULL handling); a
histogram summing to 0 (or empty) gives NULL; NULL elements inside a list count as 0 (as
``list_sum`` skips them).  p and q of different lengths, negative masses, and malformed
hierarchies raise an error naming the function.

``unregister(con)`` removes them again: a process must do so before it exits, or the DuckDB
Python bindings (nanobind) report leaked references.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import core
from .core import (Hierarchy, emd_equal, emd_hierarchical, emd_hierarchical_per_row, emd_ordered, entropy, flatten,
                   l_entropy, recursive_cl)

__all__ = [
    "Hierarchy",
    "UDF_NAMES",
    "core",
    "emd_equal",
    "emd_hierarchical",
    "emd_hierarchical_per_row",
    "emd_ordered",
    "entropy",
    "flatten",
    "l_entropy",
    "recursive_cl",
    "register",
    "unregister",
]


# --------------------------------------------------------------------------- Arrow plumbing


def _array(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if isinstance(col, pa.Array):
        return col
    return pa.array(col)


def _list_parts(arr: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """(child values of the listed range, int64 offsets starting at 0) of a list array."""
    if pa.types.is_fixed_size_list(arr.type) or pa.types.is_list_view(arr.type) \
            or pa.types.is_large_list_view(arr.type):
        arr = arr.cast(pa.list_(arr.type.value_type))
    off = np.asarray(arr.offsets, dtype=np.int64)
    start = int(off[0]) if off.size else 0
    values = arr.values.slice(start, int(off[-1]) - start if off.size else 0)
    return values, off - start


def _doubles(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    values, off = _list_parts(arr)
    if values.null_count:
        values = pc.fill_null(values, 0)
    v = values.to_numpy(zero_copy_only=False)
    return np.asarray(v, dtype=np.float64), off


def _same_lengths(name: str, what: str, *offsets: np.ndarray) -> None:
    lengths = [np.diff(o) for o in offsets]
    differ = np.zeros(lengths[0].size, dtype=bool)
    for other in lengths[1:]:
        differ |= other != lengths[0]
    if differ.any():
        i = int(np.flatnonzero(differ)[0])
        got = [str(int(ln[i])) for ln in lengths]
        got_text = " and ".join(got) if len(got) == 2 else ", ".join(got[:-1]) + " and " + got[-1]
        raise ValueError(f"{name}: {what} must have the same length (got {got_text})")


def _vectorized(compute: Callable[..., np.ndarray], result: pa.DataType) -> Callable[..., pa.Array]:
    """Wrap ``compute(*arrow arrays) -> numpy`` as an Arrow UDF: rows with any NULL argument
    are taken out before computing and come back NULL, and so do NaN results."""

    def udf(*cols: Any) -> pa.Array:
        arrays = [_array(c) for c in cols]
        n = len(arrays[0])
        valid = np.ones(n, dtype=bool)
        for a in arrays:
            if a.null_count:
                valid &= ~a.is_null().to_numpy(zero_copy_only=False)
        if not valid.all():
            keep = pa.array(valid)
            arrays = [a.filter(keep) for a in arrays]
        out = compute(*arrays)
        full = np.zeros(n, dtype=out.dtype)
        full[valid] = out
        missing = ~valid
        if full.dtype.kind == "f":
            missing |= np.isnan(full)
        return pa.array(full, type=result, mask=missing if missing.any() else None)

    # DuckDB checks the parameter count of the callable, so give it a fixed arity
    arity = compute.__code__.co_argcount
    fixed = {1: lambda a: udf(a), 2: lambda a, b: udf(a, b), 3: lambda a, b, c: udf(a, b, c)}[arity]
    fixed.__name__ = compute.__name__
    fixed.__doc__ = compute.__doc__
    return fixed


# --------------------------------------------------------------------------- the UDFs


def _emd_two(name: str, fn: Callable[..., np.ndarray]) -> Callable[[pa.Array, pa.Array], np.ndarray]:
    def compute(p: pa.Array, q: pa.Array) -> np.ndarray:
        pv, po = _doubles(p)
        qv, qo = _doubles(q)
        _same_lengths(name, "p and q", po, qo)
        return fn(pv, qv, po)

    compute.__name__ = name
    compute.__doc__ = fn.__doc__
    return compute


@lru_cache(maxsize=32)
def _hierarchy(paths: tuple[tuple[str, ...], ...]) -> Hierarchy:
    return Hierarchy(paths)


def _emd_hierarchical(p: pa.Array, q: pa.Array, paths: pa.Array) -> np.ndarray:
    name = "emd_hierarchical"
    pv, po = _doubles(p)
    qv, qo = _doubles(q)
    chains, leaf_off = _list_parts(paths)  # one path per leaf
    if chains.null_count:
        raise ValueError(f"{name}: paths holds a NULL path")
    labels, path_off = _list_parts(chains)
    if labels.null_count:
        raise ValueError(f"{name}: a path holds a NULL label")
    _same_lengths(name, "p, q and paths", po, qo, leaf_off)
    n = len(p)
    if n == 0:
        return np.zeros(0)
    if not (pa.types.is_string(labels.type) or pa.types.is_large_string(labels.type)):
        labels = labels.cast(pa.string())
    encoded = pc.dictionary_encode(labels)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    # the common case: one constant hierarchy for every row -> built once, incidence-matrix EMD
    m0 = int(leaf_off[1])
    k0 = int(path_off[m0])
    plen = np.diff(path_off)
    if m0 > 0 and (np.diff(leaf_off) == m0).all() and codes.size == n * k0 \
            and (plen.reshape(n, m0) == plen[:m0]).all() and (codes.reshape(n, k0) == codes[:k0]).all():
        key = tuple(tuple(c) for c in paths.slice(0, 1).to_pylist()[0])
        return emd_hierarchical(pv, qv, po, _hierarchy(key))
    return emd_hierarchical_per_row(pv, qv, po, path_off, codes, encoded.dictionary.to_pylist())


def _hist_entropy(counts: pa.Array) -> np.ndarray:
    return entropy(*_doubles(counts))


def _l_entropy(counts: pa.Array) -> np.ndarray:
    return l_entropy(*_doubles(counts))


def _recursive_cl(counts: pa.Array, c: pa.Array, l: pa.Array) -> np.ndarray:
    v, off = _doubles(counts)
    return recursive_cl(v, off, c.to_numpy(zero_copy_only=False).astype(np.float64),
                        l.to_numpy(zero_copy_only=False).astype(np.int64))


def _matching_pairing(masks: Any, mask_counts: Any, codes: Any, code_counts: Any) -> pa.Array:
    """Per row (a group): :func:`core.matching_pairing` over its lists; NULL when infeasible."""
    cols = [_array(c) for c in (masks, mask_counts, codes, code_counts)]
    out = []
    for m, mc, c, cc in zip(*(col.to_pylist() for col in cols)):
        if m is None or mc is None or c is None or cc is None or len(m) != len(mc) or len(c) != len(cc):
            out.append(None)
        else:
            out.append(core.matching_pairing(m, mc, c, cc))
    return pa.array(out, type=pa.list_(pa.int64()))


# name, callable, parameter types, return type: UDFs whose result is not one number per row
_LIST_SPECS: tuple[tuple[str, Callable[..., pa.Array], list[str], str], ...] = (
    ("matching_pairing", lambda a, b, c, d: _matching_pairing(a, b, c, d), ["BIGINT[]", "BIGINT[]", "INTEGER[]", "BIGINT[]"],
     "BIGINT[]"),
)


_hist_entropy.__doc__ = entropy.__doc__
_l_entropy.__doc__ = l_entropy.__doc__
_emd_hierarchical.__doc__ = emd_hierarchical.__doc__
_recursive_cl.__doc__ = recursive_cl.__doc__

# name, compute, parameter types, return type
_SPECS: tuple[tuple[str, Callable[..., np.ndarray], list[str], str], ...] = (
    ("emd_equal", _emd_two("emd_equal", emd_equal), ["DOUBLE[]", "DOUBLE[]"], "DOUBLE"),
    ("emd_ordered", _emd_two("emd_ordered", emd_ordered), ["DOUBLE[]", "DOUBLE[]"], "DOUBLE"),
    ("emd_hierarchical", _emd_hierarchical, ["DOUBLE[]", "DOUBLE[]", "VARCHAR[][]"], "DOUBLE"),
    ("hist_entropy", _hist_entropy, ["DOUBLE[]"], "DOUBLE"),
    ("l_entropy", _l_entropy, ["DOUBLE[]"], "DOUBLE"),
    ("recursive_cl", _recursive_cl, ["DOUBLE[]", "DOUBLE", "INTEGER"], "BOOLEAN"),
)
_ARROW_TYPES = {"DOUBLE": pa.float64(), "BOOLEAN": pa.bool_()}

UDF_NAMES: tuple[str, ...] = tuple(s[0] for s in _SPECS) + tuple(s[0] for s in _LIST_SPECS)

#: the Arrow UDF callables by SQL name (what ``register`` hands to DuckDB)
UDFS: dict[str, Callable[..., pa.Array]] = {
    name: _vectorized(compute, _ARROW_TYPES[ret]) for name, compute, _, ret in _SPECS
}
UDFS.update({name: fn for name, fn, _, _ in _LIST_SPECS})


def register(con: Any) -> Any:
    """Register every UDF of :data:`UDF_NAMES` on the DuckDB connection ``con``; returns ``con``.

    Idempotent: a function already registered under one of these names is replaced.
    """
    import duckdb

    for name, _, params, ret in _SPECS + _LIST_SPECS:
        def create() -> None:
            con.create_function(name, UDFS[name], params, ret, type="arrow", null_handling="special")

        try:
            create()
        except duckdb.NotImplementedException as e:  # "already created ... please remove it first"
            if "already" not in str(e):
                raise
            con.remove_function(name)
            create()
    return con


def unregister(con: Any) -> None:
    """Remove every UDF of :data:`UDF_NAMES` from ``con`` (those not registered are skipped)."""
    import duckdb

    for name in UDF_NAMES:
        try:
            con.remove_function(name)
        except duckdb.InvalidInputException as e:  # "No function by the name of ... was found"
            if "No function" not in str(e):
                raise

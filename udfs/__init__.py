"""Vectorized DuckDB UDFs (placeholder module; filled in by the UDF work)."""

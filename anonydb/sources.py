"""Where the data comes from: a table or view already in the database, or a CSV/Parquet file
opened as a temporary view (the file and any source table are only ever read)."""

from __future__ import annotations

import csv
from pathlib import Path

from .engine import Engine
from .errors import InputError
from .sqlgen import literal, temp_name

CSV_SUFFIXES = {".csv", ".tsv", ".txt", ".dat"}
PARQUET_SUFFIXES = {".parquet", ".pq"}


def sniff_delimiter(path: Path) -> str:
    """The CSV delimiter among , ; tab | (the one csv.Sniffer finds on the first 64 KiB)."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        sample = f.read(65536)
    if not sample.strip():
        raise InputError(f"file {str(path)!r} is empty")
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        header = sample.splitlines()[0]
        counts = {d: header.count(d) for d in ",;\t|"}
        return max(counts, key=counts.get) if max(counts.values()) else ","


def open_source(engine: Engine, source: str | Path, scratch=None) -> str:
    """The name of a relation holding ``source``: the table itself, or the file read once into a
    temporary table (dropped with ``scratch``; a view would re-read the file on every scan)."""
    name = str(source)
    if not isinstance(source, Path) and engine.exists(name):
        return name
    path = Path(source)
    if not path.exists():
        raise InputError(f"no table or view named {name!r} in the database and no file at that path")
    if path.is_dir():
        raise InputError(f"{name!r} is a directory, not a table or a data file")
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        select = f"SELECT * FROM read_parquet({literal(str(path))})"
    else:
        delim = sniff_delimiter(path)
        select = f"SELECT * FROM read_csv({literal(str(path))}, delim = {literal(delim)}, header = true)"
    if scratch is not None:
        return scratch.table(select)
    name = temp_name("source")
    engine.create_table_as(name, select, temp=True)
    return name

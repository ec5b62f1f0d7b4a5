"""Where the data comes from: a table or view already in the database, or a CSV/Parquet file
read into a temporary table (the file and any source table are only ever read).

A CSV's column types come from the whole file (``sample_size = -1``): a value that does not fit a
column's type makes it text wherever it sits, instead of only when DuckDB's sample reaches it; a
column of numbers with a few such values is named in a warning (:func:`warn_mostly_numeric`).
Any failure to read a file is one :class:`InputError` line naming the file, what is wrong and
(when DuckDB says) the line, never DuckDB's multi-line parser dump.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
import functools
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from . import events
from .engines.base import Engine
from .errors import SURFACE, InputError, SQLError
from .sqlgen import ident, literal, temp_name

CSV_SUFFIXES = {".csv", ".tsv", ".txt", ".dat"}
PARQUET_SUFFIXES = {".parquet", ".pq"}


def sniff_delimiter(path: Path) -> str:
    """The CSV delimiter among , ; tab | (the one csv.Sniffer finds on the first 64 KiB)."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            sample = f.read(65536)
    except OSError as e:
        raise InputError(f"cannot read file {str(path)!r}: {e.strerror or e}") from e
    if not sample.strip():
        raise InputError(f"file {str(path)!r} is empty")
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        header = sample.splitlines()[0]
        counts = {d: header.count(d) for d in ",;\t|"}
        return max(counts, key=counts.get) if max(counts.values()) else ","


#: what a source can be, as an error names it
ACCEPTED = ("a table or view name, a CSV or Parquet path, a pandas or Polars DataFrame (or LazyFrame), or an "
            "Arrow table")
#: (root module, class) of the data frames a source can be
FRAMES = {("pandas", "DataFrame"), ("polars", "DataFrame"), ("polars", "LazyFrame"), ("pyarrow", "Table")}


def frame_kind(obj: Any) -> str | None:
    """"pandas DataFrame", "Polars DataFrame", "Arrow Table", ... for a data frame; None otherwise."""
    root = type(obj).__module__.split(".")[0]
    if (root, type(obj).__name__) not in FRAMES:
        return None
    return f"{'Arrow' if root == 'pyarrow' else root.capitalize() if root == 'polars' else root} {type(obj).__name__}"


def check_source(source: Any) -> None:
    """An InputError naming the accepted types unless ``source`` is one of them."""
    if not isinstance(source, (str, Path)) and frame_kind(source) is None:
        raise InputError(f"a source is {ACCEPTED}; got a {type(source).__module__}.{type(source).__name__}")


@contextmanager
def frame_source(engine: Engine, source: Any) -> Iterator[tuple[Any, str | None]]:
    """(what anonydb reads, how messages and the ledger name it): a data frame becomes a relation
    of ``engine`` for the block (:meth:`Engine.load_frame`: DuckDB reads it in place; PostgreSQL
    and Spark load a temporary table), dropped when it ends; a name or path passes as it is."""
    kind = frame_kind(source)
    if kind is None:
        check_source(source)
        yield source, None
        return
    name = temp_name("frame")
    engine.load_frame(name, source)
    try:
        yield name, f"{'an' if kind[0] in 'AEIOU' else 'a'} {kind}"
    finally:
        engine.drop_frame(name)


def accepts_frames(label: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Let a public function whose first argument is a source take a data frame: the frame becomes
    a relation of the call's engine (:func:`frame_source`) for the call, and the keyword ``label``
    (a source's name in messages and the ledger) says "a pandas DataFrame". Anything that is not a
    source is one InputError naming the accepted types."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(source: Any, *args: Any, **kwargs: Any) -> Any:
            if frame_kind(source) is None:
                check_source(source)
                return fn(source, *args, **kwargs)
            from .engines import connect

            eng = kwargs["engine"] = connect(kwargs.get("engine"))
            with frame_source(eng, source) as (name, said):
                if label is not None and kwargs.get(label) is None:
                    kwargs[label] = said
                return fn(name, *args, **kwargs)
        return call
    return wrap


def open_source(engine: Engine, source: str | Path, scratch=None, numeric: Iterable[str] = ()) -> str:
    """The name of a relation holding ``source``: the table itself, or the file read once into a
    temporary table (dropped with ``scratch``; a view would re-read the file on every scan).

    A CSV is typed from all its rows (``sample_size = -1``), so a column's type does not depend
    on where in the file a value sits. A file that cannot be read raises a one-line InputError.
    ``numeric``: the columns the caller declared numeric (no warning: their check refuses text)."""
    name = str(source)
    if not isinstance(source, Path) and engine.exists(name):
        return name
    path = Path(source)
    if not path.exists():
        raise InputError(f"no table or view named {name!r} in the database and no file at that path")
    suffix = path.suffix.lower()
    if path.is_dir() and suffix not in PARQUET_SUFFIXES:  # a .parquet folder is a dataset of part files (Spark's)
        raise InputError(f"{name!r} is a directory, not a table or a data file")
    delim = None if suffix in PARQUET_SUFFIXES else sniff_delimiter(path)
    events.phase("reading")
    try:
        select = engine.file_select(path, "parquet" if delim is None else "csv", delim)
        if scratch is not None:
            name = scratch.table(select)
        else:
            name = temp_name("source")
            engine.create_table_as(name, select, temp=True)
    except SQLError as e:
        raise InputError(_read_error(engine, path, delim, e)) from e
    if delim is not None:
        warn_mostly_numeric(engine, name, path, delim, skip=numeric)
    return name


def _declare_numeric(column: str) -> str:
    """How the user declares ``column`` numeric where they are (the CLI, a spec, Python)."""
    surface = SURFACE.get()
    if surface == "cli":
        return f"--numeric {column}"
    if surface == "spec":
        return f"kind: numeric to attribute {column}"
    return f"kinds={{{column!r}: 'numeric'}}"


def warn_mostly_numeric(engine: Engine, relation: str, path: Path, delim: str, skip: Iterable[str] = ()) -> None:
    """Warn of every text column of a CSV whose values are mostly numbers but not all (ages with an
    'unknown' from row 29,001): it was typed as text, so it generalizes as categories. The warning
    names the column, how many values are not numbers and the first one's row (1 = the first row
    after the header); ``numeric`` makes those values an error. A column is mostly numeric when more
    than half of its non-empty values cast to a number."""
    from .engines.duckdb import DuckDBEngine

    own = None
    if engine.dialect != "duckdb":  # the same typing, read by DuckDB: its rowid is the file's order
        own = DuckDBEngine()
        relation = temp_name("source")
        own.create_table_as(relation, own.file_select(path, "csv", delim), temp=True)
    eng = own or engine
    try:
        text = [c for c, t in eng.columns(relation)
                if str(t).upper().startswith(("VARCHAR", "STRING", "TEXT")) and c not in set(skip)]
        if not text:
            return
        counts = eng.fetch_rows("SELECT " + ", ".join(
            f"count({ident(c)}), count(TRY_CAST({ident(c)} AS DOUBLE))" for c in text)
            + f" FROM {ident(relation)}")[1][0]
        for i, c in enumerate(text):
            values, numbers = int(counts[2 * i]), int(counts[2 * i + 1])
            if not 2 * numbers > values or numbers == values:
                continue
            row, value = eng.fetch_rows(f"SELECT rowid + 1, {ident(c)} FROM {ident(relation)} WHERE {ident(c)} IS "
                                        f"NOT NULL AND TRY_CAST({ident(c)} AS DOUBLE) IS NULL ORDER BY rowid "
                                        f"LIMIT 1")[1][0]
            events.warn(f"column {c!r} of {path.name} is read as text: {values - numbers:,} of its {values:,} "
                        f"values are not numbers, the first on row {int(row):,} ({str(value)[:40]!r}); to refuse "
                        f"them, give {_declare_numeric(c)}")
    finally:
        if own is not None:
            own.close()


# --- one line out of DuckDB's read errors ------------------------------------------------------
_LINE = re.compile(r"CSV Error on Line: (\d+)")
_ORIGINAL = re.compile(r"^Original Line: (.*)$", re.M)
_PREFIX = re.compile(r"^(?:[A-Z][A-Za-z]*\s)*Error:\s*")
_SNIFF = "not possible to automatically detect the CSV parsing dialect"
_REASONS = [  # (DuckDB's line, ours); the first that matches is the reason
    (re.compile(r"^Expected Number of Columns: (\d+) Found: (\d+)", re.M),
     lambda m: _fields(int(m[1]), int(m[2]))),
    (re.compile(r"^Value with unterminated quote", re.M), lambda m: "a quoted value is never closed"),
    (re.compile(r"Invalid unicode", re.M),
     lambda m: "not UTF-8 text (a binary, compressed or differently encoded file?)"),
    (re.compile(r"^Maximum line size of (\d+) bytes exceeded\. Actual Size:\s*(\d+)", re.M),
     lambda m: f"a line of {m[2]} bytes, longer than the {m[1]} bytes DuckDB reads"),
    (re.compile(r'^Error when converting column "(.*)"\. Could not convert string (.*)$', re.M),
     lambda m: _one_line(f"column {m[1]!r}: cannot convert {m[2]}")),
    (re.compile(r"state machine reached an invalid state", re.M),
     lambda m: "not parseable as CSV (a binary file, or quoting that does not follow RFC 4180?)"),
]


def _fields(expected: int, found: int) -> str:
    if found > expected:  # DuckDB stops counting at the first field too many
        return f"more fields than the header's {expected}"
    return f"{found} field{'' if found == 1 else 's'} where the header has {expected}"


def _duck_message(e: BaseException) -> str:
    """DuckDB's own message, from the SQLError (as the engine redacted it), without the exception's
    class name, anonydb's failing-SQL trailer or DuckDB's LINE 1 pointer."""
    msg = str(e).split("\n--- failing SQL ---", 1)[0]
    msg = re.sub(r"^\w+(?:Exception|Error): ", "", msg)
    return re.split(r"\n\s*LINE \d+:", msg, maxsplit=1)[0]


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _explain(msg: str) -> str | None:
    """'line N: what is wrong' from a DuckDB CSV error, or None when it names no known problem."""
    line = _LINE.search(msg)
    where = f"line {line[1]}: " if line else ""
    for pattern, says in _REASONS:
        m = pattern.search(msg)
        if m:
            reason = says(m)
            original = _ORIGINAL.search(msg)
            if original and pattern is _REASONS[0][0] and original[1].strip():
                reason += f" ({_one_line(original[1], 60)!r})"
            return where + reason
    if line:  # an unknown problem: DuckDB states it on the line before its 'Possible fixes'
        lines = msg.splitlines()
        end = next((i for i, ln in enumerate(lines) if ln.startswith("Possible ")), len(lines))
        said = next((ln for ln in reversed(lines[1:end]) if ln.strip() and not ln.startswith("Original Line:")), "")
        return where + (_one_line(said) if said else "DuckDB cannot parse it")
    return None


def _read_error(engine: Engine, path: Path, delim: str | None, e: BaseException) -> str:
    """One line saying why ``path`` could not be read."""
    msg = _duck_message(e)
    what = "Parquet file" if delim is None else "CSV file"
    head = f"cannot read {what} {str(path)!r}: "
    if delim is not None:
        if _SNIFF in msg:  # DuckDB's sniffer says no line: read the file strictly to find it
            found = _diagnose_csv(engine, path, delim)
            return head + (found or "DuckDB cannot detect its CSV dialect (rows with differing field counts "
                                    f"or inconsistent quoting under delimiter {delim!r})")
        found = _explain(msg)
        if found:
            return head + found
    first = next((ln for ln in msg.splitlines() if ln.strip()), type(e).__name__)
    return head + _one_line(_PREFIX.sub("", first.strip()))


def _diagnose_csv(engine: Engine, path: Path, delim: str) -> str | None:
    """The first problem a strict RFC 4180 read (the header's field count, text columns, '"' as
    quote and escape) meets in ``path``, as 'line N: what', or None when that read succeeds."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            header = next(csv.reader(f, delimiter=delim), [])
    except (OSError, csv.Error):
        return None
    if not header:
        return None
    columns = "{" + ", ".join(f"{literal(f'c{i}')}: 'VARCHAR'" for i in range(len(header))) + "}"
    try:
        engine.fetch_rows(f"SELECT count(*) FROM read_csv({literal(str(path))}, delim = {literal(delim)}, "
                          f"header = true, auto_detect = false, quote = '\"', escape = '\"', columns = {columns})")
    except SQLError as e:
        return _explain(_duck_message(e))
    return None

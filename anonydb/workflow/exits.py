"""How an ``anonydb`` command ends: its one line for an error, the signal that stopped it, and a
closed stdout that changes nothing.

The exit code says what happened to the data: 0 written or verified, 1 a check fails, 2 nothing
was written. A reader that stops early (``anonydb ... | head -1``) closes the pipe under the
command's output; that says nothing about the release, so it never becomes exit 2 or a traceback:
the rest of the output goes to the null device, as Python's documentation recommends for
``BrokenPipeError`` (the :mod:`signal` page, "Note on SIGPIPE"), and the command's own code stands.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import AnonyDBError

#: the signal that stopped the run, if one did
STOPPED_BY: list[str] = []


def on_signal(signum, frame):
    """Record the signal and stop the run at its next statement (:func:`anonydb.engines.base.request_stop`):
    the statement running now finishes (DuckDB's interrupt can leave a recursive statement
    spinning), then the run unwinds through its clean-up."""
    import signal

    from ..engines.base import request_stop

    STOPPED_BY.append(signal.Signals(signum).name)
    request_stop(STOPPED_BY[0])


def one_line(e: BaseException) -> str:
    """An exception as one line: anonydb's own message, or the kind of failure with a hint."""
    from ..errors import SQLError

    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    if isinstance(e, SQLError):
        return f"{first} (run with --debug for the statement)"
    if isinstance(e, AnonyDBError):  # a list of problems (a spec's) joins into the one line
        rest = [x.strip() for x in text.splitlines()[1:] if x.strip()]
        return first + (" " + "; ".join(rest) if rest else "")
    if isinstance(e, (OSError, MemoryError)):
        return f"{type(e).__name__}: {first}"
    return f"internal error ({type(e).__name__}: {first}); run with --debug for the traceback"


class _Guarded:
    """The process's stdout, whose writes after its reader went away go to the null device."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.closed_pipe = False

    def _to_devnull(self) -> None:
        """Point the stdout descriptor at the null device: what is still buffered, and Python's
        flush at exit, then go nowhere instead of raising again."""
        self.closed_pipe = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._to_devnull()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._to_devnull()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def closed_stdout_ok() -> Iterator[None]:
    """Run a command with the process's stdout guarded (:class:`_Guarded`), and flush it at the end
    inside the guard. A caller's own stdout (a test's capture, a library caller's redirect, another
    thread) is left as it is."""
    real = sys.stdout
    if real is None or real is not sys.__stdout__ or threading.current_thread() is not threading.main_thread():
        yield
        return
    guard = _Guarded(real)
    sys.stdout = guard
    try:
        yield
    finally:
        guard.flush()
        sys.stdout = real

"""What a run tells the person watching it: the phase it is in, how far it got, and warnings.

Library code announces ``phase("rounds", total=rows, unit="rows closed")``, reports facts with
``update(done=..., round=...)`` and raises its voice with ``warn(text)``. Whoever listens (the
command line's display, :mod:`anonydb.workflow.progress`) hears them through :func:`listening`.
Without a listener phases and facts go nowhere, and a warning becomes a Python ``UserWarning``,
so a library caller sees it too.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

Listener = Callable[[dict[str, Any]], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("anonydb_listener", default=None)


def emit(info: dict[str, Any]) -> None:
    """Hand ``info`` to the listener, if one listens."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(info)


def phase(name: str, total: int | None = None, unit: str | None = None, **facts: Any) -> None:
    """The run enters phase ``name``; ``total`` of ``unit`` is the work it will do, where known."""
    emit({"phase": name, "total": total, "unit": unit, **facts})


def update(**facts: Any) -> None:
    """Facts of the current phase: ``done`` (of its total) and whatever else it counts."""
    emit(facts)


def warn(text: str) -> None:
    """A guess the run made that the user should know of (one line)."""
    listener = _LISTENER.get()
    if listener is None:
        warnings.warn(text, UserWarning, stacklevel=2)
    else:
        listener({"warning": text})


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Send what runs inside the block announces to ``listener`` (None: to nobody)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)

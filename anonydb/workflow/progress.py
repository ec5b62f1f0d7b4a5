"""Progress of long runs on a terminal: one line rewritten in place, silent when not a TTY."""

from __future__ import annotations

import sys
from typing import Any, TextIO

LABELS = {"round": "round", "open": "open", "final": "final", "rows_open": "rows open", "checks": "checks",
          "height": "lattice height", "checked": "nodes checked", "satisfying": "satisfying"}


class Progress:
    """A callable for the methods' ``progress=`` hooks. ``enabled`` defaults to whether ``stream``
    is a terminal, so pipes, CI logs and cron jobs stay quiet."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None, prefix: str = ""):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if enabled is None else enabled
        self.prefix = prefix
        self.shown = False

    def __call__(self, info: dict[str, Any]) -> None:
        if not self.enabled:
            return
        text = ", ".join(f"{LABELS.get(k, k)} {v}" for k, v in info.items())
        self.stream.write(f"\r\033[K  {self.prefix}{text}")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        """End the progress line (if one was shown)."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False

"""The progress display of long runs, on stderr.

A run passes through phases (reading, coding, rounds, output, verification, loss, writing;
:mod:`anonydb.events`). On a terminal the current phase is one line rewritten in place: its name,
a bar and the share done where it can be known (rows closed, lattice nodes judged), its facts and
the time elapsed, ticking every second so a long statement never looks frozen. Each phase that
ends leaves one line with its time, and the live line is cleared before the result prints.
Elsewhere (a pipe, a CI or scheduler log) there is no live line: one line per phase, written when
the phase ends, and the phase a failed or interrupted run stopped in.

Hand-made rather than rich or tqdm: a phase's share is the run's own measure (rows closed by
Mondrian's rounds, not statements), the log form is one line per phase (tqdm's non-terminal output
repeats the bar), and the command needs no dependency for it.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import Any, Callable, TextIO

from .. import events

#: how a fact reads: a format taking the formatted value
FACTS = {"rows": "{} rows", "persons": "{} persons", "qis": "{} quasi-identifiers", "round": "round {}",
         "classes": "{} classes", "open": "{} open", "height": "lattice height {}", "checked": "{} nodes judged",
         "satisfying": "{} satisfying", "models": "{}", "table": "{}", "files": "{}", "groups": "{} groups",
         "buckets": "{} buckets", "checks": "{} checks"}
#: facts that only drive the bar
HIDDEN = {"done", "total", "unit", "phase", "final", "rows_open", "of"}
TICK = 1.0
#: seconds a run takes before its phase lines show: a quick run prints only its result, and an error
#: found in it stays the one line it is
DELAY = 2.0


def _number(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(int(s), 60)
    return f"{m}:{s:02d}" if m < 60 else f"{m // 60}:{m % 60:02d}:{s:02d}"


class Progress:
    """A listener for :mod:`anonydb.events` and a callable for the methods' ``progress=`` hooks.

    ``live``: rewrite one line in place (default: whether ``stream`` is a terminal); otherwise one
    line per phase. ``enabled=False`` (``--quiet``) shows no progress; warnings still print."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = True, live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, tick: float | None = TICK, delay: float | None = None):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        tty = bool(isatty and isatty())
        self.enabled = tty if enabled is None else enabled
        self.live = tty if live is None else live
        self.clock = clock
        self.tick = tick
        self.name: str | None = None
        self.facts: dict[str, Any] = {}
        self.started = 0.0
        self.delay = DELAY if delay is None else delay
        self.began: float | None = None  # the first phase's start
        self.held: list[str] = []  # phase lines of a run younger than the delay
        self.shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        enc = (getattr(self.stream, "encoding", None) or "").lower().replace("-", "")
        self.blocks = ("\u2588", "\u2591") if enc.startswith("utf") else ("#", "-")

    # what the run announces --------------------------------------------------------------------
    def __call__(self, info: dict[str, Any]) -> None:
        if "warning" in info:
            self._say(f"anonydb: warning: {info['warning']}")
            return
        if not self.enabled:
            return
        with self._lock:
            if "phase" in info:
                if info["phase"] != self.name:
                    self._end()
                    self._begin(info["phase"], {})
                self.facts.update({k: v for k, v in info.items() if v is not None and k != "phase"})
            elif self.name is None:  # facts before any phase: the methods' own hooks, called directly
                self._begin("working", dict(info))
            else:
                self.facts.update(info)
            self._draw()

    def _begin(self, name: str, facts: dict[str, Any]) -> None:
        self.name, self.started, self.facts = name, self.clock(), facts
        self.began = self.started if self.began is None else self.began
        self._start_ticker()

    def done(self) -> None:
        """The run finished: end its last phase (its line) and clear the live line."""
        with self._lock:
            self._end()
            self.held.clear()  # a run quicker than the delay: its result is enough
        self._stop_ticker()

    def stopped(self) -> None:
        """The run failed or was interrupted: say which phase it stopped in, after how long."""
        with self._lock:
            if self.name is not None:
                self._clear()
                self._write("".join(self.held) + self._line(self.name, self.clock() - self.started, stopped=True)
                            + "\n")
                self.held.clear()
                self.name = None
        self._stop_ticker()

    def quiet_end(self) -> None:
        """End without a line (the run's error says what happened)."""
        with self._lock:
            self._clear()
            self.name = None
            self.held.clear()
        self._stop_ticker()

    def running(self):
        """A context for a run: listen to its events, end with :meth:`done` or :meth:`stopped`."""
        return _Running(self)

    # the lines ----------------------------------------------------------------------------------
    def text(self, final: bool = False) -> str:
        """The current phase's facts, as a person reads them (``final``: as the phase ended, without
        its share and what is still open)."""
        parts = []
        f = self.facts
        if f.get("total") and f.get("done") is not None and not final:  # never below 0 nor past the total
            total = int(f["total"])
            parts.append(f"{_number(max(0, min(int(f['done']), total)))} of {_number(total)} {f.get('unit') or 'done'}")
        for k, v in f.items():
            if k in HIDDEN or (final and k == "open"):
                continue
            parts.append(FACTS.get(k, k.replace("_", " ") + " {}").format(_number(v)))
        return ", ".join(parts)

    def share(self) -> float | None:
        total, done = self.facts.get("total"), self.facts.get("done")
        if not total or done is None:
            return None
        return max(0.0, min(1.0, float(done) / float(total)))

    def _line(self, name: str, elapsed: float, stopped: bool = False) -> str:
        facts = self.text(final=not stopped)
        if self.live:
            head = f"  {name:<13}"
            return head + (f"stopped after {_seconds(elapsed)}" + (f" ({facts})" if facts else "") if stopped
                           else f"{facts:<52} {_seconds(elapsed):>8}")
        if stopped:
            return f"anonydb: {name}: stopped after {_seconds(elapsed)}" + (f" ({facts})" if facts else "")
        return f"anonydb: {name} done in {_seconds(elapsed)}" + (f": {facts}" if facts else "")

    def _draw(self) -> None:
        self._release()
        if not self.live or self.name is None:
            return
        width = shutil.get_terminal_size((100, 20)).columns
        share = self.share()
        if share is None:
            bar = ""
        else:
            full = int(round(share * 20))
            bar = f"{self.blocks[0] * full}{self.blocks[1] * (20 - full)} {int(share * 100):>3}%  "
        line = f"  {self.name:<13}{bar}{self.text()}  {_seconds(self.clock() - self.started)}"
        if len(line) >= width:  # a wrapped line cannot be rewritten in place
            line = line[:width - 2] + "\u2026" if self.blocks[0] != "#" else line[:width - 1]
        self._write(f"\r\033[K{line}")
        self.shown = True

    def _end(self) -> None:
        if self.name is None:
            return
        self._clear()
        self.held.append(self._line(self.name, self.clock() - self.started) + "\n")
        self.name = None
        self._release()

    def _release(self) -> None:
        """Write the held phase lines once the run is older than the delay."""
        if self.held and self.began is not None and self.clock() - self.began >= self.delay:
            self._clear()
            self._write("".join(self.held))
            self.held.clear()

    def _clear(self) -> None:
        if self.shown:
            self._write("\r\033[K")
            self.shown = False

    def _say(self, line: str) -> None:
        with self._lock:
            self._clear()
            self._write(line + "\n")
            self._draw()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr does not stop the run
            pass

    # the ticker: the elapsed time moves while a long statement runs ------------------------------
    def _start_ticker(self) -> None:
        if not self.live or not self.tick or self._ticker is not None:
            return
        self._stop.clear()
        self._ticker = threading.Thread(target=self._tick, name="anonydb-progress", daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.tick):
            with self._lock:
                self._draw()

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None


class _Running:
    def __init__(self, progress: Progress):
        self.progress = progress
        self._ctx = events.listening(progress)

    def __enter__(self) -> Progress:
        self._ctx.__enter__()
        return self.progress

    def __exit__(self, kind, exc, tb) -> None:
        from ..errors import AnonyDBError, SQLError

        self._ctx.__exit__(kind, exc, tb)
        if kind is None:
            self.progress.done()
        elif isinstance(exc, AnonyDBError) and not isinstance(exc, SQLError):  # a verdict on the input: its one line
            self.progress.quiet_end()
        else:  # interrupted, or a failure of the engine or the machine: where the run was
            self.progress.stopped()

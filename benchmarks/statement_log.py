"""A call's wall time accounted for from the engine's statement log (``Engine.log``): its
statements summed by key (by default the template, or an untemplated statement's first words),
and the rest, Python (rendering, bookkeeping). Issues 29 and 30 ask for profiles whose steps sum
to the wall."""

from __future__ import annotations

from typing import Callable, Sequence


def default_key(x) -> str:
    return x.template or " ".join(x.sql.split()[:3])


def account(log: Sequence, wall: float, key: Callable = default_key, indent: str = "  ") -> list[str]:
    """Lines: the wall = the statements + Python, then each key's milliseconds, share of the wall
    and count, largest first."""
    sums: dict[str, list] = {}
    for x in log:
        s = sums.setdefault(key(x), [0, 0.0])
        s[0] += 1
        s[1] += x.seconds
    logged = sum(v[1] for v in sums.values())
    out = [f"wall {wall * 1000:.1f} ms = statements {logged * 1000:.1f} ms ({len(log)}) + Python "
           f"{(wall - logged) * 1000:.1f} ms"]
    for k, (n, sec) in sorted(sums.items(), key=lambda kv: -kv[1][1]):
        out.append(f"{indent}{sec * 1000:10.1f} ms {100 * sec / wall:5.1f}% {n:4d}x {k}")
    return out

"""Sizes and durations as people read them, for every command's output."""

from __future__ import annotations


def human_bytes(n: float | None) -> str:
    """``1.5 MiB``; ``?`` when the size is not known."""
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def milliseconds(ns: int) -> str:
    """A duration in nanoseconds (the profiler's unit) as ``0.012 ms``."""
    return f"{ns / 1e6:.3f} ms"

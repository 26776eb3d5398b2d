"""What each side pays before and around the code under test, and where A and B differ.

An A/B compares code. Anything else that differs between the two sides is
measured too and reads as a change of the code: another interpreter (version,
binary or start-up flags), an environment variable set for one side only, or
bytecode that one side reads from its cache while the other compiles torch's
Python from source on every run (``PYTHONDONTWRITEBYTECODE=1`` with no cache
where that interpreter looks: import takes ~2.5x as long). The interpreter and
the environment are read before the runs; the bytecode is counted in the runs
themselves (each run reports how many ``.py`` files it compiled from source).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path

from onboard import proc

# The interpreter facts that change how a run starts (sys.flags names).
_FLAGS = (
    "dont_write_bytecode",
    "optimize",
    "no_site",
    "isolated",
    "ignore_environment",
    "dev_mode",
    "safe_path",
)


def interpreter(python: str, cwd: Path, env: Mapping[str, str]) -> dict[str, object]:
    """The side's interpreter as its runs will see it: version, binary, start-up flags."""
    try:
        found: dict[str, object] = proc.ask_child(
            python, "_interpreter_child.py", json.dumps(_FLAGS), cwd=cwd, env=dict(env),
            timeout=60, what=f"Describing {python}",
        ).data  # fmt: skip
    except proc.NoAnswer:
        return {}
    return found


def _interpreter_lines(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    if not a or not b:
        return []
    found = []
    if a.get("version") != b.get("version") or a.get("executable") != b.get("executable"):
        found.append(
            f"the interpreter: A runs Python {a.get('version')} ({a.get('executable')}), "
            f"B Python {b.get('version')} ({b.get('executable')})"
        )
    flags_a = a.get("flags") or {}
    flags_b = b.get("flags") or {}
    assert isinstance(flags_a, dict) and isinstance(flags_b, dict)
    changed = [n for n in _FLAGS if flags_a.get(n) != flags_b.get(n)]
    if changed:
        shown = ", ".join(f"{n} {flags_a.get(n)} on A, {flags_b.get(n)} on B" for n in changed)
        found.append(f"the interpreter's start-up flags: {shown}")
    if a.get("pycache_prefix") != b.get("pycache_prefix"):
        found.append(
            f"where bytecode is cached: {a.get('pycache_prefix') or 'next to the sources'} "
            f"on A, {b.get('pycache_prefix') or 'next to the sources'} on B"
        )
    return found


def _env_lines(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    names = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
    if not names:
        return []

    def shown(env: Mapping[str, str], name: str) -> str:
        return f"{name}={env[name]}" if name in env else f"{name} unset"

    listed = "; ".join(f"{shown(a, n)} on A, {shown(b, n)} on B" for n in names)
    return [f"the environment: {listed}"]


def _bytecode_lines(compiled: Mapping[str, list[int]]) -> list[str]:
    a, b = compiled.get("A") or [], compiled.get("B") or []
    if not a or not b:
        return []
    ma, mb = statistics.median(a), statistics.median(b)
    if ma == mb:
        return []
    return [
        f"bytecode: a run on A compiles {ma:g} Python file(s) from source, a run on B "
        f"{mb:g} (the others are read from a bytecode cache), so start-up differs by more "
        "than the code. With PYTHONDONTWRITEBYTECODE=1 Python never writes a cache, so a "
        "side without one compiles again on every run"
    ]


def differences(
    interpreters: Mapping[str, Mapping[str, object]],
    envs: Mapping[str, Mapping[str, str]],
    compiled: Mapping[str, list[int]],
) -> list[str]:
    """One line per way A and B differ besides the code (empty: they start alike)."""
    return (
        _interpreter_lines(interpreters.get("A") or {}, interpreters.get("B") or {})
        + _env_lines(envs.get("A") or {}, envs.get("B") or {})
        + _bytecode_lines(compiled)
    )

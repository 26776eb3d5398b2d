"""The user's program, as a command was asked to run it (trace, graph, stuck, locate,
doctor: ``onboard COMMAND -- python repro.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ProgramOptions:
    """``command``: the words after `--` (None when there was no `--`);
    ``python``: the interpreter given with --python (None: the one the command names,
    else the one running onboard); ``workspace``: the workspace given with --workspace
    (None: found by walking up from the current folder).

    Each workflow's request adds what else it was asked (``TraceRequest`` ...)."""

    command: Sequence[str] | None = None
    python: str | None = None
    workspace: str | None = None

"""What `onboard tests` was asked."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class TestsRequest:
    """``paths``: the files to select for (empty: the branch's change, measured
    against ``base``, as `onboard pr` measures it, plus uncommitted edits); ``ops``:
    op names (OpInfo or aten) to select for instead; ``lint``: check lintrunner and
    lint the changed files; ``run``: run the selection (``run.run_selection``);
    ``timeout``: seconds each run may take (None: the run's default)."""

    __test__ = False  # not a pytest class

    workspace: str | os.PathLike[str] | None = None
    python: str | None = None
    paths: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    base: str | None = None
    lint: bool = True
    run: bool = False
    timeout: float | None = None

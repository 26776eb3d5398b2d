"""Commands onboard prints for a user to run, runnable as printed: each path (or any
other word that may hold a space or a quote) shell-quoted."""

from __future__ import annotations

import os
import shlex


def quote(word: str | os.PathLike[str]) -> str:
    """``word`` as one shell word (unchanged when it needs no quoting)."""
    return shlex.quote(os.fspath(word))

"""Regular expressions compiled when first used, not when their module is imported.

`re.compile` runs Python code (the parser and compiler of the `re` package):
a few hundred microseconds for a long pattern. A module whose patterns only
one path uses (harvest's scoring, when a warm run reads its result from the
cache) should not make every run pay for them.
"""

from __future__ import annotations

import re
from typing import Any


class Pattern:
    """``re.compile(pattern, flags)`` on first use; then its methods, unwrapped."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name not yet on the instance: the compiled
        # pattern's attribute is stored on it, so later calls cost nothing extra.
        compiled = re.compile(*self._args)
        value = getattr(compiled, name)
        setattr(self, name, value)
        return value


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:  # noqa: A001 (re's name)
    """A pattern that is compiled on first use (typed as the compiled one)."""
    return Pattern(pattern, flags)  # type: ignore[return-value]

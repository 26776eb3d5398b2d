"""Keep secrets out of everything onboard prints or writes.

``redact`` is called where a secret could be known in advance (a token in a URL
onboard builds); ``RedactingStream`` is the one point every byte onboard writes
to its stdout and stderr passes (``console.redacted_output``, set up by
``crash.run_cli``): a program's output that a result carries (a bisect run's
tail, a traceback's message) cannot reach the terminal or a ``--json`` reader
with a token in it, whichever view or error paragraph shows it.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

# GitHub token shapes (classic, fine-grained, app; the older app installation tokens,
# v1.<40 hex>) and any URL userinfo.
_PATTERNS = [
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|v1\.[0-9a-f]{40})\b"),
    re.compile(r"(?<=://)[^/@\s:]+:[^/@\s]+(?=@)"),
]
_ENV_NAMES = ("GITHUB_TOKEN", "GH_TOKEN", "ONBOARD_GITHUB_TOKEN")

# Secrets learned while running (a token read from `gh auth token` or a config file,
# not from the environment): redacted everywhere from then on.
_LEARNED: set[str] = set()


def remember(secret: str) -> None:
    """Redact ``secret`` from everything written from now on."""
    if secret and len(secret) >= 4:
        _LEARNED.add(secret)


def forget() -> None:
    """What ``remember`` learned is not redacted any more (a run has ended)."""
    _LEARNED.clear()


def redact(text: str, *secrets: str) -> str:
    for secret in (*secrets, *_LEARNED, *(os.environ.get(n, "") for n in _ENV_NAMES)):
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _PATTERNS:
        text = pattern.sub("***", text)
    return text


class RedactingStream:
    """A text stream that passes on whole lines, redacted, to ``stream``.

    A line is held until its newline (a token written in two pieces is still one
    token) or until ``flush``, which passes on what is held (a progress bar's
    redraw has no newline). It offers no ``buffer``: Click would write bytes to it
    past the redaction.
    """

    def __init__(self, stream: Any) -> None:
        self.wrapped = stream
        self._pending = ""
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # Click probes with b"" to tell text from binary
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            head, newline, self._pending = (self._pending + text).rpartition("\n")
            if newline:
                self.wrapped.write(redact(head + newline))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, ""
            if pending:
                self.wrapped.write(redact(pending))
            self.wrapped.flush()

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def isatty(self) -> bool:
        return bool(self.wrapped.isatty())

    def fileno(self) -> int:
        return int(self.wrapped.fileno())

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return bool(getattr(self.wrapped, "closed", False))

    @property
    def encoding(self) -> str:
        return str(getattr(self.wrapped, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str:
        return str(getattr(self.wrapped, "errors", None) or "strict")

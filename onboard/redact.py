"""Keep secrets out of everything onboard prints or writes."""

from __future__ import annotations

import os
import re

# GitHub token shapes (classic, fine-grained, app; the older app installation tokens,
# v1.<40 hex>) and any URL userinfo.
_PATTERNS = [
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|v1\.[0-9a-f]{40})\b"),
    re.compile(r"(?<=://)[^/@\s:]+:[^/@\s]+(?=@)"),
]
_ENV_NAMES = ("GITHUB_TOKEN", "GH_TOKEN", "ONBOARD_GITHUB_TOKEN")


def redact(text: str, *secrets: str) -> str:
    for secret in (*secrets, *(os.environ.get(n, "") for n in _ENV_NAMES)):
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _PATTERNS:
        text = pattern.sub("***", text)
    return text

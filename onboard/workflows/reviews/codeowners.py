"""`CODEOWNERS`: who GitHub notifies about a path. PyTorch's file says of itself
that it is ONLY used to subscribe for notifications; approvals from the people
in it are not required for merges (that is `.github/merge_rules.yaml`).

GitHub's rules: the last matching line wins; a pattern starting with ``/`` or
holding a ``/`` before its end is anchored at the repository root, one without
matches a name at any depth; a trailing ``/`` means a folder and everything
under it (so does a pattern naming a folder); ``*`` stays within one path
segment, ``**`` crosses them; a line without owners unassigns the path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PATHS = ("CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS")
NOTIFICATIONS_ONLY = (
    "CODEOWNERS is for notifications only: GitHub asks these people to look, but their "
    "approval is not what lets a PR merge (`.github/merge_rules.yaml` decides that)."
)


@dataclass(frozen=True)
class Owners:
    pattern: str
    owners: tuple[str, ...]  # @login or @org/team; empty: unassigned
    line: int


def _regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if body.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(c))
        i += 1
    prefix = "" if anchored else "(?:.*/)?"
    # A match may name a folder: everything under it is covered too.
    return re.compile(f"^{prefix}{''.join(out)}(?:/.*)?$")


def parse(text: str) -> list[tuple[re.Pattern[str], Owners]]:
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = re.split(r"(?<!\\)#", line, maxsplit=1)[0].strip()
        words = line.split()
        if not words:
            continue
        entries.append((_regex(words[0]), Owners(words[0], tuple(words[1:]), number)))
    return entries


def owners_for(entries: list[tuple[re.Pattern[str], Owners]], path: str) -> Owners | None:
    """The last line whose pattern matches ``path`` (GitHub's rule), or None."""
    found = None
    for regex, owners in entries:
        if regex.match(path):
            found = owners
    return found

"""Review comments and reviews of a pull request, as GitHub's REST API gives them.

A review comment (``GET /repos/{o}/{r}/pulls/{n}/comments``) carries the file
(``path``), the line in the PR's last version (``line``; null once the code
moved on: "outdated"), the line when it was written (``original_line``),
``start_line`` for a comment on several lines, the ``diff_hunk`` ending at the
commented line, ``in_reply_to_id`` for a reply, ``user``, ``body`` and
``html_url``. Threads are rebuilt from ``in_reply_to_id`` (GitHub points every
reply at the thread's first comment); resolved/outdated thread state exists
only in GraphQL, so it is not shown. Reviews (``/pulls/{n}/reviews``) carry a
``state``: APPROVED, CHANGES_REQUESTED, COMMENTED (or DISMISSED).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec
from onboard.workflows.reviews.trailers import is_bot

_WS = re.compile(r"\s+")
# A commented line this short or plain ("}", "return x;") says little alone:
# its context lines from the hunk must be found with it.
_TRIVIAL = re.compile(r"^[\s{}();,\[\]]*$")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class ReviewComment:
    id: int
    pr: int
    path: str
    line: int | None
    original_line: int | None
    start_line: int | None
    original_start_line: int | None = field(metadata=spec(omit=True))
    user: str  # "ghost" for a deleted account
    user_is_bot: bool = field(metadata=spec(omit=True))
    body: str
    in_reply_to: int | None = field(metadata=spec(key="in_reply_to_id"))
    url: str
    created_at: str
    diff_hunk: str  # last in JSON: the longest

    @classmethod
    def from_api(cls, pr: int, data: Any) -> ReviewComment | None:
        """One comment of the API's answer, or None when it is not one."""
        if not isinstance(data, dict) or _int(data.get("id")) is None:
            return None
        user = _obj(data.get("user"))
        login = _str(user.get("login")) or "ghost"
        return cls(
            id=int(data["id"]),
            pr=pr,
            path=_str(data.get("path")),
            line=_int(data.get("line")),
            original_line=_int(data.get("original_line")),
            start_line=_int(data.get("start_line")),
            original_start_line=_int(data.get("original_start_line")),
            diff_hunk=_str(data.get("diff_hunk")),
            user=login,
            user_is_bot=is_bot(_str(user.get("login")) or None, _str(user.get("type")) or None),
            body=_str(data.get("body")),
            in_reply_to=_int(data.get("in_reply_to_id")),
            url=_str(data.get("html_url")),
            created_at=_str(data.get("created_at")),
        )

    def anchor(self) -> list[str]:
        """The commented code: the last line of the hunk, or the last ``line -
        start_line + 1`` lines for a comment on several lines, without the diff marker."""
        lines = [ln for ln in self.diff_hunk.splitlines() if not ln.startswith("@@")]
        if not lines:
            return []
        start, end = self.original_start_line, self.original_line
        if self.line is not None:
            start, end = self.start_line, self.line
        count = end - start + 1 if start is not None and end is not None and end >= start else 1
        return [ln[1:] if ln[:1] in "+- " else ln for ln in lines[-count:]]

    def context(self, n: int = 3) -> list[str]:
        """Up to ``n`` hunk lines above the anchor (the code around it)."""
        lines = [ln for ln in self.diff_hunk.splitlines() if not ln.startswith("@@")]
        body = [ln[1:] if ln[:1] in "+- " else ln for ln in lines]
        shown = len(self.anchor())
        return body[max(0, len(body) - shown - n) : len(body) - shown]


@dataclass(frozen=True)
class Review:
    pr: int
    user: str
    state: str  # APPROVED / CHANGES_REQUESTED / COMMENTED / DISMISSED
    body: str
    url: str
    submitted_at: str
    user_is_bot: bool = field(default=False, metadata=spec(omit=True))

    @classmethod
    def from_api(cls, pr: int, data: Any) -> Review | None:
        if not isinstance(data, dict) or not isinstance(data.get("state"), str):
            return None
        user = _obj(data.get("user"))
        login = _str(user.get("login")) or "ghost"
        return cls(
            pr=pr,
            user=login,
            state=data["state"],
            body=_str(data.get("body")),
            url=_str(data.get("html_url")),
            submitted_at=_str(data.get("submitted_at")),
            user_is_bot=is_bot(_str(user.get("login")) or None, _str(user.get("type")) or None),
        )


@dataclass
class Thread:
    """A review comment and its replies, oldest first."""

    # In JSON after the thread's own keys (json_extra): its root's pr and path come first.
    comments: list[ReviewComment] = field(metadata=spec(omit=True))
    root_deleted: bool = False  # the replies point at a comment that is gone
    # the commented code's line at the installed commit
    still_at: int | None = field(default=None, metadata=spec(key="line_now"))
    checked: bool = field(default=False, metadata=spec(omit=True))  # whether ``still_at``
    # was looked for
    # the file's name today (the comment may name an older one; JSON: json_extra)
    path_now: str = field(default="", metadata=spec(omit=True))
    extra: dict[str, Any] = field(default_factory=dict, metadata=spec(omit=True))

    @property
    def root(self) -> ReviewComment:
        return self.comments[0]

    @property
    def reviewers(self) -> list[str]:
        return list(dict.fromkeys(c.user for c in self.comments))

    def json_extra(self) -> dict[str, Any]:
        return {
            "pr": self.root.pr,
            "path": self.root.path,
            "path_now": self.path_now or self.root.path,
            "still_exists": (self.still_at is not None) if self.checked else None,
            "anchor": self.root.anchor(),
            "comments": self.comments,
        }


def threads(comments: list[ReviewComment]) -> list[Thread]:
    """Comments grouped by thread (``in_reply_to_id``), threads in order of their first comment."""
    by_id = {c.id: c for c in comments}
    groups: dict[int, list[ReviewComment]] = {}
    deleted: set[int] = set()
    for c in sorted(comments, key=lambda c: (c.created_at, c.id)):
        root = c.id
        seen = set()
        while by_id.get(root) is not None and by_id[root].in_reply_to is not None:
            parent = by_id[root].in_reply_to
            assert parent is not None
            if parent in seen:
                break
            seen.add(parent)
            if parent not in by_id:
                deleted.add(parent)
                root = parent
                break
            root = parent
        groups.setdefault(root, []).append(c)
    out = []
    for root, items in groups.items():
        out.append(Thread(comments=items, root_deleted=root in deleted))
    out.sort(key=lambda t: (t.root.created_at, t.root.id))
    return out


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


def find_in(
    anchor: list[str], context: list[str], lines: list[str], near: int | None
) -> int | None:
    """The 1-based line where the ``anchor`` lines (with ``context`` above when the
    anchor alone says little) appear in ``lines``, the nearest to ``near``; None when
    the code is gone."""
    wanted = [_norm(a) for a in anchor]
    if not wanted or not any(wanted):
        return None
    if all(_TRIVIAL.match(w) or len(w) < 4 for w in wanted):
        wanted = [_norm(c) for c in context if _norm(c)] + wanted
    normed = [_norm(ln) for ln in lines]
    n = len(wanted)
    hits = [
        i + n  # the last anchored line, 1-based
        for i in range(len(normed) - n + 1)
        if normed[i] == wanted[0] and normed[i : i + n] == wanted
    ]
    if not hits:
        return None
    if near is None:
        return hits[0]
    return min(hits, key=lambda h: abs(h - near))


def on_lines(comment: ReviewComment, texts: set[str], orig_lines: set[int]) -> bool:
    """Whether ``comment`` is about one of the blamed lines: its commented code is
    one of their texts, or (not outdated) its line range covers their line numbers
    in the commit that landed."""
    anchor = {_norm(a) for a in comment.anchor() if _norm(a)}
    if anchor & {_norm(t) for t in texts if _norm(t) and not _TRIVIAL.match(t)}:
        return True
    if comment.line is not None:
        start = comment.start_line or comment.line
        return any(start <= n <= comment.line for n in orig_lines)
    return False

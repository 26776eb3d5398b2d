"""The shapes PyTorch's TODO comments take, parsed.

Counted on the 2.13 wheel (docs/pytorch-facts.md): ~80% bare (``TODO: ...``), ~16%
``TODO(name)``, ~2% ``TODO(future PR)``, under 1% with an issue number
(``TODO(#1234)``, ``see https://github.com/pytorch/pytorch/issues/1234``),
and some Meta-internal task ids (``T123456``), whose context is not public.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from onboard.workflows.harvest.tags import TAG_RE

# Right after the tag: TODO(name), TODO (name), TODO[name].
_PAREN_RE = re.compile(r"\s?[(\[]([^()\[\]]{1,80})[)\]]")
_ISSUE_URL_RE = re.compile(r"github\.com/pytorch/pytorch/(issues|pull)/(\d+)")
_OTHER_URL_RE = re.compile(r"https?://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")
# "#1234", and "gh-1234" as PyTorch's commit messages and comments also write it.
_HASH_ISSUE_RE = re.compile(r"(?<![\w&/])(?:#|gh-)(\d{4,6})\b")
_INTERNAL_RE = re.compile(r"\bT\d{5,}\b")
_FUTURE_PR_RE = re.compile(r"^\s*(a\s+)?(future|follow[- ]?up|next)\s+(pr|diff|change)s?\s*$", re.I)
_NAME_RE = re.compile(r"^@?[A-Za-z][\w.-]*(\s*[,/]\s*@?[A-Za-z][\w.-]*)*$")

BARE = "bare"
OWNER = "owner"
ISSUE = "issue"
FUTURE_PR = "future PR"
INTERNAL = "internal"


class Form(NamedTuple):
    """A comment's parsed form (a tuple: thousands are rebuilt from the cache per run)."""

    tag: str
    kind: str  # bare / owner / issue / future PR / internal
    owners: tuple[str, ...]
    issues: tuple[int, ...]  # pytorch/pytorch issue (or PR) numbers named anywhere
    pulls: tuple[int, ...]
    internal_ids: tuple[str, ...]
    other_links: tuple[str, ...]  # issue/PR URLs of other repositories
    body: str  # the words after the tag and its parenthesis


# `onboard new-op` marks what the op's author still has to write with this owner.
ONBOARD_OWNER = "onboard new-op"


def onboards_own(text: str) -> bool:
    """A TODO onboard itself wrote (``TODO(onboard new-op): ...``), not one of the tree's."""
    return f"({ONBOARD_OWNER})" in text


def parse(text: str) -> Form:
    """Tag, owner, linked issues and ids of a comment's text."""
    match = TAG_RE.search(text)
    tag = match.group(1) if match else "TODO"
    after = text[match.end() :] if match else text
    owners: tuple[str, ...] = ()
    future = False
    paren = _PAREN_RE.match(after)
    inner = ""
    if paren:
        inner = paren.group(1).strip()
        after = after[paren.end() :]
        if _FUTURE_PR_RE.match(inner):
            future = True
        elif _NAME_RE.match(inner) and not _INTERNAL_RE.fullmatch(inner):
            owners = tuple(n.strip().lstrip("@") for n in re.split(r"[,/]", inner) if n.strip())
    issues: list[int] = []
    pulls: list[int] = []
    has_url = "github.com/" in text
    if has_url:
        for kind, number in _ISSUE_URL_RE.findall(text):
            (pulls if kind == "pull" else issues).append(int(number))
    if "#" in text or "gh-" in text:
        issues += [int(n) for n in _HASH_ISSUE_RE.findall(text)]
    internal = tuple(dict.fromkeys(_INTERNAL_RE.findall(text)))
    others = tuple(
        u
        for u in dict.fromkeys(_OTHER_URL_RE.findall(text) if has_url else ())
        if "pytorch/pytorch/" not in u
    )
    issues_t = tuple(dict.fromkeys(n for n in issues if n not in pulls))
    if issues_t or pulls:
        kind = ISSUE
    elif future:
        kind = FUTURE_PR
    elif owners:
        kind = OWNER
    elif internal:
        kind = INTERNAL
    else:
        kind = BARE
    body = after.lstrip(" :-,.").strip()
    return Form(tag, kind, owners, issues_t, tuple(dict.fromkeys(pulls)), internal, others, body)


def normalise(text: str) -> str:
    """The text an id is made from: words only, whitespace collapsed, case kept."""
    return " ".join(text.split())

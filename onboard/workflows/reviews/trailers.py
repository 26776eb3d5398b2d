"""What a landed PyTorch commit's message says about its pull request.

The merge bot (`.github/scripts/trymerge.py`, ``gen_commit_message``) writes
``Title (#N)``, the PR body, ``Co-authored-by:`` lines, then
``Pull Request resolved: https://github.com/pytorch/pytorch/pull/N``,
``Approved by: https://github.com/LOGIN, ...`` and, for a ghstack PR,
``ghstack dependencies: #A, #B``. Imports from Meta's monorepo carry
``Differential Revision: D...``. A revert (``try_revert``) is ``git revert``'s
``Revert "Title (#N)"`` / ``This reverts commit SHA.`` with the
``Pull Request resolved`` line removed and
``Reverted https://github.com/pytorch/pytorch/pull/N on behalf of https://github.com/LOGIN
due to REASON`` added. PRs land as *closed*, not merged, on GitHub: these lines,
not ``merged_at``, say what landed, so PR numbers and approvers need no API call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from onboard.github.answers import LOGIN_RE
from onboard.jsonable import spec

_RESOLVED = re.compile(
    r"^Pull Request resolved: https?://(?P<host>[^/\s]+)/(?P<repo>[^/\s]+/[^/\s]+)/pull/"
    r"(?P<number>\d+)",
    re.MULTILINE,
)
_APPROVED = re.compile(r"^Approved by: ?(?P<who>.*)$", re.MULTILINE)
_GHSTACK = re.compile(r"^ghstack dependencies: (?P<prs>.*)$", re.MULTILINE)
_COAUTHOR = re.compile(r"^Co-authored-by: (?P<who>.+)$", re.MULTILINE)
_DIFF_REV = re.compile(r"^Differential Revision:.+?(?P<diff>D\d+)", re.MULTILINE)
_SUBJECT_PR = re.compile(r"\(#(?P<number>\d+)\)\s*$")
_REVERT_SUBJECT = re.compile(r'^Revert "(?P<title>.*)"\s*$')
_REVERTS_SHA = re.compile(r"This reverts commit (?P<sha>[0-9a-f]{7,40})")
_REVERTED_BY = re.compile(
    r"^Reverted (?P<url>https?://[^/\s]+/[^/\s]+/[^/\s]+/pull/(?P<number>\d+)) on behalf of "
    r"https?://[^/\s]+/(?P<login>[^\s/]+)(?: due to (?P<reason>.*))?$",
    re.MULTILINE,
)
_RELAND = re.compile(r"^\s*(?:\[\s*)?re-?land(?:ed|ing)?\b", re.IGNORECASE)
# Subjects of mass edits that change how lines look, not what they do (the kind
# `.git-blame-ignore-revs` lists: clang-format, UFMT, ruff, lint sweeps, codemods).
_CODEMOD = re.compile(
    r"codemod|clang-?format|\bufmt\b|\bruff\b|\bflake8\b|\bpyupgrade\b|\bisort\b|"
    r"\breformat|\bautoformat|\blint(?:er|ing)?\b|\bwhitespace\b|\btypos?\b|enforce style",
    re.IGNORECASE,
)
_PR_REF = re.compile(r"(?:/pull/|#)(?P<number>\d{3,})\b")

CHANGE, REVERT, RELAND, CODEMOD = "change", "revert", "reland", "codemod"


@dataclass(frozen=True)
class Trailers:
    pr: int | None  # the pull request that landed (or, for a revert, that was reverted)
    pr_repo: str | None  # owner/name from the resolved URL
    approvers: tuple[str, ...]
    ghstack_deps: tuple[int, ...] = field(metadata=spec(key="ghstack_dependencies"))
    coauthors: tuple[str, ...]
    differential_revision: str | None
    kind: str  # change / revert / reland / codemod
    reverts_sha: str | None = field(default=None, metadata=spec(key="reverts"))
    reverted_by: str | None = None
    revert_reason: str | None = None
    refers_to: tuple[int, ...] = ()  # other PRs the message names (a reland's original)
    pr_url: str | None = None  # as `Pull Request resolved:` gives it


def login_of(text: str) -> str | None:
    """``https://github.com/LOGIN`` or ``LOGIN`` -> LOGIN (None for anything else)."""
    word = text.strip().rstrip("/").rsplit("/", 1)[-1].lstrip("@")
    return word if LOGIN_RE.fullmatch(word) else None


def parse(message: str) -> Trailers:
    subject = message.split("\n", 1)[0].strip()
    resolved = list(_RESOLVED.finditer(message))
    pr = int(resolved[-1].group("number")) if resolved else None
    pr_repo = resolved[-1].group("repo") if resolved else None
    pr_url = resolved[-1].group(0).split(": ", 1)[1] if resolved else None
    approvers: list[str] = []
    for mo in _APPROVED.finditer(message):
        for item in mo.group("who").split(","):
            login = login_of(item)
            if login and login not in approvers:
                approvers.append(login)
    deps: list[int] = []
    for mo in _GHSTACK.finditer(message):
        deps += [int(n) for n in re.findall(r"#(\d+)", mo.group("prs"))]
    coauthors = tuple(mo.group("who").strip() for mo in _COAUTHOR.finditer(message))
    diff = _DIFF_REV.search(message)

    kind = CHANGE
    reverts_sha = reverted_by = reason = None
    revert = _REVERT_SUBJECT.match(subject)
    by = _REVERTED_BY.search(message)
    if revert or by:
        kind = REVERT
        sha = _REVERTS_SHA.search(message)
        reverts_sha = sha.group("sha") if sha else None
        if by:
            pr = int(by.group("number"))
            reverted_by = by.group("login")
            reason = re.sub(r"\s*\(\[comment\]\([^)]*\)\)\s*$", "", by.group("reason") or "")
            reason = reason.strip() or None
            pr_url = by.group("url")
        elif revert:
            inner = _SUBJECT_PR.search(revert.group("title"))
            pr = int(inner.group("number")) if inner else pr
    elif _RELAND.match(subject):
        kind = RELAND
    elif _CODEMOD.search(subject):
        kind = CODEMOD
    if pr is None and kind != REVERT:
        own = _SUBJECT_PR.search(subject)
        pr = int(own.group("number")) if own else None
    refers = tuple(
        dict.fromkeys(
            int(mo.group("number"))
            for mo in _PR_REF.finditer(message)
            if int(mo.group("number")) != pr and int(mo.group("number")) not in deps
        )
    )
    return Trailers(
        pr=pr,
        pr_repo=pr_repo,
        approvers=tuple(approvers),
        ghstack_deps=tuple(dict.fromkeys(deps)),
        coauthors=coauthors,
        differential_revision=diff.group("diff") if diff else None,
        kind=kind,
        reverts_sha=reverts_sha,
        reverted_by=reverted_by,
        revert_reason=reason,
        refers_to=refers,
        pr_url=pr_url if kind != REVERT or by else None,
    )


def title_of(subject: str) -> str:
    """The PR title: the subject without its ``(#N)``."""
    return _SUBJECT_PR.sub("", subject).strip()


# Accounts that comment, approve or land on PyTorch's pull requests without being
# reviewers (the merge bot, the label bot, Meta's import bot, CI apps).
BOTS = frozenset(
    {
        "pytorchbot",
        "pytorchmergebot",
        "pytorch-bot",
        "pytorchupdatebot",
        "facebook-github-bot",
        "github-actions",
        "dependabot",
        "copilot-pull-request-reviewer",
    }
)


def is_bot(login: str | None, user_type: str | None = None) -> bool:
    if not login:
        return False  # a deleted account ("ghost"): a person once
    name = login.lower()
    return user_type == "Bot" or name.endswith("[bot]") or name in BOTS

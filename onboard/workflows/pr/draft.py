"""Title, body and PR_DRAFT.md, rendered from templates/pr/*.j2.

The body follows .github/PULL_REQUEST_TEMPLATE.md (`Fixes #N`, its
checkboxes) and carries no `cc:` lines: the merge bot turns the body into the
commit message (.github/scripts/trymerge.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard import files
from onboard.render import render
from onboard.workflows.pr.change import Change, Commit

PR_TEMPLATE = ".github/PULL_REQUEST_TEMPLATE.md"
DRAFT_NAME = "PR_DRAFT.md"
_MARKER = re.compile(r"\n<!-- onboard-pr-draft sha256:(?P<sha>[0-9a-f]{64}) -->\n\Z")
_CHECKBOX = re.compile(r"^\s*[-*]\s+\[[ xX]\]\s+(?P<text>.+?)\s*$")
# Lines a commit body may carry that do not belong in a PR body / commit message.
_DROP = re.compile(r"^\s*(cc\b:?|ghstack-source-id:|Pull Request resolved:|Approved by:)", re.I)


@dataclass(frozen=True)
class Checkbox:
    text: str
    checked: bool


def template_checkboxes(repo: Path, *, lint_clean: bool) -> list[Checkbox]:
    """The checkboxes of the checkout's PR template; the lintrunner one is
    ticked only when lintrunner just ran clean on the change."""
    path = repo / PR_TEMPLATE
    if not path.is_file():
        return []
    boxes = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _CHECKBOX.match(line)
        if match:
            text = match.group("text")
            boxes.append(Checkbox(text, lint_clean and "lintrunner" in text))
    return boxes


def clean_body(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not _DROP.match(ln)]
    return "\n".join(lines).strip()


def default_title(commits: tuple[Commit, ...]) -> str:
    # One commit: its subject, as the merge bot would title it. Several: the
    # first, which usually states the intent; the summary lists the rest.
    return commits[0].subject


def summary(commits: tuple[Commit, ...]) -> str:
    if len(commits) == 1:
        body = clean_body(commits[0].body)
        return body or commits[0].subject
    parts = []
    for commit in commits:
        body = clean_body(commit.body)
        first = body.split("\n\n", 1)[0].replace("\n", " ").strip() if body else ""
        parts.append(f"- {commit.subject}" + (f": {first}" if first else ""))
    return "This PR:\n" + "\n".join(parts)


def render_body(ctx: dict[str, Any]) -> str:
    text = render("pr/body.md.j2", **ctx)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render_draft(ctx: dict[str, Any]) -> str:
    text = render("pr/draft.md.j2", **ctx)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def draft_location(change: Change, workspace_root: Path | None, git_dir: Path) -> Path:
    """The workspace folder (beside the checkout), else the repo's .git dir:
    never a file inside the work tree, where `git add -A` would pick it up."""
    if workspace_root is not None:
        root = workspace_root.resolve()
        inside = root == change.repo.resolve() or change.repo.resolve() in root.parents
        if not inside:
            return root / DRAFT_NAME
    return git_dir / DRAFT_NAME


def _stamp(text: str) -> str:
    return (
        text + f"\n<!-- onboard-pr-draft sha256:{hashlib.sha256(text.encode()).hexdigest()} -->\n"
    )


def is_untouched(existing: str) -> bool:
    """True when a PR_DRAFT.md is exactly as onboard wrote it (safe to replace)."""
    match = _MARKER.search(existing)
    if not match:
        return False
    content = existing[: match.start()]
    return hashlib.sha256(content.encode()).hexdigest() == match.group("sha")


def write_draft(path: Path, text: str) -> Path | None:
    """Write the draft; a draft the user edited is kept as PR_DRAFT.md.bak[.N].

    Returns the backup path when one was made.
    """
    backup: Path | None = None
    if path.exists():
        existing = path.read_text(encoding="utf-8", errors="replace")
        if not is_untouched(existing):
            backup = path.with_name(path.name + ".bak")
            n = 1
            while backup.exists():
                backup = path.with_name(f"{path.name}.bak.{n}")
                n += 1
            files.write_text(backup, existing)
    files.write_text(path, _stamp(text))
    return backup

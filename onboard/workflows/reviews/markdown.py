"""`--md`: the answer as Markdown a PR description can carry as "prior art".

Nothing in it notifies anyone: logins and any ``@name`` inside quoted review
text are put in code spans (GitHub makes no mention of those), and people are
named, never asked for review.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onboard.workflows.reviews.comments import Thread
    from onboard.workflows.reviews.results import BlameResult, PrView, ReviewsResult

_MENTION = re.compile(r"(?<![\w`/])@([A-Za-z0-9][A-Za-z0-9_/-]*)")
_QUOTE_CHARS = 300


def quiet(text: str) -> str:
    """Text with every ``@name`` in a code span, so pasting it mentions nobody."""
    return _MENTION.sub(r"`@\1`", text)


def who(login: str) -> str:
    return f"`{login}`"


def _pr(p: PrView) -> str:
    t = p.change.trailers
    link = f"[#{t.pr}]({p.url})" if t.pr and p.url else f"`{p.change.sha[:12]}`"
    approved = ", ".join(who(a) for a in t.approvers)
    extra = f" (approved by {approved})" if approved else ""
    kind = "" if t.kind == "change" else f" *{t.kind}*"
    return f"- {link}{kind} {quiet(p.change.subject)}{extra}"


def _thread(t: Thread) -> list[str]:
    root = t.root
    where = t.path_now or root.path
    status = ""
    if t.checked:
        status = f" (still at `{where}:{t.still_at}`)" if t.still_at else " (code since changed)"
    out = [f"- {who(root.user)} on #{root.pr}, `{where}`{status}: [thread]({root.url})"]
    code = root.anchor()[-3:]
    if code:
        out.append("  ```")
        out += [f"  {line}" for line in code]
        out.append("  ```")
    for c in t.comments:
        body = " ".join(c.body.split())
        if len(body) > _QUOTE_CHARS:
            body = body[: _QUOTE_CHARS - 3] + "..."
        out.append(f"  > {who(c.user)}: {quiet(body)}")
    return out


def reviews(r: ReviewsResult) -> str:
    lines = ["### Prior art (from `onboard reviews`)", ""]
    files = ", ".join(f"`{f.target.path}`" for f in r.files)
    lines.append(f"Files: {files}")
    lines.append("")
    if r.prs:
        lines.append("Pull requests that changed them, newest first:")
        lines += [_pr(p) for p in r.prs]
        lines.append("")
    rules = {rule.name: rule for f in r.files for rule in f.rules if not rule.catch_all}
    if rules:
        lines.append("Who may approve (`.github/merge_rules.yaml`):")
        for rule in rules.values():
            people = ", ".join(who(a) for a in rule.approved_by)
            lines.append(f"- {rule.name}: {people}")
        lines.append("")
    if r.threads:
        lines.append("What reviewers said on these files:")
        for t in r.threads[:15]:
            lines += _thread(t)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def blame(r: BlameResult) -> str:
    span = f"{r.start}" if r.start == r.end else f"{r.start}-{r.end}"
    lines = [f"### `{r.path}:{span}` (from `onboard blame`)", ""]
    for sha, p in r.prs.items():
        lines.append(_pr(p))
        for t in r.threads.get(sha, []):
            lines += ["  " + x for x in _thread(t)]
    return "\n".join(lines).rstrip() + "\n"

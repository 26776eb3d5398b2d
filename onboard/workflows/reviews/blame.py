"""Who last changed some lines, and, with ``walk``, who changed them before the
commits that only moved them about.

``git blame --porcelain -M -C`` follows lines moved within the file and copied
from files changed in the same commit; the mass reformats PyTorch lists in
`.git-blame-ignore-revs` are skipped with ``--ignore-rev`` (only those this
history holds: git refuses an ignore file naming a commit it lacks, and a
partial clone would go to the network for it). ``walk`` then skips reverts and
format-only commits the same way, round by round, and for a line a reland
brought back (git can blame it no further) names the pull request it relands.
A commit is format-only from its diff, never its subject: every hunk that made
an asked line changes whitespace alone (indentation, line breaks, spaces), so a
"Fix typo" that turns ``y * 5`` into ``y * 7`` is where the line changed, and a
"[codemod]" that respells a name is too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from onboard import cache, git
from onboard.workflows.reviews import trailers
from onboard.workflows.reviews.history import Landed
from onboard.workflows.reviews.tree import Tree

IGNORE_FILE = ".git-blame-ignore-revs"
WALK_ROUNDS = 5
NOT_COMMITTED = "0" * 40
_SHA = re.compile(r"^[0-9a-f]{40}$")
_IGNORED = {"key": str, "present": [str]}
FORMAT_ONLY = "format-only"
_SKIPPED_KINDS = (trailers.REVERT, trailers.RELAND, FORMAT_ONLY)


@dataclass(frozen=True)
class Skipped:
    sha: str
    kind: str  # revert / format-only
    subject: str
    pr: int | None


@dataclass
class Blamed:
    lines: list[git.blame.BlameLine]
    commits: dict[str, Landed]
    ignored_listed: int  # how many commits of the ignore file this history holds
    skipped: list[Skipped] = field(default_factory=list)
    # A reland's sha -> the pull request(s) it brings back.
    originals: dict[str, list[int]] = field(default_factory=dict)


def listed_ignore_revs(tree: Tree) -> list[str]:
    """The commits of `.git-blame-ignore-revs` that this history holds (cached per
    history and file content: finding them in a partial clone lists every commit)."""
    try:
        text = (tree.repo / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    listed = [w for ln in text.splitlines() if (w := ln.split("#", 1)[0].strip()) and _SHA.match(w)]
    if not listed:
        return []
    shallow = " ".join(git.repository.shallow_boundary(tree.repo))
    key = cache.sha1_hex(f"{git.repository.git_dir(tree.repo)}\0{shallow}\0{text}".encode())
    path = cache.cache_dir("reviews", f"ignore-revs-{key[:16]}.json")
    kept = cache.read_valid(path, _IGNORED)
    if kept and kept["key"] == key:
        return list(kept["present"])
    present = git.history.present_commits(tree.repo, listed)
    found = [sha for sha in listed if sha in present]
    cache.write_json(path, {"key": key, "present": found})
    return found


def commit_infos(tree: Tree, shas: set[str]) -> dict[str, Landed]:
    wanted = [s for s in shas if s != NOT_COMMITTED]
    out = {}
    for sha, entry in git.history.messages(tree.repo, wanted).items():
        out[sha] = Landed.of(sha, entry.date, entry.author, entry.message)
    return out


def blame(tree: Tree, path: str, ranges: Sequence[tuple[int, int]], *, walk: bool) -> Blamed:
    ignore = listed_ignore_revs(tree)
    lines = git.blame.blame(tree.repo, path, ranges, ignore_revs=ignore)
    commits = commit_infos(tree, {ln.sha for ln in lines})
    result = Blamed(lines, commits, len(ignore))
    if not walk:
        return result
    skip: list[str] = []
    for _ in range(WALK_ROUNDS):
        added = _walk_round(tree, result, skip)
        if not added:
            break
        skip += added
        result.lines = git.blame.blame(tree.repo, path, ranges, ignore_revs=[*ignore, *skip])
        commits.update(commit_infos(tree, {ln.sha for ln in result.lines} - set(commits)))
    return result


def _walk_round(tree: Tree, result: Blamed, skip: list[str]) -> list[str]:
    """The commits to skip next: format-only ones, and reverts with the commit each
    reverts (so the restored line goes back to where it was before both). A reland is
    not skipped (git would guess a neighbouring line's commit for the line it brought
    back); its original pull request is named instead."""
    added: list[str] = []
    for sha in dict.fromkeys(ln.sha for ln in result.lines if not ln.boundary):
        info = result.commits.get(sha)
        if info is None or sha in skip or sha in added:
            continue
        kind = info.trailers.kind
        if kind == trailers.REVERT:
            added.append(sha)
            reverted = info.trailers.reverts_sha
            if reverted and len(reverted) == 40:
                added += sorted(git.history.present_commits(tree.repo, [reverted]))
        elif kind == trailers.RELAND:
            if sha not in result.originals:
                result.originals[sha] = original_prs(tree, info)
            continue
        elif format_only(tree, [ln for ln in result.lines if ln.sha == sha]):
            kind = FORMAT_ONLY
            added.append(sha)
        else:
            continue
        result.skipped.append(Skipped(sha, kind, info.subject, info.trailers.pr))
    return added


def format_only(tree: Tree, lines: Sequence[git.blame.BlameLine]) -> bool:
    """Whether the commit these lines are blamed on changed only whitespace where it
    made each of them: the hunk holding the line removed and added the same text once
    spaces, tabs and line breaks are taken out (a re-indent, a line re-wrapped)."""
    for line in lines:
        hunks = git.blame.hunks_of(tree.repo, line)
        hunk = next((h for h in hunks or () if h.start <= line.orig_line < h.start + h.count), None)
        if hunk is None or _squeezed(hunk.removed) != _squeezed(hunk.added):
            return False
    return bool(lines)


def _squeezed(lines: Sequence[str]) -> str:
    return re.sub(r"\s+", "", "".join(lines))


def original_prs(tree: Tree, reland: Landed) -> list[int]:
    """The pull request a reland brings back: the PRs its message names, else the
    one whose title it repeats (found in this history)."""
    if reland.trailers.refers_to:
        return list(reland.trailers.refers_to)
    title = re.sub(
        r'^\s*(?:\[\s*re-?land(?:ed|ing)?\s*\]|re-?land(?:ed|ing)?:?)\s*"?', "", reland.title,
        flags=re.IGNORECASE,
    ).rstrip('"').strip()  # fmt: skip
    if len(title) < 8:
        return []
    prs = []
    for entry in git.history.grep_messages(tree.repo, title):
        parsed = trailers.parse(entry.message)
        if entry.sha != reland.sha and parsed.kind == trailers.CHANGE and parsed.pr:
            prs.append(parsed.pr)
    return prs[-1:]  # the oldest: the original


def original_commits(tree: Tree, numbers: list[int]) -> dict[int, Landed]:
    """The commits that landed these pull requests, where this history holds them."""
    out = {}
    for number in numbers:
        for entry in git.history.grep_messages(
            tree.repo, f"/pull/{number}$", fixed=False, max_count=5
        ):
            parsed = trailers.parse(entry.message)
            if parsed.pr == number and parsed.kind != trailers.REVERT:
                out[number] = Landed.of(entry.sha, entry.date, entry.author, entry.message)
                break
    return out

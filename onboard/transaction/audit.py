"""The ref audit: a ref of the user's that onboard moved or deleted by mistake goes back.

At the end of every run (committed or rolled back), each ref and stash entry
recorded by ``watch`` is compared with what is there now. A difference is
the user's own doing (a commit in another terminal, a switch, a rebase in a
linked worktree) unless onboard did it, and only then is it put back:

- a ref that **moved** is onboard's doing when its newest reflog entry is
  onboard's (every git command onboard runs names it in the reflog:
  ``GIT_REFLOG_ACTION``, ``update-ref -m``) and it still points where that
  entry says; it goes back with compare-and-swap;
- a ref that **vanished** is onboard's doing when this run deleted it
  (``Transaction.delete_ref``) or ran a git command that deletes it;
- a **stash entry** that vanished is restored only when this run ran a git
  command that drops stash entries.

Moves this run declared (``move_ref``, ``fast_forward``) are its work and stay.
"""

from __future__ import annotations

from pathlib import Path

from onboard import git
from onboard.errors import OnboardError
from onboard.transaction.journal import IDENTITY_PREFIX, ZERO, Entry, Journalled, of_kind


def audit(tx: Journalled, *, rolled_back: bool) -> None:
    declared = set()
    if not rolled_back:
        declared = {(e["repo"], e["ref"]) for e in of_kind(tx.entries, "moved")}
    for entry in of_kind(tx.entries, "repo"):
        repo = Path(entry["repo"])
        if not git.repository.is_repo(repo):
            continue
        try:
            now = git.refs.snapshot(repo)
            for ref, sha in entry["refs"].items():
                if not isinstance(sha, str) or (entry["repo"], ref) in declared:
                    continue
                _check_ref(tx, repo, ref, sha, now["refs"].get(ref))
            if _dropped_stash(tx.entries, entry["repo"]):
                for sha in entry["stash"]:
                    if isinstance(sha, str) and sha not in now["stash"]:
                        git.refs.stash_store(repo, sha)
                        tx.notes.append(f"restored stash entry {sha[:12]} in {repo}")
        except OnboardError as exc:
            tx.notes.append(f"could not audit {repo}: {exc.message}")


def _check_ref(tx: Journalled, repo: Path, ref: str, was: str, now: str | None) -> None:
    if now == was:
        return
    if now is None:
        if _deleted_by_onboard(tx.entries, str(repo), ref):
            git.refs.update_ref(repo, ref, was, old=ZERO)
            tx.notes.append(f"restored {ref} to {was[:12]} in {repo}")
        return
    newest = git.state.reflog_newest(repo, ref)
    if newest is not None and newest[0] == now and newest[1].startswith(IDENTITY_PREFIX):
        git.refs.update_ref(repo, ref, was, old=now)
        tx.notes.append(f"restored {ref} to {was[:12]} in {repo}")


def _names(args: list[str]) -> list[str]:
    return [a for a in args[1:] if not a.startswith("-")]


def _deleted_by_onboard(entries: list[Entry], repo: str, ref: str) -> bool:
    if any(e["ref"] == ref for e in of_kind(entries, "deleted", repo)):
        return True
    for entry in of_kind(entries, "git", repo):
        args = [str(a) for a in entry["args"]]
        verb = args[0] if args else ""
        if verb == "branch" and ref.removeprefix("refs/heads/") in _names(args):
            return True
        if verb == "tag" and ref.removeprefix("refs/tags/") in _names(args):
            return True
        if verb in ("update-ref", "symbolic-ref") and ref in _names(args):
            return True
        if verb in ("fetch", "remote") and ref.startswith(("refs/remotes/", "refs/tags/")):
            return True
    return False


def _dropped_stash(entries: list[Entry], repo: str) -> bool:
    return any([str(a) for a in e["args"][:1]] == ["stash"] for e in of_kind(entries, "git", repo))

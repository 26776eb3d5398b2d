"""Every change a run makes, each journalled before it is made, and the run itself.

- ``FileSteps``: files it writes and folders it creates (``files`` hands each write
  to the open transaction: ``onboard.journalling``);
- ``RepoWatch``: a repository as the user left it (every ref, the stash, HEAD), and
  the git commands that can delete refs (``git.core`` tells it each one);
- ``HeadSteps``: moving HEAD or the work tree, only from a clean tree;
- ``RefSteps``: creating, moving and deleting refs with compare-and-swap, so that
  git refuses when a ref is no longer where onboard saw it;
- ``Transaction``: all of them; ``commit`` keeps the run's work, ``rollback`` undoes
  what is still its own (``undo.py``); both end with the ref audit (``audit.py``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from pathlib import Path

from onboard import git
from onboard.errors import OnboardError
from onboard.transaction import audit, undo
from onboard.transaction.journal import BACKUPS, ZERO, Entry, Journal, of_kind, sha256


class FileSteps(Journal):
    """Files and folders, journalled before each change (``files`` calls
    ``before_write`` for every write under an open transaction)."""

    def before_write(self, path: Path, data: bytes) -> None:
        """``path`` is about to hold ``data``: keep a copy of what it held first (once
        per run), and the digest of what onboard wrote, which a rollback compares
        before it puts the copy back."""
        if self.owns(path):
            return
        path = Path(os.path.abspath(path))
        for entry in of_kind(self.entries, "file"):
            if entry["path"] == str(path):
                entry["sha"] = sha256(data)
                self.save()
                return
        backup = None
        if path.exists():
            self.backups.mkdir(parents=True, exist_ok=True)
            backup = self.backups / f"{len(self.entries)}-{path.name}"
            shutil.copy2(path, backup)
        self.record(
            {
                "kind": "file",
                "path": str(path),
                "sha": sha256(data),
                "backup": str(backup) if backup else None,
            }
        )

    def make_dirs(self, folder: Path) -> None:
        """``mkdir -p``, journalling each folder it creates."""
        folder = Path(os.path.abspath(folder))
        missing = []
        probe = folder
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        for path in reversed(missing):
            self.record({"kind": "dir", "path": str(path)})
            path.mkdir()


def deletes_refs(args: list[str]) -> bool:
    """Whether a git command (its arguments after ``-C``) can delete refs or
    stash entries: the only way onboard can lose a ref the audit must put back."""
    if not args:
        return False
    verb, rest = args[0], args[1:]
    return (
        (verb == "branch" and bool({"-d", "-D", "--delete", "-m", "-M"} & set(rest)))
        or (verb == "tag" and bool({"-d", "--delete"} & set(rest)))
        or (verb in ("update-ref", "symbolic-ref") and "-d" in rest)
        or (verb == "stash" and bool(rest) and rest[0] in ("drop", "pop", "clear"))
        or (verb == "fetch" and bool({"-p", "--prune", "--prune-tags"} & set(rest)))
        or (verb == "remote" and bool(rest) and rest[0] in ("rm", "remove", "prune"))
        or verb in ("reflog", "gc", "prune", "filter-branch", "replace", "pack-refs")
    )


class RepoWatch(Journal):
    def before_git(self, repo: str | os.PathLike[str] | None, args: list[str]) -> None:
        """Called by ``git.core`` for every git command while this transaction records."""
        if repo is not None and deletes_refs(args):
            self.record({"kind": "git", "repo": os.path.abspath(repo), "args": args})

    def watch(self, repo: Path) -> None:
        """Record HEAD, every ref and the stash of ``repo`` as the user left them.

        A writing command does not start while the user's own rebase, merge,
        cherry-pick, revert, am or bisect is in progress there: its commit
        would land inside the user's operation."""
        repo = Path(os.path.abspath(repo))
        if of_kind(self.entries, "repo", str(repo)) or not git.repository.is_repo(repo):
            return
        operation = git.state.operation_in_progress(repo)
        if operation is not None:
            where = shlex.quote(str(repo))
            raise OnboardError(
                f"{operation.name.capitalize()} is in progress in {repo}; onboard changes "
                "nothing there until it is finished, so that its work cannot land inside "
                "yours.",
                next_step=f"Finish it (`git -C {where} {operation.finish.removeprefix('git ')}`) "
                f"or abandon it (`git -C {where} {operation.abort.removeprefix('git ')}`), then "
                "run this command again.",
            )
        self.record({"kind": "repo", "repo": str(repo), **git.refs.snapshot(repo)})

    def bisect_starting(self, repo: Path, back_to: str) -> Entry:
        """Journal a `git bisect start` about to run in ``repo`` (``back_to``: the branch
        or commit it starts from); ``bisect_started`` once git has started it, so that a
        recovery ends this bisect, and never one the user started."""
        return self.record(
            {"kind": "bisect", "repo": str(Path(os.path.abspath(repo))), "ref": back_to}
        )

    def bisect_started(self, entry: Entry) -> None:
        entry["mark"] = git.bisect.start_mark(entry["repo"])
        self.save()

    def repo_entry(self, repo: Path) -> Entry:
        """``repo`` as the user left it (watched now if it was not yet)."""
        self.watch(repo)
        return of_kind(self.entries, "repo", str(repo))[0]

    def created_tree(self, path: Path) -> Entry:
        """A whole folder this run is putting in place (a new checkout); call
        ``tree_placed`` once it is there, so a rollback can tell it is untouched."""
        return self.record({"kind": "tree", "path": str(Path(os.path.abspath(path)))})

    def tree_placed(self, entry: Entry) -> None:
        path = Path(entry["path"])
        if git.repository.is_repo(path):
            entry["state"] = git.refs.snapshot(path)
            self.save()


class HeadSteps(RepoWatch):
    def moves_head(self, repo: Path) -> Entry:
        """This run will move HEAD or the work tree: only from a clean tree of
        tracked files, so that nothing of the user's is in the tree it moves."""
        entry = self.repo_entry(repo)
        dirty = git.status.tracked_changes(repo)
        if dirty:
            shown = ", ".join(dirty[:3]) + (" ..." if len(dirty) > 3 else "")
            raise OnboardError(
                f"The checkout {repo} has uncommitted changes to tracked files ({shown}); "
                "onboard does not move a tree that holds work it could not restore exactly.",
                next_step=f"Commit or stash them (`git -C {shlex.quote(str(repo))} stash`), then "
                "run the command again.",
            )
        if not entry.get("moves_head"):
            entry["moves_head"] = True
            self.save()
        return entry

    def switch_new_branch(self, repo: Path, branch: str) -> str | None:
        """``git checkout -b BRANCH`` at HEAD; returns a failing hook's output, if any."""
        repo = Path(os.path.abspath(repo))
        start = self.moves_head(repo)
        ref = f"refs/heads/{branch}"
        self.record({"kind": "ref", "repo": str(repo), "ref": ref, "values": [start["head"]]})
        return git.worktree.switch_new_branch(repo, branch)

    def checkout_detached(self, repo: Path, sha: str) -> None:
        """``git checkout --detach SHA`` (refused by git if an untracked file is in
        the way); rollback returns to where HEAD was while it is still there."""
        repo = Path(os.path.abspath(repo))
        self.moves_head(repo)
        self.record({"kind": "head", "repo": str(repo), "sha": sha})
        git.worktree.checkout_detached(repo, sha)

    def fast_forward(self, repo: Path, branch: str, new: str, old: str) -> None:
        """Fast-forward the checked-out ``branch`` from ``old`` to ``new``."""
        repo = Path(os.path.abspath(repo))
        self.moves_head(repo)
        ref = f"refs/heads/{branch}"
        self.record({"kind": "moved", "repo": str(repo), "ref": ref, "old": old, "new": new})
        git.worktree.merge_ff_only(repo, new)


class RefSteps(RepoWatch):
    def own_ref(self, repo: Path, ref: str) -> None:
        """A ref in onboard's own namespace this run may create: removed on rollback."""
        repo = Path(os.path.abspath(repo))
        self.repo_entry(repo)
        self.record({"kind": "ref", "repo": str(repo), "ref": ref, "values": None})

    def ref_now_at(self, repo: Path, ref: str, sha: str) -> None:
        """A ref this run created is about to move (a commit on its branch): still ours there."""
        for entry in of_kind(self.entries, "ref", str(repo)):
            if entry["ref"] == ref and entry["values"] is not None:
                entry["values"].append(sha)
                self.save()
                return
        raise AssertionError(f"{ref} was not created by this transaction")

    def create_ref(self, repo: Path, ref: str, sha: str) -> None:
        """Create ``ref`` at ``sha`` (refused by git if it exists)."""
        repo = Path(os.path.abspath(repo))
        self.repo_entry(repo)
        self.record({"kind": "ref", "repo": str(repo), "ref": ref, "values": [sha]})
        git.refs.update_ref(repo, ref, sha, old=ZERO)

    def move_ref(self, repo: Path, ref: str, new: str, old: str) -> None:
        """Move an existing ref from ``old`` to ``new``; rollback moves it back."""
        repo = Path(os.path.abspath(repo))
        self.repo_entry(repo)
        self.record({"kind": "moved", "repo": str(repo), "ref": ref, "old": old, "new": new})
        git.refs.update_ref(repo, ref, new, old=old)

    def delete_ref(self, repo: Path, ref: str, old: str) -> None:
        """Delete ``ref`` while it points at ``old`` (onboard's own leftovers only)."""
        repo = Path(os.path.abspath(repo))
        self.record({"kind": "deleted", "repo": str(repo), "ref": ref, "old": old})
        git.refs.delete_ref(repo, ref, old)


class Transaction(FileSteps, HeadSteps, RefSteps):
    """One run: its journal and its steps; ``commit`` keeps its work, ``rollback``
    undoes what is still its own (``undo.py``); both end with the ref audit."""

    def commit(self) -> None:
        """The run's work is complete: keep it, audit the user's refs, drop the journal."""
        if self.committed:
            return
        self.committed = True
        self.save()
        audit.audit(self, rolled_back=False)
        self.forget()

    def rollback(self) -> None:
        undo.rollback(self)
        audit.audit(self, rolled_back=True)
        self.forget()

    def forget(self) -> None:
        for note in self.notes:
            self.reporter.step(note)
        shutil.rmtree(self.backups, ignore_errors=True)
        with contextlib.suppress(OSError):  # another run's backups, or none
            (self.scope / BACKUPS).rmdir()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.journal_path)

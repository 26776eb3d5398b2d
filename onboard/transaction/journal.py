"""One run's journal: every change is written down before it is made.

``files.write_bytes`` and ``git.core.git`` report to the open transaction; the
methods here make onboard's own git changes (a branch, a ref, a checkout)
and journal them first. The journal lives in the scope folder, so a run that
dies (SIGKILL, power loss) leaves it for the next writer or ``onboard
recover`` (``recovery.py``), and ``undo.py`` / ``audit.py`` read it back.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import time
from pathlib import Path

from onboard import files, git
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.scope import JOURNAL
from onboard.transaction import audit, undo
from onboard.transaction.entries import IDENTITY_PREFIX, ZERO, Entry, of_kind, sha256

BACKUPS = "tx-backup"


def _deletes_refs(args: list[str]) -> bool:
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


class Transaction:
    """The journal of one run; ``commit`` keeps its work, ``rollback`` undoes
    what is still its own (``undo.py``); both end with the ref audit."""

    def __init__(
        self, scope: Path, command: str, reporter: Reporter, *, journal_name: str = JOURNAL
    ) -> None:
        self.scope = scope
        self.command = command
        self.reporter = reporter
        self.journal_name = journal_name
        self.run_id = secrets.token_hex(4)
        self.identity = f"{IDENTITY_PREFIX}{self.run_id}] {command}"
        self.started = time.time()
        self.entries: list[Entry] = []
        self.committed = False
        self.notes: list[str] = []  # what a rollback or audit did or kept, for the user

    # -- the journal on disk ---------------------------------------------------

    @property
    def journal_path(self) -> Path:
        return self.scope / self.journal_name

    def save(self) -> None:
        data = {
            "version": 2,
            "pid": os.getpid(),
            "run": self.run_id,
            "command": self.command,
            "started": self.started,
            "committed": self.committed,
            "entries": self.entries,
        }
        files.write_text(self.journal_path, json.dumps(data, indent=1))

    def _record(self, entry: Entry) -> Entry:
        self.entries.append(entry)
        self.save()
        return entry

    def _own(self, path: Path) -> bool:
        """The transaction's own files (journals, backups, the lock): never journalled."""
        path = Path(os.path.abspath(path))
        if path.parent == self.scope:
            return path.name.startswith("journal") or path.name == "lock"
        return (self.scope / BACKUPS) in path.parents

    # -- files (called by onboard.files) ---------------------------------------

    def before_write(self, path: Path, data: bytes) -> None:
        if self._own(path):
            return
        path = Path(os.path.abspath(path))
        for entry in of_kind(self.entries, "file"):
            if entry["path"] == str(path):
                entry["sha"] = sha256(data)
                self.save()
                return
        backup = None
        if path.exists():
            store = self.scope / BACKUPS / self.run_id
            store.mkdir(parents=True, exist_ok=True)
            backup = store / f"{len(self.entries)}-{path.name}"
            shutil.copy2(path, backup)
        self._record(
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
            self._record({"kind": "dir", "path": str(path)})
            path.mkdir()

    # -- git (called by onboard.git for every command) -------------------------

    def before_git(self, repo: str | os.PathLike[str] | None, args: list[str]) -> None:
        if repo is not None and _deletes_refs(args):
            self._record({"kind": "git", "repo": os.path.abspath(repo), "args": args})

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
        self._record({"kind": "repo", "repo": str(repo), **git.refs.snapshot(repo)})

    def _repo_entry(self, repo: Path) -> Entry:
        self.watch(repo)
        return of_kind(self.entries, "repo", str(repo))[0]

    def _moves_head(self, repo: Path) -> Entry:
        """This run will move HEAD or the work tree: only from a clean tree of
        tracked files, so that nothing of the user's is in the tree it moves."""
        entry = self._repo_entry(repo)
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
        start = self._moves_head(repo)
        ref = f"refs/heads/{branch}"
        self._record({"kind": "ref", "repo": str(repo), "ref": ref, "values": [start["head"]]})
        return git.worktree.switch_new_branch(repo, branch)

    def checkout_detached(self, repo: Path, sha: str) -> None:
        """``git checkout --detach SHA`` (refused by git if an untracked file is in
        the way); rollback returns to where HEAD was while it is still there."""
        repo = Path(os.path.abspath(repo))
        self._moves_head(repo)
        self._record({"kind": "head", "repo": str(repo), "sha": sha})
        git.worktree.checkout_detached(repo, sha)

    def fast_forward(self, repo: Path, branch: str, new: str, old: str) -> None:
        """Fast-forward the checked-out ``branch`` from ``old`` to ``new``."""
        repo = Path(os.path.abspath(repo))
        self._moves_head(repo)
        ref = f"refs/heads/{branch}"
        self._record({"kind": "moved", "repo": str(repo), "ref": ref, "old": old, "new": new})
        git.worktree.merge_ff_only(repo, new)

    def own_ref(self, repo: Path, ref: str) -> None:
        """A ref in onboard's own namespace this run may create: removed on rollback."""
        repo = Path(os.path.abspath(repo))
        self._repo_entry(repo)
        self._record({"kind": "ref", "repo": str(repo), "ref": ref, "values": None})

    def created_tree(self, path: Path) -> Entry:
        """A whole folder this run is putting in place (a new checkout); call
        ``tree_placed`` once it is there, so a rollback can tell it is untouched."""
        return self._record({"kind": "tree", "path": str(Path(os.path.abspath(path)))})

    def tree_placed(self, entry: Entry) -> None:
        path = Path(entry["path"])
        if git.repository.is_repo(path):
            entry["state"] = git.refs.snapshot(path)
            self.save()

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
        self._repo_entry(repo)
        self._record({"kind": "ref", "repo": str(repo), "ref": ref, "values": [sha]})
        git.refs.update_ref(repo, ref, sha, old=ZERO)

    def move_ref(self, repo: Path, ref: str, new: str, old: str) -> None:
        """Move an existing ref from ``old`` to ``new``; rollback moves it back."""
        repo = Path(os.path.abspath(repo))
        self._repo_entry(repo)
        self._record({"kind": "moved", "repo": str(repo), "ref": ref, "old": old, "new": new})
        git.refs.update_ref(repo, ref, new, old=old)

    def delete_ref(self, repo: Path, ref: str, old: str) -> None:
        """Delete ``ref`` while it points at ``old`` (onboard's own leftovers only)."""
        repo = Path(os.path.abspath(repo))
        self._record({"kind": "deleted", "repo": str(repo), "ref": ref, "old": old})
        git.refs.delete_ref(repo, ref, old)

    # -- the end -----------------------------------------------------------------

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
        shutil.rmtree(self.scope / BACKUPS / self.run_id, ignore_errors=True)
        with contextlib.suppress(OSError):  # another run's backups, or none
            (self.scope / BACKUPS).rmdir()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.journal_path)

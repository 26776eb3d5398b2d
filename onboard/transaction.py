"""The workspace transaction: every writing command goes through it.

    with transaction.begin(transaction.scope_of(ws.root), command="new-op my_frac") as tx:
        tx.watch(checkout)                      # HEAD, refs and stash as the user left them
        tx.switch_new_branch(checkout, branch)  # journalled before it happens
        files.write_text(path, text)            # journalled: created, or replaced (backed up)
        ...                                     # leaving the block commits

What it guarantees:

- **One writer.** The block holds the scope's lock (``lock.py``): a second
  writer waits a little, then refuses naming the holder.
- **All or nothing.** Any exception, Ctrl-C or SIGTERM inside the block
  rolls back exactly what the journal says this run did (signals held back
  meanwhile): HEAD returns to where it was, refs this run created are
  deleted only while they still point where this run put them, moved refs go
  back, files it created are removed (only if they still hold what it
  wrote), files it replaced get their old content back, folders it made are
  removed when empty.
- **Nothing of the user's is lost.** The refs and stash entries recorded by
  ``watch`` are audited at the end of every run, committed or rolled back;
  one that moved or vanished without this run declaring it is put back
  (and said), so even a bug in onboard cannot delete the user's work.
- **SIGKILL too.** The journal is on disk (written before each action), so
  the next writer in the same scope, holding the lock and thus knowing its
  owner is dead, rolls the dead run back before doing anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from onboard import files, git, lock, signals
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.scope import JOURNAL, scope_of, unsettled

BACKUPS = "tx-backup"
_ZERO = "0" * 40


def scope_for_repo(repo: Path) -> Path:
    """A repository's scope: its workspace's when it is a workspace checkout,
    else a folder in its git dir (bisect or pr on a clone of the user's)."""
    from onboard import workspace

    here = Path(repo).resolve()
    for folder in (here, *here.parents):
        if (folder / workspace.CONFIG_NAME).is_file():
            return scope_of(folder)
    return git.git_dir(repo) / "onboard"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: Path) -> str | None:
    try:
        return _sha256(path.read_bytes())
    except OSError:
        return None


class Transaction:
    """The journal of one run and its rollback (see the module docstring)."""

    def __init__(self, scope: Path, command: str, reporter: Reporter) -> None:
        self.scope = scope
        self.command = command
        self.reporter = reporter
        self.entries: list[dict[str, Any]] = []
        self.committed = False
        self.notes: list[str] = []  # what a rollback or audit did, for the user

    # -- the journal on disk ---------------------------------------------------

    @property
    def journal_path(self) -> Path:
        return self.scope / JOURNAL

    def _save(self) -> None:
        data = {"pid": os.getpid(), "command": self.command, "committed": self.committed}
        data["entries"] = self.entries
        files.write_text(self.journal_path, json.dumps(data, indent=1))

    def _record(self, entry: dict[str, Any]) -> dict[str, Any]:
        self.entries.append(entry)
        self._save()
        return entry

    def _own(self, path: Path) -> bool:
        """The transaction's own files (journal, backups), which it never journals."""
        path = Path(os.path.abspath(path))
        if path.parent == self.scope:
            return path.name.startswith(JOURNAL) or path.name == "lock"
        return (self.scope / BACKUPS) in path.parents

    # -- files -----------------------------------------------------------------

    def before_write(self, path: Path, data: bytes) -> None:
        """Journal a write before it happens (files.write_bytes calls this)."""
        if self._own(path):
            return
        path = Path(os.path.abspath(path))
        for entry in self.entries:
            if entry["kind"] == "file" and entry["path"] == str(path):
                entry["sha"] = _sha256(data)
                self._save()
                return
        backup = None
        if path.exists():
            store = self.scope / BACKUPS
            store.mkdir(parents=True, exist_ok=True)
            backup = store / f"{len(self.entries)}-{path.name}"
            shutil.copy2(path, backup)
        entry = {"kind": "file", "path": str(path), "sha": _sha256(data)}
        self._record({**entry, "backup": str(backup) if backup else None})

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

    # -- git -------------------------------------------------------------------

    def watch(self, repo: Path) -> None:
        """Record HEAD, every ref and the stash of ``repo`` as the user left them."""
        repo = Path(os.path.abspath(repo))
        if any(e["kind"] == "repo" and e["repo"] == str(repo) for e in self.entries):
            return
        if not git.is_repo(repo):
            return
        self._record({"kind": "repo", "repo": str(repo), **git.snapshot(repo)})

    def _repo_entry(self, repo: Path) -> dict[str, Any]:
        self.watch(repo)
        return next(e for e in self.entries if e["kind"] == "repo" and e["repo"] == str(repo))

    def _moves_head(self, repo: Path) -> dict[str, Any]:
        """This run will move HEAD or the work tree: only from a clean tree of
        tracked files, so that a rollback's forced checkout discards only this
        run's changes."""
        entry = self._repo_entry(repo)
        dirty = git.tracked_changes(repo)
        if dirty:
            shown = ", ".join(git.porcelain_path(line) for line in dirty[:3])
            raise OnboardError(
                f"The checkout {repo} has uncommitted changes to tracked files ({shown}); "
                "onboard does not move a tree that holds work it could not restore exactly.",
                next_step=f"Commit or stash them (`git -C {repo} stash`), then run the command "
                "again.",
            )
        if not entry.get("moves_head"):
            entry["moves_head"] = True
            self._save()
        return entry

    def switch_new_branch(self, repo: Path, branch: str) -> None:
        """``git switch -c BRANCH`` at HEAD; rollback switches back and deletes it."""
        repo = Path(os.path.abspath(repo))
        start = self._moves_head(repo)
        ref = f"refs/heads/{branch}"
        self._record({"kind": "ref", "repo": str(repo), "ref": ref, "values": [start["head"]]})
        git.switch_new_branch(repo, branch)

    def checkout_detached(self, repo: Path, sha: str) -> None:
        """``git checkout --detach SHA`` (refused by git if an untracked file is in
        the way); rollback returns to where HEAD was."""
        repo = Path(os.path.abspath(repo))
        self._moves_head(repo)
        git.checkout_detached_safe(repo, sha)

    def fast_forward(self, repo: Path, branch: str, new: str, old: str) -> None:
        """Fast-forward the checked-out ``branch`` from ``old`` to ``new`` (work
        tree included); rollback moves both back."""
        repo = Path(os.path.abspath(repo))
        self._moves_head(repo)
        ref = f"refs/heads/{branch}"
        self._record({"kind": "moved", "repo": str(repo), "ref": ref, "old": old, "new": new})
        git.merge_ff_only(repo, new)

    def own_ref(self, repo: Path, ref: str) -> None:
        """A ref in onboard's own namespace this run may create: removed on rollback."""
        repo = Path(os.path.abspath(repo))
        self._repo_entry(repo)
        self._record({"kind": "ref", "repo": str(repo), "ref": ref, "values": None})

    def created_tree(self, path: Path) -> None:
        """A whole folder this run put in place (a new checkout): removed on rollback."""
        self._record({"kind": "tree", "path": str(Path(os.path.abspath(path)))})

    def ref_now_at(self, repo: Path, ref: str, sha: str) -> None:
        """A ref this run created moved (a commit on its branch): still ours there."""
        for entry in self.entries:
            if entry["kind"] == "ref" and entry["ref"] == ref and entry["repo"] == str(repo):
                entry["values"].append(sha)
                self._save()
                return
        raise AssertionError(f"{ref} was not created by this transaction")

    def create_ref(self, repo: Path, ref: str, sha: str) -> None:
        """Create ``ref`` at ``sha`` (refused by git if it exists)."""
        repo = Path(os.path.abspath(repo))
        self._repo_entry(repo)
        self._record({"kind": "ref", "repo": str(repo), "ref": ref, "values": [sha]})
        git.update_ref(repo, ref, sha, old=_ZERO)

    def move_ref(self, repo: Path, ref: str, new: str, old: str) -> None:
        """Move an existing ref from ``old`` to ``new``; rollback moves it back."""
        repo = Path(os.path.abspath(repo))
        self._repo_entry(repo)
        self._record({"kind": "moved", "repo": str(repo), "ref": ref, "old": old, "new": new})
        git.update_ref(repo, ref, new, old=old)

    # -- the end -----------------------------------------------------------------

    def commit(self) -> None:
        """The run's work is complete: keep it, audit the user's refs, drop the journal."""
        if self.committed:
            return
        self.committed = True
        self._save()
        self._audit(rolled_back=False)
        self._forget()

    def rollback(self) -> None:
        with signals.critical():
            self._undo()
            self._audit(rolled_back=True)
            self._forget()

    def _forget(self) -> None:
        shutil.rmtree(self.scope / BACKUPS, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.journal_path)

    def _undo(self) -> None:
        repos = [e for e in self.entries if e["kind"] == "repo" and e.get("moves_head")]
        for entry in repos:
            self._restore_head(entry)
        for entry in reversed(self.entries):
            kind = entry["kind"]
            try:
                if kind == "ref":
                    self._drop_ref(entry)
                elif kind == "moved":
                    current = git.ref_value(Path(entry["repo"]), entry["ref"])
                    if current == entry["new"]:
                        git.update_ref(Path(entry["repo"]), entry["ref"], entry["old"])
                elif kind == "file":
                    self._undo_file(entry)
                elif kind == "dir":
                    with contextlib.suppress(OSError):  # not empty: not only ours
                        os.rmdir(entry["path"])
                elif kind == "tree":
                    shutil.rmtree(entry["path"], ignore_errors=True)
            except (OSError, OnboardError) as exc:
                self.notes.append(f"could not undo {entry.get('path') or entry.get('ref')}: {exc}")
        for entry in repos:
            self._sync_tree(entry)

    def _restore_head(self, entry: dict[str, Any]) -> None:
        repo = Path(entry["repo"])
        if not git.is_repo(repo):
            return
        branch, head = git.current_branch(repo), git.head_sha(repo)
        if (branch, head) == (entry["branch"], entry["head"]) or entry["head"] is None:
            return
        if branch == entry["branch"] and branch is not None:
            return  # the branch itself moved: its ref goes back below, then _sync_tree
        # Moves of HEAD start from a clean tree of tracked files (_moves_head),
        # so tracked changes now are this run's writes: -f discards only those.
        target = entry["branch"] or entry["head"]
        git.checkout_force(repo, target, detach=entry["branch"] is None)

    def _sync_tree(self, entry: dict[str, Any]) -> None:
        """After a checked-out branch went back, its files follow it (they were
        clean before this run, so the differences are this run's)."""
        repo = Path(entry["repo"])
        if not git.is_repo(repo) or entry["head"] is None:
            return
        back = git.current_branch(repo) == entry["branch"] and git.head_sha(repo) == entry["head"]
        if back and git.tracked_changes(repo):
            git.reset_hard(repo)

    def _drop_ref(self, entry: dict[str, Any]) -> None:
        repo = Path(entry["repo"])
        current = git.ref_value(repo, entry["ref"])
        if current is None:
            return
        if entry["values"] is None or current in entry["values"]:
            git.delete_ref(repo, entry["ref"], current)
        else:
            self.notes.append(
                f"kept {entry['ref']}: it moved to {current[:12]} after this run made it"
            )

    def _undo_file(self, entry: dict[str, Any]) -> None:
        path = Path(entry["path"])
        if entry.get("backup"):
            backup = Path(entry["backup"])
            if backup.exists():
                os.replace(backup, path)
            return
        if not path.exists():
            return
        if _file_sha(path) == entry.get("sha"):
            path.unlink()
        else:
            self.notes.append(f"kept {path}: it changed after this run wrote it")

    def _audit(self, *, rolled_back: bool) -> None:
        """Put back any recorded ref or stash entry of the user's that moved or vanished."""
        declared = {
            (e["repo"], e["ref"]) for e in self.entries if e["kind"] == "moved" and not rolled_back
        }
        for entry in (e for e in self.entries if e["kind"] == "repo"):
            repo = Path(entry["repo"])
            if not git.is_repo(repo):
                continue
            try:
                now = git.snapshot(repo)
                for ref, sha in entry["refs"].items():
                    if (str(repo), ref) in declared or now["refs"].get(ref) == sha:
                        continue
                    git.update_ref(repo, ref, sha)
                    self.notes.append(f"restored {ref} to {sha[:12]} in {repo}")
                for sha in entry["stash"]:
                    if sha not in now["stash"]:
                        git.stash_store(repo, sha)
                        self.notes.append(f"restored stash entry {sha[:12]} in {repo}")
            except OnboardError as exc:
                self.notes.append(f"could not audit {repo}: {exc.message}")
        for note in self.notes:
            self.reporter.step(note)


def _make_scope(scope: Path) -> None:
    """The scope folder, ignoring itself: where a workspace is also a git work
    tree, onboard's lock and journal never show in ``git status``."""
    if scope.is_dir():
        return
    try:
        scope.mkdir(parents=True, exist_ok=True)
        files.write_text(scope / ".gitignore", "*\n", journal=False)
    except OSError:
        pass  # lock.acquire says what is wrong with the folder


def _recover(scope: Path, reporter: Reporter) -> None:
    """Roll back a run that died without rolling back (SIGKILL, power loss)."""
    path = scope / JOURNAL
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        data = {}
    tx = Transaction(scope, str(data.get("command") or "onboard"), reporter)
    entries = data.get("entries") if isinstance(data, dict) else None
    tx.entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    if data.get("committed"):
        tx._forget()
        return
    reporter.step(
        f"an earlier `onboard {tx.command}` (pid {data.get('pid', '?')}) stopped before it "
        "finished: rolling back what it did"
    )
    tx.rollback()


class _StderrReporter(Reporter):
    def step(self, message: str) -> None:
        super().step(message)
        sys.stderr.write(f"> {message}\n")


def settle(scope: Path) -> None:
    """Before a command reads a workspace: if a run died mid-way there (its
    journal is still on disk), roll it back first, under the lock, so that no
    command ever plans from half-made state. Costs one ``stat`` otherwise."""
    if not unsettled(scope):
        return
    # Busy or unwritable: the next writer settles it.
    with (
        contextlib.suppress(OnboardError),
        signals.handlers(),
        lock.acquire(scope / "lock", command="settle"),
        signals.critical(),
    ):
        _recover(scope, _StderrReporter())


@contextlib.contextmanager
def begin(
    scope: Path,
    *,
    command: str,
    what: str | None = None,
    reporter: Reporter | None = None,
    final: bool = True,
) -> Iterator[Transaction]:
    """Lock ``scope``, journal the block's writes, commit at its end or roll back.

    ``final``: the block's commit is the end of the command's work, so a
    signal arriving afterwards no longer interrupts it (``signals``)."""
    reporter = reporter or Reporter()
    scope = Path(os.path.abspath(scope))
    _make_scope(scope)
    with signals.handlers(), lock.acquire(scope / "lock", command=command, what=what):
        with signals.critical():
            _recover(scope, reporter)
        tx = Transaction(scope, command, reporter)
        files.active.append(tx)
        try:
            yield tx
        except BaseException:
            tx.rollback()
            raise
        finally:
            files.active.remove(tx)
        # A signal arriving from here on finds the work complete: it is kept
        # and reported as done (when this is the command's last step).
        with signals.critical():
            tx.commit()
            if final:
                signals.work_complete()


def in_workspace(
    root: Path, *, command: str, reporter: Reporter | None = None, final: bool = True
) -> contextlib.AbstractContextManager[Transaction]:
    """``begin`` on a workspace's own scope (what most commands want)."""
    return begin(
        scope_of(root),
        command=command,
        what=f"the workspace {root}",
        reporter=reporter,
        final=final,
    )


@contextlib.contextmanager
def nox_session(root: Path, *, command: str) -> Iterator[Transaction]:
    """A workspace nox session (``nox -s verify``, ``nox -s build``), run by hand
    or by onboard: the same signal policy, child reaping and lock as the CLI."""
    from onboard import proc

    with (
        signals.handlers(),
        proc.reaping(),
        begin(scope_of(root), command=command, what=f"the workspace {root}", final=False) as tx,
    ):
        yield tx

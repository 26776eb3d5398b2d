"""Rollback: undo what is still this run's own, and keep everything else.

The user's git runs between and during onboard's steps (a commit, a switch,
an edit in another terminal), and a run that died is rolled back later, when
the user may have worked for hours. So every write back compares first:

- **HEAD** goes back only while it is still where this run put it (on the
  branch it created, at one of that branch's commits; detached at the commit
  it checked out; on the branch it fast-forwarded, at the new tip), and only
  when every change in the tree is a file this run wrote, still as it wrote
  it. Then, and only then, a forced checkout is safe: it discards nothing
  but this run's writes. Otherwise HEAD and the tree stay as they are, and
  the notes say what was left and the command that removes it.
- **A file** goes back (its old bytes, or removed when this run created it)
  only while its content is exactly what this run wrote.
- **A ref** this run created is deleted only while it points where this run
  put it and no work tree has it checked out; a ref it moved goes back only
  from where it moved it (``git update-ref REF OLD NEW``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from pathlib import Path

from onboard import git, signals
from onboard.errors import OnboardError
from onboard.transaction.journal import Entry, Journalled, file_sha, of_kind, sha256

# How a repository's HEAD came out of the rollback.
UNCHANGED = "unchanged"  # where the user left it before the run
BACK = "back"  # this run had moved it; it is back
LEFT = "left"  # still where this run put it, with the user's work on it: kept
THEIRS = "theirs"  # moved since by the user: theirs


def _q(path: str | Path) -> str:
    return shlex.quote(str(path))


def rollback(tx: Journalled) -> None:
    outcome: dict[str, str] = {}
    for entry in of_kind(tx.entries, "bisect"):
        try:
            _end_bisect(tx, entry)
        except OnboardError as exc:
            tx.notes.append(f"could not end the bisect in {entry['repo']}: {exc.message}")
    for entry in of_kind(tx.entries, "repo"):
        if entry.get("moves_head"):
            try:
                outcome[entry["repo"]] = _head_back(tx, entry)
            except OnboardError as exc:
                outcome[entry["repo"]] = LEFT
                tx.notes.append(f"could not move {entry['repo']} back: {exc.message}")
    _undo_files(tx, outcome)
    for entry in reversed(tx.entries):
        try:
            kind = entry["kind"]
            if kind == "ref":
                _drop_ref(tx, entry, outcome)
            elif kind == "moved":
                _move_ref_back(tx, entry)
            elif kind == "dir":
                with contextlib.suppress(OSError):  # not empty: not only ours
                    os.rmdir(entry["path"])
            elif kind == "tree":
                _undo_tree(tx, entry)
        except (OSError, OnboardError) as exc:
            why = exc.message if isinstance(exc, OnboardError) else str(exc)
            tx.notes.append(f"could not undo {entry.get('path') or entry.get('ref')}: {why}")


# -- a bisect this run started ------------------------------------------------


def _end_bisect(tx: Journalled, entry: Entry) -> None:
    """`git bisect reset` back to where this run's bisect began, only while the bisect in
    progress is still this run's: BISECT_START the very file git wrote when this run
    started it (a bisect the user started since, or before, is theirs)."""
    repo = Path(entry["repo"])
    if not git.repository.is_repo(repo):
        return
    now = git.bisect.start_mark(repo)
    if now is None:
        return  # ended already (by this run's own restore, or by the user)
    mark = entry.get("mark")
    if not isinstance(mark, dict) or now != mark:
        # Not the bisect this run started, or one it cannot tell from the user's (it died
        # between `git bisect start` and writing its mark down): the user's.
        tx.notes.append(
            f"left the bisect in progress in {repo} alone: it is not the one `onboard "
            f"{tx.command}` started; `git -C {_q(repo)} bisect log` shows it, `git -C "
            f"{_q(repo)} bisect reset` ends it"
        )
        return
    with signals.critical():
        result = git.bisect.reset(repo, entry["ref"])
    if result.ok:
        tx.notes.append(
            f"ended the `git bisect` `onboard {tx.command}` had started in {repo}: back on "
            f"{entry['ref']}"
        )
    else:
        tx.notes.append(
            f"could not end the bisect `onboard {tx.command}` had started in {repo} "
            f"(`git bisect reset {entry['ref']}`: {(result.stderr or result.stdout).strip()}); "
            f"`git -C {_q(repo)} bisect reset {_q(entry['ref'])}` ends it"
        )


# -- HEAD and the tree ---------------------------------------------------------


def _whose_head(entries: list[Entry], repo: str, branch: str | None, sha: str | None) -> str | None:
    """How HEAD is where this run put it ("created", "moved", "detached"), or None."""
    if branch is not None:
        ref = f"refs/heads/{branch}"
        for e in of_kind(entries, "ref", repo):
            if e["ref"] == ref and e["values"] and sha in e["values"]:
                return "created"
        for e in of_kind(entries, "moved", repo):
            if e["ref"] == ref and e["new"] == sha:
                return "moved"
        return None
    if any(e["sha"] == sha for e in of_kind(entries, "head", repo)):
        return "detached"
    return None


def _files_in(entries: list[Entry], repo: str) -> dict[str, Entry]:
    """This run's file entries inside ``repo``'s work tree, by path relative to it."""
    found: dict[str, Entry] = {}
    for e in of_kind(entries, "file"):
        rel = os.path.relpath(e["path"], repo)
        if not rel.startswith(".."):
            found[rel.replace(os.sep, "/")] = e
    return found


def _foreign(entries: list[Entry], repo: Path, target: str, head: str) -> list[str]:
    """Paths a forced checkout of ``target`` would overwrite that are not exactly
    what this run wrote: tracked changes, and untracked files in its way."""
    ours = _files_in(entries, str(repo))

    def is_ours(rel: str) -> bool:
        entry = ours.get(rel)
        return entry is not None and file_sha(repo / rel) == entry["sha"]

    changed = git.status.tracked_changes(repo)
    foreign = [p for p in changed if not is_ours(p)]
    for rel in git.state.paths_only_in(repo, target, head):
        present = (repo / rel).exists() or (repo / rel).is_symlink()
        if present and rel not in changed and not is_ours(rel):
            foreign.append(rel)
    return foreign


def _head_back(tx: Journalled, entry: Entry) -> str:
    repo = Path(entry["repo"])
    if entry["head"] is None or not git.repository.is_repo(repo):
        return UNCHANGED
    sha, branch = git.refs.head_state(repo)
    if (branch, sha) == (entry["branch"], entry["head"]):
        return UNCHANGED
    how = _whose_head(tx.entries, entry["repo"], branch, sha)
    if how is None or sha is None:
        return THEIRS
    target = entry["branch"] or entry["head"]
    target_sha = entry["head"]
    if how == "moved":
        target_sha = next(
            e["old"]
            for e in of_kind(tx.entries, "moved", entry["repo"])
            if e["ref"] == f"refs/heads/{branch}" and e["new"] == sha
        )
    foreign = _foreign(tx.entries, repo, target_sha, sha)
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        here = f"branch `{branch}`" if branch else f"the commit {sha[:12]}"
        back = f"`git -C {_q(repo)} checkout {target if entry['branch'] else target_sha[:12]}`"
        tx.notes.append(
            f"left {repo} on {here}, where `onboard {tx.command}` had put it, because it holds "
            f"changes of yours since ({shown}); when they are committed or stashed, {back} "
            "returns to where you were"
            + (
                f", and `git -C {_q(repo)} branch -D {branch}` drops onboard's branch"
                if how == "created"
                else ""
            )
        )
        return LEFT
    with signals.critical():
        if how == "moved":
            # The checked-out branch itself goes back, with its tree: nothing
            # in the tree is the user's (checked above), the ref is still at
            # this run's tip (head_state above).
            result = git.core.git(
                repo, "reset", "-q", "--hard", target_sha, check=False, timeout=None
            )
            switch = git.state.Switch(
                result.ok, error=None if result.ok else (result.stderr.strip() or "git failed")
            )
        else:
            switch = git.state.checkout(repo, target, detach=entry["branch"] is None, force=True)
    if switch.hook_failure:
        tx.notes.append(
            f"git switched {repo} back to {target[:40]}, then a hook of yours in "
            f"{git.state.hooks_folder(repo)} failed: {switch.hook_failure}"
        )
    if not switch.moved:
        tx.notes.append(f"could not switch {repo} back to {target[:40]}: {switch.error}")
        return LEFT
    return BACK


# -- files ---------------------------------------------------------------------


def _repo_of(path: str, repos: list[str]) -> str | None:
    best = None
    for repo in repos:
        rel = os.path.relpath(path, repo)
        if not rel.startswith("..") and (best is None or len(repo) > len(best)):
            best = repo
    return best


def _undo_files(tx: Journalled, outcome: dict[str, str]) -> None:
    repos = [e["repo"] for e in of_kind(tx.entries, "repo")]
    by_repo: dict[str | None, list[Entry]] = {}
    for entry in of_kind(tx.entries, "file"):
        by_repo.setdefault(_repo_of(entry["path"], repos), []).append(entry)
    for repo, group in by_repo.items():
        try:
            if repo is None or not git.repository.is_repo(repo):
                for entry in reversed(group):
                    _undo_file(tx, entry)
            else:
                _undo_files_in_repo(tx, Path(repo), group, outcome.get(repo, UNCHANGED))
        except (OSError, OnboardError) as exc:
            why = exc.message if isinstance(exc, OnboardError) else str(exc)
            tx.notes.append(f"could not undo onboard's files in {repo}: {why}")


def _undo_files_in_repo(tx: Journalled, repo: Path, group: list[Entry], state: str) -> None:
    if state == LEFT:
        return  # they are part of the branch the user works on now (said in _head_back)
    rels = {e["path"]: os.path.relpath(e["path"], repo).replace(os.sep, "/") for e in group}
    changed = set(git.status.tracked_changes(repo))
    index = git.state.index_blobs(repo, list(rels.values()))
    staged: list[str] = []
    for entry in reversed(group):
        rel = rels[entry["path"]]
        path = Path(entry["path"])
        committed = rel not in changed and rel in index
        if committed and state != BACK:
            # Clean at the user's HEAD: what is there is their commit's.
            if file_sha(path) == entry["sha"] and entry["backup"] is not None:
                tx.notes.append(f"kept {path}: it is committed as onboard wrote it on your branch")
            continue
        # Our write was staged: its index entry goes when the file goes back.
        was_staged = rel in index and index[rel] == git.state.blob_of_file(repo, path, as_path=rel)
        rewritten = state == BACK and committed
        if _undo_file(tx, entry, repo=repo, rel=rel, rewritten=rewritten) and was_staged:
            staged.append(rel)
    git.state.unstage(repo, staged)


def _undo_file(
    tx: Journalled,
    entry: Entry,
    *,
    repo: Path | None = None,
    rel: str = "",
    rewritten: bool = False,
) -> bool:
    """Undo one file write if the file is still what this run wrote; True when it did.

    ``rewritten``: the rollback's own checkout just wrote this tracked file from
    git; its bytes may differ from the user's original only by git's line-ending
    filters (``core.autocrlf``), and then the original bytes come back too."""
    path = Path(entry["path"])
    current = file_sha(path)
    if entry["backup"] is None:
        if current is None:
            return False
        if current == entry["sha"]:
            path.unlink()
            return True
        tx.notes.append(f"kept {path}: it changed after onboard wrote it")
        return False
    backup = Path(entry["backup"])
    try:
        original = backup.read_bytes()
    except OSError:
        tx.notes.append(f"could not restore {path}: onboard's copy of it is gone")
        return False
    if current == sha256(original):
        return False
    same_content = (
        rewritten
        and repo is not None
        and current is not None
        and git.state.blob_of_file(repo, path, as_path=rel)
        == git.state.blob_of_file(repo, backup, as_path=rel)
    )
    if current == entry["sha"] or same_content:
        _put_back(backup, path)
        return True
    tx.notes.append(f"kept {path}: it changed after onboard wrote it")
    return False


def _put_back(backup: Path, path: Path) -> None:
    """The backup's bytes and mode at ``path`` in one rename (the backup stays
    until the journal goes: a rollback cut short can run again)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.restore.tmp")
    try:
        shutil.copy2(backup, tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


# -- refs and trees ------------------------------------------------------------


def _drop_ref(tx: Journalled, entry: Entry, outcome: dict[str, str]) -> None:
    repo = Path(entry["repo"])
    if not git.repository.is_repo(repo):
        return
    ref = entry["ref"]
    current = git.refs.ref_value(repo, ref)
    if current is None:
        return
    is_branch = ref.startswith("refs/heads/")
    name = ref.removeprefix("refs/heads/")
    where = git.worktree.checked_out_branches(repo).get(ref) if is_branch else None
    still_ours = entry["values"] is None or current in entry["values"]
    if still_ours and where is None:
        git.refs.delete_ref(repo, ref, current)
        return
    if where is not None and Path(where) == repo and outcome.get(entry["repo"]) == LEFT:
        return  # said with HEAD
    remove = (
        f"`git -C {_q(repo)} branch -D {name}`"
        if is_branch
        else f"`git -C {_q(repo)} update-ref -d {ref}`"
    )
    if where is not None:
        tx.notes.append(
            f"kept onboard's branch `{name}`: it is checked out in {where}; switch that work "
            f"tree to another branch, then {remove} removes it"
        )
    else:
        tx.notes.append(
            f"kept `{name}` (made by `onboard {tx.command}`): it moved to {current[:12]} since, "
            f"so it holds work that is not onboard's; when you no longer need it, {remove}"
        )


def _move_ref_back(tx: Journalled, entry: Entry) -> None:
    repo = Path(entry["repo"])
    if not git.repository.is_repo(repo):
        return
    current = git.refs.ref_value(repo, entry["ref"])
    if current is None or current != entry["new"]:
        return  # back already, or moved on (or deleted) by the user since: theirs
    if git.worktree.checked_out_branches(repo).get(entry["ref"]) is not None:
        tx.notes.append(
            f"kept {entry['ref']} at {current[:12]}: it is checked out with work of yours on it"
        )
        return
    git.refs.update_ref(repo, entry["ref"], entry["old"], old=entry["new"])


def _undo_tree(tx: Journalled, entry: Entry) -> None:
    """Remove a checkout this run put in place, only while it is exactly as made."""
    path = Path(entry["path"])
    if not path.exists():
        return
    state = entry.get("state")
    untouched = (
        isinstance(state, dict)
        and git.repository.is_repo(path)
        and git.refs.snapshot(path) == state
        and not git.core.git(
            path, "status", "--porcelain", "--ignored", "--untracked-files=all"
        ).stdout.strip()
    )
    if untouched:
        shutil.rmtree(path)
        return
    tx.notes.append(
        f"kept {path}, the checkout `onboard {tx.command}` had made: it has changed since (or "
        f"onboard cannot tell it has not); when you no longer need it, `rm -rf {_q(path)}`"
    )

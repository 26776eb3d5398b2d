"""A new workspace: built in a hidden folder beside DIR and renamed into place at
the end, so a failure (an unreachable remote, a missing commit, Ctrl-C) leaves
nothing behind."""

from __future__ import annotations

import errno
import os
import shlex
import shutil
from pathlib import Path

from onboard import git, lock, signals, staging
from onboard.errors import BadInput, OnboardError
from onboard.workflows import reference_tree
from onboard.workflows.setup import disk, resume, sources, validate, workspace_files
from onboard.workflows.setup.installed import Installed, Target
from onboard.workflows.setup.layout import CHECKOUT_DIR
from onboard.workflows.setup.request import SetupJob
from onboard.workflows.setup.result import SetupResult


def create(req: SetupJob, installed: Installed) -> SetupResult:
    target = installed.target(req.commit) if not req.from_wheel else None
    tree = installed.tree_plan() if req.from_wheel else None
    needed = disk.check(req, tree)
    parent = req.root.parent
    made: list[Path] = []
    try:
        made = _make_parents(parent)
    except OSError as exc:
        raise _unwritable(req, exc) from exc
    try:
        # Two `onboard setup` runs making the same folder: one waits for the other.
        with lock.acquire(
            parent / f".{req.root.name}.onboard-lock",
            command=f"setup {req.root}",
            what=str(req.root),
            remove_on_release=True,
        ):
            existing = validate.existing_workspace(req.root)
            if existing is not None:  # the other run made it meanwhile
                return resume.resume(req, installed, existing)
            result = _create_in_staging(req, installed, parent, target, tree)
    except BaseException:
        _remove_empty(made)
        raise
    result.disk = needed
    result.actions.append(f"workspace moved into place at {req.root}")
    # git's stat cache, written with the checkout, marks the files written in the same
    # second as unsure; refreshed once now, a read-only `git status` (which writes no
    # cache back: git.core.read_only_env) need not re-read them on every call.
    git.status.refresh_index(req.root / CHECKOUT_DIR)
    return result


def _create_in_staging(
    req: SetupJob,
    installed: Installed,
    parent: Path,
    target: Target | None,
    tree: reference_tree.TreePlan | None,
) -> SetupResult:
    """Build the workspace in a hidden sibling folder, then rename it into place."""
    for stale in staging.sweep(parent, req.root.name):
        req.reporter.step(f"removed {stale.name}, left by an onboard setup that was killed")
    try:
        st = staging.make(parent, req.root.name)
    except OSError as exc:
        raise _unwritable(req, exc) from exc
    placed = False
    try:
        result = sources.make(req, installed, st.path / CHECKOUT_DIR, target, tree, state="created")
        workspace_files.write(req, installed.env, st.path, result)
        with signals.critical():  # the rename is the commit point: whole or not at all
            try:
                if req.root.exists():
                    req.root.rmdir()  # empty (checked above); rename needs the name free
                os.rename(st.path, req.root)
            except OSError as exc:
                raise _unwritable(req, exc) from exc
            placed = True
            st.placed(req.root)
            if req.final:
                signals.work_complete()
    except BaseException:
        if not placed:
            shutil.rmtree(st.path, ignore_errors=True)
        st.release()
        raise
    return result


def _unwritable(req: SetupJob, exc: OSError) -> OnboardError:
    """A folder onboard cannot create or rename (read-only, not yours, a mount point)."""
    root = req.root
    where = exc.filename or root.parent
    again = req.new_dir_command
    how = (
        f"onboard builds the workspace in a hidden folder beside {root.name} and "
        "renames it into place, so it must be able to write in "
        f"{root.parent}"
    )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.EBUSY):
        return BadInput(
            f"onboard cannot write {where} ({exc.strerror}); {how}.",
            next_step=f"Pick a folder you can write to (e.g. under your home): `{again}`.",
        )
    flag = " --from-wheel" if req.from_wheel else ""
    if root.is_symlink():
        # rmdir and rename act on the link, not the folder it points to.
        target = root.resolve()
        return BadInput(
            f"{root} is a symbolic link to {target}; {how}, which a link does not allow.",
            next_step="Pass the folder it points to: "
            f"`onboard setup {shlex.quote(str(target))}{flag}`.",
        )
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return OnboardError(
        f"onboard could not create {where} ({exc.strerror}); {how}.",
        next_step=("Free some space or pick another folder" if full else "Pick another folder")
        + f": `{again}`.",
    )


def _make_parents(folder: Path) -> list[Path]:
    """mkdir -p, returning the folders it created (to remove them on failure)."""
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    made: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            made.append(path)
    except OSError:
        _remove_empty(made)
        raise
    return made


def _remove_empty(made: list[Path]) -> None:
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:
            break

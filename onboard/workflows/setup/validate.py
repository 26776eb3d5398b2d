"""The checks on `onboard setup DIR`'s folder and options, before any work (exit 2)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from onboard import git, pathnames, workspace
from onboard.errors import BadInput
from onboard.workflows.checkout import DEFAULT_REMOTE

# The hidden staging folder beside DIR: ".{DIR}.onboard-partial-" + 8 hex digits.
_STAGING_EXTRA = len("..onboard-partial-") + 8


def workspace_root(dest: str | os.PathLike[str]) -> Path:
    """DIR as an absolute path; a link to a folder is followed."""
    root = Path(dest).expanduser().absolute()
    if root.is_symlink() and root.is_dir():
        # The workspace goes where the link points: the link itself cannot be
        # emptied (rmdir) and renamed over like a folder.
        root = root.resolve()
    return root


def check_options(
    dest: str | os.PathLike[str],
    *,
    from_wheel: bool,
    remote: str | None,
    commit: str | None,
    reference: str | os.PathLike[str] | None,
    with_submodules: bool,
    fetch_timeout: float,
) -> None:
    if from_wheel and (remote or commit or reference or with_submodules):
        raise BadInput(
            "--from-wheel rebuilds the tree from the installed wheel; --remote, --commit, "
            "--reference and --with-submodules only apply to a git checkout.",
            next_step="Drop those options, or drop --from-wheel to fetch a checkout.",
        )
    if fetch_timeout <= 0:
        raise BadInput("--fetch-timeout must be a positive number of seconds.")
    if not str(dest).strip():
        raise BadInput(
            "The workspace folder is an empty name (an unset variable such as `$WS`?); onboard "
            "will not turn the current folder into a workspace by accident.",
            next_step="Name the folder: `onboard setup ~/pt-ws --from-wheel`.",
        )


def check_name_room(root: Path) -> None:
    """DIR's name must leave room for the staging folder's (exit 2, not ENAMETOOLONG later)."""
    problem = pathnames.long_name(str(root), extra=_STAGING_EXTRA)
    if problem:
        raise BadInput(
            f"onboard cannot make {root}: {problem} (the workspace is built in a hidden "
            f"folder `.{root.name[:12]}....onboard-partial-XXXXXXXX` beside it).",
            next_step="Pick a shorter folder name and run `onboard setup DIR` again.",
        )


def existing_workspace(root: Path) -> workspace.Workspace | None:
    """The workspace already in DIR (None: DIR is new or empty); any other folder is refused,
    and so is a new DIR whose parent folder is missing."""
    if root.exists() and not root.is_dir():
        raise BadInput(
            f"{root} exists and is not a folder.",
            next_step="Pick a new folder: `onboard setup DIR`.",
        )
    if not root.exists() and not root.parent.is_dir():
        # Like mkdir without -p: a typo in a folder above DIR (~/pt-ws/ws for ~/pt-ws2/ws)
        # would otherwise become a tree of new folders, made silently.
        missing = root.parent
        while not missing.parent.exists():
            missing = missing.parent
        what = "is not a folder" if missing.exists() else "does not exist"
        raise BadInput(
            f"onboard makes the workspace folder {root.name} itself, but not the folders above "
            f"it: {missing} {what}.",
            next_step=f"Check the path; if it is right, make the folder above first "
            f"(`mkdir -p {shlex.quote(str(root.parent))}`) and run the same `onboard setup` "
            "again.",
        )
    if (root / workspace.CONFIG_NAME).is_file():
        return workspace.load_for_writing(root)
    if root.is_dir() and any(root.iterdir()):
        raise BadInput(
            f"{root} is not empty and is not an onboard workspace (no {workspace.CONFIG_NAME}); "
            "onboard will not write into it.",
            next_step="Pick a new or empty folder: `onboard setup NEW_DIR` (or "
            "`onboard setup NEW_DIR --from-wheel`).",
        )
    return None


def reference_clone(reference: str | os.PathLike[str]) -> Path:
    """``--reference``: an existing git clone to borrow objects from."""
    path = Path(reference).expanduser().absolute()
    if not path.is_dir() or not git.repository.is_repo(path):
        raise BadInput(
            f"--reference {path} is not a git clone.",
            next_step="Pass the folder of an existing PyTorch clone, or drop --reference.",
        )
    return path


def normalize_remote(remote: str | None) -> str:
    """``--remote``: the default remote, a URL, or a local clone's absolute path."""
    if not remote:
        return DEFAULT_REMOTE
    # git runs inside the new repository: a relative path must become absolute.
    local = Path(remote).expanduser()
    if "://" not in remote and local.exists():
        return str(local.absolute())
    return remote

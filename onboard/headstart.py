"""Child processes a command can start from its bare arguments, before Click loads.

A warm `onboard harvest` answers from its cache once `git status` says the
tree is as it was. Importing Click and the command's modules takes as long
as that git call, so the CLI starts it first, from the arguments as typed
(``begin``), and the command takes it when it asks about the same tree
(``take_tree_state``). The arguments are only read, never trusted: the
command resolves its tree the usual way, and a child started for any other
tree, or never taken, is stopped (SIGTERM: git removes its index.lock).

Nothing here may fail a run: a head start that cannot be made is simply not
made, and the command does the same work itself a moment later.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onboard.git.status import PendingState

# harvest's options that change which tree it reads or whether it reads its
# cache (and so whether it asks `git status` at all); `show` reads the cache
# from a subcommand. With any of them the guess is left to the command.
_HARVEST_OWN_CHOICE = ("--repo", "--workspace", "--no-cache", "--searcher", "show", "-h", "--help")

_started: dict[Path, PendingState] = {}


@contextlib.contextmanager
def begin(args: Sequence[str]) -> Iterator[None]:
    """Start what ``args`` will need for the block; stop what was not taken at its end."""
    try:
        with contextlib.suppress(Exception):  # a head start is never worth a failed run
            _start(list(args))
        yield
    finally:
        _stop_all()


def take_tree_state(root: Path) -> PendingState | None:
    """The `git status` of ``root`` started ahead, if any (others started are stopped)."""
    found = _started.pop(root, None)
    _stop_all()
    return found


def _start(args: list[str]) -> None:
    root = _harvest_root(args)
    if root is None:
        return
    from onboard import git

    _started[root] = git.status.start_tree_state(root)


def _harvest_root(args: list[str]) -> Path | None:
    """The checkout a plain `onboard harvest [filters]` will read, when it is a workspace's."""
    if not args or args[0] != "harvest":
        return None
    for arg in args[1:]:
        if arg.split("=", 1)[0] in _HARVEST_OWN_CHOICE:
            return None
    from onboard import workspace as ws_mod
    from onboard.errors import OnboardError
    from onboard.scope import scope_of, unsettled

    try:
        folder = ws_mod.locate()  # ONBOARD_WORKSPACE, else up from here, as the command
        # A run that died there is rolled back by the command, under its lock: no
        # git may look at that tree before.
        if folder is None or unsettled(scope_of(folder)):
            return None
        checkout = ws_mod.load(folder).checkout_path
    except (OnboardError, OSError, ValueError):
        return None
    return checkout.resolve() if checkout.is_dir() else None


def _stop_all() -> None:
    while _started:
        _root, pending = _started.popitem()
        pending.stop()

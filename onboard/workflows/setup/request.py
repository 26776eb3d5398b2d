"""What `onboard setup` was asked to do (``SetupRequest``), and the same with its
options checked (``SetupJob``), which the steps take."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from onboard import workspace
from onboard.report import Reporter
from onboard.workflows.checkout import DEFAULT_FETCH_TIMEOUT


@dataclass(frozen=True, kw_only=True)
class SetupRequest:
    """``dest``: the workspace folder. ``from_wheel``: a reference tree rebuilt from the
    installed wheel, offline. ``remote``: where to fetch from (None: GitHub). ``commit``:
    this sha or tag instead of the installed torch's. ``reference``: a clone to borrow
    objects from. ``with_submodules``: check those out too. ``fetch_timeout``: seconds the
    remote may send nothing. ``python``: the interpreter whose torch it is. ``then_build``:
    `onboard build` after a good setup. ``final``: setup is the whole command (not followed
    by a build), so a signal after the workspace is complete no longer undoes it."""

    dest: str | os.PathLike[str]
    from_wheel: bool = False
    remote: str | None = None
    commit: str | None = None
    reference: str | os.PathLike[str] | None = None
    with_submodules: bool = False
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT
    python: str | None = None
    then_build: bool = False
    final: bool = True


@dataclass(frozen=True)
class SetupJob:
    """``remote`` is the URL or absolute path to fetch from (None for ``--from-wheel``);
    ``commit`` is ``--commit`` as given; ``final``: setup is the whole command (not
    followed by a build), so a signal after the workspace is complete no longer undoes it."""

    root: Path
    from_wheel: bool
    remote: str | None
    commit: str | None
    reference: Path | None
    with_submodules: bool
    fetch_timeout: float
    reporter: Reporter
    final: bool = True

    @property
    def kind(self) -> str:
        return workspace.REFERENCE if self.from_wheel else workspace.CLONE

    @property
    def new_dir_command(self) -> str:
        """The command that sets up another workspace of the same kind."""
        return "onboard setup NEW_DIR" + (" --from-wheel" if self.from_wheel else "")

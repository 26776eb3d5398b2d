"""What `onboard setup` was asked to do, its options already checked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onboard import workspace
from onboard.report import Reporter


@dataclass(frozen=True)
class SetupRequest:
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

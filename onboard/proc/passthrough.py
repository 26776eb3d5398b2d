"""A user's program that talks to the terminal itself (`onboard stuck -- CMD`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from onboard.proc.spawn import spawn, stop_group


class Passthrough:
    """A user's program whose output goes straight to onboard's own stdout and stderr
    (``stdout_to_stderr``: both to stderr, so a ``--json`` answer stays alone on
    stdout), in its own session: Ctrl-\\ in the terminal reaches onboard, not the
    program. Its environment is the user's own (no ``LC_ALL=C``), marked like every
    child so that ``reaping`` stops whatever it started that is left."""

    def __init__(self, args: Sequence[str], *, stdout_to_stderr: bool = False) -> None:
        self.argv = list(args)
        self._popen, self._child = spawn(
            self.argv,
            env=os.environ,
            stdout=sys.stderr.fileno() if stdout_to_stderr else None,
        )

    @property
    def pid(self) -> int:
        return self._popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def stop(self, grace: float | None = None) -> int:
        """Stop it with its process group (SIGTERM, then SIGKILL); its exit status."""
        if self._popen.poll() is None:
            stop_group(self._popen, self._child, grace=grace)
        return self._popen.wait()

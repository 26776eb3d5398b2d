"""A user's program that talks to the terminal itself (`onboard stuck -- CMD`)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence

from onboard.proc import contain
from onboard.proc.spawn import GRACE_SECONDS, new_token, spawn, stop_group
from onboard.proc.tree import Leftover


class Passthrough:
    """A user's program whose output goes straight to onboard's own stdout and stderr
    (``stdout_to_stderr``: both to stderr, so a ``--json`` answer stays alone on
    stdout), in its own session: Ctrl-\\ in the terminal reaches onboard, not the
    program. Its environment is the user's own (no ``LC_ALL=C``), marked like every
    child; it runs contained (``contain.Group``), so that ``end`` stops and names what
    it left running, whatever that did to its environment, session or parent. Its
    output is never held: it goes where the terminal shows it. ``extra_env``: what a
    command adds to the user's environment (`compile`'s TORCH_TRACE folder)."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        stdout_to_stderr: bool = False,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = list(args)
        token = new_token()
        self._group = contain.Group(shlex.join(self.argv), token)
        try:
            self._popen, self._child = spawn(
                self.argv,
                env={**os.environ, **(extra_env or {})},
                stdout=sys.stderr.fileno() if stdout_to_stderr else None,
                token=token,
                preexec_fn=self._group.preexec,
            )
        except BaseException:
            self._group.close()
            raise
        self._group.started(self._popen.pid)
        self.left_running: tuple[Leftover, ...] = ()

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

    def end(self) -> tuple[Leftover, ...]:
        """Once the program has exited (or been stopped): stop what it left running and
        return it (``left_running``, also kept there); the group and its record go."""
        self._popen.wait()
        try:
            self.left_running += tuple(self._group.stop(GRACE_SECONDS))
        finally:
            self._group.close()
        return self.left_running

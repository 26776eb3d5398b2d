"""A child that gives one answer and may go on working after it (`where`'s indexer)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from onboard.children import onboard_answer
from onboard.errors import ProcTimeout
from onboard.proc import detached
from onboard.proc.spawn import environ, spawn, stop_group


class Child:
    """A command that gives one answer and may go on working after it.

    ``where`` asks a child interpreter about one op, and that child then goes on
    to index every op for the next calls: onboard reads the answer line and
    leaves (``release``) without waiting. The child runs in its own session
    (Ctrl-C in the terminal is onboard's, not the child's); until its answer is
    in, a failure, a timeout or Ctrl-C here stops it with its process group.
    """

    def __init__(
        self,
        args: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        import tempfile

        self.argv = [os.fspath(a) for a in args]
        # A file, not a pipe: nobody reads it while the answer is awaited.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by release)
        try:
            self._proc, self._token = spawn(
                self.argv,
                cwd=cwd,
                env=env if env is not None else environ(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
            )
        except BaseException:
            self._stderr.close()
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    def answer(self, request: bytes, *, timeout: float) -> Any:
        """Send ``request`` on stdin and return the child's first answer (``onboard_answer``:
        the child goes on after it); None when the child ended without a readable one
        (see ``failure``)."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        timer = threading.Timer(timeout, stop_group, (proc, self._token))
        timer.start()
        try:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(request)
                proc.stdin.close()
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if line.startswith(onboard_answer.MARKER):
                    found, _garbled = onboard_answer.read(line)
                    return found[0] if found else None
            proc.wait()
            if not timer.is_alive():
                raise ProcTimeout(
                    f"{self.argv[0]} gave no answer within {timeout:g} s and was stopped.",
                    args=self.argv,
                    returncode=None,
                )
            return None
        except BaseException:
            stop_group(proc, self._token)
            raise
        finally:
            timer.cancel()

    def failure(self) -> tuple[int | None, str]:
        """(exit status, its stderr) of a child that ended without answering."""
        self._stderr.seek(0)
        return self._proc.poll(), self._stderr.read().decode("utf-8", "replace")

    def release(self) -> None:
        """Leave the child to finish on its own (it must not write to stdout any more)."""
        assert self._proc.stdout is not None
        self._proc.stdout.close()
        self._stderr.close()
        detached.release(self._proc)

    def stop(self) -> None:
        stop_group(self._proc, self._token)
        self.release()

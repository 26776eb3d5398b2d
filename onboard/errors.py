"""One family of expected failures.

Every expected failure is an ``OnboardError``: the CLI prints its paragraph
(what went wrong, then the next step) and exits with its ``exit_code``.
Anything else is a bug and goes through the crash handler (exit 3, log file).
"""

from __future__ import annotations


class OnboardError(Exception):
    """An expected failure, told as one paragraph that names the next step."""

    exit_code = 1

    def __init__(self, message: str, *, next_step: str | None = None) -> None:
        super().__init__(message)
        self.message = message.strip()
        self.next_step = next_step.strip() if next_step else None

    def paragraph(self) -> str:
        if self.next_step:
            # Messages often end with a quoted tool error ("... Connection
            # refused"): close the sentence before naming the next step.
            end = "" if self.message.endswith((".", "!", "?", ":")) else "."
            return f"{self.message}{end} {self.next_step}"
        return self.message


class BadInput(OnboardError):
    """The user's arguments cannot work (exit 2, like a usage error)."""

    exit_code = 2


class NoWorkspace(OnboardError):
    """No onboard workspace was found where one is needed."""


class ProcError(OnboardError):
    """A subprocess failed; the message carries the command and its output."""

    def __init__(
        self,
        message: str,
        *,
        args: list[str],
        returncode: int | None,
        stdout: str = "",
        stderr: str = "",
        next_step: str | None = None,
    ) -> None:
        super().__init__(message, next_step=next_step)
        self.cmd = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def details(self) -> str:
        """The pre-commit style block: command, return code, output indented."""

        def indent(text: str) -> str:
            text = text.rstrip()
            return "\n".join("    " + line for line in text.splitlines()) if text else "    (none)"

        return (
            f"command: {' '.join(self.cmd)}\n"
            f"return code: {self.returncode}\n"
            f"stdout:\n{indent(self.stdout)}\n"
            f"stderr:\n{indent(self.stderr)}"
        )


class ProcTimeout(ProcError):
    """A subprocess ran past its time limit and was killed."""

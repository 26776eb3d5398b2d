"""The user's program: which interpreter, what to run, and running it in a child.

``onboard trace -- python repro.py ARGS`` (also ``-m MODULE``, ``-c CODE``) or
``onboard trace -c "torch.zeros(3, 4)"``. The child is the chosen
interpreter running onboard's child code (``children/onboard_launch.py`` plus a
body) through ``proc.ask_child`` with a time limit; proc starts it in its own
session, so a timeout or Ctrl-C stops it with everything it started. The child
imports torch before it puts the program's folder on ``sys.path``: a PyTorch
checkout's ``torch/`` next to the script (or in the current folder) cannot
shadow the installed torch, while ``import mymodel`` next to the script still
works. It writes its answer to a file in a temporary folder, never into a
workspace.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc
from onboard.errors import BadInput, OnboardError, ProcTimeout
from onboard.jsonable import spec
from onboard.proc import Leftover, left_note
from onboard.redact import redact
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.program import ProgramOptions
from onboard.workspace import find as find_workspace

DEFAULT_TIMEOUT = 300.0
# Interpreter options that take a value, and those without one that are harmless here.
_WITH_VALUE = ("-W", "-X")
_FLAGS = ("-u", "-B", "-s", "-E", "-O", "-OO", "-q")


@dataclass(frozen=True, kw_only=True)
class LaunchOptions(ProgramOptions):
    """How `trace` and `graph` run the program under their child: ``code`` (-c) instead
    of a command, the workspace's build instead of the installed torch
    (``workspace_build``), and how long it may run (``timeout``, seconds)."""

    code: str | None = None
    workspace_build: bool = False
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class Program:
    kind: str  # script / module / code
    target: str  # the script's path, the module name or the code
    args: tuple[str, ...]
    python: str
    # interpreter options passed on (-W, -X, -u ...)
    options: tuple[str, ...] = field(metadata=spec(omit=True))
    shown: str = field(metadata=spec(key="command"))  # the command as the user would type it
    # `onboard trace -c`: torch is imported for the code
    preimport: bool = field(default=False, metadata=spec(omit=True))

    @property
    def runnable(self) -> str:
        """The command that runs the program by itself, as the tracer's child runs it (with
        the interpreter named, and `-c` code with the torch import onboard adds)."""
        if self.kind == "code":
            code = f"import torch; {self.target}" if self.preimport else self.target
            what = ["-c", code]
        else:
            what = ["-m", self.target] if self.kind == "module" else [self.target]
        return shlex.join([self.python, *self.options, *what, *self.args])


def _is_python(word: str) -> bool:
    return Path(word).name.startswith("python")


def interpreter(
    given: str | None, *, python: str | None, workspace_build: bool, workspace: str | None
) -> str:
    """--python, else the workspace build's, else the command's own python, else onboard's."""
    if python:
        return python
    if workspace_build:
        ws = find_workspace(workspace)
        if ws is None:
            raise BadInput(
                "--workspace-build runs the program with a workspace's build, but no onboard "
                "workspace was found here.",
                next_step="Pass --workspace DIR (a folder `onboard setup` made and `onboard build` "
                "built), or drop --workspace-build to use the installed torch.",
            )
        built = ws.root / ".nox" / "build" / "bin" / "python"
        if not built.is_file():
            raise OnboardError(
                f"The workspace {ws.root} has no build yet ({built} is missing).",
                next_step=f"Run `onboard build --workspace {quote(ws.root)}` first, or drop "
                "--workspace-build to trace with the installed torch.",
            )
        return str(built)
    if given:
        return given
    import sys

    return sys.executable


def program(options: LaunchOptions) -> Program:
    """The program ``options`` name (``parse``)."""
    return parse(
        options.command,
        options.code,
        python=options.python,
        workspace_build=options.workspace_build,
        workspace=options.workspace,
    )


def parse(
    command: Sequence[str] | None,
    code: str | None = None,
    *,
    python: str | None = None,
    workspace_build: bool = False,
    workspace: str | None = None,
) -> Program:
    """The program to run, from the words after `--` or from `-c CODE`."""
    usage = (
        "Give the program after `--` (`onboard trace -- python repro.py`, "
        '`-- python -m mypkg.train`) or one expression with `-c "torch.zeros(3, 4)"`.'
    )
    if code is not None and command:
        raise BadInput(
            f"Both -c and a command after `--` ({shlex.join(command)}) were given.", next_step=usage
        )
    if code is not None:
        if not code.strip():
            raise BadInput("-c was given empty code.", next_step=usage)
        exe = interpreter(None, python=python, workspace_build=workspace_build, workspace=workspace)
        return Program("code", code, (), exe, (), f'-c "{code}"', preimport=True)
    if not command:
        raise BadInput("There is no program to run.", next_step=usage)
    words = list(command)
    given = None
    if _is_python(words[0]):
        given = words.pop(0)
    elif not words[0].endswith(".py"):
        raise BadInput(
            f"`{shlex.join(command)}` is not a Python program: the tracer runs a Python script, "
            "module or code in an interpreter it controls.",
            next_step=usage,
        )
    exe = interpreter(given, python=python, workspace_build=workspace_build, workspace=workspace)
    options: list[str] = []
    while words and words[0].startswith("-"):
        word = words.pop(0)
        if word in ("-m", "-c"):
            if not words:
                raise BadInput(f"`{word}` needs a value.", next_step=usage)
            target = words.pop(0)
            kind = "module" if word == "-m" else "code"
            return Program(kind, target, tuple(words), exe, tuple(options), shlex.join(command))
        if word in _WITH_VALUE and words:
            options += [word, words.pop(0)]
        elif word in _FLAGS or word.startswith(_WITH_VALUE):
            options.append(word)
        else:
            raise BadInput(
                f"The interpreter option `{word}` in `{shlex.join(command)}` is not supported here.",  # noqa: E501
                next_step="Drop it, or run the script without onboard. " + usage,
            )
    if not words:
        raise BadInput(f"`{shlex.join(command)}` names no script.", next_step=usage)
    script = words.pop(0)
    if not Path(script).is_file():
        # A relative path is looked up in the current folder; an absolute one is itself.
        where = "" if Path(script).is_absolute() else f" (looked in {Path.cwd()})"
        state = "is a folder, not a script" if Path(script).is_dir() else "does not exist"
        raise BadInput(
            f"The script {script} {state}{where}.",
            next_step="Check the path"
            + ("." if Path(script).is_absolute() else ", or run onboard from the script's folder."),
        )
    return Program("script", script, tuple(words), exe, tuple(options), shlex.join(command))


@dataclass(frozen=True)
class Ran:
    answer: dict[str, Any]
    stdout: str
    stderr: str
    returncode: int
    left_running: tuple[Leftover, ...] = ()  # what it left running when it exited (stopped)

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.answer.get("status") or {})

    @property
    def exit_code(self) -> int:
        return int(self.status.get("exit_code") or 0)

    def error_text(self) -> str:
        """The program's own error: its exception line, or the last line it printed."""
        exc = self.status.get("exception")
        if exc:
            where = (exc.get("frames") or [{}])[-1]
            at = f" at {where.get('path')}:{where.get('line')}" if where.get("path") else ""
            return redact(f"{exc['type']}: {exc['message']}{at}")
        lines = [ln for ln in (self.stderr or self.stdout).strip().splitlines() if ln.strip()]
        return lines[-1].strip() if lines else "no error message"

    def output_tail(self, lines: int = 20) -> list[str]:
        text = (self.stdout.rstrip() + "\n" + self.stderr.rstrip()).strip()
        return text.splitlines()[-lines:] if text else []


@dataclass(kw_only=True)
class ProgramResult:
    """What `trace` and `graph` both report: the program, the torch it ran, how it ended."""

    program: Program
    torch_version: str
    commit: str | None
    program_exit: int  # the program's own exit status
    error: str | None = field(metadata=spec(key="program_error"))
    left_running: list[Leftover] = field(default_factory=list)
    output_tail: list[str] = field(default_factory=list, metadata=spec(omit=True))
    # last in JSON, after the result's own keys (json_extra)
    notes: list[str] = field(default_factory=list, metadata=spec(omit=True))

    @staticmethod
    def ran(ran: Ran, program: Program, commit: str | None) -> dict[str, Any]:
        """The fields above, for a result's constructor."""
        failed = ran.exit_code != 0
        return {
            "program": program,
            "torch_version": str(ran.answer["torch"]["version"]),
            "commit": commit,
            "program_exit": ran.exit_code,
            "error": ran.error_text() if failed else None,
            "output_tail": ran.output_tail() if failed else [],
            "notes": [left_note(ran.left_running)] if ran.left_running else [],
            "left_running": list(ran.left_running),
        }

    @property
    def exit_code(self) -> int:
        """onboard's: 1 when the program failed (its own status is ``program_exit``)."""
        return 0 if self.program_exit == 0 else 1

    def json_extra(self) -> dict[str, Any]:
        return {"ok": self.program_exit == 0, "notes": self.notes}


def run(
    program: Program,
    body: str,
    request: dict[str, Any],
    *,
    timeout: float,
    reporter: Reporter,
    what: str,
) -> Ran:
    """Run the program under the child ``body`` (a file of ``onboard/children``), the
    module ``onboard_launch`` registered first. Its code travels as text (the user's
    interpreter need not have onboard), under the file name <onboard>, so that its
    frames can be told apart from the program's."""
    reporter.step(f"{what} `{program.shown}` with {program.python}")
    full = {
        "kind": program.kind,
        "target": program.target,
        "args": list(program.args),
        "preimport": program.preimport,
        **request,
    }
    answer: dict[str, Any] | None = None
    try:
        asked = proc.ask_child(
            program.python,
            body,
            json.dumps(full),
            modules=["onboard_launch"],
            options=program.options,
            timeout=timeout,
            what=f"`{program.shown}`",
            via_file=True,  # stdout and stderr are the program's
            until_main_exits=True,
        )
        answer, done = asked.data, asked.result
    except proc.NoAnswer as exc:
        done = exc.result
    except ProcTimeout:
        raise OnboardError(
            f"`{program.shown}` did not finish within {timeout:g} s; onboard stopped it and "
            "every process it started.",
            next_step="Give it longer with --timeout SECONDS, or trace a shorter run "
            "(fewer steps, a smaller input).",
        ) from None
    except OnboardError as exc:
        raise OnboardError(
            f"Could not start {program.python}: {exc.message}",
            next_step="Pass --python with the interpreter whose torch you use; "
            "`onboard doctor --python PATH` shows what is wrong with it.",
        ) from exc
    # What the program printed is shown when it fails: never a token it printed.
    stdout, stderr = redact(done.stdout), redact(done.stderr)
    if answer is None:
        tail = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
        if "No module named 'torch'" in stderr or "import torch" in stderr:
            raise OnboardError(
                f"{program.python} could not import torch (exit {done.returncode}): {tail}",
                next_step=f"Run `onboard doctor --python {quote(program.python)}`, or pass "
                "--python with the interpreter whose torch you use.",
            )
        raise OnboardError(
            f"`{program.shown}` ended (exit {_signal_text(done.returncode)}) before onboard could "
            f"read what it ran: {tail}",
            next_step=f"Run `{program.runnable}` by itself to see its output; a crash in torch's "
            "own code shows there too.",
        )
    return Ran(answer, stdout, stderr, done.returncode, done.left_running)


def _signal_text(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"{code}, killed by {signal.Signals(-code).name}"
        except ValueError:
            return str(code)
    return str(code)


def check_started(ran: Ran, program: Program, *, did_something: bool, what: str) -> None:
    """The bad endings that leave nothing to show, as errors in the program's own words."""
    if did_something:
        return
    status = ran.status
    if ran.exit_code != 0:
        raise OnboardError(
            f"`{program.shown}` failed before any torch call (exit {ran.exit_code}): "
            f"{ran.error_text()}",
            next_step=f"Fix the error (run `{program.runnable}` by itself to see all of it), then "
            "run onboard again.",
        )
    if not status.get("imported_torch"):
        raise OnboardError(
            f"`{program.shown}` ran (exit 0) but never imported torch, so there is {what}.",
            next_step="Run it on a program that uses torch, or try `onboard trace -c "
            '"torch.zeros(3, 4)"`.',
        )
    raise OnboardError(
        f"`{program.shown}` imported torch but there is {what}.",
        next_step="Check that the code you expect runs (a `__main__` guard, an early return), or "
        'try `onboard trace -c "torch.zeros(3, 4)"`.',
    )


def cwd_note() -> str | None:
    """Said when the current folder is a PyTorch checkout (its torch/ is not imported)."""
    if (Path.cwd() / "torch" / "__init__.py").is_file() and os.path.isdir("aten"):
        return (
            f"{Path.cwd()} is a PyTorch source tree; its torch/ was not imported (the child "
            "imports the installed torch before it adds the program's folder to sys.path)."
        )
    return None

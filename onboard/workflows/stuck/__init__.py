"""`onboard stuck`: where every thread of a hung PyTorch program waits, and why.

Run a program (``onboard stuck -- python train.py``) and take a snapshot when
it stops making progress, or on demand; or take one of a process that is
already hung (``onboard stuck PID``). A snapshot is every thread's Python and
native stack in every process of the program, taken by a stack tool
(``tools``), mapped to the workspace checkout (``mapping``), with the waits
recognised (``diagnoses``).
"""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from onboard import proc
from onboard.errors import BadInput, NoWorkspace, OnboardError
from onboard.report import Reporter
from onboard.workflows.opsource.context import TreeContext
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.program import ProgramOptions
from onboard.workflows.stuck import processes, snapshot, tools, watch
from onboard.workflows.stuck.diagnoses.common import Context
from onboard.workflows.stuck.mapping import Mapper
from onboard.workflows.stuck.progress import Progress
from onboard.workflows.stuck.result import Snapshot, StuckResult

DEFAULT_AFTER = 10.0
BACKEND_HPP = "torch/csrc/distributed/c10d/Backend.hpp"


@dataclass(frozen=True, kw_only=True)
class StuckRequest(ProgramOptions):
    """`onboard stuck`: exactly one of ``pid`` (a running process; its digits as typed
    are checked here) or ``command`` (argv to run). The snapshot is taken once the
    program made no progress for ``after`` seconds; ``timeout`` stops it (None: no
    limit), ``kill`` stops it after the snapshot."""

    pid: int | str | None = None
    after: float = DEFAULT_AFTER
    timeout: float | None = None
    kill: bool = False


def stuck(
    request: StuckRequest,
    reporter: Reporter | None = None,
    *,
    quiet_stdout: bool = False,
    on_snapshot: Callable[[Snapshot], None] | None = None,
) -> StuckResult:
    """``quiet_stdout``: the program's output goes to stderr (stdout is for --json);
    ``on_snapshot`` sees each snapshot as it is taken."""
    reporter = reporter or Reporter()
    pid = _pid(request)
    if request.after <= 0 or (request.timeout is not None and request.timeout <= 0):
        raise BadInput(
            "--after and --timeout take a number of seconds above 0.",
            next_step="For example `onboard stuck --after 30 --timeout 3600 -- python train.py`.",
        )
    stack_tools = tools.available()
    if not stack_tools:
        raise OnboardError(
            "No stack tool is installed: onboard reads stacks with pystack, py-spy or gdb.",
            next_step="Run `pip install pystack py-spy` in onboard's environment (pystack is "
            "Linux only), or install gdb.",
        )
    ctx = _tree(request.workspace, request.python, reporter)
    mapper = Mapper(ctx)
    context = Context(gpu=_gpu(), default_timeout=_default_timeout(ctx))
    notes = (
        []
        if ctx is not None
        else [
            "No onboard workspace was found: native frames are not mapped to source. Make one "
            "with `onboard setup DIR --from-wheel` (offline) and pass --workspace DIR."
        ]
    )
    if pid is not None:
        result = _attach(pid, stack_tools, mapper, context, request.kill, reporter)
    else:
        result = _run(
            list(request.command or []), request.python, stack_tools, mapper, context,
            request.after, request.timeout, request.kill, quiet_stdout, reporter,
            on_snapshot or (lambda s: None),
        )  # fmt: skip
    result.notes = notes + result.notes
    if ctx is not None:
        result.commit, result.workspace = ctx.ws.commit, str(ctx.ws.root)
    return result


def _pid(request: StuckRequest) -> int | None:
    """The process id, when one was given instead of a command."""
    if (request.pid is None) == (request.command is None):
        raise BadInput(
            "Give a process id or a command after `--` (not both, not neither).",
            next_step="Run `onboard stuck -- python train.py` or `onboard stuck PID`.",
        )
    if isinstance(request.pid, str) and not request.pid.isdigit():
        raise BadInput(
            f"{request.pid!r} is not a process id (a number).",
            next_step="Find it with `pgrep -af python`, then run `onboard stuck PID`.",
        )
    return int(request.pid) if request.pid is not None else None


def _tree(workspace: str | None, python: str | None, reporter: Reporter) -> TreeContext | None:
    try:
        return TreeContext.open(workspace, python, reporter)
    except NoWorkspace:
        if workspace:
            raise
        return None


def _gpu() -> bool:
    return Path("/dev/nvidia0").exists() or Path("/dev/nvidiactl").exists()


def _default_timeout(ctx: TreeContext | None) -> SourceLoc | None:
    """Where the backends' default timeout is written in the checkout (and its value)."""
    if ctx is None:
        return None
    lines = ctx.source_map.lines(ctx.checkout / BACKEND_HPP) or []
    for number, text in enumerate(lines, 1):
        if "kBackendDefaultTimeout =" in text:
            value = text.strip() + (" " + lines[number].strip() if number < len(lines) else "")
            loc = ctx.source_map.loc(BACKEND_HPP, number)
            return SourceLoc(
                loc.path, loc.line, loc.url, loc.in_checkout, text=value, local=loc.local
            )
    return None


def _attach(
    pid: int,
    stack_tools: list[tools.Tool],
    mapper: Mapper,
    context: Context,
    kill: bool,
    reporter: Reporter,
) -> StuckResult:
    if pid <= 0 or not processes.exists(pid):
        raise BadInput(
            f"There is no running process {pid}.",
            next_step="Find the program's id with `pgrep -af python` (or `ps aux`), then run "
            "`onboard stuck PID`.",
        )
    libs = processes.libraries(pid)
    line = processes.command_line(pid)
    if libs and not processes.is_python(pid, libs):
        raise BadInput(
            f"Process {pid} ({line[:100]}) is not a Python interpreter, so there are no Python "
            "stacks to read.",
            next_step="Give the id of the Python process (`pgrep -af python`); for a program "
            "started by a launcher (torchrun, a shell script) its Python children are shown "
            "when you give the launcher's Python process.",
        )
    result = StuckResult("pid", f"{pid} ({line})")
    if libs and not processes.has_torch(libs):
        result.notes.append(
            f"Process {pid} has not loaded torch: its Python and native stacks are shown, but "
            "none of torch's waits can be in them."
        )
    reporter.step(f"Reading every thread of process {pid} and its children")
    try:
        shot = snapshot.take(
            pid, stack_tools, mapper, context, reason="asked for (onboard stuck PID)", after=0.0
        )
    except tools.Gone as exc:
        raise OnboardError(
            exc.message, next_step="The program ended by itself; nothing is hung any more."
        ) from exc
    except tools.NotPython as exc:
        raise BadInput(exc.message, next_step="Give the id of a Python process.") from exc
    result.snapshots.append(shot)
    if kill:
        _stop_tree(pid)
        result.ended = "stopped by onboard after the snapshot (--kill: SIGTERM, then SIGKILL)"
    else:
        result.ended = "left running as it was"
    return result


def _stop_tree(pid: int) -> None:
    import time

    family = [pid, *processes.descendants(pid)]
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for member in family:
            try:
                os.kill(member, signum)
            except (ProcessLookupError, PermissionError):
                continue
        deadline = time.monotonic() + proc.GRACE_SECONDS
        while time.monotonic() < deadline and any(processes.exists(m) for m in family):
            time.sleep(0.05)


def _run(
    argv: list[str],
    python: str | None,
    stack_tools: list[tools.Tool],
    mapper: Mapper,
    context: Context,
    after: float,
    timeout: float | None,
    kill: bool,
    quiet_stdout: bool,
    reporter: Reporter,
    on_snapshot: Callable[[Snapshot], None],
) -> StuckResult:
    if not argv:
        raise BadInput(
            "No command was given after `--`.", next_step="Run `onboard stuck -- python train.py`."
        )
    if python and argv[0] in ("python", "python3"):
        argv[0] = python
    result = StuckResult("run", shlex.join(argv))
    with watch.on_demand() as asked:  # before the program starts, and before they are named
        reporter.step(
            f"Running {shlex.join(argv)}; a snapshot when it makes no progress for {after:g} s, "
            f"or on Ctrl-\\ / `kill -USR1 {os.getpid()}`"
        )
        child = proc.Passthrough(argv, stdout_to_stderr=quiet_stdout)
        sampler = tools.find("py-spy")
        progress = Progress(child.pid, after, sampler)

        def take(reason: str, at: float) -> Snapshot:
            return snapshot.take(child.pid, stack_tools, mapper, context, reason=reason, after=at)

        try:
            watched = watch.watch(
                child,
                progress,
                take,
                asked=asked,
                timeout=timeout,
                kill=kill,
                interval=min(1.0, after / 5),
                on_snapshot=on_snapshot,
            )
        finally:
            if child.poll() is None and kill:
                child.stop()
            if child.poll() is not None:
                # What the program left running (a fork that setsid()s, a daemon), found
                # by its cgroup or its session and orphans: stopped and named.
                left = child.end()
                if left:
                    result.notes.append(proc.left_note(left, "the program"))
    result.snapshots = watched.snapshots
    result.program_exit = watched.exit_code
    result.ended = watched.ended
    result.interrupted = watched.interrupted
    if not watched.snapshots:
        result.notes.append(
            "The program ended before it stopped making progress: there was nothing to take a "
            "snapshot of."
        )
    return result

"""The stack tools onboard takes a picture with, and how it runs them.

pystack first (Linux): it reads every thread, those the interpreter does not
know included (gloo's workers, ATen's and the JIT's pools), and whether each
holds or waits for the GIL. py-spy where pystack is missing or cannot read the
interpreter (and, without ``--native``, as the cheap sampler of ``progress``).
gdb when neither attaches: native frames only. Each is run as a program
(``proc``), never imported: the picture is taken from outside the process.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from onboard import proc
from onboard.errors import OnboardError, ProcTimeout
from onboard.workflows.stuck import processes, readers
from onboard.workflows.stuck.model import Thread

TOOL_TIMEOUT = 60.0
# Where a tool says the process cannot be traced, or is gone.
_DENIED = ("Operation not permitted", "Permission Denied", "insufficient privileges")
_GONE = ("No such process", "Could not read the contents of /proc", "process is not running")
_NOT_PYTHON = ("Could not determine python version", "Failed to find python version")


@dataclass(frozen=True)
class Tool:
    name: str  # pystack / py-spy / gdb
    path: str

    def argv(self, pid: int) -> list[str]:
        if self.name == "pystack":
            return [self.path, "remote", str(pid), "--native-all", "--no-color"]
        if self.name == "py-spy":
            return [self.path, "dump", "--pid", str(pid), "--native", "--json"]
        return [
            self.path, "-p", str(pid), "-batch", "-nx",
            "-ex", "set pagination off", "-ex", "thread apply all bt",
        ]  # fmt: skip

    def read(self, text: str) -> list[Thread]:
        if self.name == "pystack":
            return readers.pystack(text)
        if self.name == "py-spy":
            return readers.py_spy(text)
        return readers.gdb(text)


class AttachDenied(OnboardError):
    """The tool may not trace the process (ptrace refused)."""


class NotPython(OnboardError):
    """The process is no CPython interpreter the tool can read."""


class Gone(OnboardError):
    """The process ended while it was being read."""


def find(name: str) -> str | None:
    """The tool next to this interpreter (installed with onboard), else on PATH."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return proc.which(name)


def available(order: tuple[str, ...] = ("pystack", "py-spy", "gdb")) -> list[Tool]:
    return [Tool(name, path) for name in order if (path := find(name)) is not None]


@dataclass
class Dump:
    threads: list[Thread]
    tool: Tool
    seconds: float
    paused: float | None


def dump(pid: int, tools: list[Tool]) -> Dump:
    """Every thread of ``pid`` from the first tool that can read it."""
    failures: list[str] = []
    for tool in tools:
        try:
            return _dump_with(pid, tool)
        except (AttachDenied, Gone):
            raise
        except NotPython as exc:
            failures.append(f"{tool.name}: {exc.message}")
            if tool.name == "gdb" or not any(t.name == "gdb" for t in tools):
                raise
        except OnboardError as exc:
            failures.append(f"{tool.name}: {exc.message}")
    raise OnboardError(
        f"No stack tool could read process {pid}: " + "; ".join(failures or ["none installed"]),
        next_step="Install pystack (`pip install pystack`, Linux) or py-spy (`pip install "
        "py-spy`) into onboard's environment, or gdb from your system's packages.",
    )


def _dump_with(pid: int, tool: Tool) -> Dump:
    watch = PauseWatch(pid)
    watch.start()
    began = time.monotonic()
    try:
        ran = proc.run(tool.argv(pid), timeout=TOOL_TIMEOUT, check=False, what=tool.name)
    except ProcTimeout as exc:
        raise OnboardError(
            f"{tool.name} did not finish reading process {pid} within {TOOL_TIMEOUT:g} s.",
            next_step="Run it again; if it keeps hanging, try `gdb -p PID -batch -ex 'thread "
            "apply all bt'` by hand.",
        ) from exc
    finally:
        paused = watch.finish()
    seconds = time.monotonic() - began
    said = ran.stderr + ran.stdout
    threads = tool.read(ran.stdout) if ran.returncode == 0 or tool.name == "gdb" else []
    if threads:
        return Dump(threads, tool, seconds, paused)
    classify_failure(pid, tool.name, said)
    raise OnboardError(f"{tool.name} failed (exit {ran.returncode}): {proc_tail(said)}")


def classify_failure(pid: int, tool: str, said: str) -> None:
    """Raise the one failure a tool's words name: denied, gone, not Python."""
    if not processes.exists(pid) or any(s in said for s in _GONE):
        raise Gone(f"Process {pid} ended while {tool} was reading it.")
    if any(s in said for s in _DENIED) or "ptrace" in said.lower():
        raise denied(pid, tool)
    if any(s in said for s in _NOT_PYTHON):
        raise NotPython(f"{tool} found no Python interpreter in process {pid}.")


def denied(pid: int, tool: str) -> AttachDenied:
    """The exact reason ptrace was refused, and its fix."""
    scope = processes.ptrace_scope()
    uid, me = processes.owner(pid), os.geteuid()
    again = f'sudo env PATH="$PATH" onboard stuck {pid}'
    if scope == 3:
        return AttachDenied(
            f"{tool} may not attach to process {pid}: kernel.yama.ptrace_scope is 3, which "
            "forbids every ptrace until the machine reboots.",
            next_step="Reboot with ptrace_scope set lower (`kernel.yama.ptrace_scope = 1` in "
            "/etc/sysctl.d/), or use `onboard stuck -- python ...` next time from the start.",
        )
    if uid is not None and uid != me and me != 0:
        return AttachDenied(
            f"{tool} may not attach to process {pid}: it belongs to user {uid} and onboard runs "
            f"as user {me}; only root (CAP_SYS_PTRACE) may read another user's process.",
            next_step=f"Run it as that user, or as root: `{again}`.",
        )
    if scope in (1, 2) and me != 0:
        return AttachDenied(
            f"{tool} may not attach to process {pid}: kernel.yama.ptrace_scope is {scope}, so "
            + (
                "only a parent process may trace its children"
                if scope == 1
                else "only root (CAP_SYS_PTRACE) may trace"
            )
            + ".",
            next_step=f"Run `{again}`, or allow it until reboot: "
            "`echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope`; or start the program "
            "under onboard: `onboard stuck -- python train.py`.",
        )
    return AttachDenied(
        f"{tool} may not attach to process {pid} (ptrace: operation not permitted), although "
        f"onboard runs as {'root' if me == 0 else f'its owner (user {me})'}: in a container "
        "the capability CAP_SYS_PTRACE is missing, or another debugger is attached already.",
        next_step="Start the container with `--cap-add=SYS_PTRACE` (docker/podman), detach the "
        "other debugger, or start the program under onboard: `onboard stuck -- python train.py`.",
    )


def proc_tail(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


class PauseWatch(threading.Thread):
    """How long the process is seen stopped (a tracer's stop) while a tool reads it:
    /proc/PID/stat read every few milliseconds, first to last sighting."""

    INTERVAL = 0.003

    def __init__(self, pid: int, probe: Callable[[int], bool] = processes.stopped) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.probe = probe
        self.first: float | None = None
        self.last: float | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.INTERVAL):
            if self.probe(self.pid):
                now = time.monotonic()
                self.first = self.first if self.first is not None else now
                self.last = now

    def finish(self) -> float | None:
        self.done.set()
        self.join()
        if self.first is None or self.last is None:
            return None
        return self.last - self.first + self.INTERVAL

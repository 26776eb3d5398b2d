"""Where every child process onboard starts is created (``spawn``), and how one is stopped.

Each child is marked in its environment, and so is everything it starts
(compilers under a compile child, nox's sessions, a repro's workers), including
what leaves the process group onboard stops:

- with this run's token (``RUN_ENV``): at the end of the run, ``reaping`` stops any
  of them still alive, so nothing onboard started outlives it;
- with a token of its own (``CHILD_ENV``): stopping a child stops its descendants
  that left its process group too (one of them holding our pipe would otherwise
  keep onboard waiting until it exits).

Every child runs in a session of its own: Ctrl-C in the terminal is onboard's,
which stops the child with its group (``stop_group``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from onboard import signals
from onboard.errors import OnboardError

RUN_ENV = "ONBOARD_RUN"
CHILD_ENV = "ONBOARD_CHILD"
# How long a stopped child gets to clean up (SIGTERM) before SIGKILL.
GRACE_SECONDS = 2.0
# The niceness of a `background` command: it yields the cores to the work a user is
# waiting on, and still gets every cycle that work leaves idle.
BACKGROUND_NICE = 5
# Never let git (or ssh under it) stop to ask for a password: a hidden prompt
# looks exactly like a hang.
_QUIET_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "LC_ALL": "C"}


class _Spawned:
    """What ``spawn`` has started in this process."""

    def __init__(self) -> None:
        self.count = 0  # children started (0: nothing to reap)
        self.tokens: list[str] = []  # the CHILD_ENV token of each (``reaper.kill_descendants``)
        self.pids: set[int] = set()  # their pids (an orphan that came back is none of them)
        # Once an interrupted run stops its children, no worker thread of it starts a
        # new one (it would run on after the sweep, and the run would wait for it). The
        # main thread, which unwinds the run (and may start the next), is never refused.
        self.stopping = False
        self.lock = threading.Lock()


spawned = _Spawned()


def spawn(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str],
    daemon: bool = False,
    token: str | None = None,
    **popen: Any,
) -> tuple[subprocess.Popen[Any], str]:
    """``subprocess.Popen`` of ``argv`` in a session of its own, marked with this run's
    token (not a ``daemon``: a server meant to outlive onboard, which ``reaping``
    leaves alone) and a token of its own, which is returned with it. Its OSError
    comes as one paragraph; while an interrupted run stops, a worker thread is
    refused (KeyboardInterrupt). ``token``: the child's own, made beforehand (a
    ``contain.Group`` records it before the program starts)."""
    marked = dict(env)
    marked.pop(RUN_ENV, None)
    run = os.environ.get(RUN_ENV)
    if run and not daemon:
        marked[RUN_ENV] = run
    token = marked[CHILD_ENV] = token or new_token()
    with spawned.lock:
        if spawned.stopping and threading.current_thread() is not threading.main_thread():
            raise KeyboardInterrupt(f"the run is being interrupted: `{argv[0]}` not started")
        spawned.count += 1
        spawned.tokens.append(token)
        try:
            child = subprocess.Popen(
                list(argv),
                cwd=os.fspath(cwd) if cwd is not None else None,
                env=marked,
                start_new_session=True,
                **popen,
            )
        except OSError as exc:  # FileNotFoundError, PermissionError, ENOEXEC, ...
            raise _cannot_start(list(argv), cwd, exc) from exc
        spawned.pids.add(child.pid)
    return child, token


def new_token() -> str:
    """A child's own mark (``CHILD_ENV``)."""
    return os.urandom(6).hex()


def stop_starting() -> None:
    """The run is being interrupted: worker threads start no new child from now on."""
    with spawned.lock:
        spawned.stopping = True


def environ(extra: Mapping[str, str] | None = None, *, drop: Sequence[str] = ()) -> dict[str, str]:
    env = dict(os.environ)
    env.update(_QUIET_ENV)
    for name in drop:
        env.pop(name, None)
    if extra:
        env.update(extra)
    return env


def which(name: str) -> str | None:
    import shutil  # (here: with bz2 and lzma it weighs on every start, and few runs look)

    return shutil.which(name)


def missing(exe: str) -> OnboardError:
    return OnboardError(
        f"`{exe}` was not found on PATH, and onboard needs it for this step.",
        next_step=f"Install {exe} (or put it on PATH) and run the command again; "
        "`onboard doctor` lists what is missing.",
    )


def _cannot_start(
    argv: list[str], cwd: str | os.PathLike[str] | None, exc: OSError
) -> OnboardError:
    """Popen's OSError as one paragraph (a missing program, folder, or a non-program)."""
    if cwd is not None and not os.path.isdir(cwd):
        return OnboardError(
            f"The folder {os.fspath(cwd)} does not exist, so `{argv[0]}` cannot run in it.",
            next_step="Check the path (a workspace or checkout moved or deleted?) and run the "
            "command again.",
        )
    if isinstance(exc, FileNotFoundError):
        return missing(argv[0])
    return OnboardError(
        f"`{argv[0]}` cannot be run ({exc.strerror or exc}): it is not an executable program.",
        next_step="Pass the path of the program itself (for --python: "
        "/path/to/venv/bin/python) and run the command again.",
    )


# --- stopping -----------------------------------------------------------------------


def stop_group(
    child: subprocess.Popen[Any], token: str | None = None, *, grace: float | None = None
) -> None:
    """Stop the child and everything in its process group: SIGTERM, so it can
    stop its own children and remove its temporary files, then SIGKILL after
    ``grace`` seconds. The group is killed even when the leader has already
    exited (its children may still run), and so is every descendant carrying
    the child's ``token`` that left the group."""
    grace = GRACE_SECONDS if grace is None else grace
    with signals.critical():  # a second Ctrl-C must not leave the group half-stopped
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        if token:
            kill_marked(token, name=CHILD_ENV)


def marked(token: str, *, name: str = RUN_ENV) -> list[int]:
    """Pids of live processes whose environment has ``name=token`` (Linux /proc)."""
    needle = f"{name}={token}".encode()
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []  # no /proc (macOS): process-group kills are all there is
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue  # gone, or not ours
        if needle + b"\0" in env or env.endswith(needle):
            pids.append(int(entry))
    return pids


def kill_marked(
    token: str, *, name: str = RUN_ENV, keep: set[int] | frozenset[int] = frozenset()
) -> list[int]:
    """SIGKILL every live process carrying ``name=token`` but ``keep``; returns their pids."""
    return kill_all(lambda: [pid for pid in marked(token, name=name) if pid not in keep])


def kill_all(find: Callable[[], list[int]]) -> list[int]:
    """SIGKILL what ``find`` names, until it names nobody (a dying parent may start
    no one new, but be sure); returns their pids."""
    killed = []
    for _ in range(5):
        pids = find()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return killed

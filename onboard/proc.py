"""The only place onboard starts subprocesses.

Argument lists only (never ``shell=True``), an explicit ``cwd``, git never
prompting for credentials, and failures turned into ``ProcError`` with the
command and its output (the pre-commit ``cmd_output`` idea).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import signals
from onboard.errors import OnboardError, ProcError, ProcTimeout

if TYPE_CHECKING:
    from onboard.proctree import Leftover

# Never let git (or ssh under it) stop to ask for a password: a hidden prompt
# looks exactly like a hang.
_QUIET_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "LC_ALL": "C"}


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    # What the command left running when it exited, stopped since (``until_main_exits``).
    left_running: tuple[Leftover, ...] = ()

    @property
    def ok(self) -> bool:
        return self.returncode == 0


# Every process onboard starts carries this run's token in its environment, and
# so does everything those processes start (compilers under a compile child,
# nox's sessions, a repro's workers), including those that leave the process
# group onboard kills. At the end of the run, ``reaping`` stops any of them
# still alive: nothing onboard started outlives it.
RUN_ENV = "ONBOARD_RUN"
# Each child also carries a token of its own: stopping a child stops its
# descendants that left its process group too (one of them holding our pipe
# would otherwise keep onboard waiting until it exits).
CHILD_ENV = "ONBOARD_CHILD"
# How long a stopped child gets to clean up (SIGTERM) before SIGKILL.
GRACE_SECONDS = 2.0
# The niceness of a `background` command: it yields the cores to the work a user is
# waiting on, and still gets every cycle that work leaves idle.
BACKGROUND_NICE = 5
_started = [0]  # children started in this process (0: nothing to reap)


class Reaper:
    """What ``reaping`` stops at the end: everything, or (``finished``: the run
    ended normally) everything but the children released to work on."""

    def __init__(self) -> None:
        self.finished = False


# Children a normal run released to finish on their own (``Child.release``):
# `where`'s background indexer. An interrupted run stops them too.
_DETACHED: set[int] = set()


@contextlib.contextmanager
def reaping() -> Iterator[Reaper]:
    """Stop, when the block ends, every process started under it that still runs;
    then, after a normal end, start the work left for after it (``detach_after_run``)."""
    reaper = Reaper()
    _runs[0] += 1
    if _runs[0] == 1:
        _stopping[0] = False  # a new run
    try:
        if os.environ.get(RUN_ENV):
            # An onboard further up (this process's, or the one that started us) reaps
            # for both. But when that one is another process, it may be gone (killed
            # outright): an interrupted run stops its own children itself.
            try:
                yield reaper
            except BaseException:
                if _runs[0] == 1:
                    _stop_starting()
                    kill_descendants()
                raise
            return
        token = os.urandom(8).hex()  # (not `secrets`: the same bytes, a slower import)
        os.environ[RUN_ENV] = token
        started = _started[0]
        try:
            yield reaper
        except BaseException:
            _stop_starting()
            raise
        finally:
            os.environ.pop(RUN_ENV, None)
            if _started[0] != started:
                kill_marked(token, keep=_DETACHED if reaper.finished else frozenset())
    except BrokenPipeError:
        reaper.finished = True  # the reader stopped reading: the run's work is done
        raise
    finally:
        _runs[0] -= 1
        later: list[Callable[[], None]] = []
        if not _runs[0]:  # the outermost block: the run itself ends here
            later, _after_run[:] = _after_run[:], []
        if reaper.finished and later:
            # The answer is out first: whatever is buffered goes before the fork.
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            for work in later:
                if not detach(work):
                    work()


_runs = [0]  # open `reaping` blocks
# Once an interrupted run stops its children, no worker thread of it starts a new one
# (it would run on after the sweep, and the run would wait for it): ``_spawn``. The
# main thread, which unwinds the run (and may start the next), is never refused.
_stopping = [False]
_SPAWNING = threading.Lock()


def _stop_starting() -> None:
    with _SPAWNING:
        _stopping[0] = True


def _spawn(
    argv: list[str], cwd: str | os.PathLike[str] | None, **kwargs: Any
) -> subprocess.Popen[Any]:
    """``subprocess.Popen`` (its OSError as one paragraph), unless the run is stopping."""
    with _SPAWNING:
        if _stopping[0] and threading.current_thread() is not threading.main_thread():
            raise KeyboardInterrupt(f"the run is being interrupted: `{argv[0]}` not started")
        try:
            return subprocess.Popen(argv, cwd=os.fspath(cwd) if cwd is not None else None, **kwargs)
        except OSError as exc:  # FileNotFoundError, PermissionError, ENOEXEC, ...
            raise _cannot_start(argv, cwd, exc) from exc


_after_run: list[Callable[[], None]] = []


def detach_after_run(work: Callable[[], None]) -> None:
    """``detach(work)`` once this run has answered and cleaned up (the end of its
    ``reaping`` block), or now outside a run; ``work`` itself where it cannot be
    detached. After the answer, the copy's memory is no longer the one this
    process is still touching (a fork shares pages until either writes them)."""
    if _runs[0]:
        _after_run.append(work)
    elif not detach(work):
        work()


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
    return _kill_all(lambda: [pid for pid in marked(token, name=name) if pid not in keep])


def kill_descendants() -> list[int]:
    """SIGKILL every live process this one started, and what they started: its process
    tree, and the holders of its children's tokens that left it (``proctree``)."""
    from onboard import proctree

    needles = [proctree.mark(CHILD_ENV, t) for t in _CHILD_TOKENS]
    return _kill_all(lambda: proctree.descendants(os.getpid(), needles))


def _kill_all(find: Callable[[], list[int]]) -> list[int]:
    killed = []
    for _ in range(5):  # a dying parent may start no one new, but be sure
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


def _missing(exe: str) -> OnboardError:
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
        return _missing(argv[0])
    return OnboardError(
        f"`{argv[0]}` cannot be run ({exc.strerror or exc}): it is not an executable program.",
        next_step="Pass the path of the program itself (for --python: "
        "/path/to/venv/bin/python) and run the command again.",
    )


def _lower_autogroup(pid: int) -> None:
    """Lower the CPU share of the session ``pid`` leads (Linux autogroups).

    Every command starts in a session of its own, and where the kernel groups
    sessions (``sched_autogroup_enabled``) it shares the CPU between sessions
    first: a niced command alone in its session would still take a whole
    session's share, so the group's own nice value is what yields the cores.
    """
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{BACKGROUND_NICE}\n")


def _niced(argv: list[str]) -> list[str]:
    """``argv`` under ``nice``, when both ``nice`` and the program are there (a missing
    program must still fail as itself, not as nice's exit 127)."""
    nice = which("nice")
    if nice is None or which(argv[0]) is None:
        return argv
    return [nice, "-n", str(BACKGROUND_NICE), *argv]


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = True,
    input: str | bytes | None = None,
    what: str | None = None,
    next_step: str | None = None,
    starts_daemon: bool = False,
    background: bool = False,
    until_main_exits: bool = False,
) -> Result:
    """Run a command to completion and capture its output as text.

    ``check`` turns a non-zero exit into ``ProcError``; ``what`` names the step
    in that error ("fetching the commit"). ``starts_daemon``: the command may
    start a server meant to outlive onboard (sccache's), so it is not marked as
    this run's and ``reaping`` leaves it alone. ``input`` may be bytes (a
    ``git fast-import`` stream with binary blobs); output is text either way.
    ``background``: work that runs beside the step a user waits on (verify's nvcc
    beside its CPU compile) runs under ``nice``, it and every process it starts.
    ``until_main_exits``: the run ends when the command's own process exits (a user's
    program), not when every process holding its output has (what it left running,
    a server or a forgotten child, would hold it until the timeout); what it left is
    stopped and named in ``Result.left_running``.
    """
    return start(
        args,
        cwd=cwd,
        env=env,
        extra_env=extra_env,
        timeout=timeout,
        check=check,
        input=input,
        what=what,
        next_step=next_step,
        starts_daemon=starts_daemon,
        background=background,
        until_main_exits=until_main_exits,
    ).result()


def start(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = True,
    input: str | bytes | None = None,
    what: str | None = None,
    next_step: str | None = None,
    starts_daemon: bool = False,
    background: bool = False,
    until_main_exits: bool = False,
) -> Running:
    """``run``, started now and waited for at ``Running.result()``.

    For a command whose answer is needed later in the run (harvest's `git
    status` while its cache is read): the child works on another core, with no
    thread of ours competing for the interpreter meanwhile. ``timeout`` counts
    from the start. A run that ends without asking for the result (an error,
    Ctrl-C) leaves the child to ``reaping``, like any other."""
    binary = isinstance(input, bytes)
    argv = [os.fspath(a) for a in args]
    launch = _niced(argv) if background else argv
    full_env = _marked_env(dict(env) if env is not None else environ())
    if extra_env:
        full_env.update(extra_env)
    if starts_daemon:
        full_env.pop(RUN_ENV, None)
    began = time.monotonic()
    _started[0] += 1
    popen = _spawn(
        launch,
        cwd,
        env=full_env,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=not binary,
        errors=None if binary else "replace",
        start_new_session=True,
    )
    if background:
        _lower_autogroup(popen.pid)
    running = Running(
        popen, argv, full_env[CHILD_ENV], began, timeout, check, input, what, next_step
    )
    running.until_main_exits = until_main_exits
    return running


class Running:
    """A command ``start`` started: ``result()`` waits for it and reads its output."""

    def __init__(
        self,
        popen: subprocess.Popen[Any],
        argv: list[str],
        child: str,
        began: float,
        timeout: float | None,
        check: bool,
        input: str | bytes | None,
        what: str | None,
        next_step: str | None,
    ) -> None:
        self._popen = popen
        self.argv = argv
        self._child = child
        self._began = began
        self._timeout = timeout
        self._check = check
        self._input = input
        self._what = what
        self._next_step = next_step
        self._result: Result | None = None
        self.until_main_exits = False  # see ``run``

    @property
    def pid(self) -> int:
        return self._popen.pid

    def result(self) -> Result:
        """The finished command (the same object when asked again); ``ProcError`` on a
        non-zero exit with ``check``, ``ProcTimeout`` past the timeout (it is stopped)."""
        if self._result is not None:
            return self._result
        popen, argv = self._popen, self.argv
        # The deadline is a timer that stops the child, not communicate()'s own
        # timeout: with one, Popen waits for the exit by polling with sleeps that
        # double from 1 ms, which cost a short git call several milliseconds
        # (a child closes its pipes a moment before it exits).
        expired = threading.Event()
        timer = None
        if self._timeout is not None:
            left = max(0.0, self._timeout - (time.monotonic() - self._began))
            timer = threading.Timer(left, self._expire, (expired,))
            timer.daemon = True
            timer.start()
        leftovers: tuple[Leftover, ...] = ()
        try:
            if self.until_main_exits:
                out, err, leftovers = self._until_main_exits()
            else:
                out, err = _text(*popen.communicate(input=self._input))
        except BaseException:
            _kill_group(popen, self._child)
            raise
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()
        if expired.is_set():
            raise ProcTimeout(
                f"{self._what or 'The command'} did not finish within {self._timeout:g} s "
                "and was stopped.",
                args=argv,
                returncode=None,
                stdout=out or "",
                stderr=err or "",
                next_step=self._next_step,
            )
        result = Result(
            tuple(argv), popen.returncode, out or "", err or "", time.monotonic() - self._began,
            leftovers,
        )  # fmt: skip
        if self._check and popen.returncode != 0:
            raise ProcError(
                f"{self._what or 'The command'} failed (exit {popen.returncode}): "
                f"{_last_line(err or out)}",
                args=argv,
                returncode=popen.returncode,
                stdout=out or "",
                stderr=err or "",
                next_step=self._next_step,
            )
        self._result = result
        return result

    def _until_main_exits(self) -> tuple[str, str, tuple[Leftover, ...]]:
        from onboard import proctree

        needle = proctree.mark(CHILD_ENV, self._child)
        return proctree.output_until_exit(self._popen, self._input, needle, GRACE_SECONDS)

    def _expire(self, expired: threading.Event) -> None:
        expired.set()
        _kill_group(self._popen, self._child)

    def stop(self) -> None:
        """Stop the command when it is still running, with its process group: SIGTERM
        first, so that a git holding ``index.lock`` removes it (SIGKILL would leave
        it, and every later git command in that checkout would refuse to run)."""
        if self._result is None and self._popen.poll() is None:
            _kill_group(self._popen, self._child)
        with contextlib.suppress(OSError, ValueError):
            self._popen.communicate()


def stream(
    args: Sequence[str | os.PathLike[str]],
    *,
    on_line: Callable[[str], None],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    timeout: float | None = None,
    idle_timeout: float | None = None,
) -> int:
    """Run a long command, feeding each output line (stdout+stderr) to ``on_line``.

    Everything also goes to ``log_path`` when given. Returns the exit status;
    a signal death is reported the shell way (128 + signal number) so callers
    can tell a crash from a failure. ``idle_timeout`` stops a command that
    prints nothing for that long (a silent server); a watchdog thread enforces
    it and ``timeout`` even while no line arrives. Carriage returns end lines
    too (text mode), so progress meters arrive as lines.
    """
    argv = [os.fspath(a) for a in args]
    deadline = None if timeout is None else time.monotonic() + timeout
    child_env = _marked_env(dict(env) if env is not None else environ())
    child = child_env[CHILD_ENV]
    _started[0] += 1
    proc = _spawn(
        argv,
        cwd,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,
    )
    log = log_path.open("a", encoding="utf-8") if log_path else None
    last_output = [time.monotonic()]
    stopped: list[str] = []
    watchdog = None
    if idle_timeout is not None or deadline is not None:
        watchdog = _Watchdog(proc, child, last_output, stopped, deadline, idle_timeout)
        watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            last_output[0] = time.monotonic()
            if log:
                log.write(line)
            on_line(line.rstrip("\n"))
            if deadline is not None and time.monotonic() > deadline:
                stopped.append(f"did not finish within {timeout:g} s")
                _kill_group(proc, child)
                break
        proc.wait()
    except BaseException:
        _kill_group(proc, child)
        raise
    finally:
        if watchdog is not None:
            watchdog.done.set()
            watchdog.join()
        if log:
            log.close()
    if stopped:
        raise ProcTimeout(
            f"The command {stopped[0]} and was stopped.",
            args=argv,
            returncode=None,
        )
    code = proc.returncode
    return 128 - code if code < 0 else code


class _Watchdog(threading.Thread):
    """Stops a streamed command that is silent too long or past its deadline."""

    def __init__(
        self,
        proc: subprocess.Popen[str],
        child: str,
        last_output: list[float],
        stopped: list[str],
        deadline: float | None,
        idle_timeout: float | None,
    ) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.child = child
        self.last_output = last_output
        self.stopped = stopped
        self.deadline = deadline
        self.idle_timeout = idle_timeout
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            now = time.monotonic()
            if self.deadline is not None and now > self.deadline:
                self.stopped.append("ran past its time limit")
            elif self.idle_timeout is not None and now - self.last_output[0] > self.idle_timeout:
                self.stopped.append(f"printed nothing for {self.idle_timeout:g} s")
            else:
                continue
            _kill_group(self.proc, self.child)
            return


def _marked_env(env: dict[str, str]) -> dict[str, str]:
    token = os.environ.get(RUN_ENV)
    if token:
        env[RUN_ENV] = token
    env[CHILD_ENV] = os.urandom(6).hex()
    _CHILD_TOKENS.append(env[CHILD_ENV])
    return env


_CHILD_TOKENS: list[str] = []  # of every child started here (``kill_descendants``)


def _kill_group(
    proc: subprocess.Popen[str], child: str | None = None, *, grace: float | None = None
) -> None:
    """Stop the child and everything in its process group: SIGTERM, so it can
    stop its own children and remove its temporary files, then SIGKILL after
    ``grace`` seconds. The group is killed even when the leader has already
    exited (its children may still run), and so is every descendant carrying
    the ``child`` token that left the group."""
    grace = GRACE_SECONDS if grace is None else grace
    with signals.critical():  # a second Ctrl-C must not leave the group half-stopped
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if child:
            kill_marked(child, name=CHILD_ENV)


def _text(out: str | bytes | None, err: str | bytes | None) -> tuple[str, str]:
    def dec(data: str | bytes | None) -> str:
        if isinstance(data, bytes):
            return data.decode("utf-8", errors="replace")
        return data or ""

    return dec(out), dec(err)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


_RELEASED: list[subprocess.Popen[bytes]] = []


def detach(work: Callable[[], None]) -> bool:
    """Run ``work`` in a forked copy of this process that outlives it; False (and
    nothing run) where that cannot be done safely, so the caller runs it itself.

    For what the user is not waiting on and may be lost (a cache write: the
    next run redoes it), as `git gc --auto` detaches: the copy has its own
    session (Ctrl-C in the terminal is not its), no stdin, stdout or stderr
    (the answer is the parent's to print), and leaves with ``os._exit`` (the
    parent's exit handlers and buffers are the parent's). ``reaping`` leaves
    it alone: it holds no pipe of the parent's, and what it does is whole or
    not done (an atomic file replace).
    """
    # Forking a process with other threads can copy a lock another thread holds.
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # the copy
        code = 0
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            with contextlib.suppress(OSError):
                os.nice(BACKGROUND_NICE)
            work()
        except BaseException:  # nobody to tell: the work is redone next time
            code = 1
        finally:
            os._exit(code)
    _DETACHED.add(pid)
    return True


class Passthrough:
    """A user's program whose output goes straight to onboard's own stdout and stderr
    (``stdout_to_stderr``: both to stderr, so a ``--json`` answer stays alone on
    stdout), in its own session: Ctrl-\\ in the terminal reaches onboard, not the
    program. Its environment is the user's own (no ``LC_ALL=C``), marked like every
    child so that ``reaping`` stops whatever it started that is left."""

    def __init__(self, args: Sequence[str], *, stdout_to_stderr: bool = False) -> None:
        self.argv = list(args)
        env = _marked_env(dict(os.environ))
        self._child = env[CHILD_ENV]
        _started[0] += 1
        try:
            self._popen = subprocess.Popen(
                self.argv,
                env=env,
                stdout=sys.stderr.fileno() if stdout_to_stderr else None,
                start_new_session=True,
            )
        except OSError as exc:
            raise _cannot_start(self.argv, None, exc) from exc

    @property
    def pid(self) -> int:
        return self._popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def stop(self, grace: float | None = None) -> int:
        """Stop it with its process group (SIGTERM, then SIGKILL); its exit status."""
        if self._popen.poll() is None:
            _kill_group(self._popen, self._child, grace=grace)  # type: ignore[arg-type]
        return self._popen.wait()


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
            self._proc = _spawn(
                self.argv,
                cwd,
                env=dict(env) if env is not None else environ(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,
            )
        except BaseException:
            self._stderr.close()
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    def answer(self, request: bytes, marker: str, *, timeout: float) -> str | None:
        """Send ``request`` on stdin and return the first stdout line that starts with
        ``marker`` (without it); None when the child ended without one (see ``failure``)."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        timer = threading.Timer(timeout, _kill_group, (proc,))
        timer.start()
        try:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(request)
                proc.stdin.close()
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if line.startswith(marker):
                    return line[len(marker) :]
            proc.wait()
            if not timer.is_alive():
                raise ProcTimeout(
                    f"{self.argv[0]} gave no answer within {timeout:g} s and was stopped.",
                    args=self.argv,
                    returncode=None,
                )
            return None
        except BaseException:
            _kill_group(proc)
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
        # Held, and reaped when the next one is released: a Popen dropped while
        # its process runs warns, and one never waited for stays a zombie.
        _RELEASED[:] = [p for p in _RELEASED if p.poll() is None]
        _RELEASED.append(self._proc)
        _DETACHED.add(self._proc.pid)

    def stop(self) -> None:
        _kill_group(self._proc)
        self.release()

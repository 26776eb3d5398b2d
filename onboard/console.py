"""Terminal output: results on stdout (rich or JSON), progress on stderr."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

from onboard.report import Reporter, Task

STATUS_STYLE = {"passed": "green", "failed": "bold red", "not checked": "yellow"}


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


if TYPE_CHECKING:
    from rich.console import Console


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text that came from input, with terminal control characters shown as escapes.

    A pasted log can carry colour codes or worse (``\\x1b]0;title``, cursor
    moves); printed raw they would act on the user's terminal.
    """
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text)


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class QuietOnClosedPipe(Console):
        """rich exits 1 when the reader of a pipe goes away; onboard, like git
        and ripgrep, treats that as the reader having all it wanted
        (crash.run_cli turns the BrokenPipeError into exit 0)."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError()

    return QuietOnClosedPipe


# Not a terminal (a pipe, a log, CI): no width to fit, so lines are never wrapped,
# folded or cropped (rich would use 80 columns); the spaces rich pads lines with up
# to that width are dropped (_WholeLines).
UNBOUNDED_WIDTH = 10_000


class _WholeLines:
    """A text stream that passes lines on without the trailing spaces rich pads with."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        *done, self._pending = (self._pending + text).split("\n")
        if done:
            self._stream.write("".join(line.rstrip(" ") + "\n" for line in done))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return int(self._stream.fileno())

    @property
    def encoding(self) -> str:
        return str(getattr(self._stream, "encoding", "utf-8"))


def _console(stderr: bool, stream: Any = None, **kwargs: Any) -> Console:
    """The one place that decides what output is: a terminal (``isatty``), as wide as
    ``COLUMNS`` says or the terminal is (rich asks), where views fit that width
    (onboard/views/__init__.py, ``Screen``); or anything else, without a width."""
    given = stream
    stream = given if given is not None else (sys.stderr if stderr else sys.stdout)
    if not (hasattr(stream, "isatty") and stream.isatty()):
        options = {**kwargs, "width": UNBOUNDED_WIDTH, "soft_wrap": True}
        return _console_class()(file=cast("IO[str]", _WholeLines(stream)), **options)
    if given is not None:
        return _console_class()(file=given, **kwargs)
    return _console_class()(stderr=stderr, **kwargs)


def stdout_console(stream: Any = None) -> Console:
    """The console results are printed on (``stream``: another than stdout, for a test).
    In a terminal rich wraps what a view did not fit itself (soft_wrap off); the views
    print through ``onboard.views.Screen``, which keeps a wrapped line's indentation."""
    return _console(False, stream, highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return _console(True, highlight=False)


def markdown(console: Any, text: str) -> None:
    """Markdown rendered on a terminal; elsewhere its source, whose lines are whole."""
    if console.is_terminal:
        from rich.markdown import Markdown

        console.print(Markdown(text))
    else:
        console.print(text, markup=False, highlight=False)


@contextmanager
def redacted_output() -> Iterator[None]:
    """Everything written to stdout and stderr meanwhile (JSON, views, progress, error
    paragraphs) passes ``redact.RedactingStream``: the one point where output leaves
    onboard. A program onboard hands the terminal to (``stuck -- CMD``) writes to the
    file descriptors itself, past it: those are the program's own bytes."""
    from onboard import redact

    saved = sys.stdout, sys.stderr
    out, err = redact.RedactingStream(saved[0]), redact.RedactingStream(saved[1])
    sys.stdout, sys.stderr = cast("TextIO", out), cast("TextIO", err)
    try:
        yield
    finally:
        for stream in (out, err):
            # A reader that went away (crash.run_cli says so), a closed file.
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = saved
        redact.forget()


def emit_view(
    result: object,
    view: Any,
    *,
    as_json: bool,
    verbose: bool = False,
) -> None:
    """A result on stdout: its JSON, or ``view(result, console, verbose)``."""
    if as_json:
        from onboard.jsonable import to_json

        sys.stdout.write(json.dumps(to_json(result), indent=2, default=str) + "\n")
        sys.stdout.flush()
    else:
        view(result, stdout_console(), verbose)


class _RichTask(Task):
    def __init__(self, progress: Any, task_id: Any) -> None:
        self._progress = progress
        self._id = task_id

    def update(
        self, *, completed: float | None = None, total: float | None = None, detail: str = ""
    ) -> None:
        kwargs: dict[str, Any] = {"detail": detail}
        if completed is not None:
            kwargs["completed"] = completed
        if total is not None:
            kwargs["total"] = total
        self._progress.update(self._id, **kwargs)


class _LineTask(Task):
    """Progress as plain lines, for a stderr that is not a terminal (a log, CI, a pipe):
    a line when the task starts, at each quarter of its total, every HEARTBEAT_S
    seconds while nothing else was said, and when it ends."""

    HEARTBEAT_S = 15.0

    def __init__(self, console: Console, description: str, total: float | None) -> None:
        self._console = console
        self._description = description
        self._total = total
        self._completed = 0.0
        self._quarter = 0
        self._start = self._said = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heart = threading.Thread(target=self._beat, daemon=True)
        self._say(f"> {description}" + (f" ({total:g})" if total else ""))
        self._heart.start()

    def _say(self, line: str) -> None:
        with self._lock:
            self._said = time.monotonic()
            self._console.print(line, markup=False, highlight=False)

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self._start:.0f} s"

    def _beat(self) -> None:
        while not self._stop.wait(min(1.0, self.HEARTBEAT_S)):
            if time.monotonic() - self._said >= self.HEARTBEAT_S:
                done = f", {self._completed:g}/{self._total:g}" if self._total else ""
                self._say(f"  {self._description}: still working ({self._elapsed()}{done})")

    def update(
        self, *, completed: float | None = None, total: float | None = None, detail: str = ""
    ) -> None:
        if total is not None:
            self._total = total
        if completed is not None:
            self._completed = completed
        if self._total and self._completed < self._total:
            quarter = int(4 * self._completed / self._total)
            if quarter > self._quarter:
                self._quarter = quarter
                self._say(
                    f"  {self._description}: {self._completed:g}/{self._total:g} "
                    f"({self._elapsed()})"
                )

    def close(self, word: str) -> None:
        """``word``: done, failed (an error ended it) or stopped (interrupted)."""
        self._stop.set()
        self._heart.join()
        done = f", {self._completed:g}/{self._total:g}" if self._total else ""
        self._say(f"  {self._description}: {word} in {self._elapsed()}{done}")


@dataclass
class RichReporter(Reporter):
    """Progress and steps on stderr; quiet in --json mode except for errors.

    On a terminal, rich draws progress bars and spinners; anywhere else
    (a log file, CI) every task says what it does in plain lines."""

    quiet: bool = False
    _console: Any = field(default=None, repr=False)
    _running: dict[str, float] = field(default_factory=dict, repr=False)
    _status: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _err(self) -> Console:
        if self._console is None:
            self._console = stderr_console()
        return self._console

    # Messages are text, not markup: a commit subject such as ``[inductor] Fix ...`` or
    # a build's output shows as it is.
    def step(self, message: str) -> None:
        super().step(message)
        if not self.quiet:
            self._err().print(f"[bold cyan]>[/] {escape(message)}")

    def detail(self, message: str) -> None:
        super().detail(message)
        if self.verbose and not self.quiet:
            self._err().print(f"  [dim]{escape(message)}[/]")

    def check_started(self, name: str) -> None:
        super().check_started(name)
        if self.quiet:
            return
        with self._lock:
            self._started(name)

    def _started(self, name: str) -> None:
        console = self._err()
        self._running[name] = time.monotonic()
        if not console.is_terminal:
            console.print(f"started: {name}", markup=False, highlight=False)
            return
        console.print(f"[cyan]>[/] {escape(name)}")
        self._show_running()

    def check_finished(self, name: str, status: str, seconds: float) -> None:
        super().check_finished(name, status, seconds)
        if self.quiet:
            return
        with self._lock:
            self._finished(name, status, seconds)

    def _finished(self, name: str, status: str, seconds: float) -> None:
        console = self._err()
        self._running.pop(name, None)
        if not console.is_terminal:
            console.print(f"{status}: {name} ({seconds:.1f} s)", markup=False, highlight=False)
            return
        style = STATUS_STYLE.get(status, "cyan")
        console.print(f"[{style}]{escape(status)}[/] {escape(name)} [dim]({seconds:.1f} s)[/]")
        self._show_running()

    def _show_running(self) -> None:
        """A live status line (terminal only) naming the checks still running."""
        names = list(self._running)
        if not names:
            if self._status is not None:
                self._status.stop()
                self._status = None
            return
        text = "running: " + ", ".join(escape(n) for n in names)
        if self._status is None:
            self._status = self._err().status(text)
            self._status.start()
        else:
            self._status.update(text)

    @contextmanager
    def task(self, description: str, total: float | None = None) -> Iterator[Task]:
        self.messages.append(description)
        if self.quiet:
            yield Task()
            return
        if not self._err().is_terminal:
            lines = _LineTask(self._err(), description, total)
            word = "stopped"  # Ctrl-C or a signal (onboard.signals raises KeyboardInterrupt)
            try:
                yield lines
                word = "done"
            except Exception:
                word = "failed"
                raise
            finally:
                lines.close(word)
            return
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self._err(),
            transient=False,
        ) as progress:
            task_id = progress.add_task(description, total=total, detail="")
            yield _RichTask(progress, task_id)

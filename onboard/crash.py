"""Exit codes scripts can trust (the pre-commit error_handler idea).

0 success, 1 an expected failure (OnboardError) or a finding that needs
action, 2 bad usage, 130 Ctrl-C, 3 a bug: the traceback and versions go to a
log file whose path is printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import click

from onboard import __version__
from onboard.errors import OnboardError

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_USAGE = 2
EXIT_BUG = 3
EXIT_INTERRUPT = 130


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "onboard"


def _wants_json(argv: list[str]) -> bool:
    # Arguments after `--` belong to another program (`onboard build -- ...`).
    own = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in own


class Terminated(KeyboardInterrupt):
    """SIGTERM (a closed terminal's kill, `timeout`, CI cancelling a job), raised
    like Ctrl-C so every ``finally`` runs: nothing half-made is left behind."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield  # someone (a test runner, an embedding program) owns SIGTERM
        return
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _json_error(args: list[str], kind: str, message: str, next_step: str | None, code: int) -> None:
    """With --json, every way out leaves exactly one JSON object on stdout."""
    if _wants_json(args):
        error = {"kind": kind, "message": message, "next_step": next_step, "exit_code": code}
        click.echo(json.dumps({"ok": False, "error": error}, indent=2))


def _usage_next_step(exc: click.ClickException) -> str:
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "onboard"
    return f"Run `{path} --help` for the options."


def run_cli(cli: click.Command, argv: list[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        with _sigterm_as_interrupt():
            result = cli.main(args=args, prog_name="onboard", standalone_mode=False)
    except OnboardError as exc:
        _report(exc, args)
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        _json_error(args, "Interrupted", "Interrupted.", None, EXIT_INTERRUPT)
        click.echo("Interrupted.", err=True)
        return EXIT_INTERRUPT
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        code = EXIT_USAGE if isinstance(exc, click.UsageError) else EXIT_FINDING
        _json_error(args, type(exc).__name__, exc.format_message(), _usage_next_step(exc), code)
        exc.show()
        return code
    except Exception as exc:  # noqa: BLE001 - the whole point: a bug becomes a log file
        log = write_crash_log(exc, args)
        message = (
            f"onboard hit an unexpected error ({type(exc).__name__}: {exc}). This is a bug in "
            f"onboard, not in your setup. The traceback and versions are in {log}; please attach "
            "that file when you report it."
        )
        _json_error(args, "Bug", message, None, EXIT_BUG)
        click.echo(message, err=True)
        return EXIT_BUG
    # Commands return their exit status (doctor: 1 when a finding needs action).
    return int(result) if isinstance(result, int) else EXIT_OK


def _report(exc: OnboardError, args: list[str]) -> None:
    if _wants_json(args):
        click.echo(json.dumps({"ok": False, "error": exc.to_json()}, indent=2))
    click.echo(f"Error: {exc.paragraph()}", err=True)
    details = getattr(exc, "details", None)
    if details and ("-v" in args or "--verbose" in args):
        click.echo(details(), err=True)


def write_crash_log(exc: BaseException, args: list[str]) -> Path:
    # Imported here: every command starts through this module, few ever crash.
    import datetime as _dt
    import platform
    import traceback

    from onboard import proc

    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    directory = state_dir() / "logs"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"crash-{stamp}-{os.getpid()}.log"
    git = "unknown"
    # The log must be written whatever else fails.
    with contextlib.suppress(Exception):
        git = proc.run(["git", "--version"], timeout=10, check=False).stdout.strip()
    torch_version = "not probed"
    try:
        import importlib.metadata as md

        torch_version = md.version("torch")
    except Exception:  # noqa: BLE001
        torch_version = "not installed in onboard's interpreter"
    from onboard.redact import redact

    text = (
        f"onboard {__version__}\n"
        f"python {sys.version.split()[0]} ({sys.executable}) on {platform.platform()}\n"
        f"{git}\ntorch {torch_version}\n"
        f"argv: {redact(' '.join(args))}\n\n" + redact("".join(traceback.format_exception(exc)))
    )
    path.write_text(text, encoding="utf-8")
    return path

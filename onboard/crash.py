"""Exit codes scripts can trust (the pre-commit error_handler idea).

0 success, 1 an expected failure (OnboardError) or a finding that needs
action, 2 bad usage, 130 Ctrl-C, 3 a bug: the traceback and versions go to a
log file whose path is printed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
from pathlib import Path

import click

from onboard import __version__, signals
from onboard.errors import OnboardError
from onboard.signals import Terminated

__all__ = ["Terminated", "run_cli", "write_crash_log", "state_dir"]

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
    """Run the CLI on ``argv`` and return the exit code."""
    from onboard import proc
    from onboard.console import redacted_output

    args = list(sys.argv[1:] if argv is None else argv)
    signals.reset()
    # Every byte written to stdout and stderr from here on is redacted (docs/safety.md).
    with redacted_output():
        _sweep_dead_runs(args)
        try:
            with signals.handlers(), proc.reaping() as reaper:
                code = _run(cli, args)
                reaper.finished = code != EXIT_INTERRUPT
        except BrokenPipeError:
            code = _closed_pipe()
        late = signals.late_signal()
        if late is not None:
            with contextlib.suppress(OSError):
                click.echo(
                    "note: an interrupt arrived after the work was complete; nothing was undone.",
                    err=True,
                )
    return code


def _sweep_dead_runs(args: list[str]) -> None:
    """What an onboard killed outright (SIGKILL, the OOM killer) left running is stopped
    first, in one line each (one folder listing when there is none); `onboard recover`
    does it itself and says so in its answer."""
    from onboard import proc

    command = next((a for a in args if not a.startswith("-")), None)
    if command == "recover" or os.environ.get(proc.RUN_ENV):
        return  # (under another onboard: that one's records are its own)
    with contextlib.suppress(OSError):
        for swept in proc.sweep_dead_runs():
            click.echo(f"note: {swept.note()}", err=True)


def _run(cli: click.Command, args: list[str]) -> int:
    try:
        result = cli.main(args=args, prog_name="onboard", standalone_mode=False)
    except BrokenPipeError:
        raise
    except OnboardError as exc:
        _report(exc, args)
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        return _interrupted(args)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SystemExit:
        # Click turns a closed pipe into exit 1 after wrapping stdout; for
        # onboard (as for git and ripgrep) a reader that stopped is no error.
        if type(sys.stdout).__name__ == "_PacifyFlushWrapper":
            return _closed_pipe()
        raise
    except click.ClickException as exc:
        code = EXIT_USAGE if isinstance(exc, click.UsageError) else EXIT_FINDING
        _json_error(args, type(exc).__name__, exc.format_message(), _usage_next_step(exc), code)
        exc.show()
        return code
    except OSError as exc:
        situation = _environment_error(exc)
        if situation is None:
            return _bug(exc, args)
        _report(situation, args)
        return situation.exit_code
    except Exception as exc:  # noqa: BLE001 - the whole point: a bug becomes a log file
        return _bug(exc, args)
    # Commands return their exit status (doctor: 1 when a finding needs action).
    return int(result) if isinstance(result, int) else EXIT_OK


def _interrupted(args: list[str]) -> int:
    _json_error(args, "Interrupted", "Interrupted.", None, EXIT_INTERRUPT)
    click.echo("Interrupted.", err=True)
    return EXIT_INTERRUPT


# The disk or the permissions of the user's machine, not a bug in onboard: said
# as one paragraph wherever a command did not already catch it.
_ENVIRONMENT_ERRNOS = (
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.ENOSPC,
    errno.EDQUOT,
    errno.ENAMETOOLONG,
)


def _environment_error(exc: OSError) -> OnboardError | None:
    from onboard import files

    if exc.errno not in _ENVIRONMENT_ERRNOS:
        return None
    return files.os_error(exc, doing="writing its files")


def _closed_pipe() -> int:
    """``onboard X | head``: the reader has all it wanted, like git and ripgrep
    end quietly with 0. Point stdout at /dev/null so the interpreter's final
    flush does not complain."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_OK


def _bug(exc: BaseException, args: list[str]) -> int:
    log = write_crash_log(exc, args)
    message = (
        f"onboard hit an unexpected error ({type(exc).__name__}: {exc}). This is a bug in "
        f"onboard, not in your setup. The traceback and versions are in {log}; please attach "
        "that file when you report it."
    )
    _json_error(args, "Bug", message, None, EXIT_BUG)
    click.echo(message, err=True)
    return EXIT_BUG


def _report(exc: OnboardError, args: list[str]) -> None:
    _json_error(args, type(exc).__name__, exc.message, exc.next_step, exc.exit_code)
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

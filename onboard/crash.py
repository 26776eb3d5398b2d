"""Exit codes scripts can trust (the pre-commit error_handler idea).

0 success, 1 an expected failure (OnboardError) or a finding that needs
action, 2 bad usage, 130 Ctrl-C, 3 a bug: the traceback and versions go to a
log file whose path is printed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import sys
import traceback
from pathlib import Path

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
    return "--json" in argv


def run_cli(cli: click.Command, argv: list[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=args, prog_name="onboard", standalone_mode=False)
    except OnboardError as exc:
        _report(exc, args)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Interrupted.", err=True)
        return EXIT_INTERRUPT
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return EXIT_INTERRUPT
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.UsageError) else EXIT_FINDING
    except Exception as exc:  # noqa: BLE001 - the whole point: a bug becomes a log file
        log = write_crash_log(exc, args)
        click.echo(
            f"onboard hit an unexpected error ({type(exc).__name__}: {exc}). This is a bug in "
            f"onboard, not in your setup. The traceback and versions are in {log}; please attach "
            "that file when you report it.",
            err=True,
        )
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

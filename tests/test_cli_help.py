"""One convention per rule, as a user meets it: `onboard --help` lists every command
with a whole summary (and imports none of them), a mistyped command gets a
suggestion, and the options several commands share (--timeout, --md) behave the
same everywhere."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from fixtures.cli import every_command

from onboard.cli import COMMANDS, cli
from onboard.crash import EXIT_USAGE, run_cli

# `python -m onboard --help`, then what of onboard.commands it had imported.
_HELP_THEN_MODULES = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print(sorted(m for m in sys.modules\n"
    "    if m.startswith('onboard.commands')), file=sys.stderr))\n"
    "sys.argv = ['onboard', '--help']\n"
    "runpy.run_module('onboard', run_name='__main__')\n"
)


def _help_listing(tmp_path: Path) -> tuple[str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", _HELP_THEN_MODULES],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def test_help_lists_every_command_with_its_whole_summary_in_80_columns(tmp_path: Path) -> None:
    out, _ = _help_listing(tmp_path)
    assert max(len(line) for line in out.splitlines()) <= 80
    listed = out.split("Commands:\n", 1)[1].splitlines()
    rows = {line.split(None, 1)[0]: line.split(None, 1)[1] for line in listed if line.strip()}
    assert rows == {name: info.summary for name, info in COMMANDS.items()}
    assert not any(summary.endswith("...") for summary in rows.values())


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    _, err = _help_listing(tmp_path)
    assert err.strip().splitlines()[-1] == "[]"


def test_a_loaded_command_has_the_summary_the_listing_shows() -> None:
    ctx = click.Context(cli)
    for name, info in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None
        assert command.get_short_help_str(limit=80) == info.summary


@pytest.mark.parametrize("typed", ["wher", "stuk", "new_op", "reveiws", "doctr"])
def test_a_mistyped_command_gets_the_closest_name(
    typed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    meant = min(COMMANDS, key=lambda name: -difflib.SequenceMatcher(None, typed, name).ratio())
    assert run_cli(cli, [typed]) == EXIT_USAGE == 2
    said = capsys.readouterr().err.splitlines()
    assert f"Error: No such command '{typed}'. Did you mean '{meant}'?" in said


def test_the_console_script_suggests_too(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", "wher"], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == "Error: No such command 'wher'. Did you mean 'where'?"


def test_nothing_close_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(cli, ["xylophone"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "Error: No such command 'xylophone'."


# --- --timeout ------------------------------------------------------------------------


def _with_option(name: str) -> list[tuple[str, click.Command, click.Option]]:
    return [
        (cmd_name, command, param)
        for cmd_name, command in every_command()
        for param in command.params
        if isinstance(param, click.Option) and name in param.opts
    ]


def _argv(name: str, command: click.Command, *given: str) -> list[str]:
    """The command with ``given`` and a stand-in for every required parameter."""
    argv = [*name.split(), *given]
    for param in command.params:
        if isinstance(param, click.Option) and param.required:
            argv += [param.opts[0], "x"]
        elif isinstance(param, click.Argument) and param.required:
            argv.append("x")
    return argv


TIMEOUTS = _with_option("--timeout")


def test_every_timeout_is_the_one_definition() -> None:
    from onboard.commands.options import Seconds

    names = {name for name, _, _ in TIMEOUTS}
    assert {"ab", "bisect", "locate", "stuck", "trace", "graph"} <= names
    assert {type(param.type) for _, _, param in TIMEOUTS} == {Seconds}
    assert {param.metavar for _, _, param in TIMEOUTS} == {"SECONDS"}


@pytest.mark.parametrize(("name", "command", "param"), TIMEOUTS, ids=[t[0] for t in TIMEOUTS])
@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
def test_a_timeout_that_is_no_duration_is_bad_usage(
    name: str, command: click.Command, param: click.Option, value: str
) -> None:
    result = CliRunner().invoke(cli, _argv(name, command, "--timeout", value))
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--timeout'" in result.output
    assert repr(value) in result.output


@pytest.mark.parametrize(("name", "command", "param"), TIMEOUTS, ids=[t[0] for t in TIMEOUTS])
def test_a_timeout_in_seconds_parses(
    name: str, command: click.Command, param: click.Option
) -> None:
    ctx = command.make_context(name, _argv(name, command, "--timeout", "2.5")[len(name.split()) :])
    assert ctx.params["timeout"] == 2.5
    # The default is each command's own, and a number of seconds (or no limit) too.
    assert param.default is None or param.default > 0


# --- --md, also spelled --markdown --------------------------------------------------------

MARKDOWN = _with_option("--md")


def test_md_and_markdown_are_one_option_everywhere() -> None:
    assert {name for name, _, _ in MARKDOWN} >= {"harvest", "reviews", "blame"}
    assert _with_option("--markdown") == MARKDOWN  # nowhere an option of its own


@pytest.mark.parametrize(("name", "command", "param"), MARKDOWN, ids=[m[0] for m in MARKDOWN])
@pytest.mark.parametrize("spelling", ["--md", "--markdown"])
def test_either_spelling_asks_for_markdown(
    name: str, command: click.Command, param: click.Option, spelling: str
) -> None:
    words = len(name.split())
    assert command.make_context(name, _argv(name, command, spelling)[words:]).params["md"] is True
    assert command.make_context(name, _argv(name, command)[words:]).params["md"] is False


@pytest.mark.parametrize(("name", "command", "param"), MARKDOWN, ids=[m[0] for m in MARKDOWN])
def test_help_shows_md_and_not_the_old_spelling(
    name: str, command: click.Command, param: click.Option
) -> None:
    shown = CliRunner().invoke(cli, [*name.split(), "--help"]).output
    assert "--md " in shown and "--markdown" not in shown


# --- --kind ----------------------------------------------------------------------------


def test_a_bad_kind_is_one_error_naming_the_kinds(tmp_path: Path) -> None:
    from onboard.workflows.newop import family

    [(_, _, kind)] = _with_option("--kind")
    assert isinstance(kind.type, click.Choice)
    kinds = list(kind.type.choices)
    # Each choice is a family the scaffold has; anything else never reaches it.
    assert [family.default(str(k)).kind for k in kinds] == kinds
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", "new-op", "my_op", "--kind", "ternary"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if "rror" in line]
    assert errors == [
        "Error: Invalid value for '--kind': 'ternary' is not one of "
        + ", ".join(repr(k) for k in kinds)
        + "."
    ]

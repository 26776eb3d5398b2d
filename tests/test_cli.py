"""The CLI's contract: light start-up, exit codes scripts can trust, JSON errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from fixtures.cli import every_command

import onboard.workflows.doctor as doctor_workflow
from onboard.cli import cli
from onboard.crash import EXIT_BUG, EXIT_INTERRUPT, EXIT_USAGE, run_cli
from onboard.errors import OnboardError

HEAVY = ("torch", "git", "github", "torchgen", "yaml", "rich")


def _imported_top_level(importtime_stderr: str) -> set[str]:
    # -X importtime lines: "import time: self [us] | cumulative | imported package"
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and not name.startswith("imported package"):
                names.add(name.split(".")[0])
    return names


def test_help_works_and_imports_nothing_heavy(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "onboard", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Usage: onboard" in proc.stdout
    assert "doctor" in proc.stdout
    imported = _imported_top_level(proc.stderr)
    assert "click" in imported and "onboard" in imported  # the probe really sees imports
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_doctor_help_imports_nothing_heavy(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "onboard", "doctor", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    # whole option names (`--python` is not `--python-path`)
    assert {"--python", "--workspace", "--json"} <= set(re.findall(r"--[\w-]+", proc.stdout))
    assert not _imported_top_level(proc.stderr) & set(HEAVY)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["no-such-command"], "Error: No such command 'no-such-command'."),
        (["doctor", "--no-such-option"], "Error: No such option '--no-such-option'."),
    ],
    ids=["an-unknown-command", "an-unknown-option"],
)
def test_usage_errors_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(cli, argv) == EXIT_USAGE == 2
    assert said in capsys.readouterr().err.splitlines()


def test_console_script_exit_code_for_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "onboard", "doctor", "--no-such-option"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "No such option" in proc.stderr


def _raise(exc: BaseException):  # type: ignore[no-untyped-def]
    def fake(*args: object, **kwargs: object) -> object:
        raise exc

    return fake


def test_expected_failure_exits_1_with_one_paragraph(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        doctor_workflow,
        "diagnose",
        _raise(OnboardError("The thing is broken.", next_step="Run `onboard doctor` next.")),
    )
    assert run_cli(cli, ["doctor"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == "Error: The thing is broken. Run `onboard doctor` next."
    assert captured.out == ""


def test_expected_failure_in_json_mode(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        doctor_workflow, "diagnose", _raise(OnboardError("Broken.", next_step="Do X."))
    )
    assert run_cli(cli, ["doctor", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "ok": False,
        "error": {
            "kind": "OnboardError",
            "message": "Broken.",
            "next_step": "Do X.",
            "exit_code": 1,
        },
    }


def test_unexpected_error_exits_3_with_a_crash_log(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    monkeypatch.setattr(doctor_workflow, "diagnose", _raise(RuntimeError("kaboom")))
    assert run_cli(cli, ["doctor", "-v"]) == EXIT_BUG == 3
    err = capsys.readouterr().err
    assert "RuntimeError: kaboom" in err and "bug in onboard" in err
    state = Path(isolated_home / ".local" / "state")  # XDG_STATE_HOME (conftest)
    logs = list((state / "onboard" / "logs").glob("crash-*.log"))
    assert len(logs) == 1
    assert str(logs[0]) in err  # the path is printed
    text = logs[0].read_text()
    assert text.startswith("onboard ")
    assert "python " in text and "git version" in text and "torch " in text
    assert "Traceback" in text and "RuntimeError: kaboom" in text


def test_ctrl_c_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(doctor_workflow, "diagnose", _raise(KeyboardInterrupt()))
    assert run_cli(cli, ["doctor"]) == EXIT_INTERRUPT == 130
    assert "Interrupted." in capsys.readouterr().err


def test_version_option(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert run_cli(cli, ["--version"]) == 0
    assert capsys.readouterr().out == f"onboard, version {version('onboard')}\n"


# --- QA regressions: --json leaves exactly one JSON object on stdout on every way out ---


def test_usage_error_with_json_prints_one_json_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_cli(cli, ["doctor", "--no-such-option", "--json"]) == EXIT_USAGE
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["ok"] is False
    assert data["error"]["exit_code"] == 2 and "--no-such-option" in data["error"]["message"]
    assert "onboard doctor --help" in data["error"]["next_step"]
    assert "No such option" in captured.err  # the human text still goes to stderr


def test_json_after_double_dash_is_not_onboards(capsys: pytest.CaptureFixture[str]) -> None:
    # `onboard build --bogus -- --json`: the --json belongs to pip, so no JSON on stdout.
    assert run_cli(cli, ["build", "--bogus", "--", "--json"]) == EXIT_USAGE
    assert capsys.readouterr().out == ""


def test_bug_and_interrupt_with_json_print_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    monkeypatch.setattr(doctor_workflow, "diagnose", _raise(RuntimeError("kaboom")))
    assert run_cli(cli, ["doctor", "--json"]) == EXIT_BUG
    data = json.loads(capsys.readouterr().out)
    assert data["error"]["kind"] == "Bug" and "kaboom" in data["error"]["message"]
    assert data["error"]["exit_code"] == 3

    monkeypatch.setattr(doctor_workflow, "diagnose", _raise(KeyboardInterrupt()))
    assert run_cli(cli, ["doctor", "--json"]) == EXIT_INTERRUPT
    data = json.loads(capsys.readouterr().out)
    assert data["error"] == {
        "kind": "Interrupted",
        "message": "Interrupted.",
        "next_step": None,
        "exit_code": 130,
    }


def test_sigterm_runs_cleanup_and_exits_130(tmp_path: Path) -> None:
    # SIGTERM (a closed terminal, `timeout`, a cancelled CI job) unwinds like Ctrl-C,
    # so a command's `finally` (setup's staging folder removal) still runs.
    marker = tmp_path / "cleaned"
    script = (
        "import os, signal, time\n"
        "import onboard.workflows.doctor as d\n"
        "def diagnose(*a, **k):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(30)\n"
        "    finally:\n"
        f"        open({str(marker)!r}, 'w').write('yes')\n"
        "d.diagnose = diagnose\n"
        "from onboard.entry import main\n"
        "main(['doctor', '--json'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == EXIT_INTERRUPT, proc.stderr
    assert marker.read_text() == "yes"
    assert json.loads(proc.stdout)["error"]["kind"] == "Interrupted"


# --------------------------------------------------------------------------
# Paths: one parameter type for all of them

# Every parameter that takes text is a path (PathParam) or is named here with
# what it is instead, so a new path option cannot skip the checks.
NOT_PATHS = {
    ("bisect", "good"): "a commit or release",
    ("bisect", "bad"): "a commit or release",
    ("bisect", "term_old"): "a git bisect term",
    ("bisect", "term_new"): "a git bisect term",
    ("bisect", "package"): "a package name",
    ("bisect", "index_url"): "a URL",
    ("harvest", "modules"): "a module name",
    ("harvest", "api_url"): "a URL",
    ("harvest show", "item_id"): "a harvest id",
    ("harvest show", "api_url"): "a URL",
    ("locate", "message"): "an error message, or - for stdin",
    ("new-op", "name"): "an op name (checked by new-op itself)",
    ("new-op", "like"): "an op name",
    ("pr", "fork_remote"): "a git remote name",
    ("pr", "api_url"): "a URL",
    ("pr", "upstream_repo"): "OWNER/NAME",
    ("pr", "base"): "a commit",
    ("pr", "title"): "text",
    ("setup", "commit"): "a commit",
    ("where", "op"): "an op name",
    ("doctor", "import_module"): "a Python module name",
    ("trace", "code"): "Python code to trace",
    ("trace", "filter"): "a regular expression",
    ("graph", "code"): "Python code to run",
    ("graph", "variables"): "a global variable's name",
    ("ab", "a"): "installed, workspace, commit:REV or an interpreter (checked by ab)",
    ("ab", "b"): "installed, workspace, commit:REV or an interpreter (checked by ab)",
    ("stuck", "pid"): "a process id (checked by stuck)",
    ("blame", "spec"): "PATH:LINE[-END] (the path checked by blame, with closest names)",
    ("blame", "since"): "a date",
    ("memory", "step"): "a function name or FILE:LINE (checked by memory)",
    ("tests", "ops"): "an op name (an OpInfo or ATen name, checked by tests)",
    ("tests", "base"): "a commit",
    ("blame", "api_url"): "a URL",
    ("blame", "upstream"): "OWNER/NAME",
    ("reviews", "targets"): "op names or paths (told apart and checked by reviews)",
    ("reviews", "reviewer"): "a GitHub login",
    ("reviews", "base"): "a commit",
    ("reviews", "since"): "a date",
    ("reviews", "api_url"): "a URL",
    ("reviews", "upstream"): "OWNER/NAME",
}


def _takes_text(param: click.Parameter) -> bool:
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return False
    return isinstance(param.type, (click.types.StringParamType, click.Path))


def test_every_text_parameter_is_a_path_or_says_what_it_is() -> None:
    from onboard.commands._common import PathParam

    unclassified = [
        (name, param.name)
        for name, command in every_command()
        for param in command.params
        if _takes_text(param)
        and not isinstance(param.type, PathParam)
        and (name, param.name) not in NOT_PATHS
    ]
    assert not unclassified, (
        f"{unclassified}: give a path parameter `type=PathParam(...)` "
        "(onboard/commands/_common.py), or add it to NOT_PATHS with what it is"
    )
    stale = [
        k for k in NOT_PATHS if k not in {(n, p.name) for n, c in every_command() for p in c.params}
    ]
    assert not stale, f"NOT_PATHS names parameters that no longer exist: {stale}"


def _path_params() -> list[tuple[str, click.Command, click.Parameter]]:
    from onboard.commands._common import PathParam

    return [
        (name, command, param)
        for name, command in every_command()
        for param in command.params
        if isinstance(param.type, PathParam)
    ]


def _argv_with(name: str, command: click.Command, param: click.Parameter, value: str) -> list[str]:
    """The command with ``value`` for ``param`` and a stand-in for every other required one."""
    argv = name.split()
    for other in command.params:
        if isinstance(other, click.Option) and other.required and other is not param:
            argv += [other.opts[0], "x"]
    for other in command.params:
        if isinstance(other, click.Argument):
            if other is param:
                argv.append(value)
            elif other.required:
                argv.append("x")
    if isinstance(param, click.Option):
        argv += [param.opts[0], value]
    return argv


def test_there_are_path_parameters_to_check() -> None:
    names = {(name, p.name) for name, _, p in _path_params()}
    for expected in [("setup", "dest"), ("setup", "reference"), ("doctor", "workspace"),
                     ("bisect", "repro"), ("harvest", "paths"), ("pr", "repo"),
                     ("locate", "python"), ("build", "debinfo_files")]:  # fmt: skip
        assert expected in names


def _path_param_cases() -> list[Any]:
    return [
        pytest.param(name, command, param, id=f"{name.replace(' ', '-')}-{param.name}")
        for name, command, param in _path_params()
    ]


@pytest.mark.parametrize(("name", "command", "param"), _path_param_cases())
@pytest.mark.parametrize("value", ["", "   ", "\t"], ids=["empty", "spaces", "tab"])
def test_every_path_parameter_refuses_an_empty_value(
    name: str,
    command: click.Command,
    param: click.Parameter,
    value: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `onboard setup "$WS"` with WS unset made the current folder a workspace (exit 0).
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    argv = _argv_with(name, command, param, value)
    assert run_cli(cli, argv) == EXIT_USAGE, argv
    err = capsys.readouterr().err
    assert "is not a path: it is empty" in err, (argv, err)
    assert list(here.iterdir()) == []  # nothing was made here


@pytest.mark.parametrize(("name", "command", "param"), _path_param_cases())
def test_a_path_with_a_name_too_long_is_bad_usage(
    name: str,
    command: click.Command,
    param: click.Parameter,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tmp_path = tmp_path / "here"
    tmp_path.mkdir()
    long_dir = str(tmp_path / ("w" * 300))
    argv = _argv_with(name, command, param, long_dir)
    assert run_cli(cli, argv) == EXIT_USAGE, argv
    assert "300 bytes long" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_setup_counts_the_staging_folders_name_in_a_long_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # setup adds a hidden staging folder's name beside DIR: that must fit too
    assert run_cli(cli, ["setup", str(tmp_path / ("w" * 240)), "--from-wheel"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "plus the 26 onboard adds" in err and "Traceback" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["_home"]

"""`--python VALUE`: a value with a slash is a path, from the current folder (as a
shell takes it); a bare name is looked up on PATH."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from onboard.cli import cli
from onboard.crash import run_cli


def test_a_relative_path_with_a_slash_is_the_interpreter_there(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = Path(sys.executable).parent.parent
    monkeypatch.chdir(venv)
    relative = os.path.relpath(sys.executable, venv)  # bin/python
    assert "/" in relative and not os.path.isabs(relative)
    assert run_cli(cli, ["doctor", "--python", relative, "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["facts"]
    assert facts["python"]["executable"] == sys.executable


def test_a_bare_name_is_looked_up_on_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no such file here: the name is PATH's
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    name = Path(sys.executable).name
    assert run_cli(cli, ["doctor", "--python", name, "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["facts"]
    assert Path(facts["python"]["executable"]).parent == Path(sys.executable).parent

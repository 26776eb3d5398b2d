"""Every command `onboard new-op` and `onboard verify` tell a user to run works as
printed, pasted into a shell, when the workspace's path has a space in it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.cli import run_onboard, wheel_workspace
from fixtures.suggestions import strings_of

_SPAN = re.compile(r"`([^`\n]+)`")
_COMMANDS = ("cd ", "onboard ", "nox ", "git ")
# A placeholder a user fills in (`onboard setup NEW_DIR`), not a command to paste.
_PLACEHOLDER = re.compile(r"<[^>]+>|\b[A-Z][A-Z_]{2,}\b")


def _suggested(text: str) -> list[str]:
    spans = [s.strip() for s in _SPAN.findall(text)]
    return [s for s in spans if s.startswith(_COMMANDS) and not _PLACEHOLDER.search(s)]


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1500
    )


@pytest.mark.slow
def test_suggested_commands_run_as_printed_in_a_folder_with_a_space(tmp_path: Path) -> None:
    base = tmp_path / "my projects"
    base.mkdir()
    root = wheel_workspace(base)
    checkout = root / "pytorch"
    made = run_onboard("new-op", "my_frac", "--workspace", str(root), cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-3000:]
    from_new_op = _suggested(made.stdout + made.stderr)
    assert any(c.startswith("cd ") and "nox -s verify" in c for c in from_new_op), from_new_op
    # Off the op's branch, verify says how to get back to it (and compiles nothing).
    subprocess.run(["git", "-C", str(checkout), "switch", "-q", "reference"], check=True)
    checked = run_onboard("verify", "--workspace", str(root), "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    # (the JSON: the text is a table whose cells wrap at the terminal's width)
    from_verify = _suggested("\n".join(strings_of(json.loads(checked.stdout))))
    switch_back = [c for c in from_verify if c.startswith("git ") and " switch " in c]
    assert switch_back, from_verify
    # Each as printed: from an unrelated folder (a `cd` must land in the workspace), and
    # the ones without a path from the workspace, where they are meant to be typed.
    for command in [*from_new_op, *from_verify]:
        where = tmp_path if command.startswith(("cd ", "git -C ")) else root
        done = _shell(command, where)
        assert done.returncode == 0, f"`{command}` failed:\n{done.stdout[-2000:]}{done.stderr}"
    head = subprocess.run(
        ["git", "-C", str(checkout), "symbolic-ref", "--short", "HEAD"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert head.stdout.strip() == "onboard/new-op-my_frac"  # the switch did what it said

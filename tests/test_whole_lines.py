"""Output that is not a terminal (a pipe, a log file, CI) carries whole lines.

rich fits a terminal's width; a file has none, and at rich's default of 80
columns guide lines were cropped ("...Replac") and table cells folded mid-path.
The oracle is the unwrapped text itself: what `--json` (or the result object)
holds must appear, whole, on one line of what the CLI printed to a file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_new_op import make_workspace


def _run(*args: str, cwd: Path, stdout: Path) -> subprocess.CompletedProcess[str]:
    """`python -m onboard ARGS > stdout` (a real file, as `> log` makes it)."""
    with stdout.open("w") as out:
        return subprocess.run(
            [sys.executable, "-m", "onboard", *args],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            check=False,
        )


def test_the_practice_guide_and_next_steps_are_whole_lines_in_a_log(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    common = ("new-op", "trunc", "--dry-run", "--workspace", str(ws.root))
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "onboard", *common, "--json"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=True,
        ).stdout
    )
    log = tmp_path / "log"
    done = _run(*common, "-v", cwd=tmp_path, stdout=log)
    assert done.returncode == 0, done.stderr
    printed = log.read_text().splitlines()
    guide = [ln for ln in data["guide"].splitlines()[1:] if ln.strip()]
    long = [ln for ln in guide if len(ln) > 80]
    assert long  # lines a terminal-width console would cut
    missing = [ln for ln in guide if ln.rstrip() not in printed]
    assert not missing, missing
    for step in data["next_steps"]:
        assert any(step in ln for ln in printed), step
    # Progress on stderr (a pipe here) is whole lines too: each starts as a step ("> ")
    # or a task's line ("  "), none is the rest of a line cut in two.
    for line in done.stderr.splitlines():
        assert not line or line.startswith(("> ", "  ")), line


def test_a_verify_table_keeps_each_detail_on_one_line(tmp_path: Path) -> None:
    deep = "aten/src/ATen/native/cpu/" + "VeryLongDirectoryName/" * 6 + "MyKernel.cpp:21"
    code = (
        "from pathlib import Path\n"
        "from onboard.console import emit_view\n"
        "from onboard.views import verify as view\n"
        "from onboard.workflows.verify import Check, VerifyResult\n"
        "detail = 'numerics differ - look at the scalar lambda [look at " + deep + "]'\n"
        "emit_view(VerifyResult(Path('/ws'), [Check('new-op my_op: numerics', 'failed', detail),"
        " Check('in-tree build', 'not checked', 'needs ' + 'a full checkout ' * 12)]),"
        " view.render, as_json=False)\n"
    )
    log = tmp_path / "log"
    with log.open("w") as out:
        subprocess.run([sys.executable, "-c", code], stdout=out, check=True)
    printed = log.read_text().splitlines()
    assert any(deep + "]" in ln for ln in printed), printed
    assert any(("needs " + "a full checkout " * 12).strip() in ln for ln in printed), printed
    assert all(ln == ln.rstrip() for ln in printed)  # no padding out to a width

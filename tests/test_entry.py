"""A program's run through the entry point: its exit status and every byte of its
output (stdout block-buffered, as it is into a pipe) reach the caller."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _buffered() -> dict[str, str]:
    """The environment with stdout buffered, as it is when it is a pipe (whatever this
    machine's PYTHONUNBUFFERED says)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def test_exit_status_and_long_output_survive(tmp_path: Path) -> None:
    usage = subprocess.run(
        [sys.executable, "-m", "onboard", "harvest", "--limit", "-1", "--json"], cwd=tmp_path,
        env=_buffered(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert usage.returncode == 2
    assert json.loads(usage.stdout)["error"]["exit_code"] == 2
    # Block-buffered stdout (a pipe) with far more than one buffer to write.
    repo = tmp_path / "repo"
    (repo / "torch").mkdir(parents=True)
    (repo / "torch" / "many.py").write_text(
        "".join(f"x{n} = {n}  # TODO: task number {n}\n" for n in range(1500))
    )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "Import"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    listed = subprocess.run(
        [sys.executable, "-m", "onboard", "harvest", "--repo", str(repo), "--json", "--limit",
         "0", "--offline", "--no-cache"], cwd=tmp_path, env=_buffered(), capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout) > 200_000
    assert len(json.loads(listed.stdout)["items"]) == 1500

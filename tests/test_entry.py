"""The entry point ends a program's run without the interpreter's teardown: the
exit status, every byte of output and every exit handler are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path


def _buffered() -> dict[str, str]:
    """The environment with stdout buffered, as it is when it is a pipe (whatever this
    machine's PYTHONUNBUFFERED says)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=_buffered(),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_exit_handlers_of_the_run_still_run_and_output_is_whole(tmp_path: Path) -> None:
    flag = tmp_path / "handler-ran"
    run = _python(
        f"""
        import atexit, sys
        import onboard.entry as entry

        real = entry._cli

        def cli():
            # Registered during the run, as a temporary folder's cleanup is.
            atexit.register(lambda: open({str(flag)!r}, "w").write("ran"))
            # Output still buffered when the run ends (stdout is a pipe here).
            atexit.register(lambda: sys.stdout.write("written at exit\\n"))
            return real()

        entry._cli = cli
        sys.argv = ["onboard", "--version"]
        entry.main()
        """,
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "onboard, version 0.1.0\nwritten at exit\n"
    assert flag.read_text() == "ran"


def test_a_handler_from_before_the_run_is_not_cut_short(tmp_path: Path) -> None:
    """A handler registered before onboard's (a coverage tool's) would run after it:
    then the interpreter exits as usual."""
    run = _python(
        """
        import atexit, sys
        atexit.register(lambda: print("registered first"))
        sys.argv = ["onboard", "--version"]
        from onboard.entry import main
        main()
        """,
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["onboard, version 0.1.0", "registered first"]


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

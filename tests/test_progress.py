"""Progress where a step can take more than a couple of seconds: rich bars on a
terminal, plain lines anywhere else, nothing with --json."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

from onboard.console import RichReporter, _LineTask


class _Said(io.StringIO):
    """Output that tells the moment a line with ``words`` has been written to it."""

    def __init__(self, words: str) -> None:
        super().__init__()
        self.words = words
        self.seen = threading.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.words in self.getvalue():
            self.seen.set()
        return written


def _reporter(
    quiet: bool = False, out: io.StringIO | None = None
) -> tuple[RichReporter, io.StringIO]:
    out = out if out is not None else io.StringIO()
    reporter = RichReporter(quiet=quiet)
    reporter._console = Console(file=out, force_terminal=False, width=200)
    return reporter, out


def test_a_task_off_a_terminal_is_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    reporter, out = _reporter()
    with reporter.task("reading [the] files", total=8) as task:
        for n in range(1, 9):
            task.update(completed=n)
    lines = out.getvalue().splitlines()
    assert lines[0] == "> reading [the] files (8)"  # markup in names is text
    assert [ln.split(" (")[0] for ln in lines[1:4]] == [
        "  reading [the] files: 2/8",
        "  reading [the] files: 4/8",
        "  reading [the] files: 6/8",
    ]
    assert lines[-1].startswith("  reading [the] files: done in ") and lines[-1].endswith("8/8")
    assert "\x1b[" not in out.getvalue()  # no terminal codes in a log

    # A silent wait says it is still working; an error says the task failed.
    monkeypatch.setattr(_LineTask, "HEARTBEAT_S", 0.05)
    said = _Said("still working")
    reporter, out = _reporter(out=said)
    with pytest.raises(RuntimeError), reporter.task("regenerating"):
        assert said.seen.wait(60), out.getvalue()  # the task says nothing meanwhile
        raise RuntimeError("boom")
    text = out.getvalue()
    assert "  regenerating: still working (" in text
    assert text.splitlines()[-1].startswith("  regenerating: failed in ")
    # Ctrl-C (or a signal onboard turns into KeyboardInterrupt) stops it, not fails it.
    reporter, out = _reporter()
    with pytest.raises(KeyboardInterrupt), reporter.task("regenerating"):
        raise KeyboardInterrupt
    assert out.getvalue().splitlines()[-1].startswith("  regenerating: stopped in ")


def test_steps_and_details_are_text_not_markup() -> None:
    reporter, out = _reporter()
    reporter.verbose = True
    subject = "[inductor] Fuse pointwise ops [/] into [bold]reductions"
    reporter.step(f"testing {subject}")
    reporter.detail(subject)
    assert out.getvalue().splitlines() == [f"> testing {subject}", f"  {subject}"]


def test_json_mode_prints_no_progress() -> None:
    reporter, out = _reporter(quiet=True)
    with reporter.task("reading", total=2) as task:
        task.update(completed=2)
    reporter.step("a step")
    assert out.getvalue() == ""


def test_harvest_cold_run_reports_progress_in_a_log(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / "torch").mkdir(parents=True)
    (repo / "torch" / "a.py").write_text("# TODO: a thing\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    argv = [sys.executable, "-m", "onboard", "harvest", "--repo", str(repo), "--offline"]
    plain = subprocess.run(
        [*argv, "--no-cache"], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert plain.returncode == 0, plain.stderr
    assert "> checking which hits are real comments (1)" in plain.stderr
    assert "checking which hits are real comments: done in" in plain.stderr
    as_json = subprocess.run(
        [*argv, "--no-cache", "--json"], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert as_json.returncode == 0 and as_json.stderr == ""
    assert as_json.stdout.lstrip().startswith("{")


def test_the_kernel_index_ends_with_every_file_counted(tmp_path: Path) -> None:
    from onboard.workflows.opsource import kernels

    native = tmp_path / "aten/src/ATen/native"
    native.mkdir(parents=True)
    for n in range(3):
        (native / f"K{n}.cpp").write_text(f"TORCH_IMPL_FUNC(op{n}_out) () {{}}\n")
    reporter, out = _reporter()
    index = kernels._build(tmp_path, reporter)
    assert len(index["macros"]) == 3
    last = out.getvalue().splitlines()[-1]
    assert "Indexing ATen kernels" in last and "done in" in last and last.endswith("3/3")

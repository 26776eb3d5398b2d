"""Verify's job runner and its progress lines: ready jobs start by priority within
the slots, dependants wait, a failing job stops new starts, and each start and end
reaches the reporter, from `nox -s verify`'s output to `onboard verify`'s."""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from pathlib import Path

import pytest
from test_new_op import make_workspace

from onboard.jsonable import to_json
from onboard.report import CHECK_LINE, LineReporter, Reporter
from onboard.workflows.newop import jobs


def test_jobs_wait_for_their_dependencies_and_start_by_priority() -> None:
    order: list[str] = []
    lock = threading.Lock()

    def job(name: str) -> jobs.Job:
        def run() -> str:
            with lock:
                order.append(name)
            return name

        return jobs.Job(name, run)

    low, high, after = job("low"), job("high"), job("after-low")
    high.priority = 5
    after.after = ("low",)
    reporter = Reporter()
    results = jobs.run_jobs([low, high, after], reporter, slots=jobs.Slots(1))
    assert results == {"low": "low", "high": "high", "after-low": "after-low"}
    assert order == ["high", "low", "after-low"]
    assert "started: high" in reporter.messages
    assert any(m.startswith("done: after-low (") for m in reporter.messages)


def test_no_more_jobs_run_at_once_than_there_are_slots() -> None:
    running = {"now": 0, "most": 0}
    lock = threading.Lock()
    pair = threading.Barrier(2, timeout=60)  # two at a time meet here: both slots in use

    def run() -> None:
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        pair.wait()
        with lock:
            running["now"] -= 1

    work = [jobs.Job(f"job {i}", run) for i in range(6)]
    jobs.run_jobs(work, Reporter(), slots=jobs.Slots(2))
    assert running["most"] == 2


def test_a_failing_job_is_raised_after_the_running_ones_finish() -> None:
    failed = threading.Event()
    finished = threading.Event()

    def slow() -> None:
        failed.wait(60)  # still running when the other one fails...
        # ...and for a moment after: there is no event for "the runner has not raised
        # yet", so this is the time in which a runner that did not wait would raise.
        time.sleep(0.1)
        finished.set()

    def broken() -> None:
        failed.set()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        jobs.run_jobs(
            [jobs.Job("slow", slow), jobs.Job("broken", broken), jobs.Job("never", slow, ("x",))],
            Reporter(),
            slots=jobs.Slots(2),
        )
    assert finished.is_set()


def test_the_machine_slots_are_within_cores_and_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs.machine, "cores", lambda: 16)
    monkeypatch.setattr(jobs.machine, "available_memory", lambda: 4 * jobs.machine.GIB)
    assert jobs.machine_slots() == 2
    monkeypatch.setattr(jobs.machine, "available_memory", lambda: 0)
    assert jobs.machine_slots() == 1


def test_line_reporter_lines_parse_back() -> None:
    stream = io.StringIO()
    reporter = LineReporter(stream=stream)
    reporter.check_started("aten::my_frac: nvcc")
    reporter.check_finished("aten::my_frac: nvcc", "not checked", 0.25)
    first, second = (CHECK_LINE.match(line) for line in stream.getvalue().splitlines())
    assert first is not None and second is not None
    assert (first.group("status"), first.group("name")) == ("started", "aten::my_frac: nvcc")
    assert (second.group("status"), second.group("seconds")) == ("not checked", "0.2")


def test_onboard_verify_shows_each_check_the_session_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify_via_nox turns the session's lines into the reporter's start/end calls."""
    from onboard import proc
    from onboard.workflows import verify

    ws = make_workspace(tmp_path / "ws")
    (ws.root / "noxfile.py").write_text("")

    def fake_stream(args: object, *, on_line: object, **kwargs: object) -> int:
        assert callable(on_line)
        on_line("nox > Running session verify")
        on_line("onboard: started: aten::my_frac: nvcc")
        on_line("onboard: passed: aten::my_frac: nvcc (12.5 s)")
        report = ws.root / verify.REPORT_PATH
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(to_json(verify.VerifyResult(ws.root))))
        return 0

    monkeypatch.setattr(proc, "stream", fake_stream)
    reporter = Reporter()
    verify.verify_via_nox(ws, reporter=reporter)
    assert "started: aten::my_frac: nvcc" in reporter.messages
    assert "passed: aten::my_frac: nvcc (12.5 s)" in reporter.messages
    assert "nox > Running session verify" in reporter.messages  # a detail (-v)


def test_the_terminal_reporter_prints_plain_lines_off_a_terminal_and_nothing_quiet() -> None:
    from rich.console import Console

    from onboard.console import RichReporter

    stream = io.StringIO()
    reporter = RichReporter(_console=Console(file=stream, force_terminal=False))
    reporter.check_started("aten::trunc (practice): nvcc")
    reporter.check_finished("aten::trunc (practice): nvcc", "passed", 3.04)
    assert stream.getvalue().splitlines() == [
        "started: aten::trunc (practice): nvcc",
        "passed: aten::trunc (practice): nvcc (3.0 s)",
    ]
    quiet_stream = io.StringIO()
    quiet = RichReporter(quiet=True, _console=Console(file=quiet_stream))
    quiet.check_started("x")
    quiet.check_finished("x", "failed", 1.0)
    assert quiet_stream.getvalue() == ""
    live = io.StringIO()
    terminal = RichReporter(_console=Console(file=live, force_terminal=True, width=120))
    terminal.check_started("aten::my_frac: nvcc")
    terminal.check_finished("aten::my_frac: nvcc", "failed", 2.0)
    assert "aten::my_frac: nvcc" in live.getvalue() and terminal._status is None


def test_a_checks_progress_line_says_passed_when_its_rows_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onboard.workflows import verify

    def rows(*statuses: str) -> verify.CheckFn:
        def fn(ctx: verify.VerifyContext) -> list[verify.Check]:
            return [verify.Check(f"row {i}", s, "") for i, s in enumerate(statuses)]

        fn.__name__ = "_".join(s.replace(" ", "-") for s in statuses)
        return fn

    cases = [
        (verify.PASSED, verify.NOT_CHECKED),  # a written op: the in-tree build is not checkable
        (verify.NOT_CHECKED,),
        (verify.PASSED, verify.FAILED, verify.NOT_CHECKED),
    ]
    monkeypatch.setattr(verify, "CHECK_MODULES", [])
    monkeypatch.setattr(verify, "CHECKS", [rows(*c) for c in cases])
    reporter = Reporter()
    verify.run_checks(make_workspace(tmp_path / "ws"), reporter)
    said = {m.split(": ", 1)[1].rsplit(" (", 1)[0]: m.split(": ", 1)[0] for m in reporter.messages}
    for statuses in cases:
        name = " ".join(s.replace(" ", "-") for s in statuses)
        truth = (
            "failed"
            if verify.FAILED in statuses
            else "passed"
            if verify.PASSED in statuses
            else "not checked"
        )
        assert said[name] == truth, (name, reporter.messages)


def _git(repo: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _verify_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: object
) -> tuple[object, str]:
    """run_checks with two checks that pass, the first doing ``change`` to the checkout
    as it reads it (a user in another terminal), and the rendered table."""
    from rich.console import Console

    from onboard.views import verify as view
    from onboard.workflows import verify

    ws = make_workspace(tmp_path / "ws")

    def reads_while_it_changes(ctx: verify.VerifyContext) -> verify.Check:
        if callable(change):
            change(ctx.ws.checkout_path)
        return verify.Check("no new-op placeholder left", verify.PASSED, "none left")

    def reads_too(ctx: verify.VerifyContext) -> verify.Check:
        return verify.Check("an unrelated row", verify.NOT_CHECKED, "no GPU")

    monkeypatch.setattr(verify, "CHECK_MODULES", [])
    monkeypatch.setattr(verify, "CHECKS", [reads_while_it_changes, reads_too])
    result = verify.run_checks(ws, Reporter())
    out = io.StringIO()
    view.render(result, Console(file=out, width=200), verbose=False)
    return result, out.getvalue()


def _switch(checkout: Path) -> None:
    _git(checkout, "switch", "-q", "-c", "other")
    (checkout / "a_new_file.txt").write_text("on the other branch\n")
    _git(checkout, "add", "a_new_file.txt")
    _git(checkout, "commit", "-q", "-m", "other")


def _switch_and_back(checkout: Path) -> None:
    _switch(checkout)
    _git(checkout, "switch", "-q", "reference")


def _edit(checkout: Path) -> None:
    tracked = checkout / _git(checkout, "ls-files").splitlines()[0]
    tracked.write_bytes(tracked.read_bytes() + b"\n// edited while verify read it\n")


@pytest.mark.parametrize(
    ("change", "words"),
    [(_switch, "HEAD moved from"), (_switch_and_back, "came back"), (_edit, "files changed")],
    ids=["a-branch-switch", "a-switch-and-back", "an-edit"],
)
def test_a_verify_that_read_a_changing_checkout_says_so_and_passes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: object, words: str
) -> None:
    from onboard.workflows import verify

    result, text = _verify_while(tmp_path, monkeypatch, change)
    assert isinstance(result, verify.VerifyResult)
    assert not result.ok and result.exit_code == 1
    first = result.checks[0]
    assert first.name == verify.TREE_CHANGED and first.status == verify.FAILED
    assert words in first.detail and "run again" in first.detail
    assert verify.PASSED not in {c.status for c in result.checks}
    assert result.checks[1].status == verify.NOT_CHECKED  # it may have read either tree
    assert "changed while it was read" in text and " 1 passed" not in text
    again = verify.VerifyResult.from_json(json.loads(json.dumps(to_json(result))))
    assert again.tree_changed == result.tree_changed and not again.ok


def test_a_verify_of_a_checkout_that_stayed_put_adds_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onboard.workflows import verify

    result, text = _verify_while(tmp_path, monkeypatch, None)
    assert isinstance(result, verify.VerifyResult)
    assert result.ok and result.tree_changed is None
    assert [c.status for c in result.checks] == [verify.PASSED, verify.NOT_CHECKED]
    assert "1 passed, 0 failed, 1 not checked" in text


def _child(tmp_path: Path, stdout: str) -> object:
    """A real process that prints ``stdout`` (as a child would) and exits 0."""
    from onboard import proc

    script = tmp_path / "child.py"
    script.write_text(f"import sys\nsys.stdout.write({stdout!r})\n")
    return proc.run([sys.executable, str(script)], timeout=60, check=False)


def test_a_childs_answer_line_never_reaches_a_verify_row(tmp_path: Path) -> None:
    from onboard.children.onboard_answer import MARKER
    from onboard.workflows.newop.out_of_tree import compile_failure
    from onboard.workflows.newop.steps import child_failure

    # An answer cut short (a child killed while writing it): ask_child calls it unreadable.
    garbled = _child(tmp_path, f'building\n{MARKER}{{"built": fal\n')
    said = child_failure(garbled)  # type: ignore[arg-type]
    assert MARKER not in said and "cannot read" in said and "building" in said
    step = compile_failure(garbled, None, tmp_path, "k.cpp", 1.0)
    assert step is not None and MARKER not in step.detail and "gave no answer" in step.detail
    # A compile that failed without a path:line error: the log's end is shown, and the
    # child's (readable) answer, the last line of its stdout, is not part of it.
    payload = {"built": False, "log": "g++: fatal error: no input files", "log_path": "x.log"}
    answered = _child(tmp_path, f"ninja: build stopped\n{MARKER}{json.dumps(payload)}\n")
    step = compile_failure(answered, payload, tmp_path, "k.cpp", 1.0)
    assert step is not None and MARKER not in step.detail
    assert "no input files" in step.detail and "build stopped" in step.detail

"""`onboard ab`: sides, the overlay of a checkout's Python, rounds, verdicts, output
comparison, and every bad input.

Fast: the "installed torch" is a small package named torch put first on
PYTHONPATH (a few milliseconds to import instead of seconds), and the workspace
checkout is a git repository holding the same files, so every side runs a real
fresh interpreter on real sources. The end-to-end run on the real torch and a
`--from-wheel` workspace is in tests/test_ab_e2e.py (slow).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fixtures.events import Fifo

from onboard import git, workspace
from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput, NoWorkspace, OnboardError
from onboard.jsonable import to_json
from onboard.workflows.ab import compare, sides, stats
from onboard.workflows.ab.runs import RunFailed, parse_output

TORCH_INIT = "from torch import work\n__version__ = '0.0.fake'\n"
WORK = "def run(n):\n    return sum(range(n))\n"
SLOW_WORK = "import time\n\n\ndef run(n):\n    time.sleep(0.25)\n    return sum(range(n))\n"
SCRIPT = """\
import time
import torch

start = time.perf_counter()
total = torch.work.run(1000)
print(f"work_ms={(time.perf_counter() - start) * 1000}")
print(f"items=1000")
print("total", total)
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _torch_tree(root: Path, work: str = WORK) -> None:
    (root / "torch").mkdir(parents=True, exist_ok=True)
    (root / "torch" / "__init__.py").write_text(TORCH_INIT)
    (root / "torch" / "work.py").write_text(work)


@pytest.fixture
def fake_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The "installed" torch: a tiny package first on PYTHONPATH of every child."""
    site = tmp_path / "site"
    _torch_tree(site)
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site / "torch"


@pytest.fixture
def ws(tmp_path: Path, fake_torch: Path) -> workspace.Workspace:
    """A workspace whose checkout holds the installed torch's files at its first commit."""
    root = tmp_path / "ws"
    checkout = root / "pytorch"
    _torch_tree(checkout)
    _git(tmp_path, "init", "-q", "-b", "main", str(checkout))
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-q", "-m", "the installed commit")
    ws = workspace.Workspace(
        root=root,
        torch_version="0.0.fake",
        commit=_git(checkout, "rev-parse", "HEAD").strip(),
        commit_kind="release",
        build_prefix=None,
        python=sys.executable,
        checkout="pytorch",
        checkout_kind=workspace.CLONE,
    )
    workspace.save(ws)
    return workspace.load(root)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "bench" / "bench.py"
    path.parent.mkdir()
    path.write_text(SCRIPT)
    return path


def commit_slow_change(ws: workspace.Workspace) -> None:
    (ws.checkout_path / "torch" / "work.py").write_text(SLOW_WORK)
    _git(ws.checkout_path, "commit", "-q", "-am", "work: a slower run()")


def metric(result: object, name: str) -> stats.Comparison:
    return next(m.result for m in result.metrics if m.name == name)  # type: ignore[attr-defined]


def test_a_python_only_change_between_two_commits_is_slower_with_its_interval(
    ws: workspace.Workspace, script: Path
) -> None:
    commit_slow_change(ws)
    result = compare(
        script, ws=ws, python=sys.executable, a="commit:HEAD~1", b="commit:HEAD", rounds=5
    )
    work = metric(result, "work_ms")
    assert work.verdict == "slower"
    assert work.low is not None and work.high is not None and 1 < work.low <= work.high
    assert metric(result, "items").verdict == "no change"
    assert result.b.modules == ["torch.work"] and result.a.modules == []
    assert result.same_output is True and result.ok
    data = to_json(result)
    assert data["rounds"] == 5 and data["script_metrics"] is True
    assert {m["name"] for m in data["metrics"]} >= {"wall_s", "peak_rss_mb", "work_ms"}
    # The temporary worktrees are gone, and nothing was written into the checkout.
    assert git.worktree.list_all(ws.checkout_path) == [ws.checkout_path]
    assert not list((ws.root / ".onboard" / "ab").iterdir())
    assert not list(ws.checkout_path.rglob("__pycache__"))


def test_the_workspace_side_runs_the_checkouts_python_over_the_installed_torch(
    ws: workspace.Workspace, script: Path
) -> None:
    unchanged = compare(script, ws=ws, python=sys.executable, rounds=2)
    assert unchanged.b.modules == [] and "none differ" in unchanged.b.what
    assert metric(unchanged, "items").verdict == stats.TOO_FEW  # 2 rounds: no verdict
    (ws.checkout_path / "torch" / "work.py").write_text(SLOW_WORK)  # uncommitted
    changed = compare(script, ws=ws, python=sys.executable, rounds=5)
    assert changed.b.modules == ["torch.work"]
    assert metric(changed, "work_ms").verdict == "slower"


def test_adaptive_rounds_stop_when_clear_or_at_the_budget(
    ws: workspace.Workspace, script: Path
) -> None:
    commit_slow_change(ws)
    result = compare(script, ws=ws, python=sys.executable, a="commit:HEAD~1", b="commit:HEAD")
    assert result.rounds >= 5  # the minimum before a verdict may stop the rounds
    assert metric(result, "work_ms").verdict == "slower"
    short = compare(script, ws=ws, python=sys.executable, budget=0.001)
    assert short.rounds == 1 and any("--budget" in n for n in short.notes)


def test_a_different_output_is_reported_first_and_fails(
    ws: workspace.Workspace, script: Path
) -> None:
    (ws.checkout_path / "torch" / "work.py").write_text(WORK.replace("sum(range(n))", "n"))
    result = compare(script, ws=ws, python=sys.executable, rounds=1)
    assert result.same_output is False and not result.ok
    assert "-total 499500" in result.output_diff and "+total 1000" in result.output_diff


def test_an_output_that_changes_by_itself_is_not_compared(
    ws: workspace.Workspace, tmp_path: Path
) -> None:
    noisy = tmp_path / "noisy.py"
    noisy.write_text("import time\nprint('now', time.perf_counter_ns())\n")
    result = compare(noisy, ws=ws, python=sys.executable, rounds=2)
    assert result.same_output is None and result.ok
    assert "changes from run to run" in result.output_note


def test_a_script_without_metrics_is_compared_on_wall_time_and_rss_and_says_so(
    ws: workspace.Workspace, tmp_path: Path
) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\nprint('hello')\n")
    result = compare(plain, ws=ws, python=sys.executable, rounds=2)
    assert [m.name for m in result.metrics] == ["wall_s", "peak_rss_mb"]
    assert any("no name=value lines" in n for n in result.notes)
    assert to_json(result)["script_metrics"] is False


def test_a_script_that_fails_on_one_side_names_it_with_its_stderr(
    ws: workspace.Workspace, script: Path
) -> None:
    (ws.checkout_path / "torch" / "work.py").write_text(
        "def run(n):\n    raise ValueError('boom')\n"
    )
    with pytest.raises(RunFailed) as info:
        compare(script, ws=ws, python=sys.executable, rounds=1)
    text = info.value.paragraph()
    assert "failed on B" in text and "ValueError: boom" in text and "no verdict" in text
    assert not list((ws.root / ".onboard" / "ab").iterdir())


@pytest.mark.parametrize(
    ("spec", "error", "words"),
    [
        ("commit:no-such-rev", BadInput, ["no-such-rev is not a commit", "git -C"]),
        ("/no/such/python", BadInput, ["/no/such/python does not exist"]),
        ("bogus", BadInput, ["`bogus` is not a side"]),
    ],
)
def test_bad_sides_are_refused(
    ws: workspace.Workspace,
    script: Path,
    spec: str,
    error: type[OnboardError],
    words: list[str],
) -> None:
    with pytest.raises(error) as info:
        compare(script, ws=ws, python=sys.executable, b=spec, rounds=1)
    for word in words:
        assert word in info.value.paragraph()
    assert git.worktree.list_all(ws.checkout_path) == [ws.checkout_path]


def test_an_interpreter_without_torch_is_refused(
    ws: workspace.Workspace, script: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    bare.chmod(0o755)
    with pytest.raises(BadInput, match="it has no torch"):
        compare(script, ws=ws, python=sys.executable, b=str(bare), rounds=1)


def test_workspace_and_commit_sides_need_a_workspace(script: Path, fake_torch: Path) -> None:
    for spec in ("workspace", "commit:HEAD"):
        with pytest.raises(NoWorkspace) as info:
            compare(script, ws=None, python=sys.executable, b=spec, rounds=1)
        assert "onboard setup DIR" in info.value.paragraph()
    other = compare(script, ws=None, python=sys.executable, b=sys.executable, rounds=1)
    assert other.b.what.startswith("the torch")


def test_a_script_next_to_a_torch_folder_is_refused(ws: workspace.Workspace) -> None:
    inside = ws.checkout_path / "bench.py"
    inside.write_text(SCRIPT)
    with pytest.raises(OnboardError) as info:
        compare(inside, ws=ws, python=sys.executable, rounds=1)
    assert "Move the script out of the checkout" in info.value.paragraph()


def test_the_overlay_lists_only_modules_that_differ(tmp_path: Path) -> None:
    installed = tmp_path / "installed"
    checkout = tmp_path / "checkout"
    for root in (installed, checkout):
        _torch_tree(root)
        (root / "torch" / "nn").mkdir()
        (root / "torch" / "nn" / "__init__.py").write_text("")
    (checkout / "torch" / "nn" / "__init__.py").write_text("X = 1\n")
    (checkout / "torch" / "nn" / "new.py").write_text("Y = 2\n")
    (checkout / "torch" / "csrc").mkdir()
    (checkout / "torch" / "csrc" / "gen.py").write_text("")
    found = sides.module_map(checkout, installed / "torch")
    assert sorted(found) == ["torch.nn", "torch.nn.new"]
    source, origin, search = found["torch.nn"]
    assert origin == str(installed / "torch" / "nn" / "__init__.py")
    assert search == [str(installed / "torch" / "nn")]
    assert found["torch.nn.new"][1] is None and found["torch.nn.new"][2] is None


def test_metrics_are_name_value_lines_only() -> None:
    metrics, rest = parse_output("forward_ms=12.5\nloss = -1e-3\nresult: 3\nx=1 y=2\n")
    assert metrics == {"forward_ms": 12.5, "loss": -0.001}
    assert rest == ("result: 3", "x=1 y=2")


def test_the_bootstrap_interval_and_verdicts() -> None:
    same = stats.compare([1.0, 1.01, 0.99, 1.0, 1.0], [1.0, 0.99, 1.01, 1.0, 1.0], time_like=True)
    assert same.verdict == "no change" and same.clear
    slow = stats.compare([1.0, 1.02, 0.98, 1.0, 1.01], [2.0, 2.1, 1.9, 2.0, 2.05], time_like=True)
    assert slow.verdict == "slower" and slow.low is not None and slow.low > 1.5
    wide = stats.compare([1.0, 2.0, 0.5, 1.0, 1.2], [1.1, 0.4, 2.2, 1.0, 0.9], time_like=False)
    assert wide.verdict == "no change" and not wide.clear
    assert wide.detail == "no change this noise can show"
    assert stats.compare([1.0] * 5, [0.5] * 5, time_like=False).verdict == "lower"


# An A/A run of `onboard ab --budget 60` on a loaded 2-core machine (load 8-9): the
# budget ran out after 2 rounds, and these samples, two a side, were "slower, clear".
LOADED_WALL = ([2.61, 2.93], [3.98, 4.21])
LOADED_MM = ([10.4, 12.9], [36.2, 40.1])


def test_two_runs_a_side_give_no_verdict_whatever_the_interval_says() -> None:
    for a, b in (LOADED_WALL, LOADED_MM):
        # The interval alone excludes 1: the bootstrap of two values has three medians.
        interval = stats.bootstrap(a, b)
        assert interval is not None and interval[0] > 1 + stats.MIN_EFFECT
        found = stats.compare(a, b, time_like=True)
        assert found.verdict == "not enough runs to tell" and not found.clear
        assert "2 runs a side" in found.detail
    # One run short of the minimum is still no verdict; the minimum itself is one.
    short = stats.compare([1.0] * 4, [2.0] * 4, time_like=True)
    assert short.verdict == stats.TOO_FEW
    assert stats.compare([1.0] * 5, [2.0] * 5, time_like=True).verdict == "slower"


def test_a_noisy_machine_demotes_a_difference_within_the_noise() -> None:
    a = [1.0, 1.3, 0.9, 1.1, 1.2, 1.0]
    b = [1.25, 1.4, 1.3, 1.35, 1.5, 1.3]
    quiet = stats.compare(a, b, time_like=True)
    assert quiet.verdict == "slower" and quiet.clear
    noisy = stats.compare(a, b, time_like=True, noisy=True)
    assert noisy.verdict == "too noisy to tell" and not noisy.clear
    assert "looked slower" in noisy.detail
    # A difference far beyond the noise stands; a count (not a time) is not demoted.
    big = stats.compare(a, [3 * v for v in a], time_like=True, noisy=True)
    assert big.verdict == "slower" and big.clear
    assert stats.compare(a, b, time_like=False, noisy=True).verdict == "higher"


@pytest.fixture
def loaded_machine() -> object:
    """A busy loop on every core, for the length of the test."""
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 1)
    ]
    yield loops
    for loop in loops:
        loop.kill()
        loop.wait()


@pytest.mark.slow  # 5-10 s: two A/A runs beside a busy loop on every core
def test_an_a_a_run_on_a_loaded_machine_claims_no_difference(
    ws: workspace.Workspace, script: Path, loaded_machine: object
) -> None:
    # The budget spent in a round or two (as --budget 60 was on the user's machine),
    # then the fewest rounds that may give a verdict.
    for limits in ({"budget": 0.5}, {"rounds": stats.MIN_RUNS}):
        result = compare(
            script, ws=ws, python=sys.executable, a="installed", b="installed", **limits
        )
        claims = {
            m.name: m.result.detail
            for m in result.metrics
            if m.result.verdict in ("faster", "slower", "lower", "higher")
        }
        assert not claims, (result.rounds, result.noise, claims)
        if result.rounds < stats.MIN_RUNS:
            assert all(m.result.verdict == stats.TOO_FEW for m in result.metrics)
            assert any("give no verdict" in n for n in result.notes)


def test_cli_json_and_exit_codes(
    ws: workspace.Workspace, script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(cli, ["ab", str(script), "--rounds", "1", "--json", "--workspace", str(ws.root)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)
    assert data["ok"] is True and data["a"]["spec"] == "installed"
    assert data["b"]["spec"] == "workspace"
    code = run_cli(
        cli, ["ab", str(script), "--b", "commit:nope", "--json", "--workspace", str(ws.root)]
    )
    captured = capsys.readouterr()
    assert code == 2 and json.loads(captured.out)["ok"] is False
    code = run_cli(cli, ["ab", "missing.py", "--workspace", str(ws.root)])
    assert code == 2 and "does not exist" in capsys.readouterr().err


def test_sigterm_removes_the_temporary_worktrees(ws: workspace.Workspace, tmp_path: Path) -> None:
    started = Fifo(tmp_path / "started")
    slow = tmp_path / "slow.py"
    slow.write_text(
        f"import time\nopen({str(started)!r}, 'w').write('running\\n')\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "onboard",
            "ab",
            str(slow),
            "--a",
            "commit:HEAD",
            "--workspace",
            str(ws.root),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        started.line("the program running in a temporary worktree", process=proc)
    finally:
        started.close()
    assert len(git.worktree.list_all(ws.checkout_path)) == 2
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert git.worktree.list_all(ws.checkout_path) == [ws.checkout_path]
    assert not list((ws.root / ".onboard" / "ab").iterdir())


def test_the_workspace_build_is_used_when_onboard_build_made_one(
    ws: workspace.Workspace, script: Path
) -> None:
    venv_python = ws.root / ".nox" / "build" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    (ws.checkout_path / "build").mkdir()
    (ws.checkout_path / "build" / "CMakeCache.txt").write_text("")
    result = compare(script, ws=replace(ws), python=sys.executable, rounds=1)
    assert result.b.python == str(venv_python) and "workspace build" in result.b.what


# The script's own oracle: Python's "compile" audit event (PEP 578) names every
# source file compiled during the run; a torch module read from bytecode raises none.
COMPILED_SCRIPT = """\
import sys

compiled = []


def hook(event, args):
    if event == "compile" and isinstance(args[1], str) and "torch" in args[1]:
        compiled.append(args[1])


sys.addaudithook(hook)
import torch.work

print("torch files compiled from source:", len(compiled))
"""


def _make_build(ws: workspace.Workspace) -> None:
    """What `onboard build` leaves: the build venv's python and a CMake cache."""
    venv_python = ws.root / ".nox" / "build" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    (ws.checkout_path / "build").mkdir()
    (ws.checkout_path / "build" / "CMakeCache.txt").write_text("")


def _no_bytecode_writes(fake_torch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in many images: the installed torch has its bytecode (pip compiles at install),
    and Python may not write any."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(fake_torch)], check=True)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


def test_an_a_a_run_on_every_pair_of_sides_starts_alike_without_writing_bytecode(
    ws: workspace.Workspace,
    fake_torch: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_bytecode_writes(fake_torch, monkeypatch)
    script = tmp_path / "aa" / "aa.py"
    script.parent.mkdir()
    script.write_text(COMPILED_SCRIPT)
    kinds = ["installed", "workspace", "commit:HEAD", sys.executable]
    pairs = [(a, b) for i, a in enumerate(kinds) for b in kinds[i:]]
    seen = []
    for build in (False, True):
        if build:  # `workspace` is now the workspace build
            _make_build(ws)
            pairs = [("workspace", b) for b in kinds]
        for a, b in pairs:
            result = compare(script, ws=ws, python=sys.executable, a=a, b=b, rounds=1)
            told = f"A={a} B={b} (build={build})"
            # Both sides read torch from bytecode: the script says so, identically.
            assert result.same_output is True, (told, result.output_diff)
            assert result.differences == [], (told, result.differences)
            assert result.compiled["A"] == result.compiled["B"], told
            seen.append(result.b.what)
    assert any("workspace build" in b for b in seen)
    assert any("module(s) from the checkout" in b for b in seen)
    assert not list(ws.checkout_path.rglob("__pycache__"))


def test_a_changed_module_is_read_from_bytecode_where_the_installed_one_is(
    ws: workspace.Workspace, fake_torch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_bytecode_writes(fake_torch, monkeypatch)
    (ws.checkout_path / "torch" / "work.py").write_text(WORK + "\nCHANGED = True\n")
    script = tmp_path / "aa" / "aa.py"
    script.parent.mkdir()
    script.write_text(COMPILED_SCRIPT + "print(getattr(torch.work, 'CHANGED', False))\n")
    result = compare(script, ws=ws, python=sys.executable, rounds=1)
    assert result.b.modules == ["torch.work"]
    assert result.same_output is False  # the code differs, and only the code
    assert "+True" in result.output_diff
    assert " torch files compiled from source: 0" in result.output_diff.splitlines()
    assert result.differences == []
    assert not list(ws.checkout_path.rglob("__pycache__"))


def test_a_side_that_compiles_torch_on_every_run_is_said_before_the_numbers(
    ws: workspace.Workspace,
    fake_torch: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _no_bytecode_writes(fake_torch, monkeypatch)
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    wrapper = tmp_path / "python-elsewhere"  # the same interpreter, its cache somewhere empty
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -X pycache_prefix={empty} "$@"\n')
    wrapper.chmod(0o755)
    plain = tmp_path / "plain.py"
    plain.write_text("import torch.work\nprint('ok')\n")
    result = compare(plain, ws=ws, python=sys.executable, b=str(wrapper), rounds=2)
    assert result.compiled["A"] == [1, 1]  # the script itself; torch from bytecode
    many = result.compiled["B"][0]  # and torch/__init__.py, torch/work.py, the stdlib's
    assert many >= 3 and result.compiled["B"] == [many, many]
    text = " ".join(result.differences)
    assert "where bytecode is cached" in text and str(empty) in text
    assert f"a run on A compiles 1 Python file(s) from source, a run on B {many}" in text
    assert to_json(result)["environment"]["same"] is False
    code = run_cli(
        cli, ["ab", str(plain), "--b", str(wrapper), "--rounds", "1", "--workspace", str(ws.root)]
    )
    out = capsys.readouterr().out
    assert code == 0 and "A and B differ in more than the code" in out
    assert out.index("differ in more than the code") < out.index("wall_s")

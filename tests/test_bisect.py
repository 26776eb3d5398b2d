"""`onboard bisect`: real temporary PyTorch-shaped histories, real git bisect, real signals."""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.events import Fifo, gone
from fixtures.pytorch_repo import FIRST_PR_NUMBER, REGRESSION_MODULE, REPRO_SCRIPT, RepoInfo, git

from onboard.errors import BadInput, OnboardError
from onboard.jsonable import to_json
from onboard.report import Reporter
from onboard.workflows.bisect import BisectRequest, run_bisect
from onboard.workflows.bisect.builds import needs_rebuild
from onboard.workflows.bisect.model import commit_info, github_base, pr_of
from onboard.workflows.bisect.runner import (
    CRASH,
    FAIL,
    PASS,
    SKIP,
    TIMEOUT,
    Run,
    classify,
    decide,
    gpu_available,
    uses_cuda,
)

RepoFactory = Callable[..., RepoInfo]
ROOT = Path(__file__).resolve().parents[1]

# `check()` of the fixture's regression module, read from the checkout the
# repro runs against (PYTHONPATH=checkout, seed_from_wheel=False).
_CHECK = "import torch._onboard_regression as r\nok = r.check()\n"


def _repro(tmp_path: Path, body: str, name: str = "repro.py") -> Path:
    path = tmp_path / name
    path.write_text("import os, sys, signal, time\n" + _CHECK + textwrap.dedent(body))
    return path


def _make(factory: RepoFactory, commits: int = 24, regression_at: int | None = 15) -> RepoInfo:
    return factory(commits=commits, regression_at=regression_at, seed_from_wheel=False)


def _state(repo: Path) -> tuple[str, str, str, list[str]]:
    """HEAD, branch, porcelain status (with untracked), BISECT_* files in .git."""
    bisect_files = sorted(p.name for p in (repo / ".git").iterdir() if p.name.startswith("BISECT"))
    return (
        git("rev-parse", "HEAD", cwd=repo),
        git("symbolic-ref", "-q", "--short", "HEAD", cwd=repo, check=False),
        git("status", "--porcelain", cwd=repo),
        bisect_files,
    )


def _midpoint(repo: Path, old: str, new: str) -> str:
    """The commit git bisect tests first (same algorithm, asked directly)."""
    return git("rev-list", "--bisect", "--first-parent", new, f"^{old}", cwd=repo)


# --------------------------------------------------------------------------
# Units: verdicts, crash codes, GPU detection, PR numbers, rebuild rules


def _run(outcome: str) -> Run:
    crash = outcome == CRASH
    return Run(
        outcome, -11 if crash else 0 if outcome == PASS else 1, "SIGSEGV" if crash else None, 0.1
    )


@pytest.mark.parametrize(
    ("outcomes", "on_crash", "value", "flaky", "reason"),
    [
        pytest.param((FAIL, PASS, PASS), "bad", PASS, True, "2 passed, 1 failed of 3 runs",
                     id="majority-passes"),
        pytest.param((PASS, FAIL), "bad", SKIP, True, "no majority: 1 passed, 1 failed of 2 runs",
                     id="a-tie-is-skipped"),
        pytest.param((CRASH, CRASH, PASS), "bad", FAIL, True, "1 passed, 2 failed of 3 runs",
                     id="crashes-count-as-bad"),
        pytest.param((CRASH,), "skip", SKIP, False, "crashed (SIGSEGV)",
                     id="a-crash-with-on-crash-skip"),
        pytest.param((TIMEOUT, TIMEOUT), "bad", SKIP, False, "timed out after 0 s (2 of 2 runs)",
                     id="only-timeouts-decide-nothing"),
    ],
)  # fmt: skip
def test_the_runs_at_a_commit_decide_by_majority(
    outcomes: tuple[str, ...], on_crash: str, value: str, flaky: bool, reason: str
) -> None:
    v = decide(tuple(_run(o) for o in outcomes), on_crash)
    assert (v.value, v.flaky, v.reason) == (value, flaky, reason)


@pytest.mark.parametrize(
    ("returncode", "stderr", "outcome", "signal_name"),
    [
        pytest.param(-signal.SIGSEGV, "", CRASH, "SIGSEGV", id="killed-by-a-signal"),
        # through a shell or a pyenv shim: 128 + the signal's number
        pytest.param(128 + signal.SIGABRT, "", CRASH, "SIGABRT", id="128-plus-a-signal"),
        pytest.param(1, "", FAIL, None, id="a-plain-failure"),
        # git bisect run's convention for "cannot test this commit" is kept
        pytest.param(125, "", "untestable", None, id="exit-125-untestable"),
        pytest.param(1, "AssertionError: Torch not compiled with CUDA enabled", "no-gpu", None,
                     id="needs-a-gpu"),
    ],
)  # fmt: skip
def test_a_runs_exit_is_classified(
    returncode: int, stderr: str, outcome: str, signal_name: str | None
) -> None:
    from onboard.proc import Result

    found, sig = classify(Result(("x",), returncode, "", stderr, 0.1))
    assert found == outcome
    assert (sig is None) is (signal_name is None)
    assert signal_name is None or sig is not None and sig.startswith(signal_name)


def test_an_untestable_run_skips_the_commit() -> None:
    assert decide((Run("untestable", 125, None, 0.1),), "bad").value == SKIP


@pytest.mark.parametrize(
    ("source", "uses"),
    [
        ("x = torch.ones(2, device='cuda')", True),
        ("y = x.cuda()", True),
        ("# runs on cuda too\nimport torch\n", False),
        ("dev = 'cpu'\nif torch.cuda.is_available():\n    pass\n", False),
        ("import torch\nprint(torch.ones(2))\n", False),
    ],
    ids=["device-cuda", "dot-cuda", "only-a-comment", "only-an-availability-check", "cpu"],
)
def test_uses_cuda(source: str, uses: bool) -> None:
    assert uses_cuda(source) is uses


_BASE = "https://github.com/pytorch/pytorch"


@pytest.mark.parametrize(
    ("subject", "body", "pr"),
    [
        ("Fix a thing (#123)", f"Fix.\n\nPull Request resolved: {_BASE}/pull/123\nApproved by: x",
         123),
        ("Fix a thing (#456)", "", 456),
        ("Fix a thing", "", None),
    ],
    ids=["mergebot-trailer", "number-in-the-subject", "no-pr"],
)  # fmt: skip
def test_pr_of_mergebot_messages(subject: str, body: str, pr: int | None) -> None:
    url = f"{_BASE}/pull/{pr}" if pr else None
    assert pr_of(subject, body, _BASE) == (pr, url)


@pytest.mark.parametrize(
    ("remotes", "linked"),
    [
        ({}, None),
        ({"origin": "/srv/git/proj.git"}, None),
        ({"origin": "https://gitlab.com/me/proj.git"}, None),
        ({"origin": "git@github.com:me/proj.git"}, "me/proj"),
        ({"origin": "https://github.com/me/proj", "upstream": "https://github.com/org/proj.git"},
         "org/proj"),
    ],
    ids=["no-remote", "a-local-path", "another-host", "github-fork", "upstream-first"],
)  # fmt: skip
def test_a_subjects_pr_number_links_only_to_the_repositorys_own_github(
    tmp_path: Path, remotes: dict[str, str], linked: str | None
) -> None:
    # A repository that is not PyTorch: "(#1013)" is its own pull request, if anyone's.
    repo = tmp_path / "proj"
    git("init", "-q", "-b", "main", str(repo), cwd=tmp_path)
    (repo / "a.py").write_text("x = 1\n")
    git("add", "a.py", cwd=repo)
    git("commit", "-q", "-m", "Fix the parser (#1013)", cwd=repo)
    for name, url in remotes.items():
        git("remote", "add", name, url, cwd=repo)
    sha = git("rev-parse", "HEAD", cwd=repo)
    info = commit_info(repo, sha, github_base(repo))
    assert info.pr == 1013
    if linked is None:
        assert info.pr_url is None and info.url is None
    else:
        assert info.pr_url == f"https://github.com/{linked}/pull/1013"
        assert info.url == f"https://github.com/{linked}/commit/{sha}"
    assert "pytorch/pytorch" not in json.dumps(to_json(info))


@pytest.mark.parametrize(
    ("path", "rebuild"),
    [
        ("torch/nn/functional.py", False),
        ("docs/source/torch.rst", False),
        ("aten/src/ATen/native/UnaryOps.cpp", True),
        ("aten/src/ATen/native/cuda/UnaryFractionKernels.cu", True),
        ("aten/src/ATen/native/native_functions.yaml", True),
        ("CMakeLists.txt", True),
        ("torchgen/gen.py", True),  # the code generator shapes the C++
        ("tools/autograd/gen_variable_type.py", True),
        ("setup.py", True),
        ("third_party/pybind11", True),  # a submodule pin
    ],
)
def test_needs_rebuild(path: str, rebuild: bool) -> None:
    assert needs_rebuild(path) is rebuild


# --------------------------------------------------------------------------
# The commit level


def test_python_regression_exact_culprit(pytorch_repo_factory: RepoFactory, tmp_path: Path) -> None:
    info = _make(pytorch_repo_factory, commits=40, regression_at=23)
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    before = _state(info.path)
    reporter = Reporter()

    result = run_bisect(
        BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)), reporter
    )

    c = result.commits
    assert c is not None and c.culprit is not None
    assert c.culprit.sha == info.regression_sha
    assert c.culprit.pr == FIRST_PR_NUMBER + 23
    assert c.culprit.pr_url == f"https://github.com/pytorch/pytorch/pull/{FIRST_PR_NUMBER + 23}"
    assert c.culprit.files == (f"M\t{REGRESSION_MODULE}",)
    assert c.culprit.author and c.culprit.date.startswith("2025-")
    assert result.ok and result.exit_code == 0
    assert c.builds == 0
    assert c.executions <= math.ceil(math.log2(39)) + 2
    # One estimate of the steps: what is announced is what step 1 says.
    about = next(re.search(r"\(about (\d+) steps", m) for m in reporter.messages if "(about" in m)
    first = next(m for m in reporter.messages if m.startswith("step 1 of ~"))
    assert about and first.startswith(f"step 1 of ~{about.group(1)}:")
    assert _state(info.path) == before
    # the saved log replays to the same answer
    assert c.log is not None and c.log.is_file()
    replay = git("bisect", "replay", c.log, cwd=info.path)
    assert f"{info.regression_sha} is the first bad commit" in replay
    git("bisect", "reset", "main", cwd=info.path)


@pytest.mark.parametrize("n", [2, 3, 5, 10, 17, 100])
def test_step_estimate_is_gits_own(tmp_path: Path, n: int) -> None:
    from onboard.workflows.bisect.commits import estimate_steps

    repo = tmp_path / "r"
    git("init", "-q", repo)
    for i in range(n + 1):
        git("commit", "-q", "--allow-empty", "-m", f"c{i}", cwd=repo)
    first = git("rev-list", "--max-parents=0", "HEAD", cwd=repo)
    git("bisect", "start", cwd=repo)
    git("bisect", "bad", "HEAD", cwd=repo)
    said = git("bisect", "good", first, cwd=repo)
    roughly = re.search(r"roughly (\d+) step", said)
    assert roughly, said
    assert estimate_steps(n) == 1 + int(roughly.group(1))


def test_untracked_file_in_the_way_is_not_blamed_on_the_bounds(tmp_path: Path) -> None:
    """git cannot check out the middle commit: an untracked file has its path."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", repo)
    for i in range(8):
        (repo / "flag.txt").write_text("good\n" if i < 5 else "bad\n")
        if i == 2:
            (repo / "notes.txt").write_text("tracked for a while\n")
        if i == 6:
            (repo / "notes.txt").unlink()
        git("add", "-A", cwd=repo)
        git("commit", "-q", "--allow-empty", "-m", f"c{i}", cwd=repo)
    (repo / "notes.txt").write_text("mine, untracked\n")
    repro = tmp_path / "repro.py"
    repro.write_text(
        "import os, sys\n"
        "root = os.environ['PYTHONPATH'].split(os.pathsep)[0]\n"
        "sys.exit(0 if open(os.path.join(root, 'flag.txt')).read().strip() == 'good' else 1)\n"
    )
    first = git("rev-list", "--max-parents=0", "HEAD", cwd=repo)
    with pytest.raises(OnboardError) as info:
        run_bisect(BisectRequest(repro=repro, good=first, repo=str(repo), build="never"))
    text = info.value.paragraph()
    assert "untracked files would be overwritten by it (notes.txt)" in text
    assert "--good is older than --bad" not in text
    assert (repo / "notes.txt").read_text() == "mine, untracked\n"


def _set_aside(repo: Path) -> list[str]:
    """The stash entries onboard bisect made (their subjects)."""
    listing = git("stash", "list", "--format=%gs", cwd=repo, check=False)
    return [line for line in listing.splitlines() if "onboard bisect:" in line]


def test_a_repro_that_edits_a_tracked_file_is_set_aside_not_lost(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    # git bisect refuses to check out over the edit when the next commit changes that file:
    # onboard moves the edit into the stash (the user, not only the repro, may have made
    # it), marks again, and the tree ends as it began.
    info = _make(pytorch_repo_factory)
    before = _state(info.path)
    repro = _repro(
        tmp_path,
        f"""
        with open(os.path.join(os.environ["ONBOARD_BISECT_CHECKOUT"], {REGRESSION_MODULE!r}),
                  "a") as fh:
            fh.write("# touched by the repro\\n")
        sys.exit(0 if ok else 1)
        """,
    )
    reporter = Reporter(verbose=True)
    result = run_bisect(
        BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)), reporter
    )
    assert result.commits is not None and result.commits.culprit is not None
    assert result.commits.culprit.sha == info.regression_sha
    assert any("kept in the stash" in m for m in reporter.messages)
    assert _state(info.path) == before
    kept = _set_aside(info.path)
    assert kept
    assert "stash list" in result.commits.notes[0] and str(len(kept)) in result.commits.notes[0]
    patch = git("stash", "show", "-p", "stash@{0}", cwd=info.path)
    assert "+# touched by the repro" in patch


def test_a_repro_edit_no_checkout_touches_is_not_carried_into_the_next_test(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    # torch/__init__.py is the same in every commit: git bisect would carry the edit
    # on, and each later step would test its commit plus the repro's leftovers.
    info = _make(pytorch_repo_factory)
    before = _state(info.path)
    repro = _repro(
        tmp_path,
        """
        path = os.path.join(os.environ["ONBOARD_BISECT_CHECKOUT"], "torch", "__init__.py")
        with open(path) as fh:
            leftover = "# touched by the repro" in fh.read()
        with open(path, "a") as fh:
            fh.write("# touched by the repro\\n")
        sys.exit(1 if leftover or not ok else 0)
        """,
    )
    result = run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    assert result.commits is not None and result.commits.culprit is not None
    assert result.commits.culprit.sha == info.regression_sha
    assert _state(info.path) == before
    assert _set_aside(info.path)  # each step's edit kept, none carried into the next test


def test_segfault_counts_as_bad_and_does_not_abort(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    info = _make(pytorch_repo_factory)
    repro = _repro(
        tmp_path,
        """
        if not ok:
            os.kill(os.getpid(), signal.SIGSEGV)  # a real segfault, exit -11
        """,
    )
    result = run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    c = result.commits
    assert c is not None and c.culprit is not None and c.culprit.sha == info.regression_sha
    crashes = [r for s in c.steps if s.verdict for r in s.verdict.runs if r.outcome == CRASH]
    assert crashes and all(r.signal == "SIGSEGV" and r.returncode == -11 for r in crashes)


def test_flaky_repro_needs_repeat(pytorch_repo_factory: RepoFactory, tmp_path: Path) -> None:
    info = _make(pytorch_repo_factory, commits=12, regression_at=7)
    counts = tmp_path / "counts"
    counts.mkdir()
    # The first run at every commit fails whatever the code does; later runs tell the truth.
    repro = _repro(
        tmp_path,
        f"""
        mark = os.path.join({str(counts)!r}, os.environ["ONBOARD_BISECT_COMMIT"])
        first = not os.path.exists(mark)
        open(mark, "a").close()
        sys.exit(1 if first or not ok else 0)
        """,
    )
    with pytest.raises(OnboardError, match="not a good bound"):
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    for mark in counts.iterdir():
        mark.unlink()
    result = run_bisect(
        BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path), repeat=3)
    )
    c = result.commits
    assert c is not None and c.culprit is not None and c.culprit.sha == info.regression_sha
    assert c.flaky and all(s.mark == "good" for s in c.flaky)
    assert all(len(s.verdict.runs) == 3 for s in c.steps if s.verdict)
    assert "2 passed, 1 failed" in c.flaky[0].reason


@pytest.mark.parametrize(
    ("at_mid", "options", "reason"),
    [
        pytest.param("os.abort()", {"on_crash": "skip"}, "crashed (SIGABRT)",
                     id="a-crash-with-on-crash-skip"),
        pytest.param("time.sleep(120)", {"timeout": 5}, "timed out after 5 s",
                     id="a-run-past-the-timeout"),
        pytest.param("sys.exit(125)", {}, "the repro exited 125 (cannot test this commit)",
                     id="exit-125-cannot-test-this-commit"),
    ],
)  # fmt: skip
def test_a_commit_the_repro_cannot_decide_is_skipped(
    pytorch_repo_factory: RepoFactory,
    tmp_path: Path,
    at_mid: str,
    options: dict[str, Any],
    reason: str,
) -> None:
    info = _make(pytorch_repo_factory)
    mid = _midpoint(info.path, info.commits[0], info.head)
    assert mid != info.regression_sha
    git("checkout", "-q", "--detach", "HEAD", cwd=info.path)  # a detached start stays detached
    before = _state(info.path)
    repro = _repro(
        tmp_path,
        f"""
        if os.environ["ONBOARD_BISECT_COMMIT"] == {mid!r}:
            {at_mid}
        sys.exit(0 if ok else 1)
        """,
    )
    result = run_bisect(
        BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path), **options)
    )
    c = result.commits
    assert c is not None and c.culprit is not None and c.culprit.sha == info.regression_sha
    assert [s.rev for s in c.skipped] == [mid]
    assert c.skipped[0].reason.startswith(reason), c.skipped[0].reason
    assert _state(info.path) == before and before[1] == ""


def _workspace(tmp_path: Path, info: RepoInfo, fail_at: set[str]) -> Path:
    """A workspace around the repo with a `build` nox session that fails at ``fail_at``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    info.path.rename(ws / "pytorch")
    (ws / "onboard.json").write_text(
        json.dumps(
            {
                "torch_version": "2.13.0a0",
                "commit": None,
                "commit_kind": "unknown",
                "build_prefix": None,
                "python": sys.executable,
                "checkout": "pytorch",
                "checkout_kind": "clone",
            }
        )
    )
    (ws / "noxfile.py").write_text(
        textwrap.dedent(
            f"""
            import subprocess
            import nox

            FAIL_AT = {sorted(fail_at)!r}

            @nox.session(venv_backend="none")
            def build(session):
                sha = subprocess.check_output(
                    ["git", "-C", "pytorch", "rev-parse", "HEAD"], text=True
                ).strip()
                with open("builds.txt", "a") as fh:
                    fh.write(sha + "\\n")
                if sha in FAIL_AT:
                    session.error("compile error in UnaryOps.cpp")
            """
        )
    )
    build_dir = ws / "pytorch" / "build"
    build_dir.mkdir()
    (build_dir / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Debug\n")
    return ws


def test_failed_build_skips_the_commit(pytorch_repo_factory: RepoFactory, tmp_path: Path) -> None:
    info = _make(pytorch_repo_factory)
    mid = _midpoint(info.path, info.commits[0], info.head)
    ws = _workspace(tmp_path, info, {mid})
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    before = _state(ws / "pytorch")

    result = run_bisect(BisectRequest(repro=repro, good=info.commits[0], workspace=str(ws)))

    c = result.commits
    assert c is not None and c.culprit is not None and c.culprit.sha == info.regression_sha
    assert [s.rev for s in c.skipped] == [mid]
    assert "the build failed" in c.skipped[0].reason
    built = (ws / "builds.txt").read_text().split()
    assert mid in built and c.builds == len(built) >= 3
    assert c.log is not None and c.log.parent == ws / "bisect"
    assert _state(ws / "pytorch") == before


def test_build_always_needs_a_session(pytorch_repo_factory: RepoFactory, tmp_path: Path) -> None:
    info = _make(pytorch_repo_factory)
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    before = _state(info.path)
    with pytest.raises(OnboardError, match="--build always needs a build session"):
        run_bisect(
            BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path), build="always")
        )
    assert _state(info.path) == before


def test_python_only_range_needs_no_build(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    # Commits 6..9 touch only Python (every 5th commit touches C++), and the
    # checkout was built at 9: nothing to rebuild, even without a build session.
    info = _make(pytorch_repo_factory, commits=12, regression_at=8)
    git("checkout", "-q", "-b", "work", info.commits[9], cwd=info.path)
    (info.path / "build").mkdir()
    (info.path / "build" / "CMakeCache.txt").write_text("")
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    result = run_bisect(BisectRequest(repro=repro, good=info.commits[6], repo=str(info.path)))
    c = result.commits
    assert c is not None and c.culprit is not None and c.culprit.sha == info.regression_sha
    assert c.builds == 0
    # a range with C++ changes needs a build, and there is no session: a clear refusal
    with pytest.raises(OnboardError, match="needs a rebuild.*no workspace build session"):
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    assert _state(info.path)[:2] == (info.commits[9], "work")


def test_repro_passing_at_bad_is_a_clear_error(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    info = _make(pytorch_repo_factory, regression_at=None)
    repro = tmp_path / "repro.py"
    repro.write_text("import sys\nsys.exit(0)\n")
    before = _state(info.path)
    with pytest.raises(OnboardError) as err:
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    assert "passes at both" in err.value.message
    assert "does not reproduce" in err.value.message
    assert err.value.next_step and "exit non-zero" in err.value.next_step
    assert _state(info.path) == before


def test_dirty_tree_and_bisect_in_progress_refused(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    info = _make(pytorch_repo_factory)
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    edited = info.path / "torch" / "nn" / "_onboard_notes.py"
    edited.write_text("# my local change\n")
    with pytest.raises(OnboardError, match="uncommitted changes"):
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    assert edited.read_text() == "# my local change\n"
    git("checkout", "--", ".", cwd=info.path)

    git("bisect", "start", cwd=info.path)
    with pytest.raises(OnboardError, match="already in progress") as err:
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    assert err.value.next_step and "bisect reset" in err.value.next_step
    assert (info.path / ".git" / "BISECT_START").exists()  # theirs, untouched
    git("bisect", "reset", cwd=info.path)


def test_terms_find_the_fix(pytorch_repo_factory: RepoFactory, tmp_path: Path) -> None:
    info = _make(pytorch_repo_factory)
    # From the "regression" commit on, this repro passes: it was fixed there.
    repro = _repro(tmp_path, "sys.exit(1 if ok else 0)\n")
    with pytest.raises(OnboardError, match="fixed, not introduced") as err:
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    assert err.value.next_step and "--term-old broken --term-new fixed" in err.value.next_step

    result = run_bisect(
        BisectRequest(
            repro=repro,
            good=info.commits[0],
            repo=str(info.path),
            term_old="broken",
            term_new="fixed",
        )
    )
    c = result.commits
    assert c is not None and c.culprit is not None and c.culprit.sha == info.regression_sha
    assert (c.term_old, c.term_new, c.old_state) == ("broken", "fixed", "fails")
    assert {s.mark for s in c.steps} <= {"broken", "fixed"}

    with pytest.raises(BadInput):
        run_bisect(
            BisectRequest(
                repro=repro, good=info.commits[0], repo=str(info.path), term_old="bad", term_new="x"
            )
        )


@pytest.mark.gpu  # needs the absence of one: skips on a machine with a GPU
def test_gpu_repro_refused_on_a_machine_without_gpu(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    if gpu_available(sys.executable)[0]:
        pytest.skip("this machine has a usable GPU")
    info = _make(pytorch_repo_factory)
    before = _state(info.path)
    repro = tmp_path / "repro.py"
    repro.write_text("import torch\nx = torch.ones(2, device='cuda')\n")
    with pytest.raises(OnboardError, match="uses CUDA"):
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    # A repro that only says so when it runs: refused at the pre-flight, never marked bad.
    repro = _repro(
        tmp_path,
        """
        if not ok:
            sys.exit("AssertionError: Torch not compiled with CUDA enabled")
        """,
        name="late.py",
    )
    with pytest.raises(OnboardError, match="needs a CUDA GPU"):
        run_bisect(BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path)))
    assert _state(info.path) == before


# --------------------------------------------------------------------------
# Through the CLI


def test_cli_json_and_exit_codes(pytorch_repo_factory: RepoFactory, tmp_path: Path) -> None:
    from onboard.cli import cli

    info = _make(pytorch_repo_factory)
    repro = tmp_path / "repro.py"
    repro.write_text(REPRO_SCRIPT)
    runner = CliRunner()
    args = ["bisect", str(repro), "--good", info.commits[0], "--repo", str(info.path), "--json"]
    res = runner.invoke(cli, args, standalone_mode=False)
    assert res.exception is None, res.output
    assert res.return_value == 0
    data = json.loads(res.stdout)
    assert data["ok"] is True
    assert data["commits"]["culprit"]["sha"] == info.regression_sha
    assert data["commits"]["culprit"]["pr"] == FIRST_PR_NUMBER + 15
    assert data["commits"]["log"] and Path(data["commits"]["log"]).is_file()
    assert data["executions"] == data["commits"]["executions"]

    # the clear error, through the real entry point: exit 1, one paragraph, no traceback
    ok_repro = tmp_path / "ok.py"
    ok_repro.write_text("pass\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "onboard",
            "bisect",
            str(ok_repro),
            "--good",
            info.commits[0],
            "--repo",
            str(info.path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1
    assert "Error: The repro passes at both" in proc.stderr
    assert "Traceback" not in proc.stderr


def _start_interruptible(info: RepoInfo, tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """A CLI bisect stopped in its first step's repro; and that repro's pid."""
    runs = tmp_path / "runs.txt"
    started = Fifo(tmp_path / "started")
    # Pre-flight runs must finish for the bisect to start stepping: sleep only from run 3 on.
    repro = _repro(
        tmp_path,
        f"""
        with open({str(runs)!r}, "a") as fh:
            fh.write(f"{{os.getpid()}}\\n")
        with open({str(started)!r}, "w") as fh:
            fh.write(f"{{os.getpid()}}\\n")
        time.sleep(60 if len(open({str(runs)!r}).read().split()) > 2 else 0)
        sys.exit(0 if ok else 1)
        """,
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "onboard",
            "bisect",
            str(repro),
            "--good",
            info.commits[0],
            "--repo",
            str(info.path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        pids = [started.line(f"the repro's run {n}", process=proc) for n in (1, 2, 3)]
    except BaseException:
        proc.kill()
        raise
    finally:
        started.close()
    assert (info.path / ".git" / "BISECT_START").exists()  # really mid-bisect
    return proc, int(pids[-1])


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_leaves_the_tree_as_before(
    pytorch_repo_factory: RepoFactory, tmp_path: Path, signum: int
) -> None:
    info = _make(pytorch_repo_factory)
    before = _state(info.path)
    proc, running = _start_interruptible(info, tmp_path)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Interrupted." in err
    assert _state(info.path) == before
    assert not list((info.path / ".git").glob("BISECT_*"))
    assert "bisect log saved to" in err
    # the repro that was running was stopped with its process group
    assert gone(running, 5)


# --------------------------------------------------------------------------
# The release level over locally built wheels

_PKG = "onboardpkg"


def _pkg_repo(tmp_path: Path) -> tuple[Path, str]:
    """A tiny package history: releases 1.0.0 .. 1.3.0, a regression between 1.1.0 and 1.2.0."""
    repo = tmp_path / "onboardpkg-src"
    repo.mkdir()
    git("init", "-q", "-b", "main", repo)

    def commit(version: str, ok: bool, message: str, tag: bool = False) -> str:
        (repo / "pyproject.toml").write_text(
            "[build-system]\nrequires = ['setuptools>=68']\n"
            "build-backend = 'setuptools.build_meta'\n"
            f"[project]\nname = '{_PKG}'\nversion = '{version}'\n"
            f"[tool.setuptools]\npackages = ['{_PKG}']\n"
        )
        (repo / _PKG).mkdir(exist_ok=True)
        (repo / _PKG / "__init__.py").write_text(
            f"VERSION = {version!r}\nNOTE = {message!r}\n\n\ndef check():\n    return {ok}\n"
        )
        git("add", "-A", cwd=repo)
        git("commit", "-q", "-m", message, cwd=repo)
        sha = git("rev-parse", "HEAD", cwd=repo)
        if tag:
            git("tag", f"v{version}", cwd=repo)
        return sha

    commit("1.0.0", True, "Release 1.0.0", tag=True)
    commit("1.1.0", True, "Release 1.1.0", tag=True)
    commit("1.1.0", True, "Tidy the docs (#11)")
    culprit = commit("1.1.0", False, "Simplify check (#12)")
    commit("1.1.0", False, "Tidy more (#13)")
    commit("1.2.0", False, "Release 1.2.0", tag=True)
    commit("1.3.0", False, "Release 1.3.0", tag=True)
    return repo, culprit


def _build_wheels(repo: Path, dest: Path) -> None:
    dest.mkdir()
    for tag in ("v1.0.0", "v1.1.0", "v1.2.0", "v1.3.0"):
        src = dest.parent / f"src-{tag}"
        src.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", tag], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--disable-pip-version-check",
                "-w",
                str(dest),
                str(src),
            ],
            check=True,
            capture_output=True,
        )


@pytest.mark.slow
def test_wheels_then_commits(tmp_path: Path) -> None:
    import importlib.util

    repo, culprit = _pkg_repo(tmp_path)
    wheels = tmp_path / "wheels"
    _build_wheels(repo, wheels)
    assert len(list(wheels.glob("*.whl"))) == 4
    repro = tmp_path / "repro.py"
    repro.write_text(f"import sys\nimport {_PKG}\nsys.exit(0 if {_PKG}.check() else 1)\n")
    venvs = tmp_path / "venvs"
    before = _state(repo)

    request = BisectRequest(
        repro=repro,
        good="1.0.0",
        bad="1.3.0",
        wheels=True,
        package=_PKG,
        find_links=str(wheels),
        repo=str(repo),
    )
    result = run_bisect(request, venv_root=venvs)

    w = result.wheels
    assert w is not None
    assert w.versions == ["1.0.0", "1.1.0", "1.2.0", "1.3.0"]
    assert (w.last_old, w.first_new) == ("1.1.0", "1.2.0")
    c = result.commits
    assert c is not None and (c.old_ref, c.new_ref) == ("v1.1.0", "v1.2.0")
    assert c.culprit is not None and c.culprit.sha == culprit and c.culprit.pr == 12
    assert result.ok
    assert _state(repo) == before
    # each release in its own venv; the user's interpreter never got the package
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert {p.name for p in venvs.iterdir()} == {
        f"bisect-{_PKG}-{v}-py{py}" for v in ("1.0.0", "1.1.0", "1.2.0", "1.3.0")
    }
    assert importlib.util.find_spec(_PKG) is None

    # cached venvs are reused: a second run installs nothing
    reporter = Reporter()
    run_bisect(request, reporter, venv_root=venvs)
    assert not [m for m in reporter.messages if m.startswith("installing")]


@pytest.mark.slow
def test_wheels_run_inside_a_from_wheel_workspace(tmp_path: Path) -> None:
    from onboard import workspace

    repo, _culprit = _pkg_repo(tmp_path)
    wheels = tmp_path / "wheels"
    _build_wheels(repo, wheels)
    # A workspace whose checkout is a reference tree (no history), as --from-wheel makes.
    root = tmp_path / "ws"
    checkout = root / "pytorch"
    checkout.mkdir(parents=True)
    git("init", "-q", "-b", "reference", checkout)
    (checkout / "README").write_text("reference tree\n")
    git("add", "-A", cwd=checkout)
    git("commit", "-q", "-m", "Reference tree", cwd=checkout)
    workspace.save(
        workspace.Workspace(
            root=root,
            torch_version="1.3.0",
            commit=None,
            commit_kind="release",
            build_prefix=None,
            python=sys.executable,
            checkout="pytorch",
            checkout_kind=workspace.REFERENCE,
        )
    )
    repro = tmp_path / "repro.py"
    repro.write_text(f"import sys\nimport {_PKG}\nsys.exit(0 if {_PKG}.check() else 1)\n")
    result = run_bisect(
        BisectRequest(
            repro=repro,
            good="1.0.0",
            bad="1.3.0",
            wheels=True,
            package=_PKG,
            find_links=str(wheels),
            workspace=str(root),
        ),
        venv_root=tmp_path / "venvs",
    )
    w = result.wheels
    assert w is not None and (w.last_old, w.first_new) == ("1.1.0", "1.2.0")
    assert result.commits is None
    assert any("reference tree" in n and "onboard setup NEW_DIR" in n for n in result.notes)
    # Bisecting commits there is still refused: the tree has no history.
    with pytest.raises(OnboardError, match="Bisecting commits"):
        run_bisect(BisectRequest(repro=repro, good="HEAD~1", workspace=str(root)))


def test_wheels_bounds_must_be_releases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for v in ("1.0.0", "1.1.0"):
        (wheels / f"{_PKG}-{v}-py3-none-any.whl").write_bytes(b"")
    repro = tmp_path / "repro.py"
    repro.write_text("pass\n")
    request = BisectRequest(
        repro=repro, good="0.9.0", bad="1.1.0", wheels=True, package=_PKG, find_links=str(wheels)
    )
    with pytest.raises(BadInput, match="not among the available releases"):
        run_bisect(request, venv_root=tmp_path / "v")
    with pytest.raises(BadInput, match="release versions"):
        run_bisect(replace(request, good="main"), venv_root=tmp_path / "v")


# --- QA regressions -----------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "words"),
    [("nowhere", "does not exist"), ("plain", "is not inside a git repository")],
    ids=["a-path-that-does-not-exist", "a-folder-outside-any-repository"],
)
def test_repo_option_that_is_not_a_repository_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, words: str
) -> None:
    from onboard.cli import cli
    from onboard.crash import run_cli

    repro = tmp_path / "repro.py"
    repro.write_text("pass\n")
    (tmp_path / "plain").mkdir()
    repo = tmp_path / where
    code = run_cli(cli, ["bisect", str(repro), "--good", "v1", "--repo", str(repo), "--json"])
    assert code == 2
    error = json.loads(capsys.readouterr().out)["error"]
    lead = "No repository to bisect: " if where == "plain" else ""
    assert error["message"] == f"{lead}--repo {repo} {words}."
    assert "PyTorch checkout" in error["next_step"]


def test_submodule_sync_gives_up_on_a_remote_that_never_answers(tmp_path: Path) -> None:
    # Before each build, bisect checks out the submodule commits the commit
    # pins; one that is not local is fetched, and a silent remote must end it.
    from fixtures.git_server import SilentServer

    from onboard import git as git_mod

    repo = tmp_path / "super"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    with SilentServer() as silent:
        url = f"git://127.0.0.1:{silent.port}/pybind11.git"
        (repo / ".gitmodules").write_text(
            f'[submodule "third_party/pybind11"]\n\tpath = third_party/pybind11\n\turl = {url}\n'
        )
        git("add", ".gitmodules", cwd=repo)
        git("update-index", "--add", "--cacheinfo", f"160000,{'ab' * 20},third_party/pybind11",
            cwd=repo)  # fmt: skip
        git("commit", "-q", "-m", "pin pybind11", cwd=repo)
        result = git_mod.remote.submodule_sync(repo, idle_timeout=1)
        accepted = silent.accepted
    assert accepted >= 1
    assert not result.ok and result.returncode == 124
    assert "printed nothing for 1 s" in result.stderr


def test_a_repro_that_leaves_a_child_running_is_decided_when_it_exits(
    pytorch_repo_factory: RepoFactory, tmp_path: Path
) -> None:
    # Each run starts a sleeper it never waits for (a DataLoader worker or a daemon
    # left behind): the step is decided by the repro's own exit, and the sleepers
    # are stopped, not waited for until --timeout.
    from fixtures.events import gone

    info = _make(pytorch_repo_factory)
    pids = tmp_path / "children"
    repro = _repro(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pids)!r}, "a").write(f"{{child.pid}}\\n")
        sys.exit(0 if ok else 1)
        """,
    )
    result = run_bisect(
        BisectRequest(repro=repro, good=info.commits[0], repo=str(info.path), timeout=20)
    )
    c = result.commits
    assert c is not None and c.culprit is not None and c.culprit.sha == info.regression_sha
    assert not c.skipped
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == c.executions
    assert all(gone(pid, 10) for pid in started)

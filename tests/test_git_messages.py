"""A git refusal is said with its cause and the next step, read from git's whole error
(its last line is often advice): a lock file left in the way names its path, a
sparse checkout says which paths are outside it, a repository another user owns is
not "not a git repository" but git's ownership check, with the command that lifts it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.github_reviews import ReviewsAPI
from fixtures.pytorch_repo import git
from fixtures.review_history import UNARY_OPS, ReviewRepo
from reviews_helpers import (
    api_fixture,  # noqa: F401 (a pytest fixture)
    clone_workspace,
    review_repo_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard import git as git_mod
from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import OnboardError, ProcError
from onboard.workflows.reviews.request import ReviewsRequest
from onboard.workflows.reviews.run_reviews import reviews


def _repo(path: Path) -> Path:
    path.mkdir()
    git("init", "-q", cwd=path)
    for name in ("a/x.py", "b/y.py"):
        (path / name).parent.mkdir(exist_ok=True)
        (path / name).write_text("pass\n")
    git("add", ".", cwd=path)
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "c", cwd=path)
    return path


def test_a_lock_file_left_in_the_way_of_the_history_fetch_is_named(
    review_repo: ReviewRepo, api: ReviewsAPI, tmp_path: Path
) -> None:
    # git fetch --shallow-since takes .git/shallow.lock; git's own last line is
    # "remove the file manually to continue." without the file.
    ws = clone_workspace(review_repo, tmp_path / "ws")
    lock = ws / "pytorch" / ".git" / "shallow.lock"
    lock.touch()
    with pytest.raises(OnboardError) as info:
        reviews(ReviewsRequest(targets=[UNARY_OPS], workspace=str(ws), api_url=api.url))
    assert str(lock) in info.value.message
    assert f"rm -f {lock}" in (info.value.next_step or "")


def test_a_sparse_checkout_says_which_paths_are_outside_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    git("sparse-checkout", "set", "a", cwd=repo)
    (repo / "b").mkdir()
    (repo / "b" / "y.py").write_text("changed\n")
    with pytest.raises(ProcError) as info:
        git_mod.history.stage_paths(repo, ["b/y.py"])
    assert "sparse checkout" in info.value.message and "b/y.py" in info.value.message
    assert "Disable this message" not in info.value.message  # git's advice is not the cause
    assert "git sparse-checkout add" in (info.value.next_step or "")


@pytest.mark.parametrize("command", ["bisect", "reviews"])
def test_a_repository_another_user_owns_is_said_so(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = _repo(tmp_path / "r")
    repro = tmp_path / "repro.py"
    repro.write_text("pass\n")
    # git's own test switch for its ownership check (t0033-safe-directory): the
    # repository reads as another user's, as a checkout made by root or a container.
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    argv = {
        "bisect": ["bisect", str(repro), "--good", "HEAD", "--repo", str(repo)],
        "reviews": ["reviews", "a/x.py", "--repo", str(repo), "--offline"],
    }[command]
    assert run_cli(cli, [*argv, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert "not inside a git repository" not in error["message"]
    assert "another user owns it" in error["message"]
    assert f"git config --global --add safe.directory {repo}" in error["next_step"]


def test_git_s_error_lines_not_its_advice() -> None:
    told = (
        "warning: filtering not recognized by server, ignoring\n"
        "fatal: the remote end hung up unexpectedly\n"
        'hint: Disable this message with "git config advice.x false"\n'
    )
    assert git_mod.core.said(told) == "fatal: the remote end hung up unexpectedly"

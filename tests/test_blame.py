"""`onboard blame`: lines -> commits -> pull requests -> what reviewers said there.

The truth is computed beside onboard: `git blame` run here, the fixture's own
record of which commit carries which PR, the comment positions the loopback
GitHub was given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.github_reviews import ReviewsAPI
from fixtures.pytorch_repo import git
from fixtures.review_history import (
    BOOL_CHECK,
    CODEMODDED,
    DOC_LINE,
    REFORMATTED,
    UNARY_OPS,
    ReviewRepo,
)
from reviews_helpers import (
    NGIMEL_SAYS,
    api_fixture,  # noqa: F401 (a pytest fixture)
    clone_workspace,
    review_repo_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput, OnboardError
from onboard.jsonable import to_json
from onboard.workflows.reviews.request import BlameRequest, ReviewsRequest
from onboard.workflows.reviews.run_blame import blame
from onboard.workflows.reviews.run_reviews import reviews


def _git_blame_sha(repo: Path, path: str, line: int, *ignore: str) -> str:
    args = ["blame", "--porcelain", "--root", "-M", "-C", "-L", f"{line},{line}"]
    for sha in ignore:
        args += ["--ignore-rev", sha]
    return git(*args, "--", path, cwd=repo).split()[0]


def test_one_line_names_its_pr_approvers_and_the_thread_on_it(
    review_repo: ReviewRepo, api: ReviewsAPI
) -> None:
    line = review_repo.line_of(UNARY_OPS, BOOL_CHECK)
    result = blame(
        BlameRequest(spec=f"{UNARY_OPS}:{line}", repo=str(review_repo.path), api_url=api.url)
    )
    truth = _git_blame_sha(review_repo.path, UNARY_OPS, line, review_repo.shas["reformat"])
    assert truth == review_repo.shas["reland"]
    assert [ln.sha for ln in result.lines] == [truth]
    view = result.prs[truth]
    assert view.change.trailers.pr == review_repo.prs["reland"]
    assert view.change.trailers.approvers == ("ezyang",)
    assert view.url == "https://github.com/pytorch/pytorch/pull/150105"
    threads = result.threads[truth]
    assert [t.root.user for t in threads] == ["ezyang"]
    # Two API answers per pull request, nothing else.
    assert len(api.calls("GET")) == 2
    out = json.loads(json.dumps(to_json(result), default=str))
    assert out["blame"][0]["line"] == line and out["blame"][0]["sha"] == truth


def test_a_reformat_listed_in_ignore_revs_is_skipped(
    review_repo: ReviewRepo, api: ReviewsAPI
) -> None:
    line = review_repo.line_of(UNARY_OPS, REFORMATTED)
    result = blame(
        BlameRequest(spec=f"{UNARY_OPS}:{line}", repo=str(review_repo.path), offline=True)
    )
    plain = _git_blame_sha(review_repo.path, UNARY_OPS, line)
    assert plain == review_repo.shas["reformat"]
    skipped = _git_blame_sha(review_repo.path, UNARY_OPS, line, review_repo.shas["reformat"])
    assert result.lines[0].sha == skipped != plain
    # The file also lists a 2021 commit this history lacks: skipped silently, as git can't.
    assert result.ignored_listed == 1
    assert not api.requests  # --offline


def test_walk_decides_format_only_from_the_diff_and_names_a_relands_original(
    review_repo: ReviewRepo, api: ReviewsAPI
) -> None:
    # "[codemod] Spell c10::isIntegralType as at::isIntegralType" changed the line's
    # text, not only its whitespace: the walk stops there, whatever the subject says.
    codemod_line = review_repo.line_of(UNARY_OPS, CODEMODDED)
    walked = blame(
        BlameRequest(
            spec=f"{UNARY_OPS}:{codemod_line}",
            repo=str(review_repo.path),
            api_url=api.url,
            walk=True,
        )
    )
    assert walked.lines[0].sha == review_repo.shas["codemod"] and walked.skipped == []

    bool_line = review_repo.line_of(UNARY_OPS, BOOL_CHECK)
    reland = blame(
        BlameRequest(
            spec=f"{UNARY_OPS}:{bool_line}", repo=str(review_repo.path), api_url=api.url, walk=True
        )
    )
    sha = review_repo.shas["reland"]
    assert reland.lines[0].sha == sha  # git cannot blame a re-added line further
    [original] = reland.originals[sha]
    assert original.change.sha == review_repo.shas["single"]
    assert original.change.trailers.approvers == ("ezyang",)
    # The original PR's thread on this very line is shown, bots left out, reply kept.
    users = [[c.user for c in t.comments] for t in reland.threads[sha]]
    assert ["ngimel", "ada-tensor"] in users
    assert all("pytorch-bot[bot]" not in u for u in users)


def _commit(repo: Path, before: str, after: str, subject: str) -> str:
    target = repo / UNARY_OPS
    text = target.read_text()
    assert before in text
    target.write_text(text.replace(before, after, 1))
    git("commit", "-q", "-am", subject, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


def test_walk_skips_a_whitespace_only_commit_and_keeps_a_typo_fix_that_changes_code(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    git("clone", "-q", str(review_repo.path), str(repo))
    line = review_repo.line_of(UNARY_OPS, DOC_LINE)
    scaled = "  auto y = x * 5;  // the scale"
    added = _commit(repo, DOC_LINE, f"{DOC_LINE}\n{scaled}", "Scale the result (#150120)")
    # Subject of a typo fix, change of a number: the code changed here.
    typo = _commit(repo, scaled, scaled.replace("* 5", "* 7"), "Fix typo in the scale")
    walked = blame(
        BlameRequest(spec=f"{UNARY_OPS}:{line + 1}", repo=str(repo), offline=True, walk=True)
    )
    assert walked.lines[0].sha == typo != added and walked.skipped == []
    # Subject of a change, diff of a re-indent and a line re-wrapped: only whitespace.
    wrapped = "  auto y =\n      x * 7;  // the scale"
    indent = _commit(repo, scaled.replace("* 5", "* 7"), wrapped, "Tidy UnaryOps (#150121)")
    walked = blame(
        BlameRequest(
            spec=f"{UNARY_OPS}:{line + 1}-{line + 2}", repo=str(repo), offline=True, walk=True
        )
    )
    truth = {_git_blame_sha(repo, UNARY_OPS, n, indent) for n in (line + 1, line + 2)}
    assert {ln.sha for ln in walked.lines} == truth == {typo}
    assert [(s.sha, s.kind) for s in walked.skipped] == [(indent, "format-only")]


def test_a_revert_is_stepped_past_with_what_it_reverted(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    git("clone", "-q", str(review_repo.path), str(repo))
    target = repo / UNARY_OPS
    target.write_text(target.read_text().replace(DOC_LINE, "// Copy integral inputs."))
    git("commit", "-q", "-am", "Shorten a comment (#150111)\n\nPull Request resolved: "
        "https://github.com/pytorch/pytorch/pull/150111\nApproved by: https://github.com/albanD",
        cwd=repo)  # fmt: skip
    changed = git("rev-parse", "HEAD", cwd=repo)
    git("revert", "--no-edit", "HEAD", cwd=repo)  # git's own message, as the merge bot's
    message = git("log", "-1", "--format=%B", cwd=repo)
    by = (
        "Reverted https://github.com/pytorch/pytorch/pull/150111 on behalf of "
        "https://github.com/malfet due to flaky\n"
    )
    git("commit", "--amend", "-q", "-m", f"{message}\n\n{by}", cwd=repo)
    revert = git("rev-parse", "HEAD", cwd=repo)
    line = review_repo.line_of(UNARY_OPS, DOC_LINE)
    plain = blame(BlameRequest(spec=f"{UNARY_OPS}:{line}", repo=str(repo), offline=True))
    assert plain.lines[0].sha == revert
    walked = blame(
        BlameRequest(spec=f"{UNARY_OPS}:{line}", repo=str(repo), offline=True, walk=True)
    )
    truth = _git_blame_sha(repo, UNARY_OPS, line, revert, changed, review_repo.shas["reformat"])
    assert walked.lines[0].sha == truth == review_repo.shas["stack2"]
    assert [s.kind for s in walked.skipped] == ["revert"]
    assert walked.prs[truth].change.trailers.ghstack_deps == (150102,)


def test_cli_json_and_a_second_run_asks_nothing(
    review_repo: ReviewRepo, api: ReviewsAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    line = review_repo.line_of(UNARY_OPS, BOOL_CHECK)
    argv = ["blame", f"{UNARY_OPS}:{line}", "--repo", str(review_repo.path), "--api-url", api.url]
    assert run_cli(cli, [*argv, "--walk", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    asked = len(api.requests)
    assert asked == 4  # the reland's and the original's comments and reviews
    assert run_cli(cli, [*argv, "--walk", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["commits"] == first["commits"]
    assert len(api.requests) == asked  # a landed PR is closed: never asked again
    assert run_cli(cli, [*argv, "--walk", "--offline"]) == 0
    text = capsys.readouterr().out
    assert NGIMEL_SAYS in " ".join(text.split())
    assert "https://github.com/pytorch/pytorch/pull/150101" in text
    assert len(api.requests) == asked


@pytest.mark.parametrize(
    ("remote", "linked"),
    [
        (None, None),
        ("https://gitlab.com/me/proj.git", None),
        ("git@github.com:me/proj.git", "me/proj"),
    ],
    ids=["no-remote", "another-host", "a-github-remote"],
)  # fmt: skip
def test_a_subjects_pr_number_links_only_to_the_repositorys_own_github(
    tmp_path: Path, remote: str | None, linked: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Not PyTorch: "(#1013)" in a subject, no `Pull Request resolved:` URL in the body.
    repo = tmp_path / "proj"
    git("init", "-q", "-b", "main", str(repo), cwd=tmp_path)
    (repo / "a.py").write_text("x = 1\ny = 2\n")
    git("add", "a.py", cwd=repo)
    git("commit", "-q", "-m", "Fix the parser (#1013)", cwd=repo)
    if remote:
        git("remote", "add", "origin", remote, cwd=repo)
    sha = git("rev-parse", "HEAD", cwd=repo)
    found = blame(BlameRequest(spec="a.py:2", repo=str(repo), offline=True))
    view = found.prs[sha]
    assert view.change.trailers.pr == 1013
    if linked is None:
        assert view.url is None and view.commit_url is None
    else:
        assert view.url == f"https://github.com/{linked}/pull/1013"
        assert view.commit_url == f"https://github.com/{linked}/commit/{sha}"
    assert run_cli(cli, ["blame", "a.py:2", "--repo", str(repo), "--offline"]) == 0
    text = capsys.readouterr().out
    assert "#1013" in text and "pytorch/pytorch" not in text
    assert ("/pull/1013" in text) is (linked is not None)


def test_refresh_revalidates_for_free(review_repo: ReviewRepo, api: ReviewsAPI) -> None:
    line = review_repo.line_of(UNARY_OPS, BOOL_CHECK)
    spec = f"{UNARY_OPS}:{line}"
    blame(BlameRequest(spec=spec, repo=str(review_repo.path), api_url=api.url))
    left = api.remaining
    again = blame(
        BlameRequest(spec=spec, repo=str(review_repo.path), api_url=api.url, refresh=True)
    )
    assert again.api is not None and again.api.not_modified == 2 == api.not_modified
    assert api.remaining == left  # a 304 does not count against the rate limit
    assert all(r.headers.get("If-None-Match") for r in api.requests[2:])


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("aten/src/ATen/native/UnaryOp.cpp:3", "Closest names: aten/src/ATen/native/UnaryOps.cpp"),
        (f"{UNARY_OPS}:99999", "line 99999 is beyond its end"),
        (f"{UNARY_OPS}:0", "counted from 1"),
        (UNARY_OPS, "does not name lines"),
    ],
)
def test_bad_input_is_one_paragraph_with_a_next_step(
    review_repo: ReviewRepo, spec: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(BadInput) as info:
        blame(BlameRequest(spec=spec, repo=str(review_repo.path), offline=True))
    assert words in info.value.message and info.value.next_step
    assert run_cli(cli, ["blame", spec, "--repo", str(review_repo.path), "--offline"]) == 2


def test_line_count_in_the_error_is_the_files(review_repo: ReviewRepo) -> None:
    total = len((review_repo.path / UNARY_OPS).read_text().splitlines())
    with pytest.raises(BadInput) as info:
        blame(
            BlameRequest(spec=f"{UNARY_OPS}:{total + 1}", repo=str(review_repo.path), offline=True)
        )
    assert f"has {total} line(s)" in info.value.message
    assert blame(
        BlameRequest(spec=f"{UNARY_OPS}:{total}", repo=str(review_repo.path), offline=True)
    ).lines


def test_a_depth1_clone_fetches_its_history_once_blobless(
    review_repo: ReviewRepo, api: ReviewsAPI, tmp_path: Path
) -> None:
    ws = clone_workspace(review_repo, tmp_path / "ws")
    checkout = ws / "pytorch"
    assert git("rev-list", "--count", "HEAD", cwd=checkout) == "1"
    line = review_repo.line_of(UNARY_OPS, BOOL_CHECK)
    spec = f"{UNARY_OPS}:{line}"
    with pytest.raises(OnboardError) as info:
        blame(BlameRequest(spec=spec, workspace=str(ws), offline=True))
    assert "No history" in info.value.message and "once online" in (info.value.next_step or "")
    with pytest.raises(OnboardError) as info:
        reviews(ReviewsRequest(targets=[UNARY_OPS], workspace=str(ws), offline=True))
    assert "No history" in info.value.message
    assert "onboard reviews sync" in (info.value.next_step or "")

    since = "2025-02-06"  # the fixture's commits are a day apart from 2025-02-01
    result = blame(BlameRequest(spec=spec, workspace=str(ws), api_url=api.url, since=since))
    assert result.history.fetched_now and result.history.bytes_fetched > 0
    assert git("config", "remote.origin.promisor", cwd=checkout) == "true"  # blobless
    wanted = git("rev-list", "--count", f"--since={since}", "HEAD", cwd=review_repo.path)
    assert git("rev-list", "--count", "HEAD", cwd=checkout) == wanted
    assert (checkout / ".git" / "shallow").is_file()
    assert result.lines[0].sha == review_repo.shas["reland"]
    # Every version of the blamed file came in one request before blame read them.
    missing = git("rev-list", "--objects", "--missing=print", "HEAD", "--", UNARY_OPS, cwd=checkout)
    assert "?" not in missing
    assert "?" in git("rev-list", "--objects", "--missing=print", "HEAD", cwd=checkout)

    again = blame(BlameRequest(spec=spec, workspace=str(ws), offline=True, since=since))
    assert not again.history.fetched_now and again.history.kind == "fetched"
    assert again.lines[0].sha == result.lines[0].sha
    # A line older than the history is said to be so, at the oldest commit here.
    older = blame(BlameRequest(spec=f"{UNARY_OPS}:1", workspace=str(ws), offline=True, since=since))
    assert older.lines[0].boundary
    assert any("older than this history" in note for note in older.notes)


def test_the_reference_tree_cannot_blame(tmp_path: Path) -> None:
    from opsource_helpers import make_reference_workspace

    ws = make_reference_workspace(tmp_path / "ws")
    with pytest.raises(OnboardError) as info:
        blame(
            BlameRequest(
                spec="aten/src/ATen/native/native_functions.yaml:1", workspace=str(ws.root)
            )
        )
    assert "reference tree" in info.value.message
    assert "onboard reviews" in (info.value.next_step or "")


def test_a_repository_without_a_github_remote_asks_github_for_no_review(tmp_path: Path) -> None:
    """Not PyTorch, no GitHub remote: its "(#1013)" is nobody's onboard can name, so no
    review is fetched (pytorch/pytorch's #1013 would be shown as this commit's review)
    and the answer says why."""
    repo = tmp_path / "proj"
    git("init", "-q", "-b", "main", str(repo), cwd=tmp_path)
    (repo / "a.py").write_text("x = 1\ny = 2\n")
    git("add", "a.py", cwd=repo)
    git("commit", "-q", "-m", "Fix the parser (#1013)", cwd=repo)
    with ReviewsAPI() as server:
        found = blame(BlameRequest(spec="a.py:2", repo=str(repo), api_url=server.url))
        assert [r.path for r in server.requests] == []
    assert any("has no GitHub remote" in n and "--upstream-repo" in n for n in found.notes)


def test_a_pytorch_fork_links_its_numbers_to_pytorch(tmp_path: Path) -> None:
    """PyTorch's tree cloned from a fork (origin me/pytorch, no upstream remote): the
    numbers in its history are pytorch/pytorch's PRs; the fork on GitHub has none."""
    repo = tmp_path / "pytorch"
    git("init", "-q", "-b", "main", str(repo), cwd=tmp_path)
    native = repo / "aten/src/ATen/native"
    native.mkdir(parents=True)
    (native / "native_functions.yaml").write_text("- func: trunc(Tensor self) -> Tensor\n")
    (repo / "torch").mkdir()
    (repo / "torch/__init__.py").write_text("x = 1\ny = 2\n")
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "Fix trunc (#1013)", cwd=repo)
    git("remote", "add", "origin", "https://github.com/me/pytorch.git", cwd=repo)
    sha = git("rev-parse", "HEAD", cwd=repo)
    found = blame(BlameRequest(spec="torch/__init__.py:2", repo=str(repo), offline=True))
    view = found.prs[sha]
    assert view.url == "https://github.com/pytorch/pytorch/pull/1013"

"""`onboard reviews` and `onboard reviews sync` on the review repository and the
loopback GitHub: what history, merge_rules, CODEOWNERS and the API say, the cache
(ETags, 304s, offline, interrupted and corrupt), and GitHub's failures.

The truth beside onboard: `git log --follow` run here, the fixture's PR numbers
and approvers, the comments the server was given, the files at HEAD."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.github_reviews import ReviewsAPI
from fixtures.pytorch_repo import git
from fixtures.review_history import (
    HELPERS,
    HELPERS_OLD,
    KERNEL,
    UNARY_OPS,
    ReviewRepo,
)
from reviews_helpers import (
    NGIMEL_SAYS,
    api_fixture,  # noqa: F401 (a pytest fixture)
    review_repo_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard import cache
from onboard.cli import cli
from onboard.crash import run_cli
from onboard.errors import BadInput
from onboard.workflows.reviews.request import ReviewsRequest
from onboard.workflows.reviews.run_reviews import reviews, sync
from onboard.workflows.where import WhereRequest


def _log(repo: Path, path: str) -> list[str]:
    return git("log", "--follow", "--format=%H", "--", path, cwd=repo).split()


def test_files_prs_approvals_rules_and_threads(review_repo: ReviewRepo, api: ReviewsAPI) -> None:
    r = reviews(
        ReviewsRequest(targets=[UNARY_OPS, KERNEL], repo=str(review_repo.path), api_url=api.url)
    )
    truth = set(_log(review_repo.path, UNARY_OPS)) | set(_log(review_repo.path, KERNEL))
    assert {p.change.sha for p in r.prs} == truth
    dates = [p.change.date for p in r.prs]
    assert dates == sorted(dates, reverse=True)
    kinds = {p.change.sha: p.change.trailers.kind for p in r.prs}
    shas = review_repo.shas
    assert kinds[shas["codemod"]] == "codemod" and kinds[shas["reland"]] == "reland"
    assert kinds[shas["revert"]] == "revert" and kinds[shas["single"]] == "change"
    # ezyang approved #150101 (the landed one and, through the revert's PR, once), #150105, #150110.
    approvals = {a.login: a.count for a in r.approvals}
    assert approvals["ezyang"] == 3 and approvals["albanD"] >= 2
    rules = {f.target.path: [x.name for x in f.rules] for f in r.files}
    assert rules[KERNEL][0] == "CPU ATen backend"  # the specific rule first
    assert rules[KERNEL][1:] == ["superuser", "Core Reviewers", "Core Maintainers"]
    assert rules[UNARY_OPS] == ["superuser", "Core Reviewers", "Core Maintainers"]
    owners = {f.target.path: f.owners.owners for f in r.files if f.owners}
    assert owners[KERNEL] == ("@mingfeima", "@jgong5")  # the last match wins
    assert owners[UNARY_OPS] == ("@ezyang",)
    by_id = {t.root.id: t for t in r.threads}
    assert [c.user for c in by_id[9001].comments] == ["ngimel", "ada-tensor"]
    assert 9003 not in by_id  # the bot's comment
    assert by_id[9001].still_at == review_repo.line_of(UNARY_OPS, by_id[9001].root.anchor()[-1])
    assert by_id[9004].checked and by_id[9004].still_at is None  # its line was rewritten
    assert by_id[9101].still_at is not None and by_id[9101].path_now == KERNEL
    orphan = [t for t in r.threads if t.root_deleted]
    assert [c.id for t in orphan for c in t.comments] == [9005]


def test_a_renamed_file_keeps_its_reviews_by_either_name(
    review_repo: ReviewRepo, api: ReviewsAPI
) -> None:
    for name in (HELPERS, HELPERS_OLD):
        r = reviews(ReviewsRequest(targets=[name], repo=str(review_repo.path), api_url=api.url))
        assert [f.target.path for f in r.files] == [HELPERS]
        assert {p.change.trailers.pr for p in r.prs} == {150099, 150108}
        [thread] = r.threads
        assert thread.root.path == HELPERS_OLD and thread.path_now == HELPERS
        assert thread.still_at == review_repo.line_of(HELPERS, thread.root.anchor()[-1])


def test_reviewer_filter_and_markdown_mentions_nobody(
    review_repo: ReviewRepo, api: ReviewsAPI
) -> None:
    r = reviews(
        ReviewsRequest(
            targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url, reviewer="ngimel"
        )
    )
    assert [t.root.id for t in r.threads] == [9001]
    # Of the commits to this file, ngimel approved one: #150103 (with albanD).
    assert [(a.login, a.count, a.last_pr) for a in r.approvals] == [("ngimel", 1, 150103)]
    md = r.markdown()
    assert "https://github.com/pytorch/pytorch/pull/150101" in md
    outside_code = "".join(part for i, part in enumerate(md.split("`")) if i % 2 == 0)
    assert "@" not in outside_code
    assert NGIMEL_SAYS in md


def test_second_run_and_offline_ask_nothing_refresh_is_free(
    review_repo: ReviewRepo, api: ReviewsAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reviews", UNARY_OPS, "--repo", str(review_repo.path), "--api-url", api.url]
    assert run_cli(cli, [*argv, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    prs = {p["pr"] for p in first["pull_requests"]}
    assert len(api.requests) == 2 * len(prs)
    assert first["github"]["requests"] == len(api.requests)
    assert run_cli(cli, [*argv, "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["threads"] == first["threads"] and second["github"]["requests"] == 0
    assert run_cli(cli, [*argv, "--offline"]) == 0
    assert "Review comments on these files" in capsys.readouterr().out
    count = len(api.requests)
    left = api.remaining
    assert run_cli(cli, [*argv, "--refresh", "--json"]) == 0
    third = json.loads(capsys.readouterr().out)
    # A PR the server lacks (the tree's import, #140000) answers 404 again; the rest 304.
    known = prs & set(api.pulls["pytorch/pytorch"])
    assert known == prs - {140000}
    assert third["github"]["not_modified"] == 2 * len(known)
    assert len(api.requests) - count == 2 * len(prs)
    assert api.remaining == left - 2 * len(prs - known)


def test_sync_then_offline_and_an_interrupted_sync_goes_on(
    review_repo: ReviewRepo, api: ReviewsAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onboard.github import cache as github_cache

    real = github_cache.AnswerStore.write
    written = []

    def interrupted(self: github_cache.AnswerStore, *args: object, **kwargs: object) -> None:
        if len(written) == 3:
            raise KeyboardInterrupt  # Ctrl-C between two answers
        written.append(args[0])
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(github_cache.AnswerStore, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sync(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    monkeypatch.setattr(github_cache.AnswerStore, "write", real)
    files = list(cache.cache_dir("github-api").rglob("*.json"))
    assert len(files) == 3 and all(json.loads(f.read_text())["key"] for f in files)
    assert not list(cache.cache_dir("github-api").rglob("*.tmp"))
    before = len(api.requests)
    done = sync(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    assert done.exit_code == 0 and not done.missing
    assert done.api.from_cache == 3  # what the interrupted run kept is not asked again
    assert len(api.requests) - before == 2 * len(done.prs) - 3
    count = len(api.requests)
    r = reviews(
        ReviewsRequest(
            targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url, offline=True
        )
    )
    assert {t.root.id for t in r.threads} >= {9001, 9004, 9005}
    assert len(api.requests) == count


def test_a_corrupt_cache_is_rebuilt(review_repo: ReviewRepo, api: ReviewsAPI) -> None:
    sync(ReviewsRequest(targets=[KERNEL], repo=str(review_repo.path), api_url=api.url))
    files = sorted(cache.cache_dir("github-api").rglob("*.json"))
    files[0].write_text('{"key": "torn')
    files[1].write_bytes(b"\x00garbage")
    before = len(api.requests)
    r = reviews(ReviewsRequest(targets=[KERNEL], repo=str(review_repo.path), api_url=api.url))
    assert r.api is not None and r.api.rebuilt == 2
    assert len(api.requests) - before == 2
    assert 9101 in {t.root.id for t in r.threads}


def test_deleted_comments_go_away_on_refresh(review_repo: ReviewRepo, api: ReviewsAPI) -> None:
    first = reviews(
        ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url)
    )
    assert 9001 in {t.root.id for t in first.threads}
    api.comments[("pytorch/pytorch", 150101)] = [
        c for c in api.comments[("pytorch/pytorch", 150101)] if c["id"] != 9001
    ]
    kept = reviews(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    assert 9001 in {t.root.id for t in kept.threads}  # a closed PR is not asked again...
    fresh = reviews(
        ReviewsRequest(
            targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url, refresh=True
        )
    )
    by_root = {t.root.id: t for t in fresh.threads}
    assert 9001 not in by_root  # ...unless asked to: the reply now hangs on a deleted root
    assert by_root[9002].root_deleted


@pytest.mark.parametrize(
    ("inject", "words", "stops"),
    [
        (lambda a: a.fail_unauthorized(), "rejected the token", True),
        (lambda a: a.fail_forbidden(), "refused the request (403", True),
        (lambda a: a.fail_with(404, "Not Found", path=r"/pulls/150101/"), "not found (404)", False),
        (lambda a: a.fail_with(422, "Validation Failed", path=r"/pulls/150101/"), "422", False),
        (lambda a: a.fail_with(500, "Server Error", path=r"/pulls/150101/"), "500", False),
        (lambda a: a.answer_with("<html>Sign in to the Wi-Fi</html>"), "not JSON", True),
        (lambda a: a.fail_rate_limited(path=r"/pulls/150105/"), "rate limit is used up", True),
    ],
)
def test_github_failures_leave_the_rest_of_the_answer(
    review_repo: ReviewRepo, api: ReviewsAPI, inject: object, words: str, stops: bool
) -> None:
    inject(api)  # type: ignore[operator]
    r = reviews(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    assert r.api is not None
    assert {p.change.sha for p in r.prs} == set(_log(review_repo.path, UNARY_OPS))
    said = " ".join(r.notes) + " ".join(r.api.missing)
    assert words in said, said
    assert bool(r.api.stopped) == stops
    if not stops:
        assert 9101 not in {t.root.id for t in r.threads}  # another file's
        assert {150105} <= {p.change.trailers.pr for p in r.prs if not p.problem}


def test_a_server_error_is_asked_once_more(review_repo: ReviewRepo, api: ReviewsAPI) -> None:
    api.fail_with(500, "Server Error", path=r"/pulls/150101/comments", times=1)
    r = reviews(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    assert 9001 in {t.root.id for t in r.threads}
    assert len(api.calls("GET", r"/pulls/150101/comments")) == 2


def test_a_short_retry_after_is_waited_out(review_repo: ReviewRepo, api: ReviewsAPI) -> None:
    api.fail_with(
        403, "You have exceeded a secondary rate limit.", {"Retry-After": "1"}, times=1,
        path=r"/pulls/150101/comments",
    )  # fmt: skip
    r = reviews(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    assert r.api is not None and r.api.waited_s == 1 and not r.api.stopped
    assert 9001 in {t.root.id for t in r.threads}


def test_the_limit_running_out_mid_sync_keeps_what_came(
    review_repo: ReviewRepo, api: ReviewsAPI
) -> None:
    api.remaining = 3
    first = sync(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    assert first.exit_code == 1 and first.api.stopped and "rate limit" in first.api.stopped
    asked = len(api.requests)
    assert asked == 3  # the third answer said none are left: nothing more is sent
    api.remaining = 5000
    second = sync(ReviewsRequest(targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url))
    assert second.exit_code == 0 and second.api.from_cache == 3


def test_bad_targets_name_the_closest_files(
    review_repo: ReviewRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(BadInput) as info:
        reviews(
            ReviewsRequest(
                targets=["aten/src/ATen/native/UnaryOpz.cpp"],
                repo=str(review_repo.path),
                offline=True,
            )
        )
    assert UNARY_OPS in info.value.message
    argv = ["reviews", "aten/src/ATen/native/cpu/UnaryKernel.cpp", "--repo", str(review_repo.path)]
    assert run_cli(cli, [*argv, "--offline"]) == 2
    assert KERNEL in capsys.readouterr().err
    assert run_cli(cli, ["reviews", UNARY_OPS, "--since", "last week", "--offline"]) == 2
    nowhere = str(review_repo.path.parent / "nowhere")
    assert run_cli(cli, ["reviews", UNARY_OPS, "--repo", nowhere, "--offline"]) == 2
    assert "--repo" in capsys.readouterr().err
    assert run_cli(cli, ["reviews", UNARY_OPS, "--json", "--md"]) == 2
    assert run_cli(cli, ["reviews", "sync", UNARY_OPS, "--offline"]) == 2


def test_branch_mode_reads_the_files_the_branch_changes(
    review_repo: ReviewRepo, api: ReviewsAPI, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    git("clone", "-q", str(review_repo.path), str(repo))
    git("switch", "-q", "-c", "my-fix", cwd=repo)
    (repo / KERNEL).write_text((repo / KERNEL).read_text() + "// my change\n")
    git("commit", "-q", "-am", "My change", cwd=repo)
    r = reviews(ReviewsRequest(targets=[], repo=str(repo), api_url=api.url))
    assert r.mode == "branch" and [f.target.path for f in r.files] == [KERNEL]
    assert 9101 in {t.root.id for t in r.threads}
    git("switch", "-q", "main", cwd=repo)
    with pytest.raises(BadInput) as info:
        reviews(ReviewsRequest(targets=[], repo=str(repo), offline=True))
    assert "onboard reviews trunc" in (info.value.next_step or "")


def test_the_reference_tree_asks_the_api_for_a_files_commits(
    review_repo: ReviewRepo, api: ReviewsAPI, tmp_path: Path
) -> None:
    from opsource_helpers import make_reference_workspace

    ws = make_reference_workspace(tmp_path / "ws")
    path = "aten/src/ATen/native/native_functions.yaml"
    assert ws.commit
    for step in ("single", "reland"):
        message = git("log", "-1", "--format=%B", review_repo.shas[step], cwd=review_repo.path)
        api.add_commit(review_repo.shas[step], message, "2025-02-04T00:00:00Z", [path])
    api.add_content(
        ".github/merge_rules.yaml",
        ws.commit,
        (review_repo.path / ".github/merge_rules.yaml").read_text(),
    )
    r = reviews(ReviewsRequest(targets=[path], workspace=str(ws.root), api_url=api.url))
    assert r.history.kind == "none" and "reference tree" in (r.history.note or "")
    assert [p.change.trailers.pr for p in r.prs] == [150105, 150101]
    assert [x.name for x in r.files[0].rules][:1] == ["superuser"]
    [call] = api.calls("GET", r"/commits$")
    assert call.query["sha"] == [ws.commit] and call.query["path"] == [path]
    asked = len(api.requests)
    offline = reviews(
        ReviewsRequest(targets=[path], workspace=str(ws.root), api_url=api.url, offline=True)
    )
    assert [p.change.trailers.pr for p in offline.prs] == [150105, 150101]
    assert len(api.requests) == asked


def test_the_reference_tree_follows_a_rename_through_the_api(
    review_repo: ReviewRepo, api: ReviewsAPI, tmp_path: Path
) -> None:
    # GitHub's commits?path= stops where the file got its name; the commit that
    # renamed it names the old one (previous_filename), whose history goes on.
    from opsource_helpers import make_reference_workspace

    ws = make_reference_workspace(tmp_path / "ws")
    path = "aten/src/ATen/native/native_functions.yaml"
    old = "aten/src/ATen/native/functions.yaml"
    for step, date, paths, moved in (
        ("single", "2025-02-01T00:00:00Z", [old], None),
        ("rename", "2025-02-03T00:00:00Z", [path], {path: old}),
        ("reland", "2025-02-05T00:00:00Z", [path], None),
    ):
        message = git("log", "-1", "--format=%B", review_repo.shas[step], cwd=review_repo.path)
        api.add_commit(review_repo.shas[step], message, date, paths, renamed=moved)
    r = reviews(ReviewsRequest(targets=[path], workspace=str(ws.root), api_url=api.url))
    assert [p.change.trailers.pr for p in r.prs] == [150105, 150108, 150101]
    asked = len(api.requests)
    offline = reviews(
        ReviewsRequest(targets=[path], workspace=str(ws.root), api_url=api.url, offline=True)
    )
    assert [p.change.trailers.pr for p in offline.prs] == [150105, 150108, 150101]
    assert len(api.requests) == asked


def test_an_op_reads_the_files_where_names(
    review_repo: ReviewRepo, api: ReviewsAPI, tmp_path: Path
) -> None:
    from opsource_helpers import save_workspace

    from onboard.workflows.where import where

    root = tmp_path / "ws"
    root.mkdir()
    git("clone", "-q", str(review_repo.path), str(root / "pytorch"))
    save_workspace(root, "repo")
    r = reviews(ReviewsRequest(targets=["trunc"], workspace=str(root), api_url=api.url))
    anatomy = where(WhereRequest.parse("trunc", workspace=str(root)))
    named = {k.location.path for k in anatomy.kernels if k.location.in_checkout}
    assert r.mode == "op" and named <= {f.target.path for f in r.files}
    assert {UNARY_OPS, KERNEL} <= named
    yaml = [f for f in r.files if f.target.path.endswith("native_functions.yaml")]
    assert yaml and yaml[0].target.ranges  # only trunc's own entries
    assert {9001, 9101} <= {t.root.id for t in r.threads}


def test_pr_suggests_reviewers_from_rules_and_history(review_repo: ReviewRepo) -> None:
    import re
    from collections import Counter

    from onboard.workflows.reviews.suggest import reviewers

    counts: Counter[str] = Counter()
    for path in (KERNEL, UNARY_OPS):
        log = git("log", "--format=%B%x00", "-n", "30", "--", path, cwd=review_repo.path)
        for message in log.split("\x00"):
            for line in re.findall(r"^Approved by: (.*)$", message, re.M):
                counts.update(u.rsplit("/", 1)[-1].strip() for u in line.split(","))
    found = reviewers(review_repo.path, [KERNEL, UNARY_OPS], most=10)
    by_login = {s.login: s for s in found}
    for login, n in counts.items():
        assert by_login[login].approved == n
    # The CPU kernel's specific rule names its approvers; the catch-all rules name no one here.
    assert (
        by_login["mingfeima"].rules == ("CPU ATen backend",) and not by_login["mingfeima"].approved
    )
    assert "soumith" not in by_login
    assert found[0].approved == max(counts.values())


@pytest.mark.parametrize("command", ["reviews", "sync"])
def test_a_github_that_sends_its_answer_slowly_ends_at_the_deadline(
    review_repo: ReviewRepo,
    api: ReviewsAPI,
    command: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each read gets a byte within its timeout, so only a deadline on the whole
    # request ends it (without one the run lasts as long as the body: minutes).
    from onboard.github import rest as github_rest

    monkeypatch.setattr(github_rest, "REQUEST_DEADLINE_S", 2.0)
    api.dribble = re.compile(r"/pulls/\d+/comments$")
    argv = ["reviews", *(["sync"] if command == "sync" else []), UNARY_OPS]
    code = run_cli(cli, [*argv, "--repo", str(review_repo.path), "--api-url", api.url, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == (0 if command == "reviews" else 1)  # answered, with what it did not get
    github = data["github"]
    assert "did not send its whole answer" in github["stopped"]
    assert "within 2 s" in github["stopped"]
    slow = [m for m in github["missing"] if "/comments" in m]
    assert slow and "did not send its whole answer" in slow[0]
    assert sum(r.path.endswith("/comments") for r in api.requests) == 1  # not asked again


def test_each_token_revalidates_with_its_own_etag(
    review_repo: ReviewRepo, api: ReviewsAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GitHub's ETags depend on who asks: a token's answers revalidate with its own
    # ETag (304, free) after another token asked, and no token is written to the cache.
    first, second = "ghp_" + "a" * 36, "ghp_" + "b" * 36
    runs = []
    for token, refresh in ((first, False), (second, True), (first, True)):
        monkeypatch.setenv("GITHUB_TOKEN", token)
        done = sync(
            ReviewsRequest(
                targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url, refresh=refresh
            )
        )
        # (a PR the server lacks answers 404 each time: two requests, no ETag)
        gone = 2 * sum(p.gone for p in done.prs)
        runs.append((done.api.requests - gone, done.api.not_modified))
    (asked, _), (again, none_304), (third, all_304) = runs
    assert asked == again == third > 0
    assert none_304 == 0  # another token's ETags do not match: full answers
    assert all_304 == third  # the first token's own ETags were kept: all 304
    offline = reviews(
        ReviewsRequest(
            targets=[UNARY_OPS], repo=str(review_repo.path), api_url=api.url, offline=True
        )
    )
    assert {t.root.id for t in offline.threads} >= {9001, 9004}  # offline reads them all
    for kept in cache.cache_dir("github-api").rglob("*.json"):
        text = kept.read_text()
        assert first not in text and second not in text

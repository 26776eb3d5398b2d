"""The `--json` keys of `onboard reviews` and `onboard blame` (onboard/workflows/reviews/),
from the result dataclasses' fields through onboard/jsonable.py: each expected key is
worked out here from the values the test gives, so a renamed, dropped or reshaped key fails."""

from __future__ import annotations

import json

from onboard.jsonable import to_json
from onboard.workflows.reviews.codeowners import Owners
from onboard.workflows.reviews.comments import Review, ReviewComment, Thread
from onboard.workflows.reviews.history import HistoryState, Landed
from onboard.workflows.reviews.merge_rules import MergeRule
from onboard.workflows.reviews.results import BlamedLine, BlameResult, Checkout, FileFacts, PrView
from onboard.workflows.reviews.trailers import Trailers
from onboard.workflows.reviews.tree import Target

SHA = "a" * 40


def _trailers() -> Trailers:
    return Trailers(
        pr=1013,
        pr_repo="pytorch/pytorch",
        approvers=("alice", "bob"),
        ghstack_deps=(1011, 1012),
        coauthors=("Carol <c@x>",),
        differential_revision="D42",
        kind="change",
        reverts_sha="b" * 40,
        refers_to=(900,),
        pr_url="https://github.com/pytorch/pytorch/pull/1013",
    )


def _trailer_keys(t: Trailers) -> dict[str, object]:
    return {
        "pr": t.pr,
        "pr_repo": t.pr_repo,
        "approvers": list(t.approvers),
        "ghstack_dependencies": list(t.ghstack_deps),
        "coauthors": list(t.coauthors),
        "differential_revision": t.differential_revision,
        "kind": t.kind,
        "reverts": t.reverts_sha,
        "reverted_by": t.reverted_by,
        "revert_reason": t.revert_reason,
        "refers_to": list(t.refers_to),
        "pr_url": t.pr_url,
    }


def _comment(cid: int, user: str, reply_to: int | None = None) -> ReviewComment:
    return ReviewComment(
        id=cid,
        pr=1013,
        path="aten/src/ATen/native/Old.cpp",
        line=None,
        original_line=12,
        start_line=None,
        original_start_line=11,
        user=user,
        user_is_bot=False,
        body=f"said by {user}",
        in_reply_to=reply_to,
        url=f"https://github.com/pytorch/pytorch/pull/1013#discussion_r{cid}",
        created_at="2026-01-02T03:04:05Z",
        diff_hunk="@@ -1,3 +1,3 @@\n int a;\n-int b;\n+int c;",
    )


def test_a_pull_request_view_joins_the_commit_and_its_trailers() -> None:
    t = _trailers()
    change = Landed(
        "c" * 40, "2026-01-02", "Dana", "Speed up mm (#1013)", t, ("a.cpp",), ("b.cpp",), "message"
    )
    reviews = [
        Review(1013, "alice", "COMMENTED", "", "u1", "2026-01-01T00:00:00Z"),
        Review(1013, "alice", "APPROVED", "ok", "u2", "2026-01-02T00:00:00Z"),
        Review(1013, "pytorchbot", "APPROVED", "", "u3", "2026-01-03T00:00:00Z", user_is_bot=True),
    ]
    view = PrView(change, "https://pr", None, reviews, comments_here=3, problem=None)
    got = to_json(view)
    assert got == {
        "sha": change.sha,
        "date": change.date,
        "author": change.author,
        "subject": change.subject,
        "paths": ["a.cpp"],
        "names_then": ["b.cpp"],
        **_trailer_keys(t),
        "url": "https://pr",
        "commit_url": None,
        "review_states": {"APPROVED": ["alice"]},  # the bot left out, alice's last state
        "comments_on_these_files": 3,
        "review_problem": None,
    }
    assert "message" not in got and "trailers" not in got
    json.dumps(got)


def test_a_thread_says_where_its_code_is_now() -> None:
    root, reply = _comment(1, "alice"), _comment(2, "bob", reply_to=1)
    thread = Thread([root, reply], still_at=40, checked=True)
    got = to_json(thread)
    assert got == {
        "root_deleted": False,
        "line_now": 40,
        "pr": 1013,
        "path": root.path,
        "path_now": root.path,  # no newer name: the comment's own
        "still_exists": True,
        # original lines 11-12: the hunk's last two lines, without their diff markers
        "anchor": ["int b;", "int c;"],
        "comments": [
            {
                "id": c.id,
                "pr": c.pr,
                "path": c.path,
                "line": c.line,
                "original_line": c.original_line,
                "start_line": c.start_line,
                "user": c.user,
                "body": c.body,
                "in_reply_to_id": c.in_reply_to,
                "url": c.url,
                "created_at": c.created_at,
                "diff_hunk": c.diff_hunk,
            }
            for c in (root, reply)
        ],
    }
    unchecked = to_json(Thread([root], path_now="aten/New.cpp"))
    assert unchecked["still_exists"] is None and unchecked["path_now"] == "aten/New.cpp"


def test_blame_names_its_lines_and_the_files_facts_their_rules() -> None:
    checkout = Checkout("/ws/pytorch", "clone", SHA, "pytorch/pytorch")
    history = HistoryState("fetched", since="2024-01-01")
    line = BlamedLine(7, "int c;", SHA, 5, "old/Path.cpp", False)
    result = BlameResult("a/Path.cpp", 7, 9, False, checkout, history, [line], ignored_listed=2)
    got = to_json(result)
    assert got["ok"] is True and got["lines"] == [7, 9]
    assert got["checkout"] == {
        "path": "/ws/pytorch",
        "kind": "clone",
        "commit": SHA,
        "upstream": "pytorch/pytorch",
    }
    assert got["history"] == {
        "kind": "fetched",
        "since": "2024-01-01",
        "bytes_fetched": 0,
        "fetched_now": False,
        "note": None,
    }
    assert got["blame"] == [
        {
            "line": 7,
            "text": "int c;",
            "sha": SHA,
            "line_then": 5,
            "path_then": "old/Path.cpp",
            "boundary": False,
        }
    ]
    assert got["ignore_revs_applied"] == 2 and got["relands_of"] == {} and got["github"] is None
    assert not {"start", "end", "prs", "originals", "api", "ignored_listed"} & set(got)

    rule = MergeRule("superuser", ("*",), ("alice", "pytorch/metamates"), 3)
    facts = FileFacts(
        Target("a/Path.cpp", ((1, 4),), "the op"), [rule], Owners("/aten/", ("@bob",), 9)
    )
    assert to_json(facts) == {
        "merge_rules": [
            {
                "name": "superuser",
                "patterns": ["*"],
                "approved_by": ["alice", "pytorch/metamates"],
                "catch_all": True,
            }
        ],
        "codeowners": {"pattern": "/aten/", "owners": ["@bob"], "line": 9},
        "path": "a/Path.cpp",
        "ranges": [[1, 4]],
        "why": "the op",
    }

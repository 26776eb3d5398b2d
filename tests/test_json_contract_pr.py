"""`onboard pr --json`: each key worked out from the result's own fields, through the one
serialiser (onboard/jsonable.py)."""

from __future__ import annotations

import json
from pathlib import Path

from onboard.jsonable import to_json
from onboard.workflows.newop.placeholders import Unwritten
from onboard.workflows.pr import PrResult, testplan
from onboard.workflows.pr.abi import Hazard
from onboard.workflows.pr.change import Change, ChangedFile, Commit
from onboard.workflows.pr.labels import LabelSuggestion
from onboard.workflows.pr.lint import CLEAN, LintMessage, LintResult
from onboard.workflows.pr.publish import REMINDERS, Published


def _result(tmp_path: Path, published: Published | None) -> PrResult:
    change = Change(
        tmp_path, "my-op", "origin/main", "a" * 40, "b" * 40,
        (Commit("b" * 40, "Add my_op", "body", "A <a@x>"),),
        (ChangedFile("A", "aten/src/ATen/native/MyOp.cpp"), ChangedFile("M", "x.yaml")),
        (" M notes.txt",),
    )  # fmt: skip
    message = LintMessage("x.yaml", 3, "FLAKE8", "error", "E501", "line too long")
    return PrResult(
        change, "Add my_op", "body text", "# draft", tmp_path / "PR_DRAFT.md", None,
        LintResult(CLEAN, ("lintrunner", "-m", "origin/main"), True, (message,), "n"),
        [testplan.TestCommand("python test/test_ops.py -k my_op", "new op", True)],
        LabelSuggestion("release notes: python", "paths", ("topic: new features",), ("a/b",)),
        [Hazard("layout", "c10/core/TensorImpl.h", "a member moved", ("+ int x;",))],
        1234, published, ["a note"], [Unwritten("the docs", "torch/_torch_docs.py:9")],
        None, [],
    )  # fmt: skip


def test_pr_result_flattens_the_change_and_renames_its_parts(tmp_path: Path) -> None:
    result = _result(tmp_path, None)
    c = result.change
    data = to_json(result)
    assert data["ok"] is (result.exit_code == 0) is False  # the lint error, the unwritten docs
    assert (data["repo"], data["branch"], data["base"]) == (str(tmp_path), c.branch, c.base)
    assert (data["merge_base"], data["head"]) == (c.merge_base, c.head)
    assert data["commits"] == [{"sha": k.sha, "subject": k.subject} for k in c.commits]
    assert data["changed_files"] == [{"status": f.status, "path": f.path} for f in c.files]
    assert data["uncommitted"] == list(c.uncommitted)
    lint = result.lint
    assert data["lint"] == {
        "status": lint.status, "command": list(lint.command), "initialized": True,
        "messages": [{"path": "x.yaml", "line": 3, "code": "FLAKE8", "severity": "error",
                      "name": "E501", "description": "line too long"}],
        "note": "n", "ran": lint.ran,
    }  # fmt: skip
    assert data["tests"] == [{"command": result.tests[0].command, "reason": "new op",
                              "present": True}]  # fmt: skip
    label = result.label
    assert data["label"] == {
        "label": label.label, "reason": label.reason, "alternatives": list(label.alternatives),
        "unmatched_paths": list(label.unmatched), "bot_comment": label.bot_comment,
    }  # fmt: skip
    assert data["bc_warnings"] == [
        {"kind": "layout", "path": "c10/core/TensorImpl.h", "message": "a member moved",
         "lines": ["+ int x;"]}
    ]  # fmt: skip
    assert data["unwritten"] == [{"what": "the docs", "location": "torch/_torch_docs.py:9"}]
    assert data["draft_path"] == str(result.draft_path) and data["draft_backup"] is None
    assert data["dry_run"] is True and data["pull_request"] is None
    assert data["reminders"] == [] and data["suggested_reviewers"] == []
    assert data["issue"] == 1234 and data["title"] == result.title
    assert not {"change", "draft_text", "hazards", "published", "reviewers"} & set(data)
    json.dumps(data)


def test_a_published_pr_is_named_with_the_reminders(tmp_path: Path) -> None:
    published = Published(
        "fork", "https://github.com/me/pytorch.git", "me:my-op", "main", 7,
        "https://github.com/pytorch/pytorch/pull/7", "created", "new branch",
    )  # fmt: skip
    data = to_json(_result(tmp_path, published))
    assert data["dry_run"] is False and data["reminders"] == list(REMINDERS)
    assert data["pull_request"] == {
        "remote": "fork", "remote_url": published.remote_url, "head": "me:my-op",
        "base": "main", "number": 7, "url": published.url, "action": "created",
        "pushed": "new branch", "maintainer_can_modify": True,
    }  # fmt: skip

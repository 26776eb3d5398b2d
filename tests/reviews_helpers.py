"""What the `reviews` / `blame` tests share: the review repository (built once per
module), the loopback GitHub filled with its pull requests' review comments and
reviews, and onboard workspaces over it.

Comment positions are computed from the files at the commit each PR landed
(``git show SHA:PATH``), the way GitHub anchors them: ``line`` / ``original_line``
in the PR's version of the file and a ``diff_hunk`` ending at the commented line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.github_reviews import ReviewsAPI, comment, diff_hunk
from fixtures.pytorch_repo import git
from fixtures.review_history import (
    BOOL_CHECK,
    DOC_BEFORE,
    HELPERS_OLD,
    KERNEL,
    STACK_LINE,
    UNARY_OPS,
    ReviewRepo,
    build_review_repo,
    depth1_clone,
    serve_config,
)

from onboard import workspace

HELPER_LINE = "  return c10::isIntegralType(dtype, /*includeBool=*/false);"
NGIMEL_SAYS = "Check bool in meta, not in the kernel: then every device raises the same error."


def lines_at(rr: ReviewRepo, step: str, path: str) -> list[str]:
    return git("show", f"{rr.shas[step]}:{path}", cwd=rr.path).splitlines()


def on_line(
    rr: ReviewRepo, cid: int, step: str, path: str, text: str, user: str, body: str,
    *, marker: str = "+", outdated: bool = False, user_type: str = "User",
    created: str = "2025-02-03T10:00:00Z",
) -> dict[str, Any]:  # fmt: skip
    """A comment on the line holding ``text`` in ``path`` as PR ``step`` left it."""
    lines = lines_at(rr, step, path)
    n = lines.index(text) + 1
    hunk = diff_hunk(lines[max(0, n - 4) : n - 1], text, start=max(1, n - 3))
    if marker != "+":
        hunk = hunk[: hunk.rindex("\n+")] + "\n" + marker + text
    return comment(
        cid, user, path, body, line=None if outdated else n, original_line=n, hunk=hunk,
        user_type=user_type, created=created,
    )  # fmt: skip


def reply(cid: int, to: int, user: str, body: str, root: dict[str, Any]) -> dict[str, Any]:
    data = dict(root)
    data.update(
        id=cid,
        in_reply_to_id=to,
        user={"login": user, "type": "User"},
        body=body,
        created_at="2025-02-03T11:00:00Z",
    )
    return data


def populate(api: ReviewsAPI, rr: ReviewRepo) -> None:
    """The pull requests (closed, as the merge bot leaves them) and their reviews."""
    for step, number in rr.prs.items():
        api.add_pull(number, f"contrib:{step}", state="closed", draft=False)
    first = on_line(
        rr, 9001, "single", UNARY_OPS, BOOL_CHECK, "ngimel", NGIMEL_SAYS + " cc @ezyang"
    )
    api.add_comment(150101, first)
    api.add_comment(150101, reply(9002, 9001, "ada-tensor", "Moved it to meta.", first))
    api.add_comment(
        150101,
        on_line(rr, 9003, "single", UNARY_OPS, BOOL_CHECK, "pytorch-bot[bot]", "Merge started",
                user_type="Bot"),
    )  # fmt: skip
    api.add_comment(
        150101,
        on_line(rr, 9004, "single", UNARY_OPS, DOC_BEFORE, "ezyang",
                "Say why integral inputs are copied.", marker=" ", outdated=True,
                created="2025-02-03T09:00:00Z"),
    )  # fmt: skip
    api.add_comment(
        150101, reply(9005, 8999, "albanD", "Agreed: the message should name the dtype.", first)
    )
    api.add_review(
        150101, "ngimel", "CHANGES_REQUESTED", "Meta, please.", when="2025-02-03T09:30:00Z"
    )
    api.add_review(150101, "ezyang", "APPROVED", when="2025-02-03T12:00:00Z")
    api.add_review(150101, "ngimel", "COMMENTED", "Thanks.", when="2025-02-03T13:00:00Z")
    api.add_review(150101, "pytorchmergebot", "COMMENTED", "Merged", user_type="Bot")
    question = on_line(rr, 9101, "stack1", KERNEL, STACK_LINE, "mingfeima",
                       "Does Vectorized<Half>::trunc exist for every CPU_CAPABILITY?")  # fmt: skip
    api.add_comment(150102, question)
    api.add_comment(150102, reply(9102, 9101, "grace-kernel", "Yes: vec_base.h has it.", question))
    api.add_review(150102, "albanD", "APPROVED")
    api.add_review(150103, "albanD", "APPROVED")
    api.add_review(150103, "ngimel", "APPROVED")
    api.add_comment(
        150099,
        on_line(rr, 9201, "helpers", HELPERS_OLD, HELPER_LINE, "albanD", "Worth a test for uint8."),
    )
    api.add_comment(
        150105,
        on_line(rr, 9301, "reland", UNARY_OPS, BOOL_CHECK, "ezyang",
                "Same check as #150101; the ROCm skip lives in the test."),
    )  # fmt: skip
    api.add_review(150105, "ezyang", "APPROVED")


def clone_workspace(rr: ReviewRepo, root: Path) -> Path:
    """An onboard clone workspace: the repository fetched at depth 1 from ``rr``."""
    head = git("rev-parse", "HEAD", cwd=rr.path)
    depth1_clone(rr.path, root / "pytorch", head)
    ws = workspace.Workspace(
        root=root,
        torch_version="2.13.0",
        commit=head,
        commit_kind="release",
        build_prefix="/__w/pytorch/pytorch",
        python=sys.executable,
        checkout="pytorch",
        checkout_kind="clone",
        remote=f"file://{rr.path}",
    )
    workspace.save(ws)
    return root


@pytest.fixture(scope="module", name="review_repo")
def review_repo_fixture(tmp_path_factory: pytest.TempPathFactory) -> ReviewRepo:
    rr = build_review_repo(tmp_path_factory.mktemp("reviews") / "pytorch")
    serve_config(rr.path)
    return rr


@pytest.fixture(name="api")
def api_fixture(review_repo: ReviewRepo) -> Iterator[ReviewsAPI]:
    with ReviewsAPI() as server:
        populate(server, review_repo)
        yield server

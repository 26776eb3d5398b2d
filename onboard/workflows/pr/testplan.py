"""Which of PyTorch's tests cover a change: `onboard tests`' selection of the PR's
change (onboard/workflows/tests/: the changed ops' OpInfo-driven tests, an edited
test, the public-bindings rule, the package's suite, file-path keywords, Owner(s)
headers) and what lintrunner needs before it can lint it.

PyTorch's test files run directly (`python test/test_nn.py -k name`,
CONTRIBUTING.md "Unit testing"). An op's tests are named even in a checkout without
test/ (the tree rebuilt from a wheel has none), marked as not present.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

from onboard import git
from onboard.report import Reporter
from onboard.workflows.pr.change import Change

if TYPE_CHECKING:
    from onboard.workflows.opsource.context import TreeContext

NEW_OP_BRANCH = re.compile(r"^onboard/new-op-(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")


@dataclass(frozen=True)
class TestCommand:
    __test__ = False  # not a pytest class

    command: str  # "python test/test_ops.py -k trunc"
    reason: str  # why: "op `trunc` changed; its OpInfo ... is tested here"
    present: bool  # the test file is in this checkout


def tests_for(change: Change, reporter: Reporter | None = None) -> list[TestCommand]:
    """The test plan of ``change``: each selected test's command with its first reason,
    most relevant first, then what lintrunner still needs (when the checkout has a
    .lintrunner.toml)."""
    from onboard.workflows.tests import lint as tests_lint
    from onboard.workflows.tests import per_file, select, select_files
    from onboard.workflows.tests.ops import changed_lines

    reporter = reporter or Reporter()
    ctx = _context(change, reporter)
    diff = git.history.diff_text(change.repo, change.merge_base, change.head)
    lines: dict[str, set[int] | None] = dict(changed_lines(diff))
    files = [(f.status, f.path) for f in change.files]
    for _s, path in files:
        lines.setdefault(path, None)
    selection = select_files(ctx, "branch", change.base, files, lines, per_file(diff))
    plan = [
        TestCommand(item.command_line, item.reasons[0] if item.reasons else "", item.present)
        for item in selection.selected
    ]
    match = NEW_OP_BRANCH.match(change.branch)
    if match and not any(match.group("name") in c.command for c in plan):
        op = match.group("name")
        command = " ".join(select.command_for(select.TEST_OPS, [op]))
        plan.insert(
            0,
            TestCommand(
                command,
                f"new op `{op}` (the branch `onboard new-op` made): its OpInfo tests",
                (change.repo / select.TEST_OPS).is_file(),
            ),
        )
    if (change.repo / tests_lint.CONFIG).is_file():
        state = tests_lint.check(change.repo, change.existing_paths, reporter, lint_files=False)
        missing = [x.name for x in state.linters if not x.ready]
        if state.executable is None:
            plan.append(
                TestCommand(
                    "pip install lintrunner && lintrunner init",
                    "lint: lintrunner is not installed, and CI lints every PR with it",
                    True,
                )
            )
        elif missing:
            plan.append(
                TestCommand(
                    "lintrunner init",
                    f"lint: {len(missing)} linter(s) miss their tools ({', '.join(missing[:5])})",
                    True,
                )
            )
    return plan


def _context(change: Change, reporter: Reporter) -> TreeContext:
    """The `where` context of the change's checkout: its workspace's when it is one,
    else the checkout read with the interpreter running onboard."""
    from onboard import workspace as ws_mod
    from onboard.workflows.opsource.context import TreeContext

    ws: ws_mod.Workspace | None = None
    folder = ws_mod.locate(None, change.repo)
    if folder is not None:
        found = ws_mod.load(folder)
        if git.repository.get_root(found.checkout_path) == change.repo:
            ws = found
    if ws is None:
        try:
            version = metadata.version("torch")
        except metadata.PackageNotFoundError:
            version = "unknown"
        ws = ws_mod.Workspace(
            root=change.repo,
            torch_version=version,
            commit=None,
            commit_kind="unknown",
            build_prefix=None,
            python=sys.executable,
            checkout=".",
        )
    return TreeContext(ws=ws, python=ws.python, reporter=reporter)

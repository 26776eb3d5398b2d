"""PyTorch's sources in a workspace: a depth-1 clone of the installed commit
(``workflows/checkout.py``), or a git-tracked reference tree rebuilt from the
installed wheel's files (``workflows/reference_tree.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from onboard import torchenv
from onboard.workflows import checkout as checkout_mod
from onboard.workflows import reference_tree
from onboard.workflows.checkout import FetchStats
from onboard.workflows.setup import result as result_mod
from onboard.workflows.setup.installed import Installed, Target, WheelFacts, tree_plan
from onboard.workflows.setup.request import SetupJob
from onboard.workflows.setup.result import SetupResult


def make(
    req: SetupJob,
    installed: Installed,
    repo: Path,
    target: Target | None,
    tree: reference_tree.TreePlan | None,
    *,
    state: str,
) -> SetupResult:
    """The reference tree ``tree`` or a clone of ``target``, made at ``repo``."""
    if tree is not None:
        return make_reference(req, installed, repo, tree, state, wheel=installed.wheel)
    assert target is not None
    result = result_mod.begin(req, installed.env, state)
    make_clone(req, installed, repo, target, result)
    return result


def make_reference(
    req: SetupJob,
    installed: Installed,
    repo: Path,
    tree: reference_tree.TreePlan,
    state: str,
    *,
    wheel: WheelFacts | None,
) -> SetupResult:
    """Build the tree from the wheel's files, then check the probe agrees."""
    if wheel is None:
        torch = installed.torch
        wheel = WheelFacts(torch.package_dir, torch.version, torch.git_version)
    # One count everywhere: the wheel's files plus the version.txt the tree gets.
    files = len(tree.files) + 1
    req.reporter.step(f"building the reference tree from the wheel ({files} files)")
    wheel_commit = torchenv.classify(wheel.version, wheel.git_version)
    with req.reporter.task("copying the wheel's files into git", total=len(tree.files)) as task:
        head = reference_tree.build(
            repo,
            tree,
            torch_version=wheel.version,
            commit=wheel_commit.sha,
            version_txt=wheel.version.split("+", 1)[0],
            progress=lambda n, total: task.update(completed=n, total=total),
        )
    torch = installed.torch
    if (torch.package_dir, torch.version, installed.env.commit.sha) != (
        wheel.torch_dir,
        wheel.version,
        wheel_commit.sha,
    ):
        # torch/version.py disagrees with the imported torch (an overlay, a
        # source tree on sys.path): trust the probe and build again.
        shutil.rmtree(repo)
        return make_reference(req, installed, repo, tree_plan(torch.package_dir), state, wheel=None)
    result = result_mod.begin(req, installed.env, state)
    result.head = head
    result.reference = reference_record(tree, head)
    result.actions.append(f"reference tree committed as {head[:12]} ({files} files)")
    result.notes.append(
        "a reference tree holds the wheel's Python sources, headers and yaml at PyTorch's "
        "paths, but no .cpp/.cu files: commands that need them say so; "
        "`onboard setup NEW_DIR` gets a full checkout"
    )
    return result


def reference_record(tree: reference_tree.TreePlan, commit: str) -> dict[str, Any]:
    """The result's (and onboard.json's) ``reference``: the tree's counts and its commit."""
    return {
        # One count everywhere: the wheel's files plus the version.txt the tree gets.
        "files": len(tree.files) + 1,
        "bytes": tree.total_bytes,
        "generated_headers": tree.generated,
        "vendored_includes": list(tree.vendored),
        "commit": commit,
    }


def make_clone(
    req: SetupJob, installed: Installed, repo: Path, target: Target, result: SetupResult
) -> None:
    """A depth-1 clone of ``target`` at ``repo``, recorded in ``result``."""
    assert req.remote is not None
    stats = FetchStats()
    sha, notes, problems = checkout_mod.make_checkout(
        repo,
        remote=req.remote,
        target=target.what,
        nightly=target.nightly,
        reference=req.reference,
        with_submodules=req.with_submodules,
        fetch_timeout=req.fetch_timeout,
        reporter=req.reporter,
        stats=stats,
    )
    result.commit, result.commit_kind, result.tag = sha, target.kind, target.tag
    result.head = sha
    result.fetch = stats
    result.notes += notes
    result.problems += problems
    result.actions.append(f"checked out {sha[:12]} from {req.remote} (depth 1)")
    installed_sha = installed.env.torch.git_version if installed.env.torch else None
    if target.kind == "override" and installed_sha and installed_sha != sha:
        result.notes.append(
            f"--commit {target.what} is not the installed torch's commit ({installed_sha}): "
            "breakpoints and line numbers may not match the binary"
        )


def update_submodules(req: SetupJob, repo: Path, result: SetupResult) -> None:
    notes, problems = checkout_mod.update_submodules(
        repo, fetch_timeout=req.fetch_timeout, reporter=req.reporter
    )
    result.notes += notes
    result.problems += problems

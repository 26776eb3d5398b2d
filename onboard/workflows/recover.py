"""`onboard recover`: finish what an interrupted onboard run left, and nothing else.

A run killed outright (SIGKILL, a closed laptop, a power cut) leaves its
journal in the workspace (or, for `bisect`/`pr` on a clone of the user's, in
that repository's git folder). Commands that only read never roll back; the
next writing command does, first thing, and this command does only that:
under the lock, it undoes what is still the dead run's own by the rules of
``onboard/transaction/undo.py`` and says what it kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from onboard import git, lock, proc, signals, transaction, workspace
from onboard.report import Reporter
from onboard.scope import journals, scope_of
from onboard.workflows.ab import worktrees


@dataclass
class RecoverResult:
    scope: Path
    runs: list[transaction.Recovered] = field(default_factory=list)
    # worktrees (and run folders) an `onboard ab` killed outright left, removed
    swept: list[Path] = field(default_factory=list)
    # what onboard runs killed outright left running (their records), stopped
    stopped: list[proc.Swept] = field(default_factory=list)

    @property
    def nothing_to_do(self) -> bool:
        return not self.runs and not self.swept and not self.stopped

    @property
    def exit_code(self) -> int:
        """0: what could be undone was, and what could not is said (nothing to do too)."""
        return 0

    def json_extra(self) -> dict[str, object]:
        return {"nothing_to_do": self.nothing_to_do}


def _scope(
    workspace_dir: str | None, repo: str | None
) -> tuple[Path, str, workspace.Workspace | None]:
    if repo is not None:
        root = git.repository.named_root(
            repo,
            next_step="Pass the folder of a git checkout, or run without --repo inside a "
            "workspace.",
        )
        scope = transaction.scope_for_repo(root)
        return scope, f"the repository {root}", None
    ws = workspace.require(workspace_dir)
    return scope_of(ws.root), f"the workspace {ws.root}", ws


@dataclass(frozen=True, kw_only=True)
class RecoverRequest:
    """Where to recover: ``repo``, a checkout outside any workspace, else ``workspace``
    (None: found from the current folder)."""

    workspace: str | None = None
    repo: str | None = None


def recover(request: RecoverRequest, reporter: Reporter) -> RecoverResult:
    # First what dead runs left running (any run's, wherever it ran: their records are
    # onboard's own, not the workspace's).
    stopped = proc.sweep_dead_runs()
    scope, what, ws = _scope(request.workspace, request.repo)
    result = RecoverResult(scope, stopped=stopped)
    if not journals(scope) and ws is None:
        return result
    with (
        signals.handlers(),
        lock.acquire(scope / "lock", command="recover", what=what),
        signals.critical(),
    ):
        result.runs = transaction.recover(scope, reporter)
        if ws is not None:
            result.swept = _sweep_ab(ws)
    return result


def _sweep_ab(ws: workspace.Workspace) -> list[Path]:
    """What `onboard ab` runs killed outright left: their worktrees, then run folders."""
    swept = worktrees.sweep_dead_worktrees(ws.checkout_path)
    return swept + worktrees.sweep_dead_runs(ws.root / worktrees.RUNS)

"""`onboard pr`: turn the current branch into a pull request PyTorch reviewers can take.

Steps: find the change (branch since its merge-base with upstream), lint it
with lintrunner, name the tests that cover it, suggest the required label,
scan for binary-compatibility hazards, find what `onboard new-op` left unwritten
(its placeholders and ``TODO(onboard new-op)`` lines: a finding, exit 1, and
``--open`` refuses while any is left), render title and body from
templates/pr/, write PR_DRAFT.md; with ``open_pr`` push to the fork and open
(or update) a draft PR through the GitHub adapter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git, transaction
from onboard.errors import OnboardError
from onboard.github.token import find_token, gh_hosts_file, web_host
from onboard.jsonable import spec
from onboard.redact import redact
from onboard.report import Reporter
from onboard.workflows.newop.placeholders import MARKER
from onboard.workflows.pr import abi, draft, labels, lint, scaffold, testplan
from onboard.workflows.pr.change import (
    Change,
    authors_easycla_cannot_match,
    collect,
    resolve_repo,
)
from onboard.workflows.pr.publish import (
    REMINDERS,
    Published,
    publish,
)
from onboard.workflows.pr.request import PrRequest
from onboard.workflows.reviews import suggest

if TYPE_CHECKING:
    from onboard.workflows.newop.placeholders import Unwritten


@dataclass
class PrResult:
    change: Change = field(metadata=spec(omit=True))  # its part of the JSON: json_extra
    title: str
    body: str
    draft_text: str = field(metadata=spec(omit=True))  # the file at draft_path
    draft_path: Path
    draft_backup: Path | None
    lint: lint.LintResult
    tests: list[testplan.TestCommand]
    label: labels.LabelSuggestion
    hazards: list[abi.Hazard] = field(metadata=spec(key="bc_warnings"))
    issue: int | None
    published: Published | None = field(default=None, metadata=spec(key="pull_request"))
    notes: list[str] = field(default_factory=list)
    unwritten: list[Unwritten] = field(default_factory=list)  # scaffold.leftovers
    # Why `onboard pr --open` would be refused here (a reference tree), said instead of
    # suggesting it.
    open_blocked: str | None = None
    # People who could review it (merge_rules and past approvals): suggested, never requested.
    reviewers: list[Any] = field(default_factory=list, metadata=spec(key="suggested_reviewers"))

    @property
    def exit_code(self) -> int:
        # Lint errors and unwritten scaffold parts are findings: the draft is written,
        # but the PR is not ready.
        return 1 if self.lint.errors or self.unwritten else 0

    @property
    def reminders(self) -> list[str]:
        return list(REMINDERS) if self.published else []

    def json_extra(self) -> dict[str, object]:
        c = self.change
        return {
            "ok": self.exit_code == 0,
            "repo": c.repo,
            "branch": c.branch,
            "base": c.base,
            "merge_base": c.merge_base,
            "head": c.head,
            "commits": [{"sha": k.sha, "subject": k.subject} for k in c.commits],
            "changed_files": [{"status": f.status, "path": f.path} for f in c.files],
            "uncommitted": c.uncommitted,
            "dry_run": self.published is None,
            "reminders": self.reminders,
        }


def run(request: PrRequest, reporter: Reporter | None = None) -> PrResult:
    """`onboard pr`: the draft (PR_DRAFT.md) and, with ``open_pr``, the pull request."""
    from onboard import workspace as ws_mod

    reporter = reporter or Reporter()
    repo, workspace, base, issue = request.repo, request.workspace, request.base, request.issue
    open_pr, api_url, upstream_repo = request.open_pr, request.api_url, request.upstream_repo
    if issue is not None and issue <= 0:
        from onboard.errors import BadInput

        raise BadInput(
            f"--issue {issue} is not an issue number.", next_step="Pass e.g. --issue 12345."
        )
    ws = None
    if repo is None or workspace is not None:
        ws = ws_mod.find(workspace, writing=True)
    repo_path = resolve_repo(repo, ws.checkout_path if ws else None)
    if (
        ws is not None
        and repo is not None
        and git.repository.get_root(ws.checkout_path) != repo_path
    ):
        ws = None  # --repo names another checkout: the workspace does not describe it
    notes: list[str] = []

    reporter.step(f"reading the change in {repo_path}")
    fallback = ws.commit if ws else None
    if ws is not None and ws.is_reference:
        # `onboard setup --from-wheel` commits the tree on its own branch.
        from onboard.workflows.reference_tree import BRANCH

        fallback = BRANCH.removeprefix("refs/heads/")
    change = collect(repo_path, base=base, fallback_commit=fallback, upstream_repo=upstream_repo)

    lint_result = lint.run_lintrunner(change.repo, change.existing_paths, reporter)
    tests = testplan.tests_for(change)
    label = labels.suggest_label(change.paths)
    hazards = abi.find_hazards(
        git.history.diff_text(change.repo, change.merge_base, change.head, abi.SCAN_PATHS)
    )
    odd_authors = authors_easycla_cannot_match(change)
    if odd_authors:
        notes.append(
            f"Commit author {', '.join(odd_authors)} is not an email GitHub knows, and EasyCLA "
            "checks every commit's author: set yours (`git config user.email you@example.com`), "
            f"then `git rebase --exec 'git commit --amend --no-edit --reset-author' {change.base}`."
        )
    unwritten = scaffold.leftovers(change, ws)
    if unwritten:
        notes.append(_unwritten_note(unwritten))
    open_blocked = None
    if ws is not None and ws.is_reference:
        notes.append(
            ws.limitation("Opening a pull request")
            or "This checkout is the reference tree rebuilt from the wheel."
        )
        open_blocked = (
            "this reference tree cannot be pushed as a pull request (it is not PyTorch's "
            "history); make a full checkout (`onboard setup NEW_DIR`), bring your commits "
            "over (`git format-patch` / `git am`), and run `onboard pr` there."
        )

    pr_title = (request.title or "").strip() or draft.default_title(change.commits)
    lint_clean = lint_result.status == lint.CLEAN
    body_ctx = {
        "summary": draft.summary(change.commits),
        "issue": issue,
        "lint_ran": lint_result.ran,
        "lint_line": _lint_line(lint_result, len(change.existing_paths)),
        "tests": tests,
        "checkboxes": draft.template_checkboxes(change.repo, lint_clean=lint_clean),
    }
    body = draft.render_body(body_ctx)
    draft_text = draft.render_draft(
        {
            "branch": change.branch,
            "base": change.base,
            "merge_base": change.merge_base,
            "n_commits": len(change.commits),
            "title": pr_title,
            "body": body,
            "label": label,
            "lint_summary": lint_result.summary(),
            "hazards": hazards,
            "uncommitted": change.uncommitted,
            "notes": notes,
            "issue": issue,
            "open_blocked": open_blocked,
        }
    )
    path = draft.draft_location(
        change, ws.root if ws else None, git.repository.git_dir(change.repo)
    )
    # The draft is kept whatever the push does next (it says where it is).
    with transaction.begin(
        transaction.scope_for_repo(change.repo),
        command="pr",
        what=f"the repository {change.repo}",
        reporter=reporter,
        final=not open_pr,
    ) as tx:
        tx.watch(change.repo)
        backup = draft.write_draft(path, draft_text)
    result = PrResult(
        change=change,
        title=pr_title,
        body=body,
        draft_text=draft_text,
        draft_path=path,
        draft_backup=backup,
        lint=lint_result,
        tests=tests,
        label=label,
        hazards=hazards,
        issue=issue,
        notes=notes,
        unwritten=unwritten,
    )
    result.open_blocked = open_blocked
    result.reviewers = suggest.reviewers(change.repo, change.existing_paths)
    if not open_pr:
        return result

    if ws is not None and ws.is_reference:
        raise OnboardError(
            ws.limitation("Opening a pull request") or "This checkout cannot be sent as a PR.",
            next_step=f"The draft is in {path}.",
        )
    if lint_result.errors:
        raise OnboardError(
            f"lintrunner reported {len(lint_result.errors)} error(s) in the changed files, and "
            "PyTorch's CI would fail the PR on them; nothing was pushed.",
            next_step="Run `lintrunner -a` (it applies the fixes it can), commit, and run "
            f"`onboard pr --open` again. The draft is in {path}.",
        )
    if unwritten:
        raise OnboardError(
            _unwritten_note(unwritten) + " Nothing was pushed.",
            next_step="Write them (`onboard verify` checks the op), delete each "
            f"`{MARKER}` line, commit, and run `onboard pr --open` again. The draft "
            f"is in {path}.",
        )
    token = find_token(api_url)
    if token is None:
        raise OnboardError(
            f"No GitHub token for {web_host(api_url)}: GH_TOKEN and GITHUB_TOKEN are unset and "
            f"{gh_hosts_file()} has no oauth_token for it. Nothing was pushed.",
            next_step="Run `gh auth login` then `export GH_TOKEN=$(gh auth token)`, or export "
            "GITHUB_TOKEN with a classic token that has the `public_repo` scope, and run "
            "`onboard pr --open` again.",
        )
    try:
        result.published = publish(
            change,
            title=pr_title,
            body=body,
            token=token,
            api_url=api_url,
            upstream_repo=upstream_repo,
            fork_remote=request.fork_remote,
            reporter=reporter,
            push_timeout=request.push_timeout,
        )
        if not result.published.maintainer_can_modify:
            result.notes.append(
                "GitHub answered 422 to `maintainer_can_modify` (it cannot be granted on a fork "
                "an organisation owns), so the pull request was opened without it: maintainers "
                "cannot push to your branch; push their suggested changes yourself."
            )
    except OnboardError as exc:
        # Belt and braces: whatever a server echoed back, the token is not repeated.
        exc.message = redact(exc.message, token.value)
        raise
    return result


def _unwritten_note(unwritten: list[Unwritten]) -> str:
    shown = ", ".join(f"{u.what} ({u.location})" for u in unwritten[:6])
    more = f" and {len(unwritten) - 6} more" if len(unwritten) > 6 else ""
    return (
        f"Not written yet: {len(unwritten)} part(s) of the branch are still as `onboard "
        f"new-op` wrote them: {shown}{more}."
    )


def _lint_line(result: lint.LintResult, n_files: int) -> str:
    if result.status == lint.CLEAN:
        return f"`lintrunner` on the {n_files} changed file(s): no lint issues"
    if result.status == lint.ISSUES:
        return (
            f"`lintrunner` on the {n_files} changed file(s): {len(result.messages)} issue(s) "
            "left (see the PR's lint job)"
        )
    return ""

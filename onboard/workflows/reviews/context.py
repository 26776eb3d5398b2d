"""What `reviews` and `blame` share: the checkout, the review source, and how a
landed commit becomes a pull request shown with its threads."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from onboard import git
from onboard.report import Reporter
from onboard.workflows.reviews import pulls, trailers
from onboard.workflows.reviews.comments import Thread, find_in
from onboard.workflows.reviews.history import Landed
from onboard.workflows.reviews.results import Checkout, PrView
from onboard.workflows.reviews.tree import DEFAULT_UPSTREAM, Tree, open_tree, pulls_repo


@dataclass
class Context:
    tree: Tree
    source: pulls.ReviewSource
    reporter: Reporter
    offline: bool
    # OWNER/NAME a pull request number links to: --upstream-repo when given, else
    # ``pulls_repo`` (PyTorch's tree: pytorch/pytorch; another repository: its own
    # GitHub remote); None (no remote on GitHub): nothing is linked.
    linked: str | None = None
    # Why GitHub was not asked at all, when onboard decided so (not the user's --offline).
    unasked: str | None = None
    _files: dict[str, list[str] | None] = field(default_factory=dict)

    @classmethod
    def open(
        cls,
        *,
        workspace: str | None,
        repo: str | None,
        api_url: str,
        upstream: str | None,
        offline: bool,
        refresh: bool,
        reporter: Reporter,
    ) -> Context:
        tree = open_tree(workspace, repo, upstream or DEFAULT_UPSTREAM)
        linked = upstream or pulls_repo(tree.repo)
        unasked = None
        if upstream is None and tree.kind == "repo":
            # The user's own repository: its numbers are its own PRs (pytorch/pytorch's
            # only in PyTorch's tree). Without a GitHub remote there is nobody to ask:
            # another repository's #1013 would be shown as this commit's review.
            if linked is None:
                unasked = (
                    f"{tree.repo} has no GitHub remote, so the pull request numbers in its "
                    "history name no pull request onboard can fetch: no review was asked for. "
                    "Pass --upstream-repo OWNER/NAME to name the repository they belong to."
                )
                offline = True
            elif linked != tree.upstream:
                tree = dataclasses.replace(tree, upstream=linked)
        source = pulls.source(
            api_url, tree.upstream, offline=offline, refresh=refresh, reporter=reporter
        )
        return cls(tree, source, reporter, offline, linked, unasked)

    def checkout(self) -> Checkout:
        t = self.tree
        return Checkout(str(t.repo), t.kind, t.commit, t.upstream)

    def pr_view(self, change: Landed, pull: pulls.PullReviews | None) -> PrView:
        number = change.trailers.pr
        # A subject's "(#1013)" in a repository that is not PyTorch is not pytorch/pytorch's
        # #1013: only the message's own URL, or the repository's own GitHub, is linked.
        view = PrView(
            change,
            change.trailers.pr_url or (self._link("pull", str(number)) if number else None),
            self._link("commit", change.sha) if change.sha else None,
        )
        if pull is not None and change.trailers.kind != trailers.REVERT:
            # (a revert's number is the reverted PR's: its review is that PR's, shown there)
            view.reviews = pull.reviews
            view.problem = pull.problem if not pull.known else None
        return view

    def _link(self, kind: str, what: str) -> str | None:
        if self.linked is None:
            return None
        # --upstream-repo is on the API's host (GitHub Enterprise too); a remote on github.com
        host = self.source.web() if self.linked == self.source.upstream else "github.com"
        return f"https://{host}/{self.linked}/{kind}/{what}"

    def lines_at_commit(self, path: str) -> list[str] | None:
        """The file's lines at the installed commit (HEAD's when it is unknown); the
        reference tree reads its own files."""
        if path not in self._files:
            text: str | None
            if self.tree.is_reference:
                try:
                    text = (self.tree.repo / path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = None
            else:
                text = git.history.file_at(self.tree.repo, self.tree.commit or "HEAD", path)
                if text is None and self.tree.commit:  # a checkout moved off the commit
                    text = git.history.file_at(self.tree.repo, "HEAD", path)
            self._files[path] = text.splitlines() if text is not None else None
        return self._files[path]

    def check_still_there(self, thread: Thread) -> None:
        """Whether the commented code is in the file at the installed commit, and where."""
        lines = self.lines_at_commit(thread.path_now or thread.root.path)
        if lines is None:
            return
        root = thread.root
        near = root.line or root.original_line
        thread.still_at = find_in(root.anchor(), root.context(), lines, near)
        thread.checked = True

    def api_notes(self) -> list[str]:
        """Why GitHub stopped being asked, and a missing token that costs requests."""
        notes = [self.unasked] if self.unasked else []
        stopped = self.source.stats.stopped
        if stopped:
            notes.append(
                f"GitHub was not asked further ({stopped}); what the cache held is shown. Run "
                "the command again later: what was fetched is kept."
            )
        if self.source.no_token and self.source.stats.requests:
            notes.append(
                "No GitHub token was found (GH_TOKEN / GITHUB_TOKEN, or gh's hosts.yml): GitHub "
                "allows 60 requests an hour without one. `export GH_TOKEN=$(gh auth token)`."
            )
        return notes

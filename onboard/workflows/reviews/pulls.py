"""What reviewers said on landed pull requests: their review comments and reviews,
from the GitHub API through the cache (`onboard/github/cache.py`).

A landed pull request is closed and its review does not change, so its answers
are kept for good (``final``) and never asked again; ``--refresh`` revalidates
them for free (304). Two requests per pull request, more for long reviews
(100 comments a page).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from onboard.github.cache import ApiStats, CachedGitHub
from onboard.github.token import find_token, web_host
from onboard.report import Reporter
from onboard.workflows.reviews.comments import Review, ReviewComment


@dataclass
class PullReviews:
    pr: int
    comments: list[ReviewComment] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    problem: str | None = None  # why some of it is missing
    source: str = ""  # cache / api / revalidated / missing
    gone: bool = False  # GitHub has no such pull request (404): nothing more to fetch

    @property
    def known(self) -> bool:
        return self.source not in ("", "missing")


@dataclass
class ReviewSource:
    """The API (or only the cache, offline) for one upstream repository."""

    api: CachedGitHub
    upstream: str
    no_token: bool = False

    @property
    def stats(self) -> ApiStats:
        return self.api.stats

    def web(self) -> str:
        return web_host(self.api.api_url)

    def fetch(self, prs: list[int], reporter: Reporter) -> dict[int, PullReviews]:
        """Each PR's review; the progress bar appears once GitHub is asked (a warm
        run reads the cache in a blink and shows none)."""
        out: dict[int, PullReviews] = {}
        with contextlib.ExitStack() as stack:
            task = None
            for i, number in enumerate(prs, 1):
                before = self.stats.requests
                out[number] = self.one(number)
                if task is None and self.stats.requests > before:
                    what = f"review comments of {len(prs)} pull request(s)"
                    task = stack.enter_context(reporter.task(what, len(prs)))
                if task is not None:
                    task.update(completed=i, detail=f"#{number}")
        return out

    def one(self, number: int) -> PullReviews:
        base = f"/repos/{self.upstream}/pulls/{number}"
        got = self.api.get_pages(f"{base}/comments", final=True)
        reviews = self.api.get_pages(f"{base}/reviews", final=True)
        result = PullReviews(number)
        result.comments = [c for d in got.data or [] if (c := ReviewComment.from_api(number, d))]
        result.reviews = [r for d in reviews.data or [] if (r := Review.from_api(number, d))]
        problems = [a.problem for a in (got, reviews) if a.problem]
        result.problem = "; ".join(dict.fromkeys(problems)) or None
        result.gone = got.gone and reviews.gone
        sources = {got.source, reviews.source}
        result.source = "missing" if sources == {"missing"} else sorted(sources - {"missing"})[0]
        return result

    def file_text(self, path: str, ref: str) -> str | None:
        """A file of the upstream at ``ref`` (kept for good: a commit does not change)."""
        import base64

        answer = self.api.get(f"/repos/{self.upstream}/contents/{path}", {"ref": ref}, final=True)
        data: Any = answer.data
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            return None
        try:
            return base64.b64decode(data["content"]).decode("utf-8", errors="replace")
        except ValueError:
            return None


def source(
    api_url: str, upstream: str, *, offline: bool, refresh: bool, reporter: Reporter
) -> ReviewSource:
    token = None if offline else find_token(api_url)
    api = CachedGitHub(api_url, token=token, offline=offline, refresh=refresh, reporter=reporter)
    return ReviewSource(api, upstream, no_token=token is None and not offline)

"""GitHub REST answers kept on disk, asked again only with ``If-None-Match``.

Every answer (one page of one URL) is a file under onboard's cache
(``github-api/``), keyed by host, path and query, holding its ETag and the
``Link: rel="next"`` of its page. Each file is written whole (a temporary file
renamed over it), so an interrupted run leaves every answer it saved readable
and the next run goes on from there; a file that does not read back as one
(a torn copy, a hand edit) counts as missing and is fetched again.

What is asked when:
- ``final`` answers (a landed pull request's comments and reviews, a commit's
  history, a file at a commit: they do not change; a 404 for them neither) are
  never asked again once kept; ``refresh`` revalidates them with
  ``If-None-Match``, and a 304 answer costs no rate limit (GitHub's REST docs,
  "conditional requests");
- ``offline`` never opens a socket: what is kept is the answer, else "not cached";
- the rate limit is respected: a ``Retry-After`` of up to ``max_wait_s`` seconds
  is waited out once, a longer one or a used-up limit (``x-ratelimit-remaining: 0``)
  stops all further requests for the run, which goes on with what is kept.

The requests themselves: ``rest`` (PyGithub's requester).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from onboard import cache
from onboard.github import rest
from onboard.github.token import Token
from onboard.jsonable import spec
from onboard.redact import redact
from onboard.report import Reporter

# ``etags``: the ETag each token got (by a hash of the token, never the token): GitHub's
# ETag of an authenticated answer depends on who asked (its answers vary by
# Authorization), so one token's ETag sent with another's comes back as a full
# answer. ``etag``: the last one (entries from before ``etags`` have only it).
_ENTRY = {
    "key": str, "status": int, "etag": (str, None), "next": (str, None), "data": object,
    "etags?": {str: str},
}  # fmt: skip
_SERVER_ERRORS = range(500, 600)
_GONE = {404: "not found (404)", 410: "gone (410)"}
utc = rest.utc


@dataclass
class ApiStats:
    """What the run asked of GitHub and what it found kept."""

    requests: int = 0  # sent over the network
    not_modified: int = 0  # of which answered 304 (free)
    from_cache: int = 0  # answered from disk, nothing sent
    rebuilt: int = 0  # kept answers that did not read back and were fetched again
    remaining: int | None = field(default=None, metadata=spec(key="rate_limit_remaining"))
    limit: int | None = field(default=None, metadata=spec(key="rate_limit"))
    reset: int | None = field(default=None, metadata=spec(key="rate_limit_reset"))
    stopped: str | None = None  # why no more requests were sent
    waited_s: float = field(default=0.0, metadata=spec(digits=1))
    missing: list[str] = field(default_factory=list)  # what could not be had, one line each

    def summary(self) -> str:
        parts = [f"{self.requests} request(s) to GitHub"]
        if self.not_modified:
            parts.append(f"{self.not_modified} answered 304 (unchanged, free)")
        parts.append(f"{self.from_cache} answer(s) from the cache")
        if self.rebuilt:
            parts.append(f"{self.rebuilt} unreadable cache file(s) fetched again")
        text = ", ".join(parts)
        if self.remaining is not None and self.limit is not None:
            text += f"; rate limit {self.remaining}/{self.limit} left"
            if self.reset:
                text += f", resets {utc(self.reset)}"
        return text + "."


@dataclass(frozen=True)
class Answer:
    data: Any  # the JSON (a list: every page joined); None when missing
    source: str  # cache / api / revalidated / missing
    problem: str | None = None  # why it is missing or incomplete

    @property
    def gone(self) -> bool:
        """GitHub said it is not there (404 / 410): an answer, not a failure to get one."""
        return self.problem in _GONE.values()


class AnswerStore:
    """The kept answers of one API root, a file each."""

    def __init__(self, api_url: str, root: Path, stats: ApiStats) -> None:
        parts = urlsplit(api_url)
        self.prefix = parts.path.rstrip("/")
        self.host = parts.netloc.lower()
        self.root = root
        self.stats = stats

    def key(self, path: str, query: dict[str, str]) -> str:
        return f"{self.host}{self.prefix}{path}?{urlencode(sorted(query.items()))}"

    def split(self, url: str) -> tuple[str, dict[str, str]]:
        """A ``Link`` URL as (path below the API root, query)."""
        parts = urlsplit(url)
        path = parts.path
        if self.prefix and path.startswith(self.prefix):
            path = path[len(self.prefix) :]
        return path, dict(parse_qsl(parts.query))

    def _file(self, key: str) -> Path:
        digest = cache.sha1_hex(key.encode())
        return self.root / digest[:2] / f"{digest}.json"

    def read(self, key: str) -> dict[str, Any] | None:
        path = self._file(key)
        if not path.exists():
            return None
        entry = cache.read_valid(path, _ENTRY)
        if not entry or entry["key"] != key:
            self.stats.rebuilt += 1
            return None
        return entry

    def write(
        self,
        key: str,
        status: int,
        etag: str | None,
        nxt: str | None,
        data: Any,
        *,
        asker: str = "",
        kept: dict[str, Any] | None = None,
    ) -> None:
        """Keep an answer; ``asker`` (``asked_by``) names whose ETag ``etag`` is, and the
        ETags other tokens got for the same answer (``kept``) stay while it is unchanged."""
        etags: dict[str, str] = {}
        if kept is not None and kept.get("data") == data and kept.get("next") == nxt:
            etags = dict(kept.get("etags") or {})
        if etag:
            etags[asker] = etag
        entry = {
            "key": key, "status": status, "etag": etag, "next": nxt, "data": data,
            "etags": etags,
        }  # fmt: skip
        cache.write_json(self._file(key), entry, compact=True)


def asked_by(token: Token | None) -> str:
    """Who asks, as the ETag cache knows it: a hash of the token (never the token itself;
    "" without one)."""
    if token is None:
        return ""
    return cache.sha1_hex(b"onboard-etag\0" + token.value.encode())[:16]


class CachedGitHub:
    """Cached, conditional GETs against one GitHub API (github.com, GHE, a test server)."""

    def __init__(
        self,
        api_url: str,
        *,
        token: Token | None,
        offline: bool = False,
        refresh: bool = False,
        reporter: Reporter | None = None,
        timeout: int = 20,
        max_wait_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        root: Path | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token
        self.offline = offline
        self.refresh = refresh
        self.reporter = reporter or Reporter()
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self.stats = ApiStats()
        self.store = AnswerStore(
            self.api_url, root or cache.writable_cache_dir("github-api"), self.stats
        )
        self._rest = rest.RestClient(self.api_url, token, timeout)

    def get(self, path: str, params: dict[str, str] | None = None, *, final: bool) -> Answer:
        return self._one(path, dict(params or {}), final)[0]

    def get_pages(
        self, path: str, params: dict[str, str] | None = None, *, final: bool, max_pages: int = 10
    ) -> Answer:
        """A list endpoint, every page (``per_page=100``) up to ``max_pages``, joined."""
        query = {"per_page": "100", **(params or {})}
        items: list[Any] = []
        for _ in range(max_pages):
            answer, next_url = self._one(path, query, final)
            if answer.data is None:
                return Answer(items or None, answer.source, answer.problem)
            if not isinstance(answer.data, list):
                return Answer(items or None, "missing", "an answer that is not a list")
            items += answer.data
            if not next_url:
                return Answer(items, answer.source)
            path, query = self.store.split(next_url)
        return Answer(items, "api", f"more than {max_pages} pages; the rest is not shown")

    def _one(self, path: str, query: dict[str, str], final: bool) -> tuple[Answer, str | None]:
        key = self.store.key(path, query)
        kept = self.store.read(key)
        if kept is not None and (self.offline or (final and not self.refresh)):
            return self._kept(kept, "cache")
        if self.offline:
            return self._missing(key, "not in the cache, and --offline sends nothing"), None
        if self.stats.stopped is None:
            try:
                return self._ask(path, query, key, kept, final)
            except rest.Stop as stop:
                self.stats.stopped = str(stop)
        if kept is not None:
            return self._kept(kept, "cache")
        return self._missing(key, self.stats.stopped or "not asked"), None

    def _kept(self, kept: dict[str, Any], source: str) -> tuple[Answer, str | None]:
        """A kept answer; a kept 404 is still the problem it was."""
        if source == "cache":
            self.stats.from_cache += 1
        status = kept["status"]
        problem = _GONE.get(status) if status != 200 else None
        return Answer(kept["data"], source, problem), kept["next"]

    def _missing(self, key: str, why: str) -> Answer:
        self.stats.missing.append(f"{key.split('?')[0]}: {why}")
        return Answer(None, "missing", why)

    def _ask(
        self, path: str, query: dict[str, str], key: str, kept: dict[str, Any] | None, final: bool
    ) -> tuple[Answer, str | None]:
        headers = {"Accept": "application/vnd.github+json"}
        asker = asked_by(self._token)
        etags = kept.get("etags") if kept is not None else None
        etag = (etags or {}).get(asker) if etags is not None else (kept or {}).get("etag")
        if etag:
            headers["If-None-Match"] = etag
        waited = retried = False
        while True:
            status, head, body = self._send(path, query, headers)
            if status == 304 and kept is not None:
                self.stats.not_modified += 1
                return self._kept(kept, "revalidated")
            if status == 200:
                try:
                    data = json.loads(body)
                except ValueError:
                    raise rest.Stop(rest.not_github(self.api_url, body)) from None
                nxt = _next_link(head.get("link", ""))
                self.store.write(key, status, head.get("etag"), nxt, data, asker=asker, kept=kept)
                return Answer(data, "api"), nxt
            wait = rest.wait_asked(status, head, body, self.max_wait_s)
            if wait is not None and not waited:
                waited = True
                self.reporter.step(f"GitHub asks to wait {wait:g} s (secondary rate limit)")
                self._sleep(wait)
                self.stats.waited_s += wait
                continue
            if status in _SERVER_ERRORS and not retried:
                retried = True
                self._sleep(1.0)
                continue
            return self._failed(status, body, key, kept, final)

    def _send(
        self, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], str]:
        try:
            return self._rest.get(path, query, headers)
        finally:
            limits = self._rest.limits
            self.stats.requests = self._rest.sent
            self.stats.remaining, self.stats.limit = limits.remaining, limits.limit
            self.stats.reset = limits.reset

    def _failed(
        self, status: int, body: str, key: str, kept: dict[str, Any] | None, final: bool
    ) -> tuple[Answer, str | None]:
        rest.refuse(status, body, self._token, self.api_url)  # ends the asking, or returns
        if status in _GONE and final:
            # A pull request that is not there stays not there: kept, like an answer.
            self.store.write(key, status, None, None, None)
            self.stats.missing.append(f"{key.split('?')[0]}: {_GONE[status]}")
            return Answer(None, "api", _GONE[status]), None
        if kept is not None:  # an answer kept from before beats none
            return self._kept(kept, "cache")
        message = redact(rest.message_of(body), self._token.value if self._token else "")
        return self._missing(
            key, f"GitHub answered {status}" + (f": {message}" if message else "")
        ), None


def _next_link(link: str) -> str | None:
    for part in link.split(","):
        if 'rel="next"' in part and "<" in part and ">" in part:
            return part[part.index("<") + 1 : part.index(">")]
    return None

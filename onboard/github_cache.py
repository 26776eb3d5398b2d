"""GitHub REST answers kept on disk, asked again only with ``If-None-Match``.

Every answer (one page of one URL) is a file under onboard's cache
(``github-api/``), keyed by host, path and query, holding its ETag and the
``Link: rel="next"`` of its page. Each file is written whole (a temporary file
renamed over it), so an interrupted run leaves every answer it saved readable
and the next run goes on from there; a file that does not read back as one
(a torn copy, a hand edit) counts as missing and is fetched again.

What is asked when:
- ``final`` answers (a landed pull request's comments and reviews, a commit's
  history: they do not change) are never asked again once kept;
  ``refresh`` revalidates them with ``If-None-Match``, and a 304 answer costs
  no rate limit (GitHub's REST docs, "conditional requests");
- ``offline`` never opens a socket: what is kept is the answer, else "not cached";
- the rate limit is respected: a ``Retry-After`` of up to ``max_wait_s`` seconds
  is waited out once, a longer one or a used-up limit (``x-ratelimit-remaining: 0``)
  stops all further requests for the run, which goes on with what is kept.

Requests go through PyGithub's ``Requester`` (``Github(...).requester``): the same
auth, base URL (GitHub Enterprise's ``/api/v3``), timeouts and proxies as `onboard
pr` and `harvest`; its ``requestJson`` hands back the status and headers that
PyGithub's object layer hides (it has no conditional requests for lists).
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
from onboard.github_token import Token
from onboard.redact import redact
from onboard.report import Reporter

_ENTRY = {"key": str, "status": int, "etag": (str, None), "next": (str, None), "data": object}
_SERVER_ERRORS = range(500, 600)
_GONE = {404: "not found (404)", 410: "gone (410)"}


@dataclass
class ApiStats:
    """What the run asked of GitHub and what it found kept."""

    requests: int = 0  # sent over the network
    not_modified: int = 0  # of which answered 304 (free)
    from_cache: int = 0  # answered from disk, nothing sent
    rebuilt: int = 0  # kept answers that did not read back and were fetched again
    remaining: int | None = None
    limit: int | None = None
    reset: int | None = None
    stopped: str | None = None  # why no more requests were sent
    waited_s: float = 0.0
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

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "not_modified": self.not_modified,
            "from_cache": self.from_cache,
            "rebuilt": self.rebuilt,
            "rate_limit_remaining": self.remaining,
            "rate_limit": self.limit,
            "rate_limit_reset": self.reset,
            "stopped": self.stopped,
            "waited_s": round(self.waited_s, 1),
            "missing": list(self.missing),
        }


@dataclass(frozen=True)
class Answer:
    data: Any  # the JSON (a list: every page joined); None when missing
    source: str  # cache / api / revalidated / missing
    problem: str | None = None  # why it is missing or incomplete

    @property
    def ok(self) -> bool:
        return self.data is not None and self.problem is None

    @property
    def gone(self) -> bool:
        """GitHub said it is not there (404 / 410): an answer, not a failure to get one."""
        return self.problem in _GONE.values()


def utc(epoch: int) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).strftime("%H:%M UTC")
    except (ValueError, OSError, OverflowError):
        return str(epoch)


class _Stop(Exception):
    """No more requests this run; the text says why."""


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
        parts = urlsplit(self.api_url)
        self._prefix = parts.path.rstrip("/")
        self._host = parts.netloc.lower()
        self._token = token
        self.offline = offline
        self.refresh = refresh
        self.reporter = reporter or Reporter()
        self.timeout = timeout
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self.root = root or cache.writable_cache_dir("github-api")
        self.stats = ApiStats()
        self._requester: Any = None

    # -- the two reads -----------------------------------------------------------

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
            path, query = self._split(next_url)
        return Answer(items, "api", f"more than {max_pages} pages; the rest is not shown")

    # -- one page ------------------------------------------------------------------

    def key(self, path: str, query: dict[str, str]) -> str:
        return f"{self._host}{self._prefix}{path}?{urlencode(sorted(query.items()))}"

    def _file(self, key: str) -> Path:
        digest = cache.sha1_hex(key.encode())
        return self.root / digest[:2] / f"{digest}.json"

    def _split(self, url: str) -> tuple[str, dict[str, str]]:
        parts = urlsplit(url)
        path = parts.path
        if self._prefix and path.startswith(self._prefix):
            path = path[len(self._prefix) :]
        return path, dict(parse_qsl(parts.query))

    def _read(self, key: str) -> dict[str, Any] | None:
        path = self._file(key)
        if not path.exists():
            return None
        entry = cache.read_valid(path, _ENTRY)
        if not entry or entry["key"] != key:
            self.stats.rebuilt += 1
            return None
        return entry

    def _write(self, key: str, status: int, etag: str | None, nxt: str | None, data: Any) -> None:
        entry = {"key": key, "status": status, "etag": etag, "next": nxt, "data": data}
        cache.write_json(self._file(key), entry, compact=True)

    def _one(self, path: str, query: dict[str, str], final: bool) -> tuple[Answer, str | None]:
        key = self.key(path, query)
        kept = self._read(key)
        if kept is not None and (self.offline or (final and not self.refresh)):
            self.stats.from_cache += 1
            return _from(kept, "cache"), kept["next"]
        if self.offline:
            return self._missing(key, "not in the cache, and --offline sends nothing"), None
        if self.stats.stopped:
            return self._kept_or_missing(key, kept, self.stats.stopped)
        try:
            return self._ask(path, query, key, kept, final)
        except _Stop as stop:
            self.stats.stopped = str(stop)
            return self._kept_or_missing(key, kept, str(stop))

    def _kept_or_missing(
        self, key: str, kept: dict[str, Any] | None, why: str
    ) -> tuple[Answer, str | None]:
        if kept is not None:
            self.stats.from_cache += 1
            return _from(kept, "cache"), kept["next"]
        return self._missing(key, why), None

    def _missing(self, key: str, why: str) -> Answer:
        self.stats.missing.append(f"{key.split('?')[0]}: {why}")
        return Answer(None, "missing", why)

    def _ask(
        self, path: str, query: dict[str, str], key: str, kept: dict[str, Any] | None, final: bool
    ) -> tuple[Answer, str | None]:
        headers = {"Accept": "application/vnd.github+json"}
        if kept is not None and kept.get("etag"):
            headers["If-None-Match"] = kept["etag"]
        waited = retried = False
        while True:
            status, head, body = self._send(path, query, headers)
            if status == 304 and kept is not None:
                self.stats.not_modified += 1
                return _from(kept, "revalidated"), kept["next"]
            if status == 200:
                try:
                    data = json.loads(body)
                except ValueError:
                    raise _Stop(self._not_github(body)) from None
                nxt = _next_link(head.get("link", ""))
                self._write(key, status, head.get("etag"), nxt, data)
                return Answer(data, "api"), nxt
            wait = self._limited(status, head, body)
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
        reset = self.stats.reset or 0
        if self.stats.remaining == 0 and reset > time.time():
            raise _Stop(f"GitHub's API rate limit is used up until {utc(reset)}")
        try:
            status, head, body = self._client().requestJson("GET", path, query, headers)
        except _Stop:
            raise
        except Exception as exc:  # noqa: BLE001 - requests' and urllib3's errors, by module
            if isinstance(exc, OSError) or type(exc).__module__.startswith(("requests", "urllib3")):
                raise _Stop(f"could not reach {self.api_url} ({type(exc).__name__})") from None
            raise
        self.stats.requests += 1
        head = {str(k).lower(): str(v) for k, v in (head or {}).items()}
        for name, attr in (
            ("x-ratelimit-remaining", "remaining"),
            ("x-ratelimit-limit", "limit"),
            ("x-ratelimit-reset", "reset"),
        ):
            if head.get(name, "").strip().isdigit():
                setattr(self.stats, attr, int(head[name]))
        return int(status), head, body if isinstance(body, str) else ""

    def _limited(self, status: int, head: dict[str, str], body: str) -> float | None:
        """Seconds to wait before asking again (a short ``Retry-After``), or None;
        a limit that cannot be waited out here stops the run's requests."""
        if status not in (403, 429):
            return None
        message = _message(body).lower()
        if head.get("x-ratelimit-remaining") == "0":
            reset = head.get("x-ratelimit-reset", "")
            when = f" until {utc(int(reset))}" if reset.isdigit() else ""
            raise _Stop(f"GitHub's API rate limit is used up{when}")
        after = head.get("retry-after", "").strip()
        if after.isdigit():
            if float(after) <= self.max_wait_s:
                return float(after)
            raise _Stop(f"GitHub asks to wait {after} s before the next request (rate limit)")
        if status == 429 or "rate limit" in message:
            raise _Stop("GitHub's secondary rate limit was hit")
        return None

    def _failed(
        self, status: int, body: str, key: str, kept: dict[str, Any] | None, final: bool
    ) -> tuple[Answer, str | None]:
        message = redact(_message(body), self._token.value if self._token else "")
        if status == 401:
            source = self._token.source if self._token else "no token"
            raise _Stop(
                f"GitHub rejected the token from {source} (401 {message or 'Bad credentials'})"
            )
        if status == 403:
            raise _Stop(f"GitHub refused the request (403 {message or 'Forbidden'})")
        if _looks_like_html(body):
            raise _Stop(self._not_github(body))
        if status in _GONE and final:
            # A pull request that is not there stays not there: kept, like an answer.
            self._write(key, status, None, None, None)
            self.stats.missing.append(f"{key.split('?')[0]}: {_GONE[status]}")
            return Answer(None, "api", _GONE[status]), None
        problem = f"GitHub answered {status}" + (f": {message}" if message else "")
        if kept is not None:  # an answer kept from before beats none
            self.stats.from_cache += 1
            return _from(kept, "cache"), kept["next"]
        return self._missing(key, problem), None

    def _not_github(self, body: str) -> str:
        page = " ".join(body.split())[:60]
        return (
            f"the API at {self.api_url} answered with a page that is not JSON ({page!r}): a "
            "proxy or captive portal in between, or an --api-url that is not a GitHub API"
        )

    def _client(self) -> Any:
        if self._requester is None:
            from github import Auth, Github

            auth = Auth.Token(self._token.value) if self._token else None
            gh = Github(
                auth=auth,
                base_url=self.api_url,
                timeout=self.timeout,
                retry=None,
                seconds_between_requests=None,
                seconds_between_writes=None,
            )
            self._requester = gh.requester
        return self._requester


def _from(kept: dict[str, Any], source: str) -> Answer:
    """A kept answer; a kept 404 is still the problem it was."""
    status = kept["status"]
    return Answer(kept["data"], source, _GONE.get(status) if status != 200 else None)


def _next_link(link: str) -> str | None:
    for part in link.split(","):
        if 'rel="next"' in part and "<" in part and ">" in part:
            return part[part.index("<") + 1 : part.index(">")]
    return None


def _message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    return str(data.get("message") or "") if isinstance(data, dict) else ""


def _looks_like_html(body: str) -> bool:
    return body.lstrip()[:1] == "<"

"""One GET of GitHub's REST API through PyGithub's ``Requester``, and how to read
what came back: the rate-limit headers, a wait GitHub asks for, a refusal.

``Github(...).requester.requestJson`` uses the same auth, base URL (GitHub
Enterprise's ``/api/v3``), timeouts and proxies as `onboard pr` and `harvest`,
and hands back the status and headers PyGithub's object layer hides (it has no
conditional requests for lists, so no ETag and no 304 there). PyGithub is
imported on the first request only.
"""

from __future__ import annotations

import json
import time
from typing import Any

from onboard.github.token import Token
from onboard.redact import redact


class Stop(Exception):
    """No more requests this run; the text says why."""


def utc(epoch: int | str) -> str:
    """A reset time (epoch seconds) as HH:MM UTC; what GitHub sent when it is not one."""
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).strftime("%H:%M UTC")
    except (ValueError, OSError, OverflowError):
        return str(epoch)


class Limits:
    """What the last answers said of the rate limit."""

    def __init__(self) -> None:
        self.remaining: int | None = None
        self.limit: int | None = None
        self.reset: int | None = None

    def read(self, head: dict[str, str]) -> None:
        for name, attr in (
            ("x-ratelimit-remaining", "remaining"),
            ("x-ratelimit-limit", "limit"),
            ("x-ratelimit-reset", "reset"),
        ):
            if head.get(name, "").strip().isdigit():
                setattr(self, attr, int(head[name]))

    def used_up(self) -> bool:
        return self.remaining == 0 and (self.reset or 0) > time.time()


# Seconds one request may take, its whole answer read. ``timeout`` bounds each read
# of the socket only: a server that sends a byte a second would hold the run for as
# long as the body lasts.
REQUEST_DEADLINE_S = 60.0


class RestClient:
    """GETs against one API root, counting them and reading the limits they report."""

    def __init__(
        self, api_url: str, token: Token | None, timeout: int, deadline_s: float | None = None
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.deadline_s = REQUEST_DEADLINE_S if deadline_s is None else deadline_s
        self.limits = Limits()
        self.sent = 0
        self._requester: Any = None

    def get(
        self, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], str]:
        """(status, lower-cased headers, body); ``Stop`` when the limit is used up or
        the API cannot be reached."""
        if self.limits.used_up():
            raise Stop(f"GitHub's API rate limit is used up until {utc(self.limits.reset or 0)}")
        try:
            status, head, body = self._within_deadline(path, query, headers)
        except Exception as exc:  # noqa: BLE001 - requests' and urllib3's errors, by module
            if isinstance(exc, OSError) or type(exc).__module__.startswith(("requests", "urllib3")):
                raise Stop(f"could not reach {self.api_url} ({type(exc).__name__})") from None
            raise
        self.sent += 1
        head = {str(k).lower(): str(v) for k, v in (head or {}).items()}
        self.limits.read(head)
        return int(status), head, body if isinstance(body, str) else ""

    def _within_deadline(
        self, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[Any, Any, Any]:
        """``requestJson`` in a worker thread, waited for ``deadline_s`` at most; past it
        the request is left behind (a daemon thread, its session dropped) and ``Stop``
        says what did not come."""
        import threading

        client = self._client()
        done: dict[str, Any] = {}

        def ask() -> None:
            try:
                done["answer"] = client.requestJson("GET", path, query, headers)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                done["error"] = exc

        worker = threading.Thread(target=ask, name=f"GET {path}", daemon=True)
        worker.start()
        worker.join(self.deadline_s)
        if worker.is_alive():
            self._requester = None  # its connection is still busy: never reused
            self.sent += 1
            raise Stop(
                f"GitHub did not send its whole answer to {path} within "
                f"{self.deadline_s:g} s (it was still arriving)"
            )
        if "error" in done:
            raise done["error"]
        status, head, body = done["answer"]
        return status, head, body

    def _client(self) -> Any:
        if self._requester is None:
            from github import Auth, Github

            gh = Github(
                auth=Auth.Token(self.token.value) if self.token else None,
                base_url=self.api_url,
                timeout=self.timeout,
                # No retry loop and no pacing: the cache decides what to ask again.
                retry=None,
                seconds_between_requests=None,
                seconds_between_writes=None,
            )
            self._requester = gh.requester
        return self._requester


def message_of(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    return str(data.get("message") or "") if isinstance(data, dict) else ""


def wait_asked(status: int, head: dict[str, str], body: str, max_wait_s: float) -> float | None:
    """Seconds GitHub asks to wait before the next request (a short ``Retry-After``),
    or None; a limit that cannot be waited out here raises ``Stop``."""
    if status not in (403, 429):
        return None
    if head.get("x-ratelimit-remaining") == "0":
        reset = head.get("x-ratelimit-reset", "")
        when = f" until {utc(int(reset))}" if reset.isdigit() else ""
        raise Stop(f"GitHub's API rate limit is used up{when}")
    after = head.get("retry-after", "").strip()
    if after.isdigit():
        if float(after) <= max_wait_s:
            return float(after)
        raise Stop(f"GitHub asks to wait {after} s before the next request (rate limit)")
    if status == 429 or "rate limit" in message_of(body).lower():
        raise Stop("GitHub's secondary rate limit was hit")
    return None


def refuse(status: int, body: str, token: Token | None, api_url: str) -> None:
    """``Stop`` for an answer that ends the asking: a rejected token, a refusal, a
    page that is not GitHub's (a proxy, a captive portal)."""
    message = redact(message_of(body), token.value if token else "")
    if status == 401:
        source = token.source if token else "no token"
        raise Stop(f"GitHub rejected the token from {source} (401 {message or 'Bad credentials'})")
    if status == 403:
        raise Stop(f"GitHub refused the request (403 {message or 'Forbidden'})")
    if body.lstrip()[:1] == "<":
        raise Stop(not_github(api_url, body))


def not_github(api_url: str, body: str) -> str:
    page = " ".join(body.split())[:60]
    return (
        f"the API at {api_url} answered with a page that is not JSON ({page!r}): a proxy or "
        "captive portal in between, or an --api-url that is not a GitHub API"
    )

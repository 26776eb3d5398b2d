"""Answers from the GitHub API, checked before onboard uses a value of them.

A proxy or captive portal answers 200 with an HTML page, which PyGithub
reads as {"data": "<html>..."}: every attribute is then None, and a None
login made the pull request head "None:branch"; JSON of another shape makes
PyGithub itself fail with a TypeError. Every value onboard takes from an
answer goes through these readers, and ``malformed`` tells such failures
(``Malformed``) from a bug in onboard.
"""

from __future__ import annotations

import re
from typing import Any

# GitHub logins: letters, digits, hyphens; Enterprise Managed Users add `_shortcode`.
LOGIN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
# A branch name as the API gives it: no spaces, no `:` (it becomes OWNER:BRANCH).
BRANCH_RE = re.compile(r"[^\s:~^?*\[\\]+")


class Malformed(Exception):
    """An answer that is not what GitHub sends; the text says what was wrong."""


def field(obj: Any, name: str) -> Any:
    from github.GithubException import BadAttributeException

    try:
        return getattr(obj, name)
    except BadAttributeException as exc:
        raise Malformed(
            f"`{name}` = {_short(exc.actual_value)} ({type(exc.actual_value).__name__})"
            f"{_page_hint(obj)}"
        ) from None


def obj_field(obj: Any, name: str) -> Any:
    value = field(obj, name)
    if value is None:
        raise Malformed(f"no `{name}`{_page_hint(obj)}")
    return value


def text(obj: Any, name: str, *, empty_ok: bool = False) -> str:
    value = field(obj, name)
    if value is None and empty_ok:
        return ""
    if not isinstance(value, str) or (not value and not empty_ok):
        raise Malformed(f"no string `{name}` (got {_short(value)}){_page_hint(obj)}")
    return value


def number(obj: Any, name: str) -> int:
    value = field(obj, name)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise Malformed(f"no positive integer `{name}` (got {_short(value)}){_page_hint(obj)}")
    return value


def list_of(obj: Any, name: str) -> list[Any]:
    value = field(obj, name)
    if not isinstance(value, list):
        raise Malformed(f"no list `{name}` (got {_short(value)}){_page_hint(obj)}")
    return value


def matching(value: str, pattern: re.Pattern[str], name: str) -> str:
    if not pattern.fullmatch(value):
        raise Malformed(f"`{name}` = {_short(value)}, which GitHub never sends")
    return value


def _short(value: Any) -> str:
    return _clip(repr(value))


def _clip(words: str) -> str:
    words = " ".join(words.split())
    return words if len(words) <= 60 else words[:57] + "..."


def _page_hint(obj: Any) -> str:
    """ ", from a page that is not JSON" when PyGithub wrapped one as {"data": ...}."""
    raw = getattr(obj, "_rawData", None)  # what PyGithub parsed; reading it makes no request
    if isinstance(raw, dict) and isinstance(raw.get("data"), str) and set(raw) <= {"data", "url"}:
        return f", from a page that is not JSON: {_short(raw['data'])}"
    if raw is not None and not isinstance(raw, dict):
        return f", from JSON of another shape ({type(raw).__name__})"
    return ""


def malformed(exc: BaseException) -> Malformed | None:
    """``exc`` as an unreadable answer, or None when it is something else (a bug)."""
    from github.GithubException import BadAttributeException, IncompletableObject

    if isinstance(exc, Malformed):
        return exc
    if isinstance(exc, IncompletableObject):
        # A listed object without its `url`, which PyGithub then cannot fetch.
        return Malformed(f"an object without its `url` ({_short(exc.data)})")
    if isinstance(exc, BadAttributeException):
        return Malformed(f"a value of the wrong type ({_short(exc.actual_value)})")
    # PyGithub indexing a page of HTML as a list of objects, or a JSON body
    # that does not parse: only when PyGithub itself was running, so a slip in
    # onboard's own code still surfaces as the bug it is.
    if isinstance(exc, (TypeError, AttributeError, KeyError, ValueError)) and _in_pygithub(exc):
        return Malformed(f"{type(exc).__name__} in PyGithub: {_clip(str(exc))}")
    return None


def _in_pygithub(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith("github."):
            return True
        tb = tb.tb_next
    return False


def not_github(api_url: str, what: str, problem: Malformed) -> str:
    return (
        f"The GitHub API at {api_url} gave an answer GitHub never sends while {what} "
        f"({problem}): a proxy or captive portal in between, or an --api-url that is not a "
        "GitHub API."
    )


def login(user: Any) -> str:
    """The login of GET /user: it names the fork's owner in OWNER:BRANCH."""
    return matching(text(user, "login"), LOGIN_RE, "login")

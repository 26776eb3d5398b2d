"""Which GitHub token to use, and where it came from.

Kept apart from the clients (``client``, ``issues``, ``pulls``) so that a
command that only asks "is there a token?" (harvest, pr's dry run) imports
nothing more.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_API_URL = "https://api.github.com"
TOKEN_ENV = ("GITHUB_TOKEN", "GH_TOKEN")
_ENTERPRISE_TOKEN_ENV = ("GITHUB_ENTERPRISE_TOKEN", "GH_ENTERPRISE_TOKEN")


def web_host(api_url: str) -> str:
    """The git/web host behind an API URL: api.github.com -> github.com,
    https://ghe.example/api/v3 -> ghe.example (GitHub Enterprise)."""
    from urllib.parse import urlsplit

    host = (urlsplit(api_url).hostname or "").lower()
    return "github.com" if host == "api.github.com" else host


@dataclass(frozen=True)
class Token:
    """A GitHub token and where it came from; ``repr``/``str`` never show the value."""

    value: str
    source: str  # "GITHUB_TOKEN", "GH_TOKEN", "gh config (<path>)"

    def __repr__(self) -> str:
        return f"Token(source={self.source!r})"

    __str__ = __repr__


def gh_hosts_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "gh" / "hosts.yml"


def find_token(api_url: str = DEFAULT_API_URL) -> Token | None:
    """GITHUB_TOKEN / GH_TOKEN (the *_ENTERPRISE_TOKEN pair first for other
    hosts, as gh does), else ``oauth_token`` for the host in gh's hosts.yml.

    Recent gh versions keep the token in the system keyring instead; then
    hosts.yml has none and the caller asks for GH_TOKEN=$(gh auth token).
    """
    host = web_host(api_url)
    names = TOKEN_ENV if host == "github.com" else (*_ENTERPRISE_TOKEN_ENV, *TOKEN_ENV)
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return _known(Token(value, name))
    path = gh_hosts_file()
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    entry = data.get(host) if isinstance(data, dict) else None
    if isinstance(entry, dict):
        found = entry.get("oauth_token")
        if isinstance(found, str) and found.strip():
            return _known(Token(found.strip(), f"gh config ({path})"))
    return None


def _known(token: Token) -> Token:
    """``token``, redacted from everything onboard writes from now on."""
    from onboard.redact import remember

    remember(token.value)
    return token

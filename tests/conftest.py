"""Guards and fixtures shared by every test suite.

Guards (always on):
- network: a socket may only connect to loopback (127.0.0.0/8, ::1,
  "localhost") or an AF_UNIX path; anything else raises `NetworkBlockedError`
  (an OSError). Subprocesses are not covered.
- home: HOME and the XDG dirs point into each test's tmp_path, git runs with
  a fixed identity and dates, tokens and ONBOARD_WORKSPACE are unset; at the
  end of the session any new entry in the real home directory fails the run.

CI (ONBOARD_CI_NO_SKIPS=1, set by .ci/run): a skipped test fails, unless it
is marked `gpu` (fixtures/ci_skips.py).

Fixtures: torch_wheel_dir, pytorch_repo_builder (session, read-only repos),
pytorch_repo_factory / pytorch_repo (function, private copies), git_daemon.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# tests/ on sys.path whatever the import mode, so `fixtures` is importable.
_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from fixtures import ci_skips  # noqa: E402
from fixtures.git_server import GitDaemon  # noqa: E402

# Every `onboard ...` command the tests see onboard suggest must parse (see the module).
pytest_plugins = ["fixtures.suggestions", "fixtures.onboard_runs"]
from fixtures.pytorch_repo import (  # noqa: E402
    RepoInfo,
    build_pytorch_repo,
    copy_repo,
    find_torch_dir,
)

# --------------------------------------------------------------------------
# Markers


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "slow: end-to-end; runs in `nox -s verify`, excluded from `nox -s tests`",
    )
    # The `gpu` marker, and in CI (ONBOARD_CI_NO_SKIPS=1) a skip is a failure.
    if not config.pluginmanager.has_plugin("fixtures.ci_skips"):
        config.pluginmanager.register(ci_skips, "fixtures.ci_skips")
    _install_network_guard()
    _record_real_home(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    _remove_network_guard()


# --------------------------------------------------------------------------
# Network guard


class NetworkBlockedError(OSError):
    """A test tried to reach a non-loopback address."""


_REAL_CONNECT = socket.socket.connect
_REAL_CONNECT_EX = socket.socket.connect_ex
_REAL_CREATE_CONNECTION = socket.create_connection
_GUARD_INSTALLED = False


def _is_loopback_host(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    host = host.strip("[]").split("%", 1)[0]  # IPv6 brackets / scope id
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name other than localhost: resolving it is already egress
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _check_address(family: int, address: object) -> None:
    if hasattr(socket, "AF_UNIX") and family == socket.AF_UNIX:
        return
    inet = family in (socket.AF_INET, socket.AF_INET6)
    if inet and isinstance(address, tuple) and address and _is_loopback_host(address[0]):
        return
    raise NetworkBlockedError(
        f"network access blocked in tests: connect to {address!r} (family {family}); "
        "only loopback is allowed (serve it locally, e.g. tests/fixtures/git_server.py)"
    )


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check_address(self.family, address)
    return _REAL_CONNECT(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check_address(self.family, address)
    return _REAL_CONNECT_EX(self, address)


def _guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
    host = address[0] if isinstance(address, tuple) and address else address
    if not _is_loopback_host(host):
        raise NetworkBlockedError(
            f"network access blocked in tests: create_connection({address!r}); "
            "only loopback is allowed"
        )
    return _REAL_CREATE_CONNECTION(address, *args, **kwargs)


def _install_network_guard() -> None:
    global _GUARD_INSTALLED
    if _GUARD_INSTALLED:
        return
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]
    socket.create_connection = _guarded_create_connection
    _GUARD_INSTALLED = True


def _remove_network_guard() -> None:
    global _GUARD_INSTALLED
    socket.socket.connect = _REAL_CONNECT  # type: ignore[method-assign]
    socket.socket.connect_ex = _REAL_CONNECT_EX  # type: ignore[method-assign]
    socket.create_connection = _REAL_CREATE_CONNECTION
    _GUARD_INSTALLED = False


# --------------------------------------------------------------------------
# Home isolation

# Set to 1 to turn the end-of-session "new entry in the real home" failure
# into a warning (e.g. when other processes share this HOME while tests run).
ALLOW_HOME_CHANGES_ENV = "ONBOARD_TESTS_ALLOW_HOME_CHANGES"

_HomeRecord = tuple[Path, frozenset[str], float]  # path, listing, mtime at start
_HOMES_KEY = pytest.StashKey[list[pytest.StashKey[_HomeRecord]]]()

_FIXED_DATE = "2025-01-01T00:00:00+00:00"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Onboard Tester",
    "GIT_AUTHOR_EMAIL": "tester@onboard.invalid",
    "GIT_COMMITTER_NAME": "Onboard Tester",
    "GIT_COMMITTER_EMAIL": "tester@onboard.invalid",
    "GIT_AUTHOR_DATE": _FIXED_DATE,
    "GIT_COMMITTER_DATE": _FIXED_DATE,
}
_UNSET = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ONBOARD_WORKSPACE",
    # git variables that would redirect git away from the repo a test names
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CEILING_DIRECTORIES",
)


def _real_home() -> Path:
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        return Path(os.path.expanduser("~"))


def _listing(path: Path) -> frozenset[str]:
    try:
        return frozenset(os.listdir(path))
    except OSError:
        return frozenset()


def _record_real_home(config: pytest.Config) -> None:
    # Both the passwd home and $HOME as the session started (they may differ).
    for home in {_real_home(), Path(os.environ.get("HOME", "~")).expanduser()}:
        key = pytest.StashKey[_HomeRecord]()
        config.stash.setdefault(_HOMES_KEY, []).append(key)
        try:
            mtime = home.stat().st_mtime
        except OSError:
            mtime = 0.0
        config.stash[key] = (home, _listing(home), mtime)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workerinput"):  # xdist worker: the controller checks
        return
    problems: list[str] = []
    for key in config.stash.get(_HOMES_KEY, []):
        home, before, _mtime = config.stash[key]
        new = sorted(_listing(home) - before)
        if new:
            problems.append(f"{home}: new entries {new}")
    if not problems:
        return
    message = (
        "tests wrote to the real home directory (HOME isolation failed or a "
        "path was built from the passwd home):\n  " + "\n  ".join(problems)
    )
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if os.environ.get(ALLOW_HOME_CHANGES_ENV) == "1":
        if reporter is not None:
            reporter.write_sep("!", "WARNING", yellow=True)
            reporter.write_line(message)
        return
    if reporter is not None:
        reporter.write_sep("!", "REAL HOME DIRECTORY MODIFIED", red=True)
        reporter.write_line(message)
        reporter.write_line(
            f"(if another process on this machine made them, rerun with {ALLOW_HOME_CHANGES_ENV}=1)"
        )
    else:
        sys.stderr.write(message + "\n")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _home_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }


def _apply_isolated_env(mp: pytest.MonkeyPatch, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    for name, value in _home_env(home).items():
        Path(value).mkdir(parents=True, exist_ok=True)
        mp.setenv(name, value)
    for name, value in GIT_IDENTITY.items():
        mp.setenv(name, value)
    mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
    mp.setenv("GIT_TERMINAL_PROMPT", "0")
    mp.setenv("TZ", "UTC")
    for name in _UNSET:
        mp.delenv(name, raising=False)


@pytest.fixture(scope="session", autouse=True)
def _isolated_session_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Isolated HOME for session-scoped fixtures (function tests get their own)."""
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("session-home")
    _apply_isolated_env(mp, home)
    try:
        yield home
    finally:
        mp.undo()


@pytest.fixture(autouse=True)
def isolated_home(
    _isolated_session_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """HOME (and XDG_*) under this test's tmp_path; returns the HOME path."""
    home = tmp_path / "_home"
    _apply_isolated_env(monkeypatch, home)
    return home


# --------------------------------------------------------------------------
# Wheel and repositories


@pytest.fixture(scope="session")
def torch_wheel_dir() -> Path:
    """The installed torch package directory (found without importing torch)."""
    return find_torch_dir()


RepoBuilder = Callable[..., RepoInfo]


@pytest.fixture(scope="session")
def pytorch_repo_builder(
    _isolated_session_env: Path, tmp_path_factory: pytest.TempPathFactory
) -> RepoBuilder:
    """`build(**build_pytorch_repo kwargs) -> RepoInfo`, cached for the session.

    The repos are shared between tests: do not modify them (use
    `pytorch_repo_factory` for a private copy).
    """
    cache: dict[tuple[Any, ...], RepoInfo] = {}

    def build(**kwargs: Any) -> RepoInfo:
        key = _cache_key(kwargs)
        if key not in cache:
            dest = tmp_path_factory.mktemp("pytorch-shared") / "pytorch"
            cache[key] = build_pytorch_repo(dest, **kwargs)
        return cache[key]

    return build


def _cache_key(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        sorted(
            (name, tuple(sorted(value.items())) if isinstance(value, dict) else value)
            for name, value in kwargs.items()
        )
    )


@pytest.fixture
def pytorch_repo_factory(pytorch_repo_builder: RepoBuilder, tmp_path: Path) -> RepoBuilder:
    """`make(**build_pytorch_repo kwargs) -> RepoInfo`: a private, mutable copy
    under tmp_path (built once per session per kwargs, then copied)."""
    counter = 0

    def make(**kwargs: Any) -> RepoInfo:
        nonlocal counter
        counter += 1
        return copy_repo(pytorch_repo_builder(**kwargs), tmp_path / f"pytorch-{counter}")

    return make


DEFAULT_REPO_KWARGS: dict[str, Any] = {
    "commits": 20,
    "tags": {"v2.12.0": 5, "v2.13.0": 15},
}


@pytest.fixture
def pytorch_repo(pytorch_repo_factory: RepoBuilder) -> RepoInfo:
    """A private copy of the default repo: 20 commits seeded from the wheel,
    tags v2.12.0 at commit 5 and v2.13.0 at commit 15, no regression."""
    return pytorch_repo_factory(**DEFAULT_REPO_KWARGS)


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[GitDaemon]:
    """A running `git daemon` on 127.0.0.1 serving tmp_path/"git-served"
    (use `.serve(repo_path, name)` -> git:// URL)."""
    with GitDaemon(tmp_path / "git-served") as daemon:
        yield daemon


@pytest.fixture(autouse=True)
def _run_state_reset() -> Iterator[None]:
    """Each test starts as a new run would: no signal held back, and worker threads
    allowed to start children (an interrupted run forbids that for the rest of its
    process; the CLI is one process per run, the tests are not), and no cache entry it
    could not write still waiting to be said (the next run's answer would carry it).
    A test that leaves a signal held back or a critical section open fails."""
    from onboard import cache, signals
    from onboard.proc.spawn import spawned

    yield
    cache.take_notes()
    left = signals.unfinished()
    signals.reset()
    spawned.stopping = False
    assert left == (None, 0), f"signals state left behind: {left}"

"""The project's own sessions: tests, lint, verify (end to end), bench.

Every session installs torch==2.13.0: on these machines that pin is the small
CPU wheel on local disk (a plain `torch` would pull a multi-GB CUDA build).
onboard itself never depends on torch; tests need one to inspect.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False

TORCH = os.environ.get("ONBOARD_TEST_TORCH", "torch==2.13.0")
ROOT = Path(__file__).parent


def _install(session: nox.Session, *extras: str, editable: bool = True) -> None:
    # torch first and alone, so a later resolver step can never swap it.
    session.install(TORCH)
    target = f".[{','.join(extras)}]" if extras else "."
    if editable:
        session.install("-e", target)
    else:
        session.install(target)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite without the slow end-to-end checks (those run in `verify`)."""
    _install(session, "test")
    workers = os.environ.get("ONBOARD_TEST_WORKERS", "auto")
    # -rfEs: failures, errors and every skip with its reason in the summary.
    args = session.posargs or ["-m", "not slow", "-n", workers, "-q", "-rfEs"]
    session.run("python", "-m", "pytest", *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint + format check) and mypy."""
    _install(session, "lint")
    session.run("ruff", "check", "onboard", "tasks", "tests", "bench", "noxfile.py")
    session.run("ruff", "format", "--check", "onboard", "tasks", "tests", "bench", "noxfile.py")
    session.run("mypy", "onboard", "tasks")


@nox.session
def verify(session: nox.Session) -> None:
    """The path a newcomer walks, end to end, from an installed (non-editable) wheel.

    doctor -> setup --from-wheel -> the workspace's own `nox -s verify`, then the
    slow-marked tests (real codegen, compiles, servers).
    """
    session.install(TORCH)
    session.install(".[test]")
    work = Path(tempfile.mkdtemp(prefix="onboard-verify-"))
    ws = work / "ws"
    session.run("onboard", "--version")
    session.run("onboard", "doctor")
    session.run("onboard", "setup", str(ws), "--from-wheel")
    session.run("nox", "-f", str(ws / "noxfile.py"), "-s", "verify", external=True)
    session.run("onboard", "verify", "--workspace", str(ws))
    args = session.posargs or ["-m", "slow", "-q"]
    # `pytest`, not `python -m pytest`: the latter puts the repository root on
    # sys.path, and the tests would then import the source tree instead of the
    # installed wheel this session exists to check.
    session.run("pytest", *args, env={"ONBOARD_VERIFY_WHEEL": "1"})


@nox.session
def docs(session: nox.Session) -> None:
    """Write docs/commands.md from the Click commands (tests/test_docs.py fails when stale)."""
    session.install("-e", ".")
    session.run("python", "-m", "onboard.cli_reference", str(ROOT / "docs" / "commands.md"))


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: each prints ratios against a reference run on this machine."""
    # Installed as the README installs it (not editable): an editable install's
    # import hook adds ~20 ms to every start, which the harvest and where rows
    # would otherwise count against onboard.
    _install(session, "test", editable=False)
    names = session.posargs or sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    # PYTHONSAFEPATH: a `python -m onboard` a benchmark starts from the repository
    # root must import the installed wheel, not the source tree beside it (whose
    # onboard/ has no templates/ or tasks/ inside: those ship through pyproject's
    # package-dir mapping).
    for name in names:
        session.run("python", str(ROOT / "bench" / f"{name}.py"), env={"PYTHONSAFEPATH": "1"})

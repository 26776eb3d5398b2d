"""The workspace's ``build`` session: PyTorch's own build, in a venv in the workspace.

``onboard build`` runs it as ``nox -f WS/noxfile.py -s build -- --plan PLAN.json``
after choosing (and explaining) the environment; ``cd WS && nox -s build``
runs the same session by hand and makes the same plan itself (``-- --debug``,
``--debinfo FILE``, ``--cache``, ``--jobs N``, ``--with-tests``; anything else
goes to ``pip install``).

What it does (docs/pytorch-facts.md "Building"): a venv from the workspace's
interpreter in ``WS/.nox/build``; the checkout's own build requirements
(``requirements-build.txt``, else ``requirements.txt``) without any ``torch``
line, so the venv never gets torch from PyPI; the tools the plan adds (cmake,
ninja) when the checkout needs newer ones than the system has; then
``python -m pip install --no-build-isolation -v -e .`` in the checkout with the
plan's environment.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import nox

__all__ = ["build"]


def _workspace() -> Any:
    """The workspace this noxfile belongs to: nox runs it from the workspace folder."""
    from onboard import workspace

    here = Path.cwd()
    if (here / workspace.CONFIG_NAME).is_file():
        return workspace.load(here)
    return workspace.require(None, start=here)


def _build_python() -> str | None:
    """The workspace's interpreter, for the venv (None: nox's own)."""
    try:
        ws = _workspace()
    except Exception:  # noqa: BLE001 - no usable workspace here: nox's own interpreter
        return None
    if Path(ws.python).exists():
        return str(ws.python)
    return None


def _plan_by_hand(session: nox.Session, posargs: list[str]) -> dict[str, Any]:
    """``nox -s build`` run by hand: the same plan ``onboard build`` would make."""
    from onboard.report import Reporter
    from onboard.workflows.build import plan as make_plan

    parser = argparse.ArgumentParser(prog="nox -s build --", add_help=False)
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--debinfo", action="append", default=[])
    parser.add_argument("--cache", default="auto")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--with-tests", action="store_true")
    known, rest = parser.parse_known_args(posargs)
    ws = _workspace()
    plan = make_plan(
        ws,
        debug=known.debug,
        debinfo_files=known.debinfo,
        cache=known.cache,
        jobs=known.jobs,
        with_tests=known.with_tests,
        extra_args=rest,
        reporter=Reporter(),
    )
    for choice in plan.env:
        session.log(
            f"{choice.name}={choice.value if choice.value is not None else '(removed)'}"
            f"  # {choice.reason}"
        )
    if not plan.ok:
        session.error(plan.failure_error().paragraph())
    return plan.session_json()


@nox.session(python=_build_python(), reuse_venv=True, default=False)
def build(session: nox.Session) -> None:
    """Build the checkout: pip install --no-build-isolation -v -e . (`onboard build --dry-run`
    explains the plan)."""
    from onboard import transaction
    from onboard.errors import OnboardError
    from onboard.proc import outputs

    try:
        # A build whose output has no reader any more (`onboard build` killed) stops.
        with (
            transaction.nox_session(Path.cwd(), command="nox -s build"),
            outputs.stop_when_unread(),
        ):
            _build(session)
    except OnboardError as exc:
        session.error(exc.paragraph())


def _build(session: nox.Session) -> None:
    posargs = list(session.posargs)
    if "--plan" in posargs:
        at = posargs.index("--plan")
        data = json.loads(Path(posargs[at + 1]).read_text(encoding="utf-8"))
    else:
        data = _plan_by_hand(session, posargs)
    checkout = Path(data["checkout"])
    env: dict[str, str | None] = data["env"]
    for name, value in env.items():
        if value is None:  # e.g. a CMAKE_BUILD_TYPE that would override the plan's build type
            os.environ.pop(name, None)
    values = {k: v for k, v in env.items() if v is not None}
    location = session.virtualenv.location
    if data["requirements"]:
        req = Path(location or checkout) / "onboard-build-requirements.txt"
        req.write_text("\n".join(data["requirements"]) + "\n", encoding="utf-8")
        session.install("-r", str(req))
    if data["install"]:
        session.install(*data["install"])
    session.chdir(checkout)
    session.run(
        "python",
        "-m",
        "pip",
        "install",
        "--no-build-isolation",
        "-v",
        "-e",
        ".",
        *data["extra_args"],
        env=values,
    )

"""Sessions of an onboard workspace's generated ``noxfile.py``.

The workspace noxfile does ``from onboard.tasks.workspace import *``; nox runs
it from the workspace folder, so ``Path.cwd()`` is the workspace root. Other
commands add their sessions here (and their checks to
``onboard.workflows.verify``).
"""

from __future__ import annotations

from pathlib import Path

import nox

__all__ = ["verify"]

# --- onboard build: the `build` session lives in tasks/build.py ---
from onboard.tasks.build import build  # noqa: E402

__all__ += ["build"]

# --- onboard tests --run: the venv OpInfo samples run in (tasks/opinfo.py) ---
from onboard.tasks.opinfo import opinfo  # noqa: E402

__all__ += ["opinfo"]


@nox.session(python=False, name="verify")
def verify(session: nox.Session) -> None:
    """Check the workspace: checkout commit, IDE/debugger files, prefix mapping, ..."""
    from onboard import transaction, workspace
    from onboard.console import stdout_console
    from onboard.errors import OnboardError
    from onboard.proc import outputs
    from onboard.report import LineReporter
    from onboard.views import verify as view
    from onboard.workflows.verify import run_checks, write_report

    try:
        # The same lock as every writing command (shared with an `onboard verify`
        # that started this session); Ctrl-C/SIGTERM stop the compile children,
        # and none outlives the session. Nor does the session outlive its reader.
        with (
            transaction.nox_session(Path.cwd(), command="nox -s verify"),
            outputs.stop_when_unread(),
        ):
            ws = workspace.load(Path.cwd())
            # A line as each check starts and ends: `onboard verify` shows them live.
            result = run_checks(ws, LineReporter())
            report = write_report(result)
    except OnboardError as exc:
        session.error(exc.paragraph())
    except OSError as exc:
        from onboard.files import os_error

        session.error(os_error(exc, doing="writing the verify report").paragraph())
    view.render(result, stdout_console(), verbose=False)
    session.log(f"report: {report}")
    if not result.ok:
        failed = ", ".join(c.name for c in result.checks if c.status == "failed")
        session.error(f"failed: {failed}")

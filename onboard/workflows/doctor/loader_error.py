"""An ImportError read from a traceback (``onboard locate``), explained the way
``onboard doctor --import`` explains one it provoked: the doctor's probe first
(torch itself may be what fails to import), then the extension's linkage."""

from __future__ import annotations

from onboard.report import Reporter
from onboard.workflows.doctor import diagnose
from onboard.workflows.doctor.extension import ImportAttempt, explain, find_files
from onboard.workflows.doctor.report import Finding


def explain_message(
    python: str,
    error_type: str | None,
    message: str,
    *,
    module: str | None,
    folders: list[str],
    reporter: Reporter,
) -> list[Finding]:
    """The same analysis for an ImportError read from a traceback (``onboard locate``).

    When torch itself does not import from here (a source tree shadowing it, a
    broken install), the loader error is torch's own: the doctor's findings say why.
    """
    reporter.step(f"Probing the torch of {python} to read the extension's linkage")
    report = diagnose(python, None, reporter)
    env = report.env
    # onboard probes from a neutral folder, so the installed torch imports there;
    # a torch/ in the folder the user stands in is what failed for them.
    shadowed = any(f.id == "torch-shadowed" for f in report.findings)
    if env.torch is None or (shadowed and (module or "torch").split(".")[0] == "torch"):
        return [f for f in report.findings if f.needs_action]
    attempt = ImportAttempt(
        f"`import {module}`" if module else "the import",
        module,
        False,
        error_type,
        message,
    )
    if module:
        attempt.files = find_files(module, [*folders, *env.sys_path])
    return explain(env, attempt, python, env.python.cwd)

"""`onboard setup`: a workspace with PyTorch's source at exactly the installed commit.

Two kinds of checkout (``workspace.CLONE`` / ``workspace.REFERENCE``):

- a depth-1 git checkout of the installed torch's commit (``checkout.py``);
- with ``from_wheel``, a git-tracked reference tree rebuilt offline from the
  installed wheel (``reference_tree.py``).

Then the IDE/debugger files (``onboard/ide.py``), the workspace config
(``onboard.json``) and a generated ``noxfile.py`` whose sessions live in
``onboard.tasks.workspace``.

The steps, one module each: ``validate`` (the folder and options), ``installed``
(the probe of the torch, the wheel's facts, the commit to fetch), ``create`` (a
new workspace, built in a hidden folder and renamed into place) or ``resume``
(an existing one: checked, refreshed, never replaced), ``sources`` (the clone
or reference tree), ``workspace_files`` (IDE, gdb, noxfile, config); ``disk``
checks space first, and the ``SetupResult`` (``result``) says what was done.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from onboard import torchenv
from onboard.report import Reporter
from onboard.workflows.checkout import DEFAULT_FETCH_TIMEOUT
from onboard.workflows.setup import create, resume, validate
from onboard.workflows.setup.installed import Installed, wheel_facts
from onboard.workflows.setup.request import SetupRequest
from onboard.workflows.setup.result import SetupResult

__all__ = ["SetupResult", "setup"]


def setup(
    dest: str | os.PathLike[str],
    *,
    python: str | None = None,
    remote: str | None = None,
    commit: str | None = None,
    from_wheel: bool = False,
    reference: str | os.PathLike[str] | None = None,
    with_submodules: bool = False,
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
    reporter: Reporter | None = None,
    final: bool = True,
) -> SetupResult:
    """``final``: setup is the whole command (not followed by a build), so a
    signal after the workspace is complete no longer undoes it."""
    started = time.monotonic()
    root = validate.workspace_root(dest)
    validate.check_options(
        dest,
        from_wheel=from_wheel,
        remote=remote,
        commit=commit,
        reference=reference,
        with_submodules=with_submodules,
        fetch_timeout=fetch_timeout,
    )
    validate.check_name_room(root)
    existing = validate.existing_workspace(root)
    ref_path = validate.reference_clone(reference) if reference else None
    req = SetupRequest(
        root=root,
        from_wheel=from_wheel,
        remote=validate.normalize_remote(remote) if not from_wheel else None,
        commit=commit,
        reference=ref_path,
        with_submodules=with_submodules,
        fetch_timeout=fetch_timeout,
        reporter=reporter or Reporter(),
        final=final,
    )
    req.reporter.step(f"probing the torch of {python or 'this interpreter'}")
    # The probe imports torch in a child (seconds); a reference tree only needs
    # the wheel's files, so it is built while the probe runs.
    with ThreadPoolExecutor(max_workers=1) as pool:
        installed = Installed(
            env_future=pool.submit(torchenv.probe, python),
            wheel=wheel_facts(python) if from_wheel else None,
        )
        if installed.wheel is None:
            installed.env  # noqa: B018 - no torch found: the probe says why, before any work
        if existing is None:
            result = create.create(req, installed)
        else:
            result = resume.resume(req, installed, existing)
    result.seconds = time.monotonic() - started
    return result

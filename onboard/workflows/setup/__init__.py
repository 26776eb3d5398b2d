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

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from onboard import torchenv
from onboard.report import Reporter
from onboard.workflows.setup import create, resume, validate
from onboard.workflows.setup.installed import Installed, wheel_facts
from onboard.workflows.setup.request import SetupJob, SetupRequest
from onboard.workflows.setup.result import SetupResult

if TYPE_CHECKING:
    from onboard.workflows.build import SetupAndBuild

__all__ = ["SetupRequest", "SetupResult", "setup"]


def setup(
    request: SetupRequest,
    reporter: Reporter | None = None,
    on_setup: Callable[[SetupResult], None] | None = None,
) -> SetupResult | SetupAndBuild:
    """The workspace ``request`` asks for; with ``then_build``, built after a good setup
    (``on_setup`` is told of the setup first: the build takes a while)."""
    reporter = reporter or Reporter()
    result = _setup(request, reporter)
    if not (request.then_build and result.ok):
        return result
    if on_setup is not None:
        on_setup(result)
    from onboard.workflows.build import build_after_setup

    return build_after_setup(result, reporter)


def _setup(request: SetupRequest, reporter: Reporter) -> SetupResult:
    started = time.monotonic()
    dest, python, from_wheel = request.dest, request.python, request.from_wheel
    root = validate.workspace_root(dest)
    validate.check_options(
        dest,
        from_wheel=from_wheel,
        remote=request.remote,
        commit=request.commit,
        reference=request.reference,
        with_submodules=request.with_submodules,
        fetch_timeout=request.fetch_timeout,
    )
    validate.check_name_room(root)
    existing = validate.existing_workspace(root)
    ref_path = validate.reference_clone(request.reference) if request.reference else None
    req = SetupJob(
        root=root,
        from_wheel=from_wheel,
        remote=validate.normalize_remote(request.remote) if not from_wheel else None,
        commit=request.commit,
        reference=ref_path,
        with_submodules=request.with_submodules,
        fetch_timeout=request.fetch_timeout,
        reporter=reporter,
        final=request.final,
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

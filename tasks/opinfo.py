"""The workspace's ``opinfo`` session: the venv `onboard tests --run` samples OpInfo in.

PyTorch's OpInfo database (torch.testing._internal.common_methods_invocations)
imports numpy and expecttest, which a user's interpreter need not have, and its
tests use hypothesis and pytest. They go into ``WS/.nox/opinfo``, a venv made from
the workspace's interpreter with the workspace's torch version
(``nox -s opinfo -- torch==VERSION``; without it, the workspace's recorded
version), never into the user's environment.
"""

from __future__ import annotations

import nox
from onboard.tasks.build import _build_python, _workspace

__all__ = ["opinfo"]
# What OpInfo needs beyond torch (the list; pytest runs PyTorch's test files).
OPINFO_NEEDS = ("numpy", "expecttest", "hypothesis", "pytest")


@nox.session(python=_build_python(), reuse_venv=True, default=False)
def opinfo(session: nox.Session) -> None:
    """The venv for `onboard tests --run`: the workspace's torch version, numpy,
    expecttest, hypothesis and pytest."""
    wanted = [a for a in session.posargs if a.startswith("torch")]
    if not wanted:
        wanted = [f"torch=={_workspace().torch_version}"]
    session.install(*wanted, *OPINFO_NEEDS)

"""The torch whose source `onboard setup` sets up: the probe of the interpreter and,
for a reference tree, the facts read from the wheel's own files."""

from __future__ import annotations

import re
import sys
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from onboard import torchenv
from onboard.errors import OnboardError
from onboard.shell import quote
from onboard.workflows import checkout as checkout_mod
from onboard.workflows import reference_tree


class Target(NamedTuple):
    """The commit a clone checks out."""

    what: str  # the sha (or --commit's sha/tag) to fetch
    kind: str  # the commit kind: release, nightly, ... or "override" for --commit
    tag: str | None
    nightly: bool


@dataclass(frozen=True)
class WheelFacts:
    """What a reference tree needs, read from the wheel's files without importing torch."""

    torch_dir: Path
    version: str
    git_version: str | None


@dataclass
class Installed:
    """The probe of the interpreter (``env_future``: it imports torch in a child, which takes
    seconds, so it runs while a reference tree is built from ``wheel``)."""

    env_future: Future[torchenv.TorchEnv]
    wheel: WheelFacts | None

    @cached_property
    def env(self) -> torchenv.TorchEnv:
        """The probe's answer (waits for it); no torch is an error here."""
        env = self.env_future.result()
        if env.torch is None:
            raise no_torch(env)
        return env

    @property
    def torch(self) -> torchenv.TorchInfo:
        torch = self.env.torch
        assert torch is not None  # env raised otherwise
        return torch

    def target(self, commit_arg: str | None) -> Target:
        """What a clone fetches: ``--commit``, else the commit the installed torch names."""
        if commit_arg:
            return Target(checkout_mod.check_commit_arg(commit_arg), "override", None, False)
        c = self.env.commit
        version = self.env.torch.version if self.env.torch else "?"
        if c.kind == "unknown" or not c.sha:
            raise OnboardError(
                f"torch {version} does not say which commit it was built from "
                f"({c.note or 'no git_version'}).",
                next_step="Pass the commit with `onboard setup DIR --commit SHA` (the full sha), "
                "or run `onboard setup DIR --from-wheel` for a reference tree from the wheel.",
            )
        if len(c.sha) != 40:
            raise OnboardError(
                f"torch {version} is a local build that names only an abbreviated commit "
                f"({c.sha}); servers fetch by full sha.",
                next_step="Pass the full sha with `--commit` (`git rev-parse "
                f"{c.sha}` in the clone it was built from).",
            )
        return Target(c.sha, c.kind, c.tag, c.kind == "nightly")

    def tree_plan(self) -> reference_tree.TreePlan:
        """The reference tree of the wheel's files (the probe's torch when there are no facts)."""
        return tree_plan(self.wheel.torch_dir if self.wheel else self.torch.package_dir)


def tree_plan(torch_dir: Path) -> reference_tree.TreePlan:
    torchgen_dir = torch_dir.parent / "torchgen"
    return reference_tree.plan(torch_dir, torchgen_dir if torchgen_dir.is_dir() else None)


def no_torch(env: torchenv.TorchEnv) -> OnboardError:
    exe = env.python.executable
    if env.import_error:
        error = env.import_error
        why = f"importing it fails ({error.get('type')}: {error.get('message')})"
    else:
        why = "no torch package is installed there"
    return OnboardError(
        f"The interpreter {exe} has no usable torch: {why}. onboard sets up the source of the "
        "torch a Python environment actually imports.",
        next_step=f"Pass the interpreter of the environment that has torch with `--python "
        f"/path/to/python`, or install torch there (`{quote(exe)} -m pip install torch`); "
        f"`onboard doctor --python {quote(exe)}` shows what it sees.",
    )


_VERSION_PY = re.compile(
    r"^(__version__|git_version)\s*(?::\s*\w+\s*)?=\s*['\"]([^'\"]*)['\"]", re.M
)


def wheel_facts(python: str | None) -> WheelFacts | None:
    """The torch package ``python`` would import and its ``torch/version.py``
    (written by tools/generate_torch_version.py; what torch.version reads)."""
    try:
        found = torchenv.find_packages(python or sys.executable, "torch", isolate=False)
    except OnboardError:
        return None  # the probe says what is wrong with this interpreter
    torch_dir = found.folders["torch"]
    if torch_dir is None:
        return None
    try:
        text = (torch_dir / "version.py").read_text(encoding="utf-8")
    except OSError:
        return None
    values = dict(_VERSION_PY.findall(text))
    if "__version__" not in values:
        return None
    return WheelFacts(torch_dir, values["__version__"], values.get("git_version"))

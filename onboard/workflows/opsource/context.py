"""What `where` and `locate` share: the workspace, its tree and lazily built indexes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from onboard import git
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.opsource import checks, kernels, native_yaml
from onboard.workflows.opsource.paths import SourceMap
from onboard.workspace import Workspace, require


@dataclass
class TreeContext:
    ws: Workspace
    python: str
    reporter: Reporter
    refresh: bool = False
    generated_dir: Path | None = None
    _tree_id: str | None = None
    _yaml: native_yaml.YamlIndex | None = None
    _kernels: kernels.KernelIndex | None = None
    _checks: checks.CheckIndex | None = None
    warm: dict[str, bool] = field(default_factory=dict)
    _map: SourceMap | None = None

    @classmethod
    def open(
        cls,
        workspace: str | None,
        python: str | None,
        reporter: Reporter,
        *,
        refresh: bool = False,
    ) -> TreeContext:
        ws = require(workspace)
        if not ws.checkout_path.is_dir():
            raise OnboardError(
                f"The workspace {ws.root} has no checkout at {ws.checkout_path}.",
                next_step=f"Run `onboard setup {quote(ws.root)}` again to recreate it.",
            )
        return cls(ws=ws, python=python or ws.python, reporter=reporter, refresh=refresh)

    @property
    def checkout(self) -> Path:
        return self.ws.checkout_path

    @property
    def tree_id(self) -> str:
        """The commit the checkout is at (git HEAD), else the installed torch's commit."""
        if self._tree_id is None:
            self._tree_id = git.refs.head_sha(self.checkout) or self.ws.commit or "no-commit"
        return self._tree_id

    @property
    def cache_id(self) -> str:
        """What the live answers depend on: the interpreter's torch."""
        return f"{self.ws.torch_version}:{self.ws.commit}"

    @property
    def source_map(self) -> SourceMap:
        if self._map is None:
            self._map = SourceMap(self.ws, self.generated_dir)
        return self._map

    def yaml(self) -> native_yaml.YamlIndex:
        if self._yaml is None:
            self._yaml = native_yaml.load(
                self.checkout, self.python, self.reporter, refresh=self.refresh
            )
            self.warm["yaml"] = self._yaml.warm
        return self._yaml

    def kernels(self) -> kernels.KernelIndex:
        if self._kernels is None:
            self._kernels = kernels.load(
                self.checkout, self.tree_id, self.reporter, refresh=self.refresh
            )
            self.warm["kernels"] = self._kernels.warm
        return self._kernels

    def checks(self) -> checks.CheckIndex:
        if self._checks is None:
            self._checks = checks.load(
                self.checkout, self.tree_id, self.reporter, refresh=self.refresh
            )
            self.warm["checks"] = self._checks.warm
        return self._checks

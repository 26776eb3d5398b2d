"""Source locations: a path the binary or a traceback names -> the checkout file.

Paths come in three shapes: ``__FILE__`` strings under the CI build prefix
(``/__w/pytorch/pytorch/aten/src/ATen/native/LinearAlgebra.cpp``), the
installed Python package (``.../site-packages/torch/_meta_registrations.py``),
and bare file names from the symbolizer (``RegisterCPU_0.cpp``). Files under
``build/`` and ``torch/csrc/*/generated/`` are written by the build's code
generation (torchgen, tools/autograd) and are not in git.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard.workflows.opsource import scan
from onboard.workspace import Workspace

# Folders at the top of pytorch/pytorch that a __FILE__ path can sit under.
_REPO_ROOTS = re.compile(
    r"/((?:aten/src|c10|torch/csrc|caffe2|build|third_party|torchgen|functorch)/.+)$"
)
_SITE_PACKAGES = re.compile(r"[/\\](?:site|dist)-packages[/\\]((?:torch|torchgen)[/\\].+)$")
_GENERATED = re.compile(r"^(?:build/|torch/csrc/(?:autograd|lazy)/generated/)")


def is_generated(rel: str) -> bool:
    return bool(_GENERATED.match(rel))


@dataclass(frozen=True)
class SourceLoc:
    """One place in PyTorch's source, as the checkout and GitHub name it."""

    path: str  # repo-relative when it maps into the tree, else as given
    line: int | None
    url: str | None = None
    in_checkout: bool = False
    generated: bool = False
    text: str | None = None  # the source line, when a copy of the file is at hand
    local: str | None = None  # the readable copy (checkout file or generated cache)
    in_torch: bool = True  # False for paths outside PyTorch (the user's script)

    @property
    def label(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "label": self.label,
            "url": self.url,
            "in_checkout": self.in_checkout,
            "generated": self.generated,
            "text": self.text,
            "local": self.local,
        }


@dataclass
class SourceMap:
    """Maps raw paths to ``SourceLoc`` for one workspace (reads lines lazily)."""

    ws: Workspace
    generated_dir: Path | None = None  # a torchgen output tree standing in for build/
    _lines: dict[Path, list[str] | None] = field(default_factory=dict)

    @property
    def checkout(self) -> Path:
        return self.ws.checkout_path

    def relative(self, raw: str) -> str | None:
        """The repo-relative path for ``raw``, or None when it is not PyTorch's."""
        raw = raw.strip()
        prefix = (self.ws.build_prefix or "").rstrip("/")
        if prefix and raw.startswith(prefix + "/"):
            return raw[len(prefix) + 1 :]
        checkout = str(self.checkout)
        if raw.startswith(checkout + "/"):
            return raw[len(checkout) + 1 :]
        site = _SITE_PACKAGES.search(raw)
        if site:
            return site.group(1).replace("\\", "/")
        if raw.startswith("/"):
            root = _REPO_ROOTS.search(raw)
            return root.group(1) if root else None
        if (self.checkout / raw).is_file():
            return raw
        return None

    def line_text(self, path: Path, line: int | None) -> str | None:
        if not line:
            return None
        if path not in self._lines:
            # Source numbering: a header copied from the wheel loses its install guard line.
            text = scan.read(path) if path.is_file() else None
            self._lines[path] = text.splitlines() if text is not None else None
        lines = self._lines[path]
        if lines is None or not 0 < line <= len(lines):
            return None
        return lines[line - 1].rstrip()

    def lines(self, path: Path) -> list[str] | None:
        self.line_text(path, 1)
        return self._lines.get(path)

    def loc(self, rel: str, line: int | None) -> SourceLoc:
        """A location given its repo-relative path."""
        generated = is_generated(rel)
        local: Path | None = self.checkout / rel
        assert local is not None
        in_checkout = local.is_file()
        if not in_checkout:
            local = None
            if generated and self.generated_dir is not None:
                candidate = self.generated_dir / rel
                local = candidate if candidate.is_file() else None
        return SourceLoc(
            path=rel,
            line=line,
            url=None if generated else self.ws.github_url(rel, line),
            in_checkout=in_checkout,
            generated=generated,
            text=self.line_text(local, line) if local else None,
            local=str(local) if local else None,
        )

    def map(self, raw: str, line: int | None) -> SourceLoc:
        """A location given a path as the binary or a traceback prints it."""
        rel = self.relative(raw)
        if rel is None:
            path = Path(raw)
            text = self.line_text(path, line) if path.is_absolute() else None
            return SourceLoc(
                path=raw, line=line, text=text, local=raw if text else None, in_torch=False
            )
        return self.loc(rel, line)

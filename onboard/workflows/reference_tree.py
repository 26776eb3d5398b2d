"""The reference tree: PyTorch's repo layout rebuilt from the installed wheel, offline.

A wheel installs PyTorch's files at different paths than the repository holds
them (headers under ``torch/include``, the yaml inside ``torchgen/packaged``).
This module maps them back, so that a path the binary names
(``/__w/pytorch/pytorch/aten/src/ATen/core/TensorBody.h``) or a GitHub link
lands on the same file here:

=====================================  =========================================
wheel (site-packages)                  reference tree
=====================================  =========================================
``torch/**`` (Python, ``.pyi``, data)  ``torch/**`` (not ``include``, ``lib``,
                                       ``bin``, ``share``, ``test``: binaries)
``torch/include/ATen/**``              ``aten/src/ATen/**``; the generated ones
                                       (``ops/``, ``Functions.h``, ...) under
                                       ``build/aten/src/ATen/`` where a build
                                       writes them and the binary names them
``torch/include/c10/**``               ``c10/**`` (``cmake_macros.h`` under ``build/``)
``torch/include/caffe2/**``            ``caffe2/**``
``torch/include/torch/**``             ``torch/**`` (``torch/csrc``, ``torch/library.h``)
``torch/include/<other>``              ``third_party/include/<other>`` (vendored;
                                       listed in the commit and the workspace)
``torchgen/**``                        ``torchgen/**`` (not ``packaged/``)
``torchgen/packaged/ATen/**``          ``aten/src/ATen/**`` (``native_functions.yaml``,
                                       ``tags.yaml``, ``templates/``)
``torchgen/packaged/autograd/**``      ``tools/autograd/**`` (``derivatives.yaml``)
``torch.__version__``                  ``version.txt``
=====================================  =========================================

Vendored headers keep their install layout under one folder because the
wheel does not say which submodule they came from (``fmt/core.h`` lives at
``third_party/fmt/include/fmt/core.h`` in the repo, ``kineto`` elsewhere).

The tree is committed with ``git fast-import`` (one stream, one pack: no
per-file ``git add`` and no 12k loose objects) and then checked out by git,
which writes the files and a fully stat'ed index in one pass. Files are
copied, never hard-linked: an editor saving into a hard link would change the
installed torch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from onboard import git

# A fixed identity and date: the same wheel always gives the same commit sha,
# so a re-run can tell whether the tree is still the one it made.
IDENTITY = "onboard <onboard@localhost>"
FIXED_DATE = "946684800 +0000"  # 2000-01-01T00:00:00Z
BRANCH = "refs/heads/reference"

_TORCH_SKIP_DIRS = {"include", "lib", "bin", "share", "test"}  # compiled or installed copies
_SKIP_SUFFIXES = (".so", ".pyc", ".pyo", ".pyd", ".dylib", ".dll", ".a", ".lib")
# Headers torchgen writes into build/aten/src/ATen (aten/src/ATen/templates/*.h
# and the per-op ops/ folder); they are not in git, and the binary names them
# under build/ (docs/pytorch-facts.md: "~60 are generated files under build/").
GENERATED_ATEN_RE = re.compile(r"^(ops/.*|[A-Za-z]+Functions(_inl)?\.h|Config\.h)$")
_GENERATED_C10 = {"macros/cmake_macros.h"}


@dataclass
class TreePlan:
    """Every file of the reference tree: repo path -> file in the wheel."""

    files: dict[str, Path] = field(default_factory=dict)
    vendored: list[str] = field(default_factory=list)  # torch/include entries under third_party/
    generated: int = 0  # headers placed under build/
    skipped: list[str] = field(default_factory=list)  # wheel paths that collided

    @property
    def total_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files.values())

    def add(self, dest: str, src: Path) -> None:
        if dest in self.files:
            self.skipped.append(str(src))
            return
        self.files[dest] = src


def _walk(root: Path, skip_top: set[str] = frozenset()) -> Iterator[tuple[str, Path]]:  # type: ignore[assignment]
    """(posix path relative to root, path) for every regular file, sorted."""
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in skip_top]
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(_SKIP_SUFFIXES):
                continue
            path = Path(dirpath, name)
            if path.is_symlink() or not path.is_file():
                continue
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            yield rel, path


def plan(torch_dir: Path, torchgen_dir: Path | None) -> TreePlan:
    """Map the installed wheel's files to PyTorch's repository paths."""
    tree = TreePlan()
    template_headers = set()
    if torchgen_dir is not None:
        templates = torchgen_dir / "packaged" / "ATen" / "templates"
        if templates.is_dir():
            template_headers = {p.name for p in templates.glob("*.h")}

    for rel, path in _walk(torch_dir, _TORCH_SKIP_DIRS):
        tree.add(f"torch/{rel}", path)

    include = torch_dir / "include"
    if include.is_dir():
        for entry in sorted(include.iterdir()):
            name = entry.name
            if name == "ATen":
                for rel, path in _walk(entry):
                    generated = GENERATED_ATEN_RE.match(rel) or (
                        path.name in template_headers and rel.count("/") <= 1
                    )
                    base = "build/aten/src/ATen" if generated else "aten/src/ATen"
                    tree.generated += bool(generated)
                    tree.add(f"{base}/{rel}", path)
            elif name == "c10":
                for rel, path in _walk(entry):
                    base = "build/c10" if rel in _GENERATED_C10 else "c10"
                    tree.generated += rel in _GENERATED_C10
                    tree.add(f"{base}/{rel}", path)
            elif name in ("caffe2", "torch"):
                for rel, path in _walk(entry):
                    tree.add(f"{name}/{rel}", path)
            else:
                tree.vendored.append(name)
                if entry.is_dir():
                    for rel, path in _walk(entry):
                        tree.add(f"third_party/include/{name}/{rel}", path)
                elif entry.is_file():
                    tree.add(f"third_party/include/{name}", entry)

    if torchgen_dir is not None and torchgen_dir.is_dir():
        for rel, path in _walk(torchgen_dir, {"packaged"}):
            tree.add(f"torchgen/{rel}", path)
        packaged = torchgen_dir / "packaged"
        for sub, base in (("ATen", "aten/src/ATen"), ("autograd", "tools/autograd")):
            if (packaged / sub).is_dir():
                for rel, path in _walk(packaged / sub):
                    tree.add(f"{base}/{rel}", path)
    return tree


def commit_message(torch_version: str, commit: str | None, tree: TreePlan) -> str:
    vendored = ", ".join(tree.vendored) or "none"
    return (
        f"Reference tree of torch {torch_version} (commit {commit or 'unknown'})\n\n"
        "Rebuilt by `onboard setup --from-wheel` from the installed wheel: Python sources,\n"
        "headers and yaml at PyTorch's repository paths. No .cpp/.cu files: a wheel\n"
        "does not ship them.\n\n"
        f"Onboard-Torch-Version: {torch_version}\n"
        f"Onboard-Torch-Commit: {commit or 'unknown'}\n"
        f"Onboard-Files: {len(tree.files)}\n"
        f"Onboard-Generated-Headers: {tree.generated} (under build/)\n"
        f"Onboard-Vendored-Includes: {vendored} (under third_party/include/)\n"
    )


def fast_import_stream(
    tree: TreePlan,
    message: str,
    extra: dict[str, bytes],
    *,
    ref: str = BRANCH,
    parent: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> bytes:
    """One ``git fast-import`` stream: every blob inline, then one commit on
    ``ref`` (a child of ``parent`` holding exactly this tree, when given).

    ``progress(files read, files)`` is called as the wheel's files are read.
    """
    chunks: list[bytes] = []
    msg = message.encode()
    chunks.append(
        f"commit {ref}\n"
        f"author {IDENTITY} {FIXED_DATE}\n"
        f"committer {IDENTITY} {FIXED_DATE}\n"
        f"data {len(msg)}\n".encode()
    )
    chunks.append(msg)
    chunks.append(b"\n")
    if parent:
        # The new tree replaces the parent's whole: files the new wheel dropped go.
        chunks.append(f"from {parent}\ndeleteall\n".encode())
    names = sorted({*tree.files, *extra})
    for n, dest in enumerate(names, 1):
        if progress is not None and (n % 500 == 0 or n == len(names)):
            progress(n, len(names))
        if dest in extra:
            data = extra[dest]
            mode = "100644"
        else:
            src = tree.files[dest]
            data = strip_install_guard(src.read_bytes())
            mode = "100755" if os.access(src, os.X_OK) else "100644"
        chunks.append(f"M {mode} inline {_quote(dest)}\ndata {len(data)}\n".encode())
        chunks.append(data)
        chunks.append(b"\n")
    chunks.append(b"done\n")
    return b"".join(chunks)


# The wheel's installed headers are wrapped in a guard that is not in the
# repository: one line added on top and three at the bottom. Left in, every
# line sits one below the line the binary's __FILE__:__LINE__ names.
_GUARD_HEAD = b"#if !defined(TORCH_STABLE_ONLY) && !defined(TORCH_TARGET_VERSION)\n"
_GUARD_TAIL = b'\n#else\n#error "This file should not be included when either TORCH_STABLE_ONLY'


def strip_install_guard(data: bytes) -> bytes:
    """The header as it is in the repository, without the install-time guard."""
    if not data.startswith(_GUARD_HEAD):
        return data
    tail = data.rfind(_GUARD_TAIL)
    if tail == -1:
        return data
    return data[len(_GUARD_HEAD) : tail]


def _quote(path: str) -> str:
    # fast-import needs C-style quoting only for paths with LF, '"' or a leading quote.
    if "\n" in path or path.startswith('"'):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return path


def build(
    dest: Path,
    tree: TreePlan,
    *,
    torch_version: str,
    commit: str | None,
    version_txt: str,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """Create the git-tracked reference tree at ``dest``; returns its commit sha.

    ``progress(files read, files)`` while the wheel's files are read.
    """
    message = commit_message(torch_version, commit, tree)
    extra = {"version.txt": (version_txt + "\n").encode()}
    stream = fast_import_stream(tree, message, extra, progress=progress)
    git.repository.init_repo(dest)
    git.repository.fast_import(dest, stream)
    git.worktree.checkout_branch(dest, BRANCH.removeprefix("refs/heads/"))
    sha = git.refs.head_sha(dest)
    assert sha is not None
    return sha


NEXT_REF = "refs/onboard/reference-next"


def tag_name(torch_version: str) -> str:
    """The tag that keeps each reference commit once a newer torch replaces it."""
    return f"onboard/reference-{torch_version}"


def add_commit(
    repo: Path,
    tree: TreePlan,
    *,
    torch_version: str,
    commit: str | None,
    version_txt: str,
    parent: str | None,
) -> str:
    """Write a new reference commit, child of ``parent``, into an existing
    repository on ``NEXT_REF`` (no branch moves, no file in the work tree
    changes); returns its sha."""
    message = commit_message(torch_version, commit, tree)
    stream = fast_import_stream(
        tree,
        message,
        {"version.txt": (version_txt + "\n").encode()},
        ref=NEXT_REF,
        parent=parent,
    )
    git.repository.fast_import(repo, stream)
    sha = git.refs.ref_value(repo, NEXT_REF)
    assert sha is not None
    return sha


def trailers(message: str) -> dict[str, str]:
    """The ``Onboard-*`` lines of a reference commit's message."""
    out: dict[str, str] = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Onboard-"):
            out[key] = value.strip()
    return out

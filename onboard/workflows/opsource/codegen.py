"""`--generated`: regenerate build/aten/src/ATen (RegisterCPU_2.cpp and friends).

Those files are written by torchgen during the build and are not in git. Run
as the CI build does (``python -m torchgen.gen --per-operator-headers``) on
the checkout's yaml, they come out line for line as the wheel's
``_dispatch_dump`` names them (checked on 2.13.0: RegisterCPU_2.cpp:4613 is
``TORCH_LIBRARY_IMPL(aten, CPU, m)`` with trunc's ``m.impl`` lines). Cached
per checkout and commit; ~25-45 s on 2 cores.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from onboard import proc, torchenv
from onboard.errors import OnboardError
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.opsource import cache
from onboard.workflows.opsource.native_yaml import NATIVE_FUNCTIONS, TAGS
from onboard.workflows.opsource.paths import SourceLoc, SourceMap

CODEGEN_TIMEOUT = 900.0
GENERATED_ATEN = "build/aten/src/ATen"
_DONE = ".onboard-complete"


def _folder_name(checkout: Path, tree_id: str) -> str:
    return "generated-" + cache.key(checkout.resolve(), tree_id)


def generated_root(checkout: Path, tree_id: str) -> Path:
    """Where a regeneration writes (a private temp folder when the cache is read-only)."""
    return cache.cache_root() / _folder_name(checkout, tree_id)


def existing(checkout: Path, tree_id: str) -> Path | None:
    for base in cache.read_roots():
        root = base / _folder_name(checkout, tree_id)
        if (root / GENERATED_ATEN / _DONE).is_file():
            return root
    return None


def _torchgen_dir(python: str) -> Path:
    try:
        found = torchenv.find_packages(python, "torchgen", what="Finding torchgen", timeout=120)
    except OnboardError:
        found = None
    folder = found.folders["torchgen"] if found else None
    if folder is None:
        raise OnboardError(
            f"{python} cannot import torchgen, which regenerates build/aten/src/ATen.",
            next_step="torchgen ships in the torch wheel and needs PyYAML: run "
            f"`{quote(python)} -m pip install pyyaml`, or pass --python with the interpreter of "
            "your torch.",
        )
    return folder


def _torchgen(python: str, source: Path, out: Path, cwd: str) -> proc.Result:
    return proc.run(
        [
            python,
            "-m",
            "torchgen.gen",
            "--source-path",
            str(source),
            "--install_dir",
            str(out),
            "--per-operator-headers",
        ],
        **torchenv.isolated(cwd),  # `-m`: cwd holds only the yaml copy and templates
        timeout=CODEGEN_TIMEOUT,
        check=False,
        what="torchgen code generation",
    )


def regenerate(python: str, checkout: Path, tree_id: str, reporter: Reporter) -> Path:
    """The folder standing in for the build tree (holds build/aten/src/ATen)."""
    found = existing(checkout, tree_id)
    if found is not None:
        return found
    root = generated_root(checkout, tree_id)
    out = root / GENERATED_ATEN
    if root.exists():
        shutil.rmtree(root)  # a half-written earlier run
    out.mkdir(parents=True)
    aten = checkout / "aten" / "src" / "ATen"
    with tempfile.TemporaryDirectory(prefix="onboard-codegen-") as tmp:
        source = Path(tmp) / "ATen"
        (source / "native").mkdir(parents=True)
        shutil.copy2(checkout / NATIVE_FUNCTIONS, source / "native" / "native_functions.yaml")
        templates = aten / "templates"
        tags = checkout / TAGS
        if not templates.is_dir() or not tags.is_file():
            packaged = _torchgen_dir(python) / "packaged" / "ATen"
            if not templates.is_dir():
                templates = packaged / "templates"
            if not tags.is_file():
                tags = packaged / "native" / "tags.yaml"
        shutil.copy2(tags, source / "native" / "tags.yaml")
        (source / "templates").symlink_to(templates.resolve(), target_is_directory=True)
        with reporter.task(
            "Regenerating build/aten/src/ATen with torchgen (once per commit, ~30-60 s)"
        ):
            result = _torchgen(python, source, out, tmp)
    if result.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise OnboardError(
            f"torchgen could not regenerate build/aten/src/ATen (exit {result.returncode}): {tail}",
            next_step="Run `onboard where OP` without --generated; the dispatch table still names "
            "each generated file and line.",
        )
    (out / _DONE).write_text("ok\n", encoding="utf-8")
    return root


_IMPL = re.compile(r'm\.impl\(\s*"(?P<op>[^"]+)",\s*TORCH_FN\((?P<fn>[\w:]+)\)\s*\)')


def wrapper(lines: list[str], opener: int, op: str) -> tuple[str, int] | None:
    """(name, 1-based line) of the function torchgen wrote for ``op`` (``trunc.out``)
    whose ``m.impl`` sits in the ``TORCH_LIBRARY_IMPL`` block opening at ``opener``: the
    line ``_dispatch_dump`` names is that block's first line, the kernel is above it."""
    if not 0 < opener <= len(lines) or not lines[opener - 1].startswith("TORCH_LIBRARY_IMPL"):
        return None
    block = []
    for text in lines[opener:]:
        if text.strip() == "}":
            break
        block.append(text)
    found = next((m for m in _IMPL.finditer("\n".join(block)) if m.group("op") == op), None)
    if found is None:
        return None
    name = found.group("fn").rsplit("::", 1)[-1]  # functionalization::trunc_out_out
    # Its definition starts a line with the return type; calls are `return NAME(...)`.
    define = re.compile(rf"^\s*(?!return\b)[A-Za-z_][^(=;]*[\s&*]{re.escape(name)}\(")
    for i in range(opener - 1, 0, -1):
        if define.match(lines[i - 1]):
            return found.group("fn"), i
    return None


def wrapper_at(smap: SourceMap, at: SourceLoc, op: str) -> tuple[str, SourceLoc] | None:
    """For a generated Register*.cpp line with onboard's regenerated copy at hand: the
    wrapper function of ``op`` (``aten::trunc.out``) above that TORCH_LIBRARY_IMPL block."""
    if not (at.generated and at.local and at.line):
        return None
    found = wrapper(smap.lines(Path(at.local)) or [], at.line, op.removeprefix("aten::"))
    if found is None:
        return None
    return found[0], smap.loc(at.path, found[1])

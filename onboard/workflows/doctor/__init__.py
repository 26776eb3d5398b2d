"""`onboard doctor`: what torch an interpreter has, and what is wrong with the setup.

``diagnose`` probes the interpreter (``onboard.torchenv.probe``, a child
process: onboard never imports torch itself), then runs the checks below.
Each finding says why it matters and what to run; errors and warnings need
action (exit 1), info findings only explain.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from onboard import git, torchenv
from onboard.errors import BadInput
from onboard.jsonable import to_json
from onboard.report import Reporter
from onboard.shell import quote
from onboard.torchenv import TorchEnv
from onboard.workflows.doctor.report import (
    ERROR,
    INFO,
    WARNING,
    DoctorReport,
    Finding,
    Findings,
    build_facts,
    short_message,
)
from onboard.workflows.program import ProgramOptions
from onboard.workspace import Workspace
from onboard.workspace import find as find_workspace

__all__ = [
    "DoctorReport",
    "DoctorRequest",
    "Finding",
    "diagnose",
    "doctor",
    "ERROR",
    "WARNING",
    "INFO",
]

# CMakeCache.txt records the source folder it was configured for.
_CMAKE_HOME_RE = re.compile(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", re.MULTILINE)
# torch/version.py, written by tools/generate_torch_version.py at build time.
_VERSION_PY_RE = re.compile(r"^git_version\s*=\s*['\"]([^'\"]*)['\"]", re.MULTILINE)


@dataclass(frozen=True, kw_only=True)
class DoctorRequest(ProgramOptions):
    """`onboard doctor`: the torch of ``python``, and why a compiled extension will not
    load: ``import_module`` imported after torch, or the ``command`` run; not both."""

    import_module: str | None = None


def doctor(request: DoctorRequest, reporter: Reporter) -> DoctorReport:
    if request.command is not None and request.import_module is not None:
        raise BadInput(
            "Both --import and a command after `--` were given.",
            next_step="Run either `onboard doctor --import MODULE` or "
            "`onboard doctor -- python script.py`.",
        )
    return diagnose(
        request.python,
        find_workspace(request.workspace),
        reporter,
        import_module=request.import_module,
        command=list(request.command) if request.command is not None else None,
    )


def diagnose(
    python: str | None,
    workspace: Workspace | None,
    reporter: Reporter,
    *,
    cwd: str | os.PathLike[str] | None = None,
    import_module: str | None = None,
    command: list[str] | None = None,
) -> DoctorReport:
    """Probe ``python`` (default: the one running onboard) from ``cwd`` and diagnose it.

    ``import_module`` also imports that module after torch; ``command`` runs a
    command (``python script.py``): an extension that will not load is explained.
    """
    where = os.fspath(cwd) if cwd is not None else os.getcwd()
    if command is not None:
        command, python = _command_interpreter(command, python)
    reporter.step(
        f"Probing the torch of {python or 'this Python'} (importing it in a child process)"
    )
    # The installed torch, seen from a neutral folder: a checkout the user
    # stands in is told about on its own (_shadowed_here), not mistaken for it.
    env = torchenv.probe(python)
    found = Findings()
    found.add(*_shadowed_here(env, Path(where)))
    if not env.installed:
        found.add(_no_torch(env))
    elif env.import_error:
        from onboard.workflows.doctor import import_failure

        reporter.detail("import torch failed; reading the extension's linkage")
        shadow = _shadowing(env)
        if shadow is not None and shadow.id == "torch-shadowed" and not _has_extension(env):
            found.add(shadow)  # the shadowing torch has no _C: that is the whole story
            shadow = None
        else:
            found.add(*import_failure.explain(env, python, None))  # a neutral folder
        if shadow is not None:
            found.add(shadow)
    else:
        shadow = _shadowing(env)
        if shadow is not None:
            found.add(shadow)
    found.add(*_source_trees(env, Path(where)))
    if env.torch is not None:
        found.add(*_runtime(env, workspace))
        found.add(*_commit(env))
    facts = build_facts(env)
    if import_module is not None or command is not None:
        from onboard.workflows.doctor import extension

        if import_module is not None:
            reporter.step(f"Importing {import_module} after torch in {env.python.executable}")
            attempt = extension.attempt_import(env.python.executable, import_module, where)
        else:
            assert command is not None
            reporter.step(f"Running {' '.join(command)}")
            attempt = extension.attempt_command(command, where, env.sys_path)
        facts["extension"] = to_json(attempt)
        found.add(*extension.explain(env, attempt, python, where))
    ws_facts = None
    if workspace is not None:
        reporter.detail(f"checking workspace {workspace.root}")
        ws_facts, ws_findings = _workspace(env, workspace)
        facts["workspace"] = ws_facts
        found.add(*ws_findings)
    return DoctorReport(env=env, facts=facts, findings=tuple(found.items), workspace=ws_facts)


def _command_interpreter(command: list[str], python: str | None) -> tuple[list[str], str | None]:
    """The interpreter a command runs: --python replaces a leading `python`, else the
    `python` on PATH is the one probed (not onboard's own)."""
    if not command:
        raise BadInput(
            "No command was given after `--`.",
            next_step="Run `onboard doctor -- python script.py` or "
            "`onboard doctor --import MODULE`.",
        )
    first = os.path.basename(command[0])
    if not re.fullmatch(r"python[\d.]*", first):
        return command, python
    if python:
        return [python, *command[1:]], python
    from onboard import proc

    found = proc.which(command[0]) if os.sep not in command[0] else command[0]
    return command, found or python


# --- no torch -------------------------------------------------------------------


def _no_torch(env: TorchEnv) -> Finding:
    exe = env.python.executable
    return Finding(
        "no-torch",
        ERROR,
        f"torch is not installed in {exe}",
        f"`import torch` finds no torch package on this interpreter's sys.path (Python "
        f"{env.python.version}, prefix {env.python.prefix}). Every other onboard command works "
        "on the torch of an interpreter.",
        f"Install it into this interpreter: `{quote(exe)} -m pip install torch` (for a CUDA build "
        "pick the --index-url from https://pytorch.org/get-started/locally/), or point onboard at "
        "the Python that has it: `onboard doctor --python /path/to/venv/bin/python`.",
    )


# --- shadowing and source trees --------------------------------------------------


def installed_torch_dir(env: TorchEnv) -> Path | None:
    """The torch package pip installed (for an editable install: the checkout's torch/)."""
    dist = env.dist
    if not dist:
        return None
    direct = dist.get("direct_url") or {}
    if (direct.get("dir_info") or {}).get("editable") and direct.get("url", "").startswith("file:"):
        return Path(unquote(urlparse(direct["url"]).path)) / "torch"
    location = dist.get("location")
    return Path(location) / "torch" if location else None


def _in_use_dir(env: TorchEnv) -> Path | None:
    return Path(env.spec_origin).parent if env.spec_origin else None


def _same(a: Path | None, b: Path | None) -> bool:
    if a is None or b is None:
        return False
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def _has_extension(env: TorchEnv) -> bool:
    return bool((env.import_error or {}).get("extensions"))


def _origin(env: TorchEnv, torch_dir: Path) -> tuple[str, str]:
    """Where the sys.path entry holding ``torch_dir`` came from, and how to undo it."""
    entry = torch_dir.parent
    cwd = Path(env.python.cwd)
    if _same(entry, cwd):
        return (
            f"the current folder {cwd} (Python puts it first on sys.path for `python -c` and "
            "the REPL)",
            "Run Python from another folder (`cd ~`); if this is a PyTorch checkout you mean to "
            "use, build it first (`onboard build`).",
        )
    for item in env.pythonpath:
        if _same(Path(item), entry):
            return (
                f"the PYTHONPATH entry {item}",
                f"Remove {item} from PYTHONPATH (`unset PYTHONPATH`, or fix the line that sets it "
                "in your shell profile or IDE run configuration).",
            )
    return (
        f"the sys.path entry {entry} (a .pth file or a site folder)",
        f"Remove {torch_dir} (or the .pth file that adds {entry}) so the installed torch is used.",
    )


def _shadowing(env: TorchEnv) -> Finding | None:
    in_use = _in_use_dir(env)
    installed = installed_torch_dir(env)
    if in_use is None:
        return None
    others = [c for c in env.candidates if not _same(Path(c), in_use)]
    if installed is not None and installed.is_dir() and not _same(in_use, installed):
        origin, fix = _origin(env, in_use)
        what = (
            "a PyTorch source tree" if _is_pytorch_tree(in_use.parent) else "another torch package"
        )
        broken = ""
        if env.import_error:
            broken = (
                f" It does not even import: {short_message(str(env.import_error.get('message')))}"
                if _has_extension(env)
                else " It has no compiled C extension (torch._C), so `import torch` fails with: "
                f"{short_message(str(env.import_error.get('message')))}"
            )
        version = (env.dist or {}).get("version", "")
        return Finding(
            "torch-shadowed",
            ERROR,
            f"`import torch` loads {what} at {in_use}, not the installed torch {version}",
            f"It comes from {origin}, which is ahead of {installed.parent} on sys.path, so the "
            f"installed torch at {installed} is hidden.{broken}",
            fix,
            tuple(f"candidate {i}: {c}" for i, c in enumerate(env.candidates)),
        )
    if others:
        return Finding(
            "torch-also-on-path",
            INFO,
            f"{len(others)} more torch package(s) on sys.path after the one in use",
            f"They are not imported now ({in_use} comes first), but running from another folder "
            f"or changing PYTHONPATH would switch to them: {', '.join(others)}.",
            "Nothing to do if this is intended; otherwise remove them.",
            tuple(f"candidate {i}: {c}" for i, c in enumerate(env.candidates)),
        )
    return None


def _shadowed_here(env: TorchEnv, cwd: Path) -> list[Finding]:
    """A torch/ in the folder doctor runs in (a checkout's, built or not): what
    `python`, the REPL and scripts saved here import instead of the installed torch."""
    here = torchenv.folder_torch(cwd)
    installed = installed_torch_dir(env)
    if here is None or _same(here, installed) or _same(here, _in_use_dir(env)):
        return []
    what = "a PyTorch source tree" if _is_pytorch_tree(cwd) else "a torch source folder"
    version = (env.dist or {}).get("version", "")
    instead = f"the installed torch {version} at {installed}" if installed else "no torch at all"
    return [
        Finding(
            "torch-shadowed",
            ERROR,
            f"`import torch` run from {cwd} loads {what} at {here}, not the installed torch "
            f"{version}".rstrip(),
            f"It comes from the current folder {cwd} (Python puts it first on sys.path for "
            "`python -c`, the REPL, and a script's own folder for scripts saved here), ahead of "
            f"{instead}."
            + (
                " It has its compiled C extension, so it imports: your scripts here use that build."
                if torchenv.is_compiled(here)
                else " It has no compiled C extension (torch._C), so `import torch` fails there."
            )
            + " onboard's own commands use the installed torch from any folder.",
            "Run Python from another folder (`cd ~`), and keep your scripts outside the "
            "checkout's root; if this is a PyTorch checkout you mean to use, build it first "
            "(`onboard build`).",
            (f"shadowing: {here}",),
        )
    ]


def _is_pytorch_tree(path: Path) -> bool:
    return (path / "torch" / "__init__.py").is_file() and (
        (path / "setup.py").is_file() or (path / "aten").is_dir()
    )


def _source_trees(env: TorchEnv, cwd: Path) -> list[Finding]:
    """A stale build/ in a PyTorch checkout the user runs Python from (or imports torch from)."""
    trees: list[Path] = []
    in_use = _in_use_dir(env)
    for root in (cwd, in_use.parent if in_use else None):
        if root is not None and _is_pytorch_tree(root) and not any(_same(root, t) for t in trees):
            trees.append(root)
    findings = []
    for root in trees:
        stale = _stale_build(root)
        if stale is not None:
            findings.append(stale)
    return findings


def _stale_build(root: Path) -> Finding | None:
    cache = root / "build" / "CMakeCache.txt"
    if not cache.is_file():
        return None
    reasons: list[str] = []
    try:
        text = cache.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    home = _CMAKE_HOME_RE.search(text)
    if home and not _same(Path(home.group(1).strip()), root):
        reasons.append(
            f"build/CMakeCache.txt was configured for the source folder {home.group(1).strip()}, "
            f"not {root}"
        )
    built = _built_git_version(root)
    head = git.refs.head_sha(root) if git.repository.is_repo(root) else None
    if built and head and built != head:
        reasons.append(
            f"torch/version.py says the last build was made at {built[:12]}, but the checkout "
            f"is now at {head[:12]} (an incremental build does not rewrite torch/version.py, "
            "and the compiled libraries are from the older sources)"
        )
    if not reasons:
        return None
    return Finding(
        "stale-build",
        WARNING,
        f"the build/ folder in {root} does not match its sources",
        "; ".join(reasons)
        + ". Python running from this folder mixes today's .py files with yesterday's compiled "
        "code, and an existing build/CMakeCache.txt wins over new build settings.",
        f"Rebuild from a fresh configuration: `CMAKE_FRESH=1 onboard build` (or, in {root}, "
        "`python setup.py clean` and build again). To use the installed torch instead, run "
        "Python from another folder.",
        tuple(reasons),
    )


def _built_git_version(root: Path) -> str | None:
    try:
        text = (root / "torch" / "version.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    mo = _VERSION_PY_RE.search(text)
    return mo.group(1) if mo and re.fullmatch(r"[0-9a-f]{40}", mo.group(1)) else None


# --- runtime: numpy, CUDA ---------------------------------------------------------


def _runtime(env: TorchEnv, workspace: Workspace | None) -> list[Finding]:
    t = env.torch
    assert t is not None
    findings = []
    if env.numpy is None:
        findings.append(_numpy_missing(env, workspace))
    gpu_build = t.cuda or t.hip
    if gpu_build and not t.cuda_available:
        kind = f"CUDA {t.cuda}" if t.cuda else f"ROCm {t.hip}"
        reason = t.cuda_error or (
            "no usable GPU or driver is visible to this process"
            + (
                f" (CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r})"
                if "CUDA_VISIBLE_DEVICES" in os.environ
                else ""
            )
        )
        findings.append(
            Finding(
                "cuda-unavailable",
                INFO,
                f"this is a {kind} build of torch, but torch.cuda.is_available() is False",
                f"{reason}. CPU code runs normally; GPU code and CUDA kernels cannot be run or "
                "checked here, and onboard says so where it matters.",
                "Nothing to do for CPU work. For GPU work use a machine where `nvidia-smi` shows "
                f"a GPU whose driver supports {kind}.",
            )
        )
    return findings


def _numpy_missing(env: TorchEnv, workspace: Workspace | None) -> Finding:
    """numpy is optional for torch: a note, not a failure of the setup (the first
    `onboard doctor` of everyone who ran only `pip install torch` would exit 1), unless
    the workspace holds ops `onboard new-op` made, whose tests `onboard verify` runs."""
    from onboard.workflows.newop import manifest

    ops = manifest.names(workspace.root) if workspace is not None else []
    exe = quote(env.python.executable)
    install = f"`{exe} -m pip install numpy`"
    if not _on_path(env, "pip"):
        # `python -m pip` fails in a venv made with --without-pip; ensurepip adds pip first.
        install = (
            f"`{exe} -m ensurepip && {exe} -m pip install numpy` (this interpreter has no pip)"
            if _on_path(env, "ensurepip")
            else f"install numpy with the tool that made {exe} (it has neither pip nor ensurepip)"
        )
    why = (
        "torch imports without it but warns `Failed to initialize NumPy`; Tensor.numpy(), "
        "torch.from_numpy() and PyTorch's test suite need it, and so do the tests `onboard "
        "new-op` writes (torch/testing/_internal/common_utils.py imports numpy), which "
        "`onboard verify` runs."
    )
    if ops:
        return Finding(
            "numpy-missing",
            WARNING,
            f"numpy is not installed next to torch, and `onboard verify` needs it for "
            f"{', '.join(ops)}",
            f"{why} This workspace has ops made by `onboard new-op`: {', '.join(ops)}.",
            f"{install[0].upper()}{install[1:]}.",
        )
    return Finding(
        "numpy-missing",
        INFO,
        "numpy is not installed next to torch (optional)",
        f"{why} Nothing else onboard does needs it.",
        f"Before `onboard new-op`, or if your code uses it: {install}.",
    )


def _on_path(env: TorchEnv, package: str) -> bool:
    """Whether a package (a folder with __init__.py) is on the interpreter's sys.path."""
    return any((Path(entry) / package / "__init__.py").is_file() for entry in env.sys_path)


def _commit(env: TorchEnv) -> list[Finding]:
    c = env.commit
    if c.kind == "nightly":
        return [
            Finding(
                "commit-nightly",
                INFO,
                f"a nightly build: git_version {c.sha} is a commit on the `nightly` branch",
                "Nightly wheels record the commit of the `nightly` branch, whose subject reads "
                "`YYYY-MM-DD nightly release (<main sha>)` (tools/nightly.py reads it the same "
                "way); its tree is the main commit named there.",
                "`onboard setup DIR` fetches that nightly-branch commit, so the sources match "
                "this wheel line for line.",
            )
        ]
    if c.kind == "local":
        return [
            Finding(
                "commit-local",
                INFO,
                f"a local source build from commit {c.sha}",
                "`__version__` ends in +git<sha>: this torch was built from a checkout, possibly "
                "with uncommitted changes that no commit records.",
                "`onboard setup DIR` checks out that commit; if you still have the tree you built "
                "from, point onboard at it with --workspace instead.",
            )
        ]
    if c.kind == "unknown":
        return [
            Finding(
                "commit-unknown",
                INFO,
                "the source commit of this torch is unknown",
                f"{c.note or 'torch.version.git_version is not a commit sha'}. Without it no "
                "checkout can be matched to the binary line for line.",
                "`onboard setup DIR --from-wheel` still gives this wheel's own Python sources, "
                "headers and yaml; for a full checkout pass the commit you know it came from.",
            )
        ]
    return []


# --- workspace ---------------------------------------------------------------------


def _workspace(env: TorchEnv, ws: Workspace) -> tuple[dict[str, Any], list[Finding]]:
    installed = env.commit.sha
    checkout = ws.checkout_path
    head = (
        git.refs.head_sha(checkout)
        if checkout.is_dir() and git.repository.is_repo(checkout)
        else None
    )
    facts: dict[str, Any] = {
        "root": str(ws.root),
        "checkout": str(checkout),
        "checkout_kind": ws.checkout_kind,
        "commit": ws.commit,
        "torch_version": ws.torch_version,
        "head": head,
    }
    findings: list[Finding] = []
    # Not resolved: a venv's python is a symlink to its base, yet another environment.
    if ws.python and os.path.abspath(ws.python) != os.path.abspath(env.python.executable):
        findings.append(
            Finding(
                "workspace-other-python",
                INFO,
                "the workspace was made with another interpreter",
                f"{ws.config_path} records {ws.python}; this check probed {env.python.executable}.",
                "To check the workspace's own interpreter: `onboard doctor --python "
                f"{quote(ws.python)}`.",
            )
        )
    if env.torch is None or installed is None:
        return facts, findings
    if ws.commit and ws.commit != installed:
        findings.append(
            Finding(
                "workspace-other-torch",
                ERROR,
                f"the workspace was made for torch {ws.torch_version}, the installed one is "
                f"{env.torch.version}",
                f"{ws.config_path} records commit {ws.commit}, but this interpreter's torch was "
                f"built from {installed}: the sources there are not the ones this binary was "
                "compiled from (line numbers in errors and warnings will not match).",
                f"Make a workspace for this torch: `onboard setup NEWDIR` (or pass --python with "
                f"the interpreter {ws.python} the workspace was made for).",
            )
        )
    if head is None:
        if not checkout.is_dir():
            findings.append(
                Finding(
                    "workspace-checkout-missing",
                    ERROR,
                    f"the workspace checkout {checkout} is missing",
                    f"{ws.config_path} names it, but the folder is gone or is not a git "
                    "repository.",
                    f"Recreate the workspace: `{ws.setup_command}`.",
                )
            )
        return facts, findings
    if ws.is_reference:
        return facts, findings  # its HEAD is a tree rebuilt from the wheel, not torch's commit
    if head == installed:
        return facts, findings
    if git.refs.rev_parse(checkout, installed) and git.refs.is_ancestor(checkout, installed, head):
        ahead = git.history.count_range(checkout, installed, head, first_parent=False)
        findings.append(
            Finding(
                "workspace-ahead",
                INFO,
                f"the checkout is {ahead} commit(s) ahead of the installed torch's commit",
                f"{checkout} is at {head[:12]}, on top of {installed[:12]} (your own work). Files "
                "you changed no longer match the installed binary until you build them.",
                "Nothing to do while you work; `onboard build` makes the binary match again.",
            )
        )
        return facts, findings
    findings.append(
        Finding(
            "workspace-checkout-moved",
            ERROR,
            "the workspace checkout is not at the installed torch's commit",
            f"{checkout} is at {head}, but the installed torch {env.torch.version} was built from "
            f"{installed}. What you read or step into there is not what this binary runs: "
            "line numbers in errors, warnings and C++ traces will point at the wrong code.",
            f"Go back to the installed commit: `git -C {quote(checkout)} switch --detach "
            f"{installed}` "
            "(your branch keeps its commits), or build this checkout (`onboard build`).",
        )
    )
    return facts, findings

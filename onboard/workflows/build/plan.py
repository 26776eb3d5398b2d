"""The build plan: every environment variable, command and estimate, with its reason.

PyTorch's build is steered by environment variables read in ``setup.py`` and
``tools/setup_helpers/env.py`` (PYTORCH_FACTS "Building"). The plan picks them
from the probe of the workspace's interpreter and from this machine, and says
why for each, so ``onboard build --dry-run`` is the explanation a newcomer
otherwise assembles from CONTRIBUTING.md, issues and trial and error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git
from onboard.errors import OnboardError
from onboard.workflows.build import (
    build_type,
    build_version,
    compiler_cache,
    cuda,
    machine,
    memory,
    requirements,
)
from onboard.workflows.build.machine import Tool
from onboard.workflows.build.memory import Estimate
from onboard.workflows.build.parts import Check, Choice, Part

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.report import Reporter
    from onboard.torchenv import TorchEnv
    from onboard.workspace import Workspace

# PyTorch's top-level CMakeLists.txt: cmake_minimum_required(VERSION 3.27 ...).
DEFAULT_MIN_CMAKE = (3, 27)
PLAN_NAME = "build-plan.json"


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
            next_step=f"Then run `onboard build --workspace {self.workspace}` again "
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

    def take(self, part: Part) -> None:
        """Add one step's share of the plan (its variables, notes and checks, in order)."""
        self.choices += part.env
        self.notes += part.notes
        self.checks += part.checks

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
                fix=f"Remove the build venv (`rm -rf {self.venv}`) so the session reinstalls "
                f"{pypi_spec} from PyPI",
            )
        spec = requirements.spec_of(lines, name)
        if spec is not None:
            if minimum and not requirements.spec_allows_at_least(spec, minimum):
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
                f"`onboard setup {self.ws.root} --with-submodules` (or `git -C {self.checkout} "
                "submodule update --init --recursive --depth 1 --jobs 4`)",
            )
        return Check("submodules", True, f"all {len(rows)} checked out")


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
            next_step=f"Run `onboard setup {ws.root}` to restore it.",
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
    kind = build_type.choose(ws.checkout_path, debug=debug, debinfo_files=debinfo)
    b.take(kind)
    b.take(build_type.reconfigure(ws.checkout_path, kind.name))
    gpu = cuda.choose(env_probe)
    b.take(gpu)
    use_cuda = gpu.enabled
    b.set(
        "BUILD_TEST",
        "1" if with_tests else "0",
        "--with-tests: the C++ test binaries are built too"
        if with_tests
        else "the C++ test binaries (build/bin/*_test) add a large part of the build time; "
        "--with-tests builds them",
    )
    max_jobs = memory.max_jobs(
        ws.checkout_path, kind.name, use_cuda=use_cuda, requested=jobs, debinfo=bool(debinfo)
    )
    b.take(max_jobs)
    jobs_n, jobs_reason, estimate = max_jobs.count, max_jobs.reason, max_jobs.estimate
    launcher = compiler_cache.choose(cache, ws.checkout_path, use_cuda=use_cuda)
    b.take(launcher)
    estimate = launcher.on_local_disk(estimate)
    head = git.head_sha(ws.checkout_path) if git.is_repo(ws.checkout_path) else None
    b.take(build_version.choose(env_probe, head, ws.checkout_path))

    reqs = requirements.choose(ws.checkout_path)
    b.take(reqs)
    files, lines, kept, dropped = reqs.files, list(reqs.lines), reqs.kept, reqs.dropped
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
        f"cd {ws.checkout_path} && <env above> python -m pip install --no-build-isolation -v -e ."
        + ("".join(f" {a}" for a in extra_args))
    )
    return BuildPlan(
        workspace=ws.root,
        checkout=ws.checkout_path,
        venv=b.venv,
        python=ws.python,
        build_type=kind.name,
        jobs=jobs_n,
        jobs_reason=jobs_reason,
        env=tuple(b.choices),
        cache_tool=launcher.tool,
        cache_launcher=launcher.launcher,
        cache_backend=launcher.backend,
        cache_reason=launcher.reason,
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

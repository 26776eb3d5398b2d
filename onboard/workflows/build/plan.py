"""The build plan: every environment variable, command and estimate, with its reason.

PyTorch's build is steered by environment variables read in ``setup.py`` and
``tools/setup_helpers/env.py``. The plan picks them from the probe of the
workspace's interpreter and from this machine, and says why for each, so
``onboard build --dry-run`` is the explanation a newcomer otherwise assembles
from CONTRIBUTING.md, issues and trial and error.

``plan()`` is the list of steps: each decision is a module that takes what it
needs and returns its ``Part`` (build type, CUDA, MAX_JOBS, compiler cache,
version, requirements, pre-flight); the plan joins them in that order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git
from onboard.errors import OnboardError
from onboard.jsonable import spec
from onboard.shell import quote
from onboard.workflows.build import (
    build_type,
    build_version,
    compiler_cache,
    cuda,
    memory,
    preflight,
    requirements,
)
from onboard.workflows.build.memory import Estimate
from onboard.workflows.build.parts import Check, Choice, Part, by_name

if TYPE_CHECKING:
    from onboard.report import Reporter
    from onboard.torchenv import TorchEnv
    from onboard.workspace import Workspace

PLAN_NAME = "build-plan.json"


@dataclass(frozen=True)
class BuildPlan:
    """What ``onboard build`` will do. JSON keys (stable):

    workspace, checkout, venv, python, build_type, env {NAME: {value, reason}}
    (value null = removed), commands [str], estimate {...}, preflight {NAME: {ok,
    detail, fix}}, log_dir, extra_args, notes, debinfo_files, venv_python, jobs
    {value, reason}, cache {tool, launcher, backend, reason}, requirements {files,
    install, dropped}, ok.
    """

    workspace: Path
    checkout: Path
    venv: Path
    python: str
    build_type: str
    # The omitted fields are grouped in JSON: jobs, cache, requirements (json_extra).
    jobs: int = field(metadata=spec(omit=True))
    jobs_reason: str = field(metadata=spec(omit=True))
    env: tuple[Choice, ...] = field(metadata=spec(convert=by_name))
    cache_tool: str | None = field(metadata=spec(omit=True))
    cache_launcher: str | None = field(metadata=spec(omit=True))
    cache_backend: str = field(metadata=spec(omit=True))
    cache_reason: str = field(metadata=spec(omit=True))
    requirement_files: tuple[str, ...] = field(metadata=spec(omit=True))
    # the lines the session installs (torch dropped)
    requirements: tuple[str, ...] = field(metadata=spec(omit=True))
    dropped: tuple[str, ...] = field(metadata=spec(omit=True))
    # tools onboard adds (cmake, ninja) when the checkout needs them
    install: tuple[str, ...] = field(metadata=spec(omit=True))
    commands: tuple[str, ...]
    estimate: Estimate
    preflight: tuple[Check, ...] = field(metadata=spec(convert=by_name))
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
    def exit_code(self) -> int:
        """`onboard build --dry-run`: 1 when the pre-flight would stop the build."""
        return 0 if self.ok else 1

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(c for c in self.preflight if not c.ok)

    def env_values(self) -> dict[str, str | None]:
        return {c.name: c.value for c in self.env}

    def value(self, name: str) -> str | None:
        return self.env_values().get(name)

    def json_extra(self) -> dict[str, object]:
        return {
            "venv_python": self.venv_python,
            "jobs": {"value": self.jobs, "reason": self.jobs_reason},
            "cache": {
                "tool": self.cache_tool,
                "launcher": self.cache_launcher,
                "backend": self.cache_backend,
                "reason": self.cache_reason,
            },
            "requirements": {
                "files": self.requirement_files,
                "install": [*self.requirements, *self.install],
                "dropped": self.dropped,
            },
            "ok": self.ok,
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
    checkout = _buildable_checkout(ws)
    if env_probe is None:
        env_probe = _probe(ws, reporter)
    debinfo = tuple(_relative(checkout, f) for f in debinfo_files)
    venv = ws.root / ".nox" / "build"  # nox keeps a session's venv in .nox/<session name>

    kind = build_type.choose(checkout, debug=debug, debinfo_files=debinfo)
    fresh = build_type.reconfigure(checkout, kind.name)
    gpu = cuda.choose(env_probe)
    tests = _build_test(with_tests)
    max_jobs = memory.max_jobs(
        checkout, kind.name, use_cuda=gpu.enabled, requested=jobs, debinfo=bool(debinfo)
    )
    launcher = compiler_cache.choose(cache, checkout, use_cuda=gpu.enabled)
    estimate = launcher.on_local_disk(max_jobs.estimate)
    version = build_version.choose(env_probe, _head(checkout), checkout)
    reqs = requirements.choose(checkout)
    checks = preflight.check(
        root=ws.root,
        checkout=checkout,
        venv=venv,
        estimate=estimate,
        jobs=max_jobs.count,
        reqs=reqs,
    )

    parts: tuple[Part, ...] = (kind, fresh, gpu, tests, max_jobs, launcher, version, reqs, checks)
    return BuildPlan(
        workspace=ws.root,
        checkout=checkout,
        venv=venv,
        python=ws.python,
        build_type=kind.name,
        jobs=max_jobs.count,
        jobs_reason=max_jobs.reason,
        env=tuple(c for p in parts for c in p.env),
        cache_tool=launcher.tool,
        cache_launcher=launcher.launcher,
        cache_backend=launcher.backend,
        cache_reason=launcher.reason,
        requirement_files=reqs.files,
        requirements=reqs.kept,
        dropped=reqs.dropped,
        install=checks.install,
        commands=_commands(ws, venv, reqs, checks.install, tuple(extra_args)),
        estimate=estimate,
        preflight=tuple(c for p in parts for c in p.checks),
        log_dir=ws.root / "logs",
        extra_args=tuple(extra_args),
        notes=tuple(n for p in parts for n in p.notes),
        debinfo_files=debinfo,
    )


def _buildable_checkout(ws: Workspace) -> Path:
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
    return ws.checkout_path


def _probe(ws: Workspace, reporter: Reporter) -> TorchEnv | None:
    from onboard import torchenv

    reporter.step(f"probing {ws.python} (GPU, installed version)")
    try:
        return torchenv.probe(ws.python)
    except OnboardError as exc:
        reporter.detail(f"probe failed: {exc.message}")
        return None


def _head(checkout: Path) -> str | None:
    return git.refs.head_sha(checkout) if git.repository.is_repo(checkout) else None


def _build_test(with_tests: bool) -> Part:
    reason = (
        "--with-tests: the C++ test binaries are built too"
        if with_tests
        else "the C++ test binaries (build/bin/*_test) add a large part of the build time; "
        "--with-tests builds them"
    )
    return Part(env=(Choice("BUILD_TEST", "1" if with_tests else "0", reason),))


def _commands(
    ws: Workspace,
    venv: Path,
    reqs: requirements.Requirements,
    install: tuple[str, ...],
    extra_args: tuple[str, ...],
) -> tuple[str, ...]:
    """What the nox session ``build`` (``tasks/build.py``) will run, for the reader."""
    commands = [
        f"nox -f {ws.root / 'noxfile.py'} -s build -- --plan {ws.root / '.onboard' / PLAN_NAME}",
        f"(venv) {venv} from {ws.python}",
    ]
    if reqs.kept:
        commands.append(
            f"pip install -r <{reqs.files[0]} without torch>  # {len(reqs.kept)} requirement(s)"
        )
    if install:
        commands.append("pip install " + " ".join(f"'{s}'" for s in install))
    commands.append(
        f"cd {quote(ws.checkout_path)} && <env above> python -m pip install "
        "--no-build-isolation -v -e ." + ("".join(f" {a}" for a in extra_args))
    )
    return tuple(commands)


def _relative(checkout: Path, name: str) -> str:
    """A --debinfo path as PyTorch expects it: relative to the checkout, forward slashes."""
    path = Path(name)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(checkout.resolve())
        except ValueError:
            return name
    return path.as_posix()

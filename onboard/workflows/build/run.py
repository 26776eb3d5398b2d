"""Running the plan: the workspace's nox session, streamed to a log, then the proofs."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import proc
from onboard.errors import OnboardError
from onboard.jsonable import spec
from onboard.shell import quote
from onboard.workflows.build.import_check import (
    IdeChange,
    Imported,
    PostCheck,
    link_compile_commands,
    point_launch_at,
    post_checks,
)
from onboard.workflows.build.log import FirstError, first_error, parse_progress
from onboard.workflows.build.parts import by_name
from onboard.workflows.build.plan import BuildPlan

if TYPE_CHECKING:
    from onboard.report import Reporter
    from onboard.workflows.setup import SetupResult
    from onboard.workspace import Workspace


@dataclass(frozen=True)
class CacheStats:
    """Compiler-cache counters for this build (after minus before)."""

    tool: str
    hits: int | None
    misses: int | None
    location: str = ""
    note: str = ""


def _done_total(progress: tuple[int, int]) -> dict[str, int]:
    return {"done": progress[0], "total": progress[1]}


@dataclass(frozen=True)
class BuildResult:
    """JSON keys (stable): returncode, log, seconds, progress {done, total},
    first_error {line, lines} | null, imported {file, version, git_version, error,
    libraries {path: has_debug_info}} | null, checks {NAME: {ok, detail}}, ide [{path,
    action, detail}], cache {tool, hits, misses, location, note} | null, notes, ok,
    build_type, jobs, env {NAME: value | null}, venv_python."""

    plan: BuildPlan = field(metadata=spec(omit=True))  # its part of the JSON: json_extra
    returncode: int
    log: Path
    seconds: float = field(metadata=spec(digits=1))
    progress: tuple[int, int] | None = field(metadata=spec(convert=_done_total))
    first_error: FirstError | None = None
    imported: Imported | None = None
    checks: tuple[PostCheck, ...] = field(default=(), metadata=spec(convert=by_name))
    ide: tuple[IdeChange, ...] = ()
    cache: CacheStats | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and all(c.ok for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def json_extra(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "build_type": self.plan.build_type,
            "jobs": self.plan.jobs,
            "env": self.plan.env_values(),
            "venv_python": self.plan.venv_python,
        }


def _sccache_start(launcher: str, env: dict[str, str]) -> None:
    """Start the sccache server (with this env: SCCACHE_BASEDIRS, the backend) unless one
    runs. Started by the build's first compile instead, it would carry this run's mark
    and be stopped with onboard; started here as a daemon, the next builds share it."""
    with contextlib.suppress(OnboardError):  # "Address in use": one runs already
        proc.run(
            [launcher, "--start-server"], env=env, timeout=120, check=False, starts_daemon=True
        )


def _sccache_stats(launcher: str, env: dict[str, str]) -> dict[str, Any] | None:
    try:
        result = proc.run(
            [launcher, "--show-stats", "--stats-format", "json"], env=env, timeout=120, check=False
        )
    except OnboardError:
        return None
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _count(stats: dict[str, Any] | None, key: str) -> int:
    counts = ((stats or {}).get("stats") or {}).get(key, {}).get("counts", {})
    return sum(int(v) for v in counts.values()) if isinstance(counts, dict) else 0


def _session_env(plan: BuildPlan) -> dict[str, str]:
    removed = [name for name, value in plan.env_values().items() if value is None]
    env = proc.environ(drop=removed)
    env.update({k: v for k, v in plan.env_values().items() if v is not None})
    return env


def build(ws: Workspace, plan: BuildPlan, reporter: Reporter) -> BuildResult:
    """Run the workspace's ``build`` session with ``plan``; check the result.

    Raises ``OnboardError`` when a pre-flight check failed (nothing was run);
    a failed build returns a result with the first error and the log path.
    One writer at a time: the build holds the workspace's lock throughout.
    """
    from onboard import transaction

    with transaction.in_workspace(
        ws.root,
        command="build",
        reporter=reporter,
    ) as tx:
        tx.watch(plan.checkout)
        return _build(ws, plan, reporter)


def _build(ws: Workspace, plan: BuildPlan, reporter: Reporter) -> BuildResult:
    if not plan.ok:
        raise plan.failure_error()
    noxfile = ws.root / "noxfile.py"
    if not noxfile.is_file() or "onboard.tasks" not in noxfile.read_text(errors="replace"):
        raise OnboardError(
            f"{noxfile} is missing or is not onboard's generated noxfile, so the build session "
            "cannot be found.",
            next_step=f"Run `onboard setup {quote(ws.root)}` to regenerate it "
            "(a changed copy is backed up).",
        )
    plan_path = plan.write_for_session()
    plan.log_dir.mkdir(parents=True, exist_ok=True)
    log = plan.log_dir / time.strftime("build-%Y%m%d-%H%M%S.log")
    env = _session_env(plan)
    before = None
    if plan.cache_tool == "sccache" and plan.cache_launcher:
        _sccache_start(plan.cache_launcher, env)
        before = _sccache_stats(plan.cache_launcher, env)
    cmd = [
        sys.executable,
        "-m",
        "nox",
        "-f",
        str(noxfile),
        "-s",
        "build",
        "--",
        "--plan",
        str(plan_path),
    ]
    reporter.step(f"building {plan.checkout} ({plan.build_type}, MAX_JOBS={plan.jobs}); log: {log}")
    progress: list[tuple[int, int]] = []
    start = time.monotonic()
    with reporter.task("build", total=None) as task:

        def on_line(line: str) -> None:
            step = parse_progress(line)
            if step is not None:
                progress.append((step.done, step.total))
                task.update(completed=step.done, total=step.total, detail=step.what[:60])
            elif line.startswith("nox > "):
                reporter.detail(line)

        rc = proc.stream(cmd, on_line=on_line, cwd=ws.root, env=env, log_path=log)
    seconds = time.monotonic() - start
    last = progress[-1] if progress else None
    if rc != 0:
        return BuildResult(plan, rc, log, seconds, last, first_error=first_error(log))
    reporter.step("checking the build in a fresh interpreter")
    imported, checks = post_checks(plan.venv_python, plan.checkout, cwd=plan.venv)
    ide: list[IdeChange] = [link_compile_commands(plan.checkout)]
    ide.append(point_launch_at(plan.checkout, plan.venv_python))
    cache = None
    if plan.cache_tool == "sccache" and plan.cache_launcher:
        after = _sccache_stats(plan.cache_launcher, env)
        basedirs = [str(b).rstrip("/") for b in (after or {}).get("basedirs") or []]
        note = ""
        if after is not None and str(plan.checkout).rstrip("/") not in basedirs:
            note = (
                "the running sccache server was started without this checkout in "
                "SCCACHE_BASEDIRS, so its entries are tied to this folder: `sccache --stop-server` "
                "and build again to share them across folders"
            )
        cache = CacheStats(
            "sccache",
            _count(after, "cache_hits") - _count(before, "cache_hits") if after else None,
            _count(after, "cache_misses") - _count(before, "cache_misses") if after else None,
            str((after or {}).get("cache_location") or ""),
            note,
        )
    elif plan.cache_tool:
        cache = CacheStats(plan.cache_tool, None, None, note="counters are shown by `ccache -s`")
    return BuildResult(
        plan, rc, log, seconds, last, None, imported, checks, tuple(ide), cache, plan.notes
    )


# --- `onboard setup DIR --build` ---


@dataclass(frozen=True)
class SetupAndBuild:
    """Setup then build in one go. JSON keys: setup (setup's own JSON), build, ok."""

    setup: SetupResult
    build: BuildResult

    @property
    def ok(self) -> bool:
        return bool(self.setup.ok) and self.build.ok

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def json_extra(self) -> dict[str, object]:
        return {"ok": self.ok}


def build_after_setup(setup_result: SetupResult, reporter: Reporter) -> SetupAndBuild:
    """Build the workspace ``onboard setup`` just made, with ``onboard build``'s defaults."""
    from onboard import workspace
    from onboard.workflows.build.plan import plan

    ws = workspace.load(Path(setup_result.workspace))
    return SetupAndBuild(setup_result, build(ws, plan(ws, reporter=reporter), reporter))

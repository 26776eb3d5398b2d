"""`onboard build --json` (the plan, and the build's result): each key worked out from the
plan's own fields, through the one serialiser (onboard/jsonable.py)."""

from __future__ import annotations

import json
from pathlib import Path

from onboard.jsonable import to_json
from onboard.workflows.build import BuildPlan, BuildResult, CacheStats, Check, Choice, Estimate
from onboard.workflows.build.import_check import IdeChange, Imported, PostCheck
from onboard.workflows.build.log import FirstError
from onboard.workflows.build.machine import Tool


def _plan(tmp_path: Path) -> BuildPlan:
    return BuildPlan(
        workspace=tmp_path,
        checkout=tmp_path / "pytorch",
        venv=tmp_path / ".venv",
        python="/usr/bin/python3.11",
        build_type="RelWithDebInfo",
        jobs=6,
        jobs_reason="6 of 8 cores: 2.5 GiB a job",
        env=(Choice("USE_CUDA", "0", "no GPU"), Choice("CMAKE_PREFIX_PATH", None, "cleared")),
        cache_tool="sccache",
        cache_launcher="/usr/bin/sccache",
        cache_backend="local",
        cache_reason="found on PATH",
        requirement_files=("requirements.txt",),
        requirements=("numpy", "pyyaml"),
        dropped=("torch",),
        install=("cmake", "ninja"),
        commands=("python setup.py develop",),
        estimate=Estimate(30.0, 123.456, 2.5, 8.0, 15.04, 8, "measured"),
        preflight=(Check("disk", True, "123 GiB free"), Check("cmake", False, "too old", "pip")),
        log_dir=tmp_path / "logs",
        extra_args=("--cmake",),
        notes=("a note",),
        debinfo_files=("aten/src/ATen/native/Foo.cpp",),
    )


def test_the_plan_groups_jobs_cache_and_requirements(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    data = to_json(plan)
    assert data["workspace"] == str(plan.workspace) and data["venv"] == str(plan.venv)
    assert data["venv_python"] == str(plan.venv_python)
    assert data["jobs"] == {"value": plan.jobs, "reason": plan.jobs_reason}
    assert data["env"] == {c.name: {"value": c.value, "reason": c.reason} for c in plan.env}
    assert data["cache"] == {
        "tool": plan.cache_tool,
        "launcher": plan.cache_launcher,
        "backend": plan.cache_backend,
        "reason": plan.cache_reason,
    }
    assert data["requirements"] == {
        "files": list(plan.requirement_files),
        "install": [*plan.requirements, *plan.install],
        "dropped": list(plan.dropped),
    }
    # A check is listed under its name; a fix only where one is needed (else null).
    assert data["preflight"] == {
        c.name: {"ok": c.ok, "detail": c.detail, "fix": c.fix or None} for c in plan.preflight
    }
    assert data["estimate"]["free_disk_gib"] == round(plan.estimate.free_disk_gib, 1)
    assert data["estimate"]["available_memory_gib"] == round(plan.estimate.available_memory_gib, 1)
    assert data["estimate"]["disk_gib"] == plan.estimate.disk_gib
    assert data["ok"] is plan.ok is False
    assert data["log_dir"] == str(plan.log_dir)
    assert data["debinfo_files"] == list(plan.debinfo_files)
    # The flat fields that the groups stand for are not repeated.
    assert not {"jobs_reason", "cache_tool", "requirement_files", "dropped", "install"} & set(data)
    json.dumps(data)


def test_the_build_result_names_the_plan_it_ran(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    imported = Imported(
        "/x/torch/__init__.py", "2.13.0", "abc", ("libtorch_cpu.so", "libc10.so"),
        {"libtorch_cpu.so": True},
    )  # fmt: skip
    result = BuildResult(
        plan,
        0,
        tmp_path / "build.log",
        61.26,
        (3000, 4000),
        FirstError(17, ("a.cpp:1: error: x", "")),
        imported,
        (PostCheck("import", True, "the checkout's torch"),),
        (IdeChange("compile_commands.json", "linked"),),
        CacheStats("sccache", 10, None),
        ("n",),
    )
    data = to_json(result)
    assert data["ok"] is result.ok is True
    assert data["seconds"] == round(result.seconds, 1)
    assert data["progress"] == {"done": 3000, "total": 4000}
    assert data["first_error"] == {"line": 17, "lines": ["a.cpp:1: error: x", ""]}
    assert data["imported"]["libraries"] == {"libtorch_cpu.so": True, "libc10.so": None}
    assert "debug_info" not in data["imported"]
    assert data["checks"] == {"import": {"ok": True, "detail": "the checkout's torch"}}
    assert data["ide"] == [{"path": "compile_commands.json", "action": "linked", "detail": ""}]
    assert data["cache"] == {
        "tool": "sccache", "hits": 10, "misses": None, "location": "", "note": ""
    }  # fmt: skip
    assert data["build_type"] == plan.build_type and data["jobs"] == plan.jobs
    assert data["env"] == plan.env_values() and data["venv_python"] == str(plan.venv_python)
    assert "plan" not in data
    unfinished = to_json(BuildResult(plan, 1, tmp_path / "build.log", 1.0, None))
    assert unfinished["progress"] is None and unfinished["first_error"] is None
    assert unfinished["ok"] is False


def test_a_tool_shows_what_was_found_not_its_banner() -> None:
    tool = Tool("cmake", "/usr/bin/cmake", "3.27.1", "cmake version 3.27.1")
    assert to_json(tool) == {"name": "cmake", "path": "/usr/bin/cmake", "version": "3.27.1"}

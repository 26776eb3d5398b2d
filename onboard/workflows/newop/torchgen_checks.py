"""What torchgen says about a scaffolded op: the parse, and the full codegen.

1. ``children/_codegen_child.py`` in the workspace interpreter parses the checkout's
   native_functions.yaml, runs ``load_derivatives`` and renders this op's
   generated headers and Register{CPU,Meta} wrappers (what the compile needs).
2. ``python -m torchgen.gen`` over the whole yaml, as the in-tree build runs
   it, for the sources of the CPU, CUDA and Meta backends: the op must land in
   RegisterSchema and the three Register files. Some yaml mistakes only
   surface here (docs/pytorch-facts.md: "Anatomy of a structured unary op").

Both are cached by the content of their inputs; the full codegen is shared by
every op of the workspace, so an unchanged yaml is generated once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc, torchenv
from onboard.cache import read_valid
from onboard.workflows.newop.names import NATIVE_YAML
from onboard.workflows.newop.plan import DERIVATIVES_YAML
from onboard.workflows.newop.steps import (
    FAILED,
    PASSED,
    Step,
    child_failure,
    fingerprint,
    first_line_of,
    loc,
)
from onboard.workflows.newop.toolchain import CODEGEN_TIMEOUT, Env

TAGS_YAML = "aten/src/ATen/native/tags.yaml"
PARSE_STEP = "torchgen parses native_functions.yaml"
DERIVATIVES_STEP = "load_derivatives accepts the formula"
FULL_STEP = "full torchgen codegen"
# The backends whose Register files are checked; generating only their sources
# is a third of the whole codegen's time (no per-op headers for 3,000 ops).
_BACKENDS = ("CPU", "CUDA", "Meta")
_FULL_VERSION = "sources-CPU-CUDA-Meta-1"
# Generations kept: one per yaml a user switches between (new-op and practice branches).
_KEEP = 3
_KEY_LOCKS: dict[str, threading.Lock] = {}
_KEY_LOCKS_GUARD = threading.Lock()


@dataclass
class Parsed:
    """The parse step's outcome: its report lines and, when it passed, torchgen's facts."""

    steps: list[Step]
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.facts) and not any(s.status == FAILED for s in self.steps)


def tags_yaml(checkout: Path, env: Env) -> Path:
    tags = checkout / TAGS_YAML
    return tags if tags.is_file() else env.torchgen_dir / "packaged/ATen/native/tags.yaml"


def yaml_location(checkout: Path, name: str, error: str) -> str:
    mo = re.search(r"([^\s:]*native_functions\.yaml):(\d+)", error)
    if mo:
        return f"{NATIVE_YAML}:{mo.group(2)}"
    line = first_line_of(checkout / NATIVE_YAML, re.compile(rf"^- func:\s*{re.escape(name)}[_.(]"))
    return loc(NATIVE_YAML, line)


def parse(checkout: Path, name: str, env: Env, gen_dir: Path, cwd: Path) -> Parsed:
    start = time.monotonic()
    yaml = checkout / NATIVE_YAML
    deriv = checkout / DERIVATIVES_YAML
    tags = tags_yaml(checkout, env)
    child = proc.CHILDREN / "_codegen_child.py"
    key = fingerprint(yaml, deriv, tags, child, env.torchgen_dir, name)
    stamp = gen_dir / "facts.json"
    payload, cached = _cached(stamp, key), True
    if payload is None:
        cached = False
        if gen_dir.exists():
            shutil.rmtree(gen_dir)
        gen_dir.mkdir(parents=True)
        request = {
            "name": name,
            "out": str(gen_dir),
            "native_yaml": str(yaml),
            "tags_yaml": str(tags),
            "derivatives_yaml": str(deriv),
        }
        try:
            payload = proc.ask_child(
                env.python, child.name, json.dumps(request), **torchenv.isolated(cwd),
                timeout=CODEGEN_TIMEOUT, what="torchgen (parse and per-op codegen)",
            ).data  # fmt: skip
        except proc.NoAnswer as exc:
            detail = f"the torchgen child failed ({child_failure(exc.result)})"
            return Parsed([Step(PARSE_STEP, FAILED, detail, NATIVE_YAML, _since(start))])
        if payload.get("ok"):
            stamp.write_text(json.dumps({"key": key, "payload": payload}), "utf-8")
    seconds = _since(start)
    if not payload.get("ok"):
        error = payload.get("error", "")
        if payload.get("stage") == "derivatives.yaml":
            line = first_line_of(deriv, re.compile(rf"^- name:\s*{re.escape(name)}\("))
            return Parsed(
                [
                    Step(PARSE_STEP, PASSED, "parse_native_yaml accepted it", seconds=seconds),
                    Step(DERIVATIVES_STEP, FAILED, error, loc(DERIVATIVES_YAML, line), seconds),
                ]
            )
        where = yaml_location(checkout, name, error)
        return Parsed([Step(PARSE_STEP, FAILED, error, where, seconds)])
    facts: dict[str, Any] = payload["facts"]
    steps = [
        Step(
            PARSE_STEP,
            PASSED,
            "parse_native_yaml: " + "; ".join(facts["schemas"]),
            seconds=seconds,
            cached=cached,
        )
    ]
    if facts["derivatives"]:
        detail = f"formula for {facts['derivatives'][0]}"
        steps.append(Step(DERIVATIVES_STEP, PASSED, detail, cached=cached))
    else:
        steps.append(
            Step(
                DERIVATIVES_STEP,
                FAILED,
                f"derivatives.yaml has no `- name: {name}(...)` entry, so autograd would not "
                "know the op's gradient",
                DERIVATIVES_YAML,
            )
        )
    return Parsed(steps, facts)


# What _codegen_child.py answered, as stored in facts.json (only successful
# runs are stored); another shape is a miss and the codegen runs again.
_FACTS_SHAPE = {
    "key": str,
    "payload": {
        "ok": bool,
        "facts": {
            "schemas": [str],
            "structured": bool,
            "kernels": {str: (str, None)},
            "derivatives": [str],
            "schema_registrations?": [str],
        },
    },
}


def _cached(stamp: Path, key: str) -> dict[str, Any] | None:
    data = read_valid(stamp, _FACTS_SHAPE)
    if data.get("key") != key:
        return None
    payload: dict[str, Any] = data["payload"]
    return payload


def _since(start: float) -> float:
    return time.monotonic() - start


def _key_lock(key: str) -> threading.Lock:
    with _KEY_LOCKS_GUARD:
        return _KEY_LOCKS.setdefault(key, threading.Lock())


def full_codegen(checkout: Path, name: str, env: Env, cache_root: Path) -> Step:
    """The op in the Register files the in-tree codegen writes (cached by the yaml's content)."""
    start = time.monotonic()
    yaml = checkout / NATIVE_YAML
    tags = tags_yaml(checkout, env)
    templates = checkout / "aten" / "src" / "ATen" / "templates"
    if not templates.is_dir():
        templates = env.torchgen_dir / "packaged" / "ATen" / "templates"
    key = fingerprint(yaml, tags, templates, env.torchgen_dir, _FULL_VERSION)
    out = cache_root / key
    with _key_lock(key):
        cached = (out / "onboard-key").is_file()
        if not cached:
            failure = _generate(yaml, tags, templates, env, out, key, cache_root)
            if failure is not None:
                where = yaml_location(checkout, name, failure)
                return Step(FULL_STEP, FAILED, failure, where, _since(start))
    needles = {"RegisterSchema.cpp": [f'm.def("{name}(', f'm.def("{name}.out(', f'm.def("{name}_(']}
    for backend in _BACKENDS:
        needles[f"Register{backend}_*.cpp"] = [f"wrapper_{backend}_{name}("]
    missing = []
    for pattern, wanted in needles.items():
        texts = [p.read_text("utf-8", errors="replace") for p in out.glob(pattern)]
        missing += [f"{n} in {pattern}" for n in wanted if not any(n in t for t in texts)]
    if missing:
        return Step(
            FULL_STEP,
            FAILED,
            "missing from the generated files: " + ", ".join(missing),
            yaml_location(checkout, name, ""),
            _since(start),
        )
    return Step(
        FULL_STEP,
        PASSED,
        f"python -m torchgen.gen puts aten::{name} in RegisterSchema, RegisterCPU, "
        f"RegisterCUDA and RegisterMeta ({out}; sources of those backends; the op's own "
        "headers come from the parse step)",
        seconds=_since(start),
        cached=cached,
    )


def _generate(
    yaml: Path, tags: Path, templates: Path, env: Env, out: Path, key: str, cache_root: Path
) -> str | None:
    """Run the full codegen into ``out`` (atomically); the error text, or None."""
    cache_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gen-", dir=cache_root))
    try:
        src = work / "src"
        (src / "native").mkdir(parents=True)
        shutil.copyfile(yaml, src / "native" / "native_functions.yaml")
        shutil.copyfile(tags, src / "native" / "tags.yaml")
        os.symlink(templates, src / "templates")
        gen = work / "out"
        result = proc.run(
            [
                env.python,
                "-m",
                "torchgen.gen",
                "-s",
                str(src),
                "-d",
                str(gen),
                "--per-operator-headers",
                "--aoti-install-dir",
                str(gen / "aoti"),
                "--generate",
                "sources",
                "--backend-whitelist",
                *_BACKENDS,
            ],
            **torchenv.isolated(work),  # `-m`: work holds only the yaml copy and templates
            timeout=CODEGEN_TIMEOUT,
            check=False,
            what="full torchgen codegen",
            background=True,  # beside the CPU compile, the longer chain
        )
        if result.returncode != 0:
            return f"python -m torchgen.gen failed: {child_failure(result)}"
        (gen / "onboard-key").write_text(key)
        _prune(cache_root, keep=_KEEP - 1)
        with contextlib.suppress(OSError):  # another verify made it first: the same files
            os.replace(gen, out)
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _prune(cache_root: Path, keep: int) -> None:
    """Drop all but the ``keep`` newest generations (never one being written)."""
    done = [p for p in cache_root.iterdir() if (p / "onboard-key").is_file()]
    done.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in done[keep:]:
        shutil.rmtree(old, ignore_errors=True)

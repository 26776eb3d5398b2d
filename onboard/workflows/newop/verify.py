"""Verify a scaffolded op as far as a CPU machine can (PYTORCH_FACTS: "Checking a
scaffolded op without building PyTorch").

1. torchgen parses the checkout's native_functions.yaml; ``load_derivatives``
   accepts derivatives.yaml (a child running the installed torchgen).
2. Cross-file consistency: the stub is declared, defined, called, and registered
   for CPU (a native/cpu/ file) and CUDA (a .cu file); the impl name matches the
   dispatch entry torchgen read.
3. Full torchgen codegen into the cache: the op is in RegisterSchema,
   RegisterCPU, RegisterCUDA, RegisterMeta and NativeFunctions.h.
4. A real compile with ``torch.utils.cpp_extension.load`` of the meta/impl file,
   the CPU kernel, torchgen's wrappers for this op and its schema, against the
   installed torch; loaded in a child with ``ATEN_CPU_CAPABILITY=default``;
   numerics against REFERENCE (the scaffold's test file), the meta device,
   ``torch.library.opcheck``.
5. With nvcc on PATH: a compile-only check of the .cu with stand-in headers for
   the CUDA libraries a CPU machine lacks.
6. What was not verified, said plainly.

Every failure names the file and line to look at. Steps 3-5 run side by side;
their results are cached under ``<workspace>/.onboard/cache/newop/NAME`` by the
content of their inputs, and the compile is incremental (ninja), so a warm
verify reruns only the numerics.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import proc, torchenv
from onboard.cache import read_valid
from onboard.errors import OnboardError
from onboard.render import render
from onboard.report import Reporter
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop.names import NATIVE_YAML
from onboard.workflows.newop.plan import DERIVATIVES_YAML

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workspace import Workspace

PASSED = "passed"
FAILED = "failed"
NOT_CHECKED = "not checked"
TAGS_YAML = "aten/src/ATen/native/tags.yaml"
CODEGEN_TIMEOUT = 600.0
COMPILE_TIMEOUT = 900.0
# Stand-ins for CUDA library headers a CPU machine lacks (templates/newop/verify/).
CUDA_STANDINS = {
    "cusparse.h": "cusparse.h.j2",
    "cublas_v2.h": "cublas_v2.h.j2",
    "cublasLt.h": "cublasLt.h.j2",
    "cusolver_common.h": "cusolver_common.h.j2",
    "cusolverDn.h": "cusolverDn.h.j2",
    "c10/cuda/impl/cuda_cmake_macros.h": "cuda_cmake_macros.h.j2",
}
CXX_FLAGS = (
    "-O2",
    "-Wno-psabi",
    # DispatchStub's layout must match the wheel's, which has AVX2/AVX512 slots.
    "-DHAVE_AVX2_CPU_DEFINITION",
    "-DHAVE_AVX512_CPU_DEFINITION",
    "-DAT_PER_OPERATOR_HEADERS",
)
NOT_VERIFIED = (
    (
        "in-tree build",
        "building PyTorch with the op (libtorch_cpu link, the AVX2/AVX512 "
        "copies of the kernel, the Python bindings torch.NAME / Tensor.NAME) needs a full "
        "checkout and `onboard build`",
    ),
    ("CUDA numerics", "no CUDA device here; the .cu was at most compiled"),
    (
        "autograd compiled",
        "derivatives.yaml was parsed by load_derivatives, but the "
        "generated VariableType/autograd code was not compiled or run",
    ),
    (
        "dynamic shapes",
        "opcheck's test_aot_dispatch_dynamic needs a decomposition or a "
        "torch/_refs entry for a TensorIterator op; not scaffolded",
    ),
    ("OpInfo suite", "test_ops/test_unary_ufuncs over the new OpInfo need an in-tree build"),
    ("docs build", "the docstrings and the docs index were placed, not built with sphinx"),
)


@dataclass(frozen=True)
class Step:
    name: str
    status: str
    detail: str
    location: str | None = None  # "path:line" to look at
    seconds: float = 0.0
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "location": self.location,
            "seconds": round(self.seconds, 2),
            "cached": self.cached,
        }


@dataclass
class OpVerification:
    """JSON keys: ``op``, ``ok``, ``steps`` [{name, status, detail, location,
    seconds, cached}], ``seconds``."""

    op: str
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(s.status == FAILED for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "ok": self.ok,
            "steps": [s.to_json() for s in self.steps],
            "seconds": round(self.seconds, 2),
        }

    def render(self, console: Console, verbose: bool) -> None:
        from rich.markup import escape
        from rich.table import Table

        style = {PASSED: "green", FAILED: "bold red", NOT_CHECKED: "yellow"}
        table = Table(title=f"aten::{self.op}", title_justify="left")
        table.add_column("check")
        table.add_column("result")
        table.add_column("detail", overflow="fold")
        for s in self.steps:
            where = f" [{s.location}]" if s.location else ""
            table.add_row(s.name, f"[{style[s.status]}]{s.status}[/]", escape(s.detail + where))
        console.print(table)


@dataclass(frozen=True)
class _Env:
    python: str
    torch_dir: Path
    torchgen_dir: Path


def _fingerprint(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            h.update(part.read_bytes() if part.is_file() else b"<missing>")
        else:
            h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def _locate_env(python: str, cwd: Path) -> _Env:
    code = (
        "import importlib.util, json\n"
        "t = importlib.util.find_spec('torch'); g = importlib.util.find_spec('torchgen')\n"
        "print(json.dumps([list(t.submodule_search_locations)[0] if t else None,"
        " list(g.submodule_search_locations)[0] if g else None]))\n"
    )
    # cwd: not the checkout, whose torch/ folder would shadow the installed package.
    result = proc.run(
        [python, "-c", code],
        **torchenv.isolated(cwd),
        timeout=60,
        what=f"Locating torch for {python}",
    )
    torch_dir, torchgen_dir = json.loads(result.stdout.strip().splitlines()[-1])
    if not torch_dir or not torchgen_dir:
        raise OnboardError(
            f"{python} has no torch (or no torchgen), so the scaffold cannot be checked "
            "against it.",
            next_step="Run `onboard doctor` to see what that interpreter has.",
        )
    return _Env(python, Path(torch_dir), Path(torchgen_dir))


def _first_line_of(path: Path, needle: str | re.Pattern[str], after: int = 0) -> int | None:
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for i, line in enumerate(lines[after:], start=after + 1):
        if needle.search(line) if isinstance(needle, re.Pattern) else needle in line:
            return i
    return None


def _loc(checkout: Path, rel: str, line: int | None) -> str:
    return f"{rel}:{line}" if line else rel


def _reference(checkout: Path, rel: str) -> tuple[str | None, int | None, str | None]:
    """(REFERENCE expression, its line, error) from the scaffold's test file."""
    path = checkout / rel
    try:
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    except (OSError, SyntaxError) as exc:
        return None, getattr(exc, "lineno", None), f"{type(exc).__name__}: {exc}"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "REFERENCE" for t in node.targets
        ):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value, node.lineno, None
            return None, node.lineno, "REFERENCE must be a string literal (a Python expression)"
    return None, None, 'no top-level `REFERENCE = "..."` assignment'


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


class _OpCheck:
    """One op's verification; the steps run in order, 3-5 side by side."""

    def __init__(self, ws: Workspace, name: str, reporter: Reporter, env: _Env) -> None:
        self.ws = ws
        self.name = name
        self.reporter = reporter
        self.env = env
        self.checkout = ws.checkout_path
        self.manifest = manifests.load(ws.root, name)
        self.files = self.manifest.files
        self.cache = ws.root / ".onboard" / "cache" / "newop" / name
        self.cache.mkdir(parents=True, exist_ok=True)
        self.facts: dict[str, Any] = {}
        self.gen_dir = self.cache / "gen"
        self.overlay = self.gen_dir / "include"

    # -- 1 ---------------------------------------------------------------
    def torchgen_parse(self) -> list[Step]:
        start = time.monotonic()
        yaml = self.checkout / NATIVE_YAML
        deriv = self.checkout / DERIVATIVES_YAML
        tags = self.checkout / TAGS_YAML
        if not tags.is_file():
            tags = self.env.torchgen_dir / "packaged" / "ATen" / "native" / "tags.yaml"
        child = Path(__file__).with_name("_codegen_child.py")
        key = _fingerprint(yaml, deriv, tags, child, self.env.torchgen_dir, self.name)
        stamp = self.gen_dir / "facts.json"
        cached = False
        payload: dict[str, Any] | None = None
        data = read_valid(stamp, _FACTS_SHAPE)
        if data.get("key") == key:
            payload, cached = data["payload"], True
        if payload is None:
            if self.gen_dir.exists():
                shutil.rmtree(self.gen_dir)
            self.gen_dir.mkdir(parents=True)
            request = {
                "name": self.name,
                "out": str(self.gen_dir),
                "native_yaml": str(yaml),
                "tags_yaml": str(tags),
                "derivatives_yaml": str(deriv),
            }
            result = proc.run(
                [self.env.python, str(child), json.dumps(request)],
                **torchenv.isolated(self.cache),
                timeout=CODEGEN_TIMEOUT,
                check=False,
                what="torchgen (parse and per-op codegen)",
            )
            payload = _marker(result, "@@ONBOARD-CODEGEN@@")
            if payload is None:
                return [
                    Step(
                        "torchgen parses native_functions.yaml",
                        FAILED,
                        f"the torchgen child failed (exit {result.returncode}): "
                        f"{_tail(result.stderr or result.stdout)}",
                        NATIVE_YAML,
                        time.monotonic() - start,
                    )
                ]
            if payload.get("ok"):
                stamp.write_text(json.dumps({"key": key, "payload": payload}), "utf-8")
        seconds = time.monotonic() - start
        if not payload.get("ok"):
            stage = payload.get("stage")
            error = payload.get("error", "")
            if stage == "derivatives.yaml":
                line = _first_line_of(deriv, re.compile(rf"^- name:\s*{re.escape(self.name)}\("))
                return [
                    Step(
                        "torchgen parses native_functions.yaml",
                        PASSED,
                        "parse_native_yaml accepted it",
                        seconds=seconds,
                    ),
                    Step(
                        "load_derivatives accepts the formula",
                        FAILED,
                        error,
                        _loc(self.checkout, DERIVATIVES_YAML, line),
                        seconds,
                    ),
                ]
            return [
                Step(
                    "torchgen parses native_functions.yaml",
                    FAILED,
                    error,
                    self._yaml_location(error),
                    seconds,
                )
            ]
        self.facts = payload["facts"]
        steps = [
            Step(
                "torchgen parses native_functions.yaml",
                PASSED,
                "parse_native_yaml: " + "; ".join(self.facts["schemas"]),
                seconds=seconds,
                cached=cached,
            )
        ]
        if self.facts["derivatives"]:
            steps.append(
                Step(
                    "load_derivatives accepts the formula",
                    PASSED,
                    f"formula for {self.facts['derivatives'][0]}",
                    cached=cached,
                )
            )
        else:
            line = None
            steps.append(
                Step(
                    "load_derivatives accepts the formula",
                    FAILED,
                    f"derivatives.yaml has no `- name: {self.name}(...)` entry, so "
                    "autograd would not know the op's gradient",
                    _loc(self.checkout, DERIVATIVES_YAML, line),
                )
            )
        return steps

    def _yaml_location(self, error: str) -> str:
        mo = re.search(r"([^\s:]*native_functions\.yaml):(\d+)", error)
        if mo:
            return f"{NATIVE_YAML}:{mo.group(2)}"
        line = _first_line_of(
            self.checkout / NATIVE_YAML, re.compile(rf"^- func:\s*{re.escape(self.name)}[_.(]")
        )
        return _loc(self.checkout, NATIVE_YAML, line)

    # -- 2 ---------------------------------------------------------------
    def consistency(self) -> Step:
        name = self.name
        stub = f"{name}_stub"
        kernels = self.facts.get("kernels", {})
        problems: list[tuple[str, str]] = []
        impl = kernels.get("CPU")
        if impl is None or kernels.get("CUDA") is None:
            problems.append(
                (f"the `{name}.out` entry has no CPU/CUDA dispatch", self._yaml_location(""))
            )
        elif kernels.get("CUDA") != impl:
            problems.append(
                (
                    f"CPU dispatches to {impl} but CUDA to {kernels.get('CUDA')}",
                    self._yaml_location(""),
                )
            )
        native = self.checkout / "aten" / "src" / "ATen" / "native"
        sources = self._sources(native)

        def find(pattern: str, suffixes: tuple[str, ...], where: str | None = None) -> str | None:
            rx = re.compile(pattern)
            for rel, text in sources:
                if not rel.endswith(suffixes) or (where is not None and f"/{where}/" not in rel):
                    continue
                mo = rx.search(text)
                if mo:
                    return f"{rel}:{text.count(chr(10), 0, mo.start()) + 1}"
            return None

        meta_impl = self.files.get("meta/impl", f"aten/src/ATen/native/{name}.cpp")
        found = {
            # One DECLARE_DISPATCH(...) call: no ';' ends them now, so `[^;]*` ran from
            # the header's first declaration (abs_stub) to this one and named its line.
            "declared": find(rf"DECLARE_DISPATCH\((?:[^;()]|\([^()]*\))*?\b{stub}\s*\)", (".h",)),
            "defined": find(rf"DEFINE_DISPATCH\(\s*{stub}\s*\)", (".cpp",)),
            "called": find(rf"\b{stub}\s*\(\s*device_type\(\)", (".cpp",)),
            "registered for CPU": find(rf"REGISTER_DISPATCH\(\s*{stub}\s*,", (".cpp",), "cpu"),
            "registered for CUDA": find(rf"REGISTER_DISPATCH\(\s*{stub}\s*,", (".cu",)),
            "meta function": find(rf"TORCH_META_FUNC\(\s*{name}\s*\)", (".cpp",)),
        }
        if impl:
            found["impl function"] = find(rf"TORCH_IMPL_FUNC\(\s*{re.escape(impl)}\s*\)", (".cpp",))
        for what, where in found.items():
            if where is None:
                hint = {
                    "declared": self.files.get("header", "aten/src/ATen/native/UnaryOps.h"),
                    "registered for CPU": self.files.get("CPU kernel", meta_impl),
                    "registered for CUDA": self.files.get("CUDA kernel", meta_impl),
                }.get(what, meta_impl)
                label = (
                    f"`{stub}` is not {what}"
                    if what.startswith(("declared", "defined", "called", "registered"))
                    else f"no {what} "
                    + (
                        f"TORCH_IMPL_FUNC({impl}) matching the dispatch entry"
                        if what == "impl function"
                        else f"TORCH_META_FUNC({name})"
                    )
                )
                problems.append((label, hint))
        if problems:
            detail = "; ".join(p for p, _ in problems)
            return Step("stub and impl consistent across files", FAILED, detail, problems[0][1])
        return Step(
            "stub and impl consistent across files",
            PASSED,
            f"{stub} declared ({found['declared']}), defined ({found['defined']}), registered "
            f"for CPU ({found['registered for CPU']}) and CUDA ({found['registered for CUDA']}); "
            f"TORCH_IMPL_FUNC({impl}) matches `CPU, CUDA: {impl}`",
        )

    def _sources(self, native: Path) -> list[tuple[str, str]]:
        """Native sources that mention the op (the manifest's files first)."""
        seen: dict[str, str] = {}
        for rel in self.files.values():
            path = self.checkout / rel
            if path.is_file() and path.suffix in (".h", ".cpp", ".cu"):
                seen[rel] = path.read_text("utf-8", errors="replace")
        if native.is_dir():
            for path in native.rglob("*"):
                if path.suffix not in (".h", ".cpp", ".cu") or not path.is_file():
                    continue
                rel = path.relative_to(self.checkout).as_posix()
                if rel in seen:
                    continue
                text = path.read_text("utf-8", errors="replace")
                if f"{self.name}_stub" in text or f"({self.name}" in text:
                    seen[rel] = text
        return list(seen.items())

    # -- 3 ---------------------------------------------------------------
    def full_codegen(self) -> Step:
        start = time.monotonic()
        yaml = self.checkout / NATIVE_YAML
        tags = self.checkout / TAGS_YAML
        templates = self.checkout / "aten" / "src" / "ATen" / "templates"
        if not templates.is_dir():
            templates = self.env.torchgen_dir / "packaged" / "ATen" / "templates"
        key = _fingerprint(yaml, tags, templates, self.env.torchgen_dir, "full-codegen-1")
        out = self.cache / "codegen"
        stamp = out / "onboard-key"
        cached = stamp.is_file() and stamp.read_text() == key
        if not cached:
            src = self.cache / "codegen-src"
            for folder in (out, src):
                if folder.exists():
                    shutil.rmtree(folder)
            (src / "native").mkdir(parents=True)
            shutil.copyfile(yaml, src / "native" / "native_functions.yaml")
            shutil.copyfile(tags, src / "native" / "tags.yaml")
            os.symlink(templates, src / "templates")
            result = proc.run(
                [
                    self.env.python,
                    "-m",
                    "torchgen.gen",
                    "-s",
                    str(src),
                    "-d",
                    str(out),
                    "--per-operator-headers",
                    "--aoti-install-dir",
                    str(out / "aoti"),
                ],
                **torchenv.isolated(self.cache),
                timeout=CODEGEN_TIMEOUT,
                check=False,
                what="full torchgen codegen",
            )
            if result.returncode != 0:
                return Step(
                    "full torchgen codegen",
                    FAILED,
                    f"python -m torchgen.gen failed: {_tail(result.stderr or result.stdout)}",
                    self._yaml_location(result.stderr),
                    time.monotonic() - start,
                )
        missing = []
        checks = {
            "RegisterSchema.cpp": [
                f'm.def("{self.name}(',
                f'm.def("{self.name}.out(',
                f'm.def("{self.name}_(',
            ],
            "RegisterCPU_*.cpp": [f"wrapper_CPU_{self.name}("],
            "RegisterCUDA_*.cpp": [f"wrapper_CUDA_{self.name}("],
            "RegisterMeta_*.cpp": [f"wrapper_Meta_{self.name}("],
            "NativeFunctions.h": [f"#include <ATen/ops/{self.name}_native.h>"],
        }
        for pattern, needles in checks.items():
            texts = [p.read_text("utf-8", errors="replace") for p in out.glob(pattern)]
            for needle in needles:
                if not any(needle in t for t in texts):
                    missing.append(f"{needle} in {pattern}")
        if not (out / "ops" / f"{self.name}_native.h").is_file():
            missing.append(f"ops/{self.name}_native.h")
        seconds = time.monotonic() - start
        if missing:
            return Step(
                "full torchgen codegen",
                FAILED,
                "missing from the generated files: " + ", ".join(missing),
                self._yaml_location(""),
                seconds,
            )
        stamp.write_text(key)
        return Step(
            "full torchgen codegen",
            PASSED,
            f"aten::{self.name} is in RegisterSchema, RegisterCPU, RegisterCUDA, "
            f"RegisterMeta, NativeFunctions.h and ops/{self.name}_native.h ({out})",
            seconds=seconds,
            cached=cached,
        )

    # -- 4 ---------------------------------------------------------------
    def _overlay(self) -> Path:
        """Headers the compile sees before the installed ones: the op's generated
        headers and the checkout's edited stub header."""
        overlay = self.gen_dir / "include"
        header = self.files.get("header")
        if header:
            src = self.checkout / header
            dest = overlay / header.removeprefix("aten/src/")
            if src.is_file():
                _write_if_changed(dest, src.read_text("utf-8"))
        return overlay

    def compile_and_run(self) -> list[Step]:
        start = time.monotonic()
        kernel = self.files.get("CPU kernel")
        meta_impl = self.files.get("meta/impl")
        test_file = self.files.get("test", f"test/test_{self.name}.py")
        missing = [r for r in (kernel, meta_impl) if not r or not (self.checkout / r).is_file()]
        if missing:
            return [
                Step(
                    "compile (CPU, out of tree)",
                    FAILED,
                    f"missing scaffold file(s): {', '.join(str(m) for m in missing)}",
                    str(missing[0]),
                )
            ]
        assert kernel is not None and meta_impl is not None
        reference, ref_line, ref_error = _reference(self.checkout, test_file)
        build = self.cache / "build"
        build.mkdir(exist_ok=True)
        overlay = self.overlay
        header_include = self.manifest.family.header.removeprefix("aten/src/")
        glue = build / "glue"
        _write_if_changed(
            glue / "kernel_default.cpp",
            render("newop/verify/kernel_default.cpp.j2", kernel_path=str(self.checkout / kernel)),
        )
        schema = "".join(self.facts.get("schema_registrations", []))
        shim = render(
            "newop/verify/stub_shim.cpp.j2",
            header_include=header_include,
            stubs=[f"{self.name}_stub"],
        )
        shim += "\n#include <torch/library.h>\n#include <ATen/core/enum_tag.h>\n\n"
        shim += "// The op's schemas, as RegisterSchema.cpp registers them in tree.\n"
        shim += "TORCH_LIBRARY_FRAGMENT(aten, m) {\n" + schema + "}\n"
        _write_if_changed(glue / "schema_and_shim.cpp", shim)
        sources = [
            str(self.checkout / meta_impl),
            str(glue / "kernel_default.cpp"),
            str(glue / "schema_and_shim.cpp"),
            str(self.gen_dir / f"RegisterCPU_{self.name}.cpp"),
            str(self.gen_dir / f"RegisterMeta_{self.name}.cpp"),
        ]
        request = {
            "module": f"onboard_newop_{self.name}",
            "name": self.name,
            "kind": self.manifest.family.kind,
            "supported": list(self.manifest.family.supported_dtypes),
            "sources": sources,
            "cflags": list(CXX_FLAGS),
            "include_paths": [str(overlay)],
            "build_dir": str(build),
            "reference": reference or "None",
            "reference_file": f"{test_file}:{ref_line or 1}",
        }
        extra = {
            "ATEN_CPU_CAPABILITY": "default",
            "MAX_JOBS": str(os.cpu_count() or 2),
            "TORCH_EXTENSIONS_DIR": str(build),
        }
        result = proc.run(
            [
                self.env.python,
                str(Path(__file__).with_name("_compile_child.py")),
                json.dumps(request),
            ],
            cwd=build,
            timeout=COMPILE_TIMEOUT,
            check=False,
            extra_env={**extra, **torchenv.SAFE_PATH_ENV},
            what="the out-of-tree compile",
        )
        payload = _marker(result, "@@ONBOARD-COMPILE@@")
        seconds = time.monotonic() - start
        if payload is None:
            return [
                Step(
                    "compile (CPU, out of tree)",
                    FAILED,
                    f"the compile child died (exit {result.returncode}): "
                    f"{_tail(result.stderr or result.stdout)}",
                    kernel,
                    seconds,
                )
            ]
        if not payload.get("built"):
            log = payload.get("log", "") + "\n" + result.stdout + "\n" + result.stderr
            where, message = _first_compiler_error(log, self.checkout)
            return [
                Step(
                    "compile (CPU, out of tree)",
                    FAILED,
                    f"{message} (full log: {payload.get('log_path')})",
                    where,
                    seconds,
                )
            ]
        steps = [
            Step(
                "compile (CPU, out of tree)",
                PASSED,
                f"{meta_impl}, {kernel} and torchgen's CPU/Meta wrappers built against "
                f"torch in {self.env.torch_dir} and loaded",
                seconds=seconds,
            )
        ]
        ref_loc = _loc(self.checkout, test_file, ref_line)
        if ref_error or reference is None:
            steps.append(
                Step("numerics against REFERENCE", FAILED, ref_error or "no REFERENCE", ref_loc)
            )
            return steps
        if payload.get("reference_error"):
            steps.append(
                Step("numerics against REFERENCE", FAILED, payload["reference_error"], ref_loc)
            )
            return steps
        steps.append(self._numerics_step(payload["cases"], kernel, ref_loc, reference))
        checks = payload["checks"]
        meta = checks["meta"]
        steps.append(
            Step(
                "meta device",
                PASSED if meta["ok"] else FAILED,
                meta["detail"],
                None
                if meta["ok"]
                else f"{meta_impl}:"
                f"{_first_line_of(self.checkout / meta_impl, 'TORCH_META_FUNC') or 1}",
            )
        )
        meta_line = _first_line_of(self.checkout / meta_impl, "TORCH_META_FUNC") or 1
        bad = {k: v for k, v in checks["opcheck"].items() if not v["ok"]}
        if bad:
            detail = "; ".join(f"{k}: {v['detail']}" for k, v in bad.items())
            steps.append(
                Step(
                    "torch.library.opcheck",
                    FAILED,
                    detail,
                    f"{meta_impl}:{meta_line}",
                )
            )
        else:
            steps.append(
                Step(
                    "torch.library.opcheck",
                    PASSED,
                    "test_schema, test_autograd_registration, test_faketensor pass for "
                    + ", ".join(checks["opcheck"]),
                )
            )
        return steps

    def _numerics_step(
        self, cases: list[dict[str, Any]], kernel: str, ref_loc: str, reference: str
    ) -> Step:
        failed = [c for c in cases if not c.get("ok")]
        unsupported = sorted({c["dtype"] for c in cases if c.get("unsupported")})
        checked = sorted(
            {c["dtype"] for c in cases if c.get("ok") and not c.get("unsupported")},
            key=["float32", "float64", "bfloat16", "float16", "int64"].index,
        )
        if not failed:
            detail = (
                f"functional, out= and in-place match `{reference}` for "
                f"{', '.join(checked)} (Vectorized and scalar paths)"
            )
            if unsupported:
                detail += f"; {', '.join(unsupported)} not supported, as scaffolded"
            return Step("numerics against REFERENCE", PASSED, detail)
        first = failed[0]
        path = self.checkout / kernel
        if first["variant"] == "reference":
            where = ref_loc
        elif first["dtype"] == "int64" and _first_line_of(path, "cpu_kernel(") is not None:
            where = _loc(self.checkout, kernel, _first_line_of(path, "cpu_kernel("))
        else:
            vec = _first_line_of(path, "cpu_kernel_vec(") or 0
            if first["path"] == "vector":
                line = _first_line_of(path, "Vectorized<", vec)
            else:
                line = _first_line_of(path, re.compile(r"\bscalar_t\b.*->|->\s*scalar_t"), vec)
            where = _loc(self.checkout, kernel, line or vec or None)
        shown = [f"{c['dtype']}/{c['variant']}/{c['path']}" for c in failed[:6]]
        lane = "Vectorized" if first["path"] == "vector" else "scalar"
        detail = (
            f"{len(failed)} of {len(cases)} cases differ from REFERENCE `{reference}` "
            f"({ref_loc}): {', '.join(shown)}{' ...' if len(failed) > 6 else ''}; first: "
            f"{first.get('error', '')}"
        )
        if first["variant"] != "reference":
            detail += f" - look at the {lane} lambda"
        return Step("numerics against REFERENCE", FAILED, detail, where)

    # -- 5 ---------------------------------------------------------------
    def nvcc_check(self) -> Step:
        start = time.monotonic()
        nvcc = proc.which("nvcc")
        cu = self.files.get("CUDA kernel")
        if nvcc is None:
            return Step("CUDA kernel compiles (nvcc)", NOT_CHECKED, "nvcc is not on PATH")
        if not cu or not (self.checkout / cu).is_file():
            return Step("CUDA kernel compiles (nvcc)", FAILED, "the .cu file is missing", cu)
        overlay = self.overlay
        standins = self.cache / "cuda-standins"
        for header, template in CUDA_STANDINS.items():
            _write_if_changed(standins / header, render(f"newop/verify/{template}"))
        args = [
            nvcc,
            "-std=c++20",
            "-x",
            "cu",
            "-c",
            str(self.checkout / cu),
            "-o",
            os.devnull,
            "-I",
            str(overlay),
            "-I",
            str(standins),
            "-isystem",
            str(self.env.torch_dir / "include"),
            "-isystem",
            str(self.env.torch_dir / "include" / "torch" / "csrc" / "api" / "include"),
            "--expt-relaxed-constexpr",
            "--expt-extended-lambda",
            "-Xcompiler",
            "-fPIC",
            "-DHAVE_AVX2_CPU_DEFINITION",
            "-DHAVE_AVX512_CPU_DEFINITION",
        ]
        version = proc.run([nvcc, "--version"], timeout=60, check=False).stdout
        stub_header = self.files.get("header")
        key = _fingerprint(
            self.checkout / cu,
            *(self.checkout / h for h in [stub_header] if h),
            " ".join(args),
            version,
            self.env.torch_dir,
        )
        stamp = self.cache / "nvcc-ok"
        if stamp.is_file() and stamp.read_text() == key:
            return Step(
                "CUDA kernel compiles (nvcc)", PASSED, f"{cu} compiles (cached)", cached=True
            )
        result = proc.run(
            args, cwd=self.cache, timeout=COMPILE_TIMEOUT, check=False, what="nvcc compile check"
        )
        seconds = time.monotonic() - start
        if result.returncode != 0:
            where, message = _first_compiler_error(result.stderr + result.stdout, self.checkout)
            return Step("CUDA kernel compiles (nvcc)", FAILED, message, where or cu, seconds)
        stamp.write_text(key)
        return Step(
            "CUDA kernel compiles (nvcc)",
            PASSED,
            f"{cu} compiles with nvcc (compile only; stand-ins for cuBLAS/cuSPARSE/"
            "cuSOLVER headers)",
            seconds=seconds,
        )

    # -- all -------------------------------------------------------------
    def run(self) -> OpVerification:
        start = time.monotonic()
        out = OpVerification(self.name)
        self.reporter.step(f"aten::{self.name}: torchgen parse and load_derivatives")
        out.steps += self.torchgen_parse()
        if any(s.status == FAILED for s in out.steps):
            out.steps += [
                Step(n, NOT_CHECKED, "skipped: torchgen rejected the yaml")
                for n in (
                    "full torchgen codegen",
                    "compile (CPU, out of tree)",
                    "CUDA kernel compiles (nvcc)",
                )
            ]
        else:
            out.steps.append(self.consistency())
            self.overlay = self._overlay()
            self.reporter.step(f"aten::{self.name}: full codegen, CPU compile and numerics, nvcc")
            with ThreadPoolExecutor(max_workers=3) as pool:
                full = pool.submit(self.full_codegen)
                cpu = pool.submit(self.compile_and_run)
                cuda = pool.submit(self.nvcc_check)
                out.steps.append(full.result())
                out.steps += cpu.result()
                out.steps.append(cuda.result())
        out.steps += [Step(what, NOT_CHECKED, why) for what, why in NOT_VERIFIED]
        out.seconds = time.monotonic() - start
        return out


def _write_if_changed(path: Path, text: str) -> None:
    """Keep mtimes of unchanged inputs, so ninja does not rebuild them."""
    try:
        if path.read_text("utf-8") == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def _marker(result: proc.Result, marker: str) -> dict[str, Any] | None:
    for line in result.stdout.splitlines():
        if line.startswith(marker):
            data: dict[str, Any] = json.loads(line[len(marker) :])
            return data
    return None


def _tail(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


_GCC_ERROR = re.compile(
    r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(?P<msg>.*)$"
)
_NVCC_ERROR = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+)\):\s*error:\s*(?P<msg>.*)$")


def _first_compiler_error(log: str, checkout: Path) -> tuple[str | None, str]:
    """(checkout-relative "path:line", message) of the first error, preferring checkout files."""
    errors: list[tuple[str, int, str]] = []
    for text in log.splitlines():
        mo = _GCC_ERROR.match(text.strip()) or _NVCC_ERROR.match(text.strip())
        if mo:
            errors.append((mo.group("path"), int(mo.group("line")), mo.group("msg")))
    if not errors:
        return None, "the compiler failed: " + _tail(log, 4)
    root = str(checkout.resolve())
    ours = [e for e in errors if os.path.abspath(e[0]).startswith(root + os.sep)]
    path, line, msg = (ours or errors)[0]
    shown = os.path.relpath(os.path.abspath(path), root) if ours else path
    return f"{shown}:{line}", f"error: {msg}"


def verify_op(ws: Workspace, name: str, *, reporter: Reporter | None = None) -> OpVerification:
    """Verify one scaffolded op in the workspace checkout."""
    reporter = reporter or Reporter()
    neutral = ws.root / ".onboard"
    neutral.mkdir(parents=True, exist_ok=True)
    env = _locate_env(ws.python or sys.executable, neutral)
    return _OpCheck(ws, name, reporter, env).run()


def scaffolded_ops(ws: Workspace) -> tuple[list[str], list[str]]:
    """(ops new-op scaffolded that this checkout has, ones it lacks: another branch)."""
    present, absent = [], []
    yaml = ws.checkout_path / NATIVE_YAML
    text = yaml.read_text("utf-8") if yaml.is_file() else ""
    for name in manifests.names(ws.root):
        if re.search(rf"^- func:\s*{re.escape(name)}\(", text, re.M):
            present.append(name)
        else:
            absent.append(name)
    return present, absent

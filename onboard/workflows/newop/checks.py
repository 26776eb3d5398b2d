"""Verify a scaffolded op as far as a CPU machine can (docs/pytorch-facts.md: "Checking a
scaffolded op without building PyTorch").

1. torchgen parses the checkout's native_functions.yaml; ``load_derivatives``
   accepts derivatives.yaml (a child running the installed torchgen).
2. Cross-file consistency: the stub is declared, defined, called, and registered
   for CPU (a native/cpu/ file) and CUDA (a .cu file); the impl name matches the
   dispatch entry torchgen read.
3. Full torchgen codegen: the op is in RegisterSchema, RegisterCPU,
   RegisterCUDA and RegisterMeta (``torchgen_checks``).
4. A real compile with ``torch.utils.cpp_extension.load`` of the meta/impl file,
   the CPU kernel, torchgen's wrappers for this op and its schema, against the
   installed torch; loaded in a child with ``ATEN_CPU_CAPABILITY=default``;
   numerics against REFERENCE (the scaffold's test file), the meta device,
   ``torch.library.opcheck`` (``out_of_tree``).
5. With nvcc on PATH: a compile-only check of the .cu with stand-in headers for
   the CUDA libraries a CPU machine lacks.
6. Every placeholder the scaffold wrote (``TODO(onboard new-op)``) has been
   written: a placeholder kernel checked against a placeholder REFERENCE passes
   every numeric check, so this is what says the op is not written yet.
7. What was not verified, said plainly.

Every failure names the file and line to look at. The steps are jobs
(``jobs.run_jobs``): the parse, nvcc and the full codegen start at once, the
compile as soon as the parse is done, within the machine's cores; each start
and end is reported as it happens. Results are cached under
``<workspace>/.onboard/cache/newop/NAME`` by the content of their inputs, and
the compile is incremental (ninja), so a warm verify reruns only the numerics.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard.report import Reporter
from onboard.workflows.newop import jobs, out_of_tree, placeholders, sites, torchgen_checks
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop.names import NATIVE_YAML
from onboard.workflows.newop.out_of_tree import COMPILE_STEP, NUMERICS_STEP
from onboard.workflows.newop.steps import (
    FAILED,
    NOT_CHECKED,
    PASSED,
    OpVerification,
    Step,
    write_if_changed,
)
from onboard.workflows.newop.toolchain import (
    Env,
    nvcc_step,
    workspace_env,
)

if TYPE_CHECKING:
    from onboard.workspace import Workspace

__all__ = ["OpVerification", "Step", "scaffolded_ops", "verify_op"]

WRITTEN_STEP = "no new-op placeholder left"
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

# The order a report lists the steps in, whichever job finished first.
ORDER = (
    WRITTEN_STEP,
    torchgen_checks.PARSE_STEP,
    torchgen_checks.DERIVATIVES_STEP,
    "stub and impl consistent across files",
    torchgen_checks.FULL_STEP,
    COMPILE_STEP,
    NUMERICS_STEP,
    "meta device",
    "torch.library.opcheck",
)


def job_status(result: Step | list[Step]) -> str:
    """The word a progress line ends with: the worst status among a job's steps."""
    steps = result if isinstance(result, list) else [result]
    statuses = {s.status for s in steps}
    for status in (FAILED, NOT_CHECKED, PASSED):
        if status in statuses:
            return status
    return "done"


def cache_dir(ws: Workspace, name: str) -> Path:
    path = ws.root / ".onboard" / "cache" / "newop" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def codegen_cache(ws: Workspace) -> Path:
    return ws.root / ".onboard" / "cache" / "codegen"


class _OpCheck:
    """One scaffolded op's verification, as jobs."""

    def __init__(self, ws: Workspace, name: str, reporter: Reporter, env: Env) -> None:
        self.ws = ws
        self.name = name
        self.reporter = reporter
        self.env = env
        self.checkout = ws.checkout_path
        self.manifest = manifests.load(ws.root, name)
        self.files = self.manifest.files
        self.cache = cache_dir(ws, name)
        self.facts: dict[str, Any] = {}
        self.gen_dir = self.cache / "gen"  # the parse step remakes it
        self.overlay = self.cache / "include"

    # -- 1 ---------------------------------------------------------------
    def torchgen_parse(self) -> list[Step]:
        parsed = torchgen_checks.parse(
            self.checkout, self.name, self.env, self.gen_dir, cwd=self.cache
        )
        self.facts = parsed.facts
        steps = parsed.steps
        if parsed.ok:
            steps.append(consistency(self.checkout, self.name, self.files, self.facts))
        return steps

    # -- 4 ---------------------------------------------------------------
    def _overlay(self) -> Path:
        """The checkout's edited stub header, seen before the installed one (the op's
        generated headers come next, from the parse step's folder)."""
        header = self.files.get("header")
        if header:
            src = self.checkout / header
            if src.is_file():
                dest = self.overlay / header.removeprefix("aten/src/")
                write_if_changed(dest, src.read_text("utf-8"))
        return self.overlay

    def compile_and_run(self) -> list[Step]:
        if not self.facts:
            return [
                Step(n, NOT_CHECKED, "skipped: torchgen rejected the yaml")
                for n in (COMPILE_STEP, NUMERICS_STEP)
            ]
        return out_of_tree.compile_and_run(
            self.checkout,
            self.manifest,
            self.env,
            facts=self.facts,
            gen_dir=self.gen_dir,
            overlay=self.overlay,
            build=self.cache / "build",
        )

    # -- 5 ---------------------------------------------------------------
    def nvcc_check(self) -> Step:
        header = self.files.get("header")
        return nvcc_step(
            checkout=self.checkout,
            cu=self.files.get("CUDA kernel"),
            cache=self.cache,
            env=self.env,
            include_dirs=[self.overlay],
            inputs=[self.checkout / header] if header else [],
        )

    # -- all -------------------------------------------------------------
    def run(self) -> OpVerification:
        start = time.monotonic()
        self.overlay = self._overlay()
        op = f"aten::{self.name}"
        parse = f"{op}: torchgen parse, load_derivatives, consistency"
        results = jobs.run_jobs(
            [
                jobs.Job(parse, self.torchgen_parse, priority=3, status=job_status),
                jobs.Job(
                    f"{op}: CPU compile and numerics",
                    self.compile_and_run,
                    after=(parse,),
                    priority=3,
                    status=job_status,
                ),
                jobs.Job(f"{op}: nvcc", self.nvcc_check, priority=2, status=job_status),
                jobs.Job(
                    f"{op}: full torchgen codegen",
                    lambda: torchgen_checks.full_codegen(
                        self.checkout, self.name, self.env, codegen_cache(self.ws)
                    ),
                    priority=1,
                    status=job_status,
                ),
            ],
            self.reporter,
        )
        out = OpVerification(self.name)
        for result in results.values():
            out.steps += result if isinstance(result, list) else [result]
        out.steps.append(written(self.checkout, self.manifest))
        out.steps.sort(key=lambda s: ORDER.index(s.name) if s.name in ORDER else len(ORDER))
        out.steps += [Step(what, NOT_CHECKED, why) for what, why in NOT_VERIFIED]
        out.seconds = time.monotonic() - start
        return out


def consistency(checkout: Path, name: str, files: dict[str, str], facts: dict[str, Any]) -> Step:
    """The stub is declared, defined, called and registered for CPU and CUDA; the impl
    function matches the dispatch entry torchgen read."""
    stub = f"{name}_stub"
    kernels = facts.get("kernels", {})
    problems: list[tuple[str, str]] = []
    impl = kernels.get("CPU")
    yaml_at = torchgen_checks.yaml_location(checkout, name, "")
    if impl is None or kernels.get("CUDA") is None:
        problems.append((f"the `{name}.out` entry has no CPU/CUDA dispatch", yaml_at))
    elif kernels.get("CUDA") != impl:
        problems.append((f"CPU dispatches to {impl} but CUDA to {kernels['CUDA']}", yaml_at))
    texts = sites.sources(checkout, name, files.values())
    registered = sites.registrations(texts, stub)
    meta_impl = files.get("meta/impl", f"aten/src/ATen/native/{name}.cpp")
    found = {
        # One DECLARE_DISPATCH(...) call: no ';' ends them now, so `[^;]*` ran from
        # the header's first declaration (abs_stub) to this one and named its line.
        "declared": sites.find(
            texts, rf"DECLARE_DISPATCH\((?:[^;()]|\([^()]*\))*?\b{stub}\s*\)", (".h",)
        ),
        "defined": sites.find(texts, rf"DEFINE_DISPATCH\(\s*{stub}\s*\)", (".cpp",)),
        "called": sites.find(texts, rf"\b{stub}\s*\(\s*device_type\(\)", (".cpp",)),
        "registered for CPU": next(iter(registered["CPU"]), None),
        "registered for CUDA": next(iter(registered["CUDA"]), None),
        "meta function": sites.find(texts, rf"TORCH_META_FUNC\(\s*{name}\s*\)", (".cpp",)),
    }
    if impl:
        pattern = rf"TORCH_IMPL_FUNC\(\s*{re.escape(impl)}\s*\)"
        found["impl function"] = sites.find(texts, pattern, (".cpp",))
    for what, where in found.items():
        if where is not None:
            continue
        hint = {
            "declared": files.get("header", "aten/src/ATen/native/UnaryOps.h"),
            "registered for CPU": files.get("CPU kernel", meta_impl),
            "registered for CUDA": files.get("CUDA kernel", meta_impl),
        }.get(what, meta_impl)
        if what.startswith(("declared", "defined", "called", "registered")):
            label = f"`{stub}` is not {what}"
        elif what == "impl function":
            label = f"no impl function TORCH_IMPL_FUNC({impl}) matching the dispatch entry"
        else:
            label = f"no meta function TORCH_META_FUNC({name})"
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


def written(checkout: Path, manifest: manifests.Manifest) -> Step:
    """Whether any part is still the scaffold's placeholder (``placeholders``); a file
    of the scaffold that is not there was not read, so it is not said to be written."""
    found = placeholders.unwritten(checkout, manifest)
    missing = sorted({rel for rel in manifest.files.values() if not (checkout / rel).is_file()})
    if not found and missing:
        return Step(
            WRITTEN_STEP,
            NOT_CHECKED,
            f"not read: {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''} "
            "of the scaffold is not in the checkout (another branch?)",
            missing[0],
        )
    if not found:
        return Step(
            WRITTEN_STEP,
            PASSED,
            f"none of the scaffold's {placeholders.MARKER} placeholders is left as new-op wrote it",
        )
    return Step(
        WRITTEN_STEP,
        FAILED,
        f"not written yet, still as new-op wrote them: {placeholders.summary(found)}. Write "
        f"each and delete its {placeholders.MARKER} line (delete the line alone where the "
        "placeholder is already right)",
        found[0].location,
    )


def verify_op(ws: Workspace, name: str, *, reporter: Reporter | None = None) -> OpVerification:
    """Verify one scaffolded op in the workspace checkout."""
    reporter = reporter or Reporter()
    env = workspace_env(ws)
    return _OpCheck(ws, name, reporter, env).run()


def scaffolded_ops(ws: Workspace) -> tuple[list[str], list[str]]:
    """(ops new-op scaffolded that this checkout has, ones it lacks: another branch)."""
    present, absent = [], []
    yaml = ws.checkout_path / NATIVE_YAML
    text = yaml.read_text("utf-8") if yaml.is_file() else ""
    for name in manifests.names(ws.root):
        if manifests.load(ws.root, name).is_practice:
            continue  # judge.practice_ops
        if re.search(rf"^- func:\s*{re.escape(name)}\(", text, re.M):
            present.append(name)
        else:
            absent.append(name)
    return present, absent

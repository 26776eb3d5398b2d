"""Judge a practice kernel (``onboard new-op EXISTING``) against the installed torch.

The learner's CPU kernel file is built with the very compile new-op verify uses
(``toolchain``: torch.utils.cpp_extension against the installed torch, the
DEFAULT capability, the stub shim), with its ``NAME_stub`` renamed for this
build so it cannot touch the installed torch's own stub. A small generated file
calls the stub through a TensorIterator built as PyTorch's meta function builds
it and registers the result as ``onboard_practice::NAME``; in the child,
``_oracle_checks.py`` compares it with ``torch.ops.aten.NAME`` on every dtype
the installed op accepts. The .cu gets the same compile-only nvcc check as a
new op's. What cannot be checked here is said so.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import git
from onboard.render import render
from onboard.report import Reporter
from onboard.workflows.newop import jobs, sites
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop.checks import job_status
from onboard.workflows.newop.names import NATIVE_YAML
from onboard.workflows.newop.out_of_tree import COMPILE_STEP, build_and_load
from onboard.workflows.newop.steps import (
    FAILED,
    NOT_CHECKED,
    PASSED,
    OpVerification,
    Step,
    first_line_of,
    loc,
    write_if_changed,
)
from onboard.workflows.newop.toolchain import (
    CXX_FLAGS,
    Env,
    kernel_unit,
    nvcc_step,
    workspace_env,
)

if TYPE_CHECKING:
    from onboard.workflows.newop.family import Family
    from onboard.workspace import Workspace

_ITERATORS = {
    "build_borrowing_unary_op": "unary_op",
    "build_borrowing_unary_float_op": "unary_float_op",
    "build_borrowing_binary_op": "binary_op",
    "build_borrowing_binary_float_op": "binary_float_op",
}
NOT_VERIFIED = (
    (
        "in-tree build",
        "building PyTorch on this branch (the AVX2/AVX512 copies of your kernel, torch.NAME "
        "calling it) needs a full checkout and `onboard build`",
    ),
    (
        "CUDA numerics",
        "your .cu was at most compiled; running it needs a GPU and a CUDA build of torch",
    ),
)


def numerics_step(name: str) -> str:
    return f"numerics against torch.{name}"


def placeholder_line(path: Path, manifest: manifests.Manifest) -> int | None:
    """The marked line, when it still returns the placeholder practice wrote."""
    marker = manifest.practice.get("marker", "PRACTICE(onboard)")
    placeholder = manifest.practice.get("placeholder", "a")
    line = first_line_of(path, marker)
    if line is None:
        return None
    text = path.read_text("utf-8", errors="replace").splitlines()[line - 1]
    return line if re.match(rf"\s*return\s+{re.escape(placeholder)}\s*;", text) else None


def registrations(checkout: Path, manifest: manifests.Manifest) -> Step:
    """The learner's files register the stub, and nothing else does (an in-tree build
    would register it twice)."""
    stub = f"{manifest.name}_stub"
    what = f"your kernels register {stub}"
    cpu, cu = manifest.files.get("CPU kernel", ""), manifest.files.get("CUDA kernel", "")
    texts = sites.sources(checkout, manifest.name, [cpu, cu])
    found = sites.registrations(texts, stub)
    problems = []
    for key, mine in (("CPU", cpu), ("CUDA", cu)):
        hits = found[key]
        if not any(h.rsplit(":", 1)[0] == mine for h in hits):
            problems.append((f"{mine} does not register {stub} for {key}", mine))
        others = [h for h in hits if h.rsplit(":", 1)[0] != mine]
        if others:
            problems.append(
                (
                    f"{stub} is also registered for {key} at {', '.join(others)}: an "
                    "in-tree build would register it twice",
                    others[0],
                )
            )
    if problems:
        return Step(what, FAILED, "; ".join(p for p, _ in problems), problems[0][1])
    return Step(what, PASSED, f"REGISTER_DISPATCH({stub}, ...) in {cpu} and {cu} only")


def pytorch_parts(checkout: Path, manifest: manifests.Manifest) -> Step:
    """The yaml entry and the stub's declaration are PyTorch's own, so torchgen's code for
    the op is what the installed torch was built with: nothing to regenerate."""
    what = "yaml entry and DispatchStub declaration (PyTorch's own)"
    header = manifest.files.get("header", "")
    base = manifest.practice.get("base_commit")
    paths = [p for p in (NATIVE_YAML, header) if p]
    changed: list[str] = []
    if base and git.refs.rev_parse(checkout, base):
        changed = git.core.out(checkout, "diff", "--name-only", base, "--", *paths).split()
    if changed:
        return Step(
            what,
            NOT_CHECKED,
            f"you changed {', '.join(changed)}; practice judges the kernel, against "
            "PyTorch's own entries (`onboard new-op NEW_NAME` checks yaml you write)",
            changed[0],
        )
    return Step(
        what,
        PASSED,
        f"{', '.join(paths)} unchanged since the practice began: torchgen's code for "
        f"aten::{manifest.name} is the installed torch's own (not regenerated)",
    )


def cuda_written(checkout: Path, manifest: manifests.Manifest) -> Step:
    what = "CUDA kernel written"
    cu = manifest.files.get("CUDA kernel", "")
    line = placeholder_line(checkout / cu, manifest)
    if line is not None:
        return Step(
            what,
            FAILED,
            f"{cu}:{line} still returns the placeholder: write {manifest.name}'s math there "
            "too (nvcc compiles it here; it runs only on a GPU)",
            f"{cu}:{line}",
        )
    return Step(what, PASSED, f"the marked line of {cu} is yours")


def practice_glue(glue: Path, name: str, fam: Family) -> Path:
    """The generated file that calls the learner's stub through a TensorIterator built
    as the op's meta function builds it, registered as ``onboard_practice::NAME``."""
    unary = fam.kind == "unary"
    text = render(
        "practice/practice_glue.cpp.j2",
        name=name,
        header_include=fam.header.removeprefix("aten/src/"),
        meta_builder=fam.meta_builder,
        iterator=_ITERATORS[fam.meta_builder],
        copies_integers=fam.int_path == "no_op",
        cpp_args="const at::Tensor& self" + ("" if unary else ", const at::Tensor& other"),
        cpp_arg_names="self" if unary else "self, other",
        inplace_args="at::Tensor& self" + ("" if unary else ", const at::Tensor& other"),
        schema_args="Tensor self" + ("" if unary else ", Tensor other"),
        inplace_extra="" if unary else ", Tensor other",
    )
    path = glue / "practice_glue.cpp"
    write_if_changed(path, text)
    return path


def oracle_numerics(
    checkout: Path, manifest: manifests.Manifest, payload: dict[str, Any], cpu: str
) -> Step:
    """The learner's kernel against the installed ``torch.NAME``, dtype by dtype."""
    name = manifest.name
    what = numerics_step(name)
    oracle = f"torch.{name} (the installed torch {payload.get('torch_version')})"
    entries = payload["dtypes"]
    judged = [e for e in entries if "unsupported" not in e]
    unsupported = [e["dtype"] for e in entries if "unsupported" in e]
    copied = set(manifest.practice.get("copied_dtypes", []))
    bad = [e for e in judged if e["differing"]]
    line = first_line_of(checkout / cpu, manifest.practice.get("marker", "PRACTICE"))
    where = loc(cpu, line)
    cases = sum(e["cases"] for e in judged)
    if not bad:
        yours = [e["dtype"] for e in judged if e["dtype"] not in copied]
        detail = (
            f"your kernel gives what {oracle} gives on {', '.join(yours)}: {cases} cases of "
            "edge values (nan, +-inf, -0.0, subnormals, the largest finite values, integer "
            "limits), empty, 0-dim, non-contiguous and random tensors; functional, out= "
            "and in-place"
        )
        if copied:
            detail += f"; {', '.join(sorted(copied))} are copied by {name}'s impl"
        if unsupported:
            detail += f"; {', '.join(unsupported)}: {oracle} refuses them, not judged"
        return Step(what, PASSED, detail)
    shown = []
    for entry in bad[:3]:
        head = f"{entry['dtype']}, {entry['differing']} values differ: "
        shown.append(head + "; ".join(entry["shown"][:2]))
    # Every dtype that differs is named; the examples stop at three.
    detail = (
        f"{len(bad)} of {len(judged)} dtypes differ from {oracle} "
        f"({', '.join(e['dtype'] for e in bad)}; input -> expected -> got): " + " | ".join(shown)
    )
    placeholder = placeholder_line(checkout / cpu, manifest)
    if placeholder is not None:
        detail = (
            f"You have not written the kernel yet: {cpu}:{placeholder} still returns the "
            f"placeholder. Write {name}'s math there and run `onboard verify` again. " + detail
        )
    return Step(what, FAILED, detail, where)


class _Judge:
    def __init__(self, ws: Workspace, name: str, reporter: Reporter, env: Env) -> None:
        self.ws = ws
        self.name = name
        self.reporter = reporter
        self.env = env
        self.checkout = ws.checkout_path
        self.manifest = manifests.load(ws.root, name)
        self.files = self.manifest.files
        self.cache = ws.root / ".onboard" / "cache" / "practice" / name
        self.cache.mkdir(parents=True, exist_ok=True)
        self.stub = f"{name}_stub"

    def compile_request(self, build: Path, check: str) -> dict[str, Any]:
        """What the compile child builds (the learner's CPU kernel and the glue that
        registers it as ``onboard_practice::NAME``) and which of its checks it runs:
        "oracle" here, "opinfo" for `onboard tests --run` (workflows/tests/run.py)."""
        cpu = self.files.get("CPU kernel", "")
        glue = build / "glue"
        renamed = f"onboard_practice_{self.stub}"
        return {
            "module": f"onboard_practice_{self.name}",
            "check": check,
            "name": self.name,
            "kind": self.manifest.family.kind,
            "sources": [
                str(kernel_unit(glue, self.checkout / cpu)),
                str(practice_glue(glue, self.name, self.manifest.family)),
            ],
            # The stub and its type get names of their own in this build, so the
            # installed torch's trunc_stub (and its registration) stay untouched.
            "cflags": [
                *CXX_FLAGS,
                f"-D{self.stub}={renamed}",
                f"-D{self.stub}_DECLARE_DISPATCH_type={renamed}_DECLARE_DISPATCH_type",
            ],
            "include_paths": [],
            "build_dir": str(build),
        }

    def compile_and_judge(self) -> list[Step]:
        start = time.monotonic()
        cpu = self.files.get("CPU kernel", "")
        if not (self.checkout / cpu).is_file():
            return [Step(COMPILE_STEP, FAILED, f"{cpu} is missing", cpu)]
        request = self.compile_request(self.cache / "build", "oracle")
        loaded = build_and_load(self.env, request, self.checkout, cpu, start)
        if isinstance(loaded, Step):
            return [loaded]
        payload, seconds = loaded
        built = Step(
            COMPILE_STEP,
            PASSED,
            f"{cpu} built against torch in {self.env.torch_dir} and loaded as "
            f"onboard_practice::{self.name}",
            seconds=seconds,
        )
        return [built, oracle_numerics(self.checkout, self.manifest, payload, cpu)]

    def nvcc_check(self) -> Step:
        header = self.files.get("header")
        return nvcc_step(
            checkout=self.checkout,
            cu=self.files.get("CUDA kernel"),
            cache=self.cache,
            env=self.env,
            include_dirs=[],
            inputs=[self.checkout / header] if header else [],
        )

    def run(self) -> OpVerification:
        start = time.monotonic()
        out = OpVerification(self.name)
        out.steps += [
            check(self.checkout, self.manifest)
            for check in (registrations, pytorch_parts, cuda_written)
        ]
        op = f"aten::{self.name} (practice)"
        results = jobs.run_jobs(
            [
                jobs.Job(
                    f"{op}: CPU compile, judged by torch.{self.name}",
                    self.compile_and_judge,
                    priority=3,
                    status=job_status,
                ),
                jobs.Job(f"{op}: nvcc", self.nvcc_check, priority=2, status=job_status),
            ],
            self.reporter,
        )
        for result in results.values():
            out.steps += result if isinstance(result, list) else [result]
        out.steps += [
            Step(what, NOT_CHECKED, why.replace("NAME", self.name)) for what, why in NOT_VERIFIED
        ]
        out.seconds = time.monotonic() - start
        return out


def judge_op(ws: Workspace, name: str, *, reporter: Reporter | None = None) -> OpVerification:
    """Judge the practice kernel of ``name`` in the workspace checkout."""
    env = workspace_env(ws)
    return _Judge(ws, name, reporter or Reporter(), env).run()


def practice_ops(ws: Workspace) -> tuple[list[str], list[str]]:
    """(practice ops whose files this checkout has, ones it lacks: another branch)."""
    present: list[str] = []
    absent: list[str] = []
    for name in manifests.names(ws.root):
        manifest = manifests.load(ws.root, name)
        if not manifest.is_practice:
            continue
        cpu = manifest.files.get("CPU kernel")
        (present if cpu and (ws.checkout_path / cpu).is_file() else absent).append(name)
    return present, absent


def practice_compile_request(
    ws: Workspace, name: str, env: Env, build: Path, check: str
) -> tuple[dict[str, Any], str]:
    """(the compile child's request for the practice kernel of ``name``, built in
    ``build`` against ``env``'s torch, running its ``check``; the CPU kernel's path):
    what `onboard tests --run` builds, the very compile verify's judge makes."""
    judge = _Judge(ws, name, Reporter(), env)
    return judge.compile_request(build, check), judge.files.get("CPU kernel", "")

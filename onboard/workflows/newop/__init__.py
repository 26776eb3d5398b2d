"""`onboard new-op NAME`: scaffold a structured ATen op; `onboard verify` checks it.

``scaffold`` writes the op (workflows/newop/plan.py says what goes where) on a
new branch ``onboard/new-op-NAME`` of the workspace checkout; ``verify`` (in
``verify.py``) proves what a CPU machine can. For an op PyTorch already has,
``scaffold`` makes a practice scaffold instead (``practice.py``), which
``judge.py`` checks against the installed torch; ``reveal.py`` shows how
PyTorch itself writes the op.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from onboard.errors import BadInput, OnboardError
from onboard.jsonable import spec
from onboard.report import Reporter
from onboard.shell import quote
from onboard.workflows.newop import family as families
from onboard.workflows.newop import names
from onboard.workflows.newop.plan import Plan, build, unified_diff
from onboard.workflows.newop.request import NewOpRequest

if TYPE_CHECKING:
    from onboard.workflows.newop.practice import PracticeResult
    from onboard.workflows.newop.reveal import RevealResult
    from onboard.workspace import Workspace

__all__ = ["NewOpRequest", "NewOpResult", "new_op", "scaffold", "branch_name"]


def branch_name(name: str) -> str:
    return f"onboard/new-op-{name}"


@dataclass
class NewOpResult:
    """The scaffold: what was (or, with --dry-run, would be) written where.

    JSON keys: ``ok``, ``name``, ``kind``, ``like``, ``dry_run``, ``branch``,
    ``commit`` (null on a dry run), ``checkout``, ``changes`` (path, role,
    action create|insert, line, where), ``unplaced`` (path, role, reason: files
    this checkout lacks), ``family`` (header, stub_type, int_path, float
    dtypes, ...), ``notes``, ``diff`` (the unified diff, dry run only),
    ``next_steps``, ``seconds``.
    """

    name: str
    plan: Plan = field(metadata=spec(omit=True))  # its part of the JSON: json_extra
    checkout: Path
    dry_run: bool
    branch: str
    commit: str | None = None
    diff: str = field(default="", metadata=spec(omit=True))  # json_extra: dry run only
    reference_tree: bool = field(default=False, metadata=spec(omit=True))
    seconds: float = field(default=0.0, metadata=spec(digits=3))
    next_steps: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0: what could not be written is an error (exit 1 or 2), not a result."""
        return 0

    def json_extra(self) -> dict[str, object]:
        family = self.plan.family
        return {
            "ok": True,
            "kind": family.kind,
            "like": family.like,
            "changes": self.plan.changes,
            "unplaced": self.plan.unplaced,
            "family": family,
            "notes": self.plan.notes,
            "diff": self.diff if self.dry_run else "",
        }


def new_op(
    request: NewOpRequest, reporter: Reporter | None = None
) -> NewOpResult | PracticeResult | RevealResult:
    """`onboard new-op`: ``scaffold`` in the workspace's checkout or, with ``reveal``,
    how PyTorch itself writes the existing op NAME (writing nothing)."""
    from onboard.workspace import require

    ws = require(request.workspace, writing=True)
    name = request.name
    if not request.reveal:
        return scaffold(
            ws,
            name,
            kind=request.kind,
            like=request.like,
            dry_run=request.dry_run,
            reporter=reporter,
        )
    if request.like or request.dry_run:
        raise BadInput(
            "--reveal shows an existing op and writes nothing; it takes no --like or --dry-run.",
            next_step=f"Run `onboard new-op {name} --reveal`.",
        )
    from onboard.workflows.newop.reveal import reveal as reveal_op

    return reveal_op(ws, name)


def scaffold(
    ws: Workspace,
    name: str,
    *,
    kind: str | None = None,
    like: str | None = None,
    dry_run: bool = False,
    reporter: Reporter | None = None,
) -> NewOpResult | PracticeResult:
    """Plan the op's files and, unless ``dry_run``, commit them on ``onboard/new-op-NAME``;
    for an op PyTorch already has, a practice scaffold (``practice.practise``)."""
    from onboard import transaction
    from onboard.workflows.newop import apply, manifest

    reporter = reporter or Reporter()
    start = time.monotonic()
    checkout = ws.checkout_path
    names.check_shape(name, checkout)
    yaml_path = checkout / names.NATIVE_YAML
    if not yaml_path.is_file():
        raise OnboardError(
            f"The checkout {checkout} has no {names.NATIVE_YAML}, so there is nowhere to "
            "register an op.",
            next_step="Run `onboard setup DIR --from-wheel` to make a workspace whose checkout "
            "has it.",
        )
    yaml_text = yaml_path.read_text("utf-8")
    ops = names.existing_ops(yaml_text)
    if name in ops:
        fresh = names.practice_name(name, set(ops))
        if name in manifest.names(ws.root) and not manifest.load(ws.root, name).is_practice:
            definition = names.find_definition(checkout, name, yaml_text)
            assert definition is not None
            raise BadInput(
                f"aten::{name} already exists: {definition.where()}, scaffolded by "
                f"`onboard new-op` on branch {branch_name(name)}. A new op needs a name of "
                "its own.",
                next_step=f"Pick another name, e.g. `onboard new-op {fresh}`.",
            )
        if like is not None:
            raise BadInput(
                f"aten::{name} already exists, and --like copies an op's family into a new "
                "name; on an existing op, `onboard new-op NAME` is practice mode.",
                next_step=f"Run `onboard new-op {name}` to practise on it, or "
                f"`onboard new-op {fresh} --like {like}` for a new op.",
            )
        from onboard.workflows.newop.practice import practise

        return practise(ws, name, yaml_text, kind=kind, dry_run=dry_run, reporter=reporter)
    shadowed = names.python_definition(checkout, name)
    if shadowed:
        practice = names.practice_name(name, set(ops))
        raise BadInput(
            f"`{name}` is already defined in Python at {shadowed}, so `torch.{name}` (or "
            f"`Tensor.{name}`) would clash with the binding torchgen generates for a new op.",
            next_step=f"Pick another name, e.g. `onboard new-op {practice}`.",
        )
    if like is not None:
        reporter.step(f"reading how `{like}` is built (native_functions.yaml, the installed torch)")
        fam = families.like(checkout, like, kind, ws.python, yaml_text, ws.root)
    else:
        fam = families.default(kind or "unary")
    plan = build(checkout, name, fam, yaml_text)
    family_file = "UnaryOps" if fam.kind == "unary" else "BinaryOps"
    plan.notes.append(
        "The C++ goes in new files of its own (ATen's CMake globs native/, native/cpu/ and "
        f"native/cuda/); in tree, most {fam.kind} ops live in {family_file}.cpp and "
        f"cpu/{family_file}Kernel.cpp instead, and a reviewer may ask you to move them there."
    )
    if ws.is_reference:
        plan.notes.append(
            "This is the reference tree rebuilt from the wheel: it has no .cpp/.cu files, so the "
            "scaffold cannot be built in tree here; `onboard verify` compiles it out of tree."
        )
    branch = branch_name(name)
    result = NewOpResult(name, plan, checkout, dry_run, branch, reference_tree=ws.is_reference)
    if dry_run:
        result.diff = unified_diff(plan)
    else:
        with transaction.in_workspace(
            ws.root,
            command=f"new-op {name}",
            reporter=reporter,
        ) as tx:
            applied = apply.apply(tx, checkout, plan, branch, commit_message(name, plan), reporter)
            files = {c.role: c.path for c in plan.changes}
            files["header"] = fam.header
            manifest.save(ws.root, manifest.Manifest(name, fam, files, branch))
        result.commit = applied.commit
        if applied.hook_failure:
            from onboard import git

            plan.notes.append(
                f"git switched to {branch}, then a post-checkout hook of yours (in "
                f"{git.state.hooks_folder(checkout)}) failed: {applied.hook_failure}"
            )
        test_file = plan.paths().get("test", f"test/test_{name}.py")
        result.next_steps = [
            f"write the math in {plan.paths().get('CPU kernel')} (and the .cu), and the "
            f"expected result as REFERENCE in {test_file}",
            f"check it: `cd {quote(ws.root)} && nox -s verify` (or `onboard verify`)",
        ]
    result.seconds = time.monotonic() - start
    return result


def commit_message(name: str, plan: Plan) -> str:
    fam = plan.family
    like = f" (like {fam.like})" if fam.like else ""
    lines = [
        f"Add aten::{name}, a structured {fam.kind} pointwise op{like}",
        "",
        "Scaffolded by `onboard new-op`: native_functions.yaml entries (functional,",
        "in-place, structured out=), the dispatch stub, meta/impl, CPU and CUDA",
        "kernels, the autograd formula, docs, overrides and an OpInfo entry.",
    ]
    if plan.unplaced:
        lines += ["", "Not placed (missing from this checkout):"]
        lines += [f"- {u.path} ({u.role})" for u in plan.unplaced]
    return "\n".join(lines) + "\n"

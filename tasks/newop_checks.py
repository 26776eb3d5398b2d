"""`onboard new-op`'s checks in the workspace's `nox -s verify` (and `onboard verify`):
scaffolded ops, and practice kernels (`onboard new-op EXISTING`).

Registered with ``onboard.workflows.verify.check``; the work is done by
``onboard.workflows.newop.checks`` (children through onboard.proc). One verify
Check per step and op, named ``new-op NAME: <step>``; a failed step's detail
ends with the file and line to look at.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.shell import quote
from onboard.workflows.verify import FAILED, NOT_CHECKED, PASSED, Check, VerifyContext, check

if TYPE_CHECKING:
    from onboard.workflows.newop.steps import OpVerification

_STATUS = {"passed": PASSED, "failed": FAILED, "not checked": NOT_CHECKED}


def _checks(label: str, result: OpVerification) -> list[Check]:
    out = []
    for step in result.steps:
        detail = step.detail
        if step.location:
            detail += f" [look at {step.location}]"
        if step.cached:
            detail += " (cached)"
        out.append(Check(f"{label}: {step.name}", _STATUS[step.status], detail))
    return out


@check
def new_op(ctx: VerifyContext) -> list[Check]:
    """Every op `onboard new-op` scaffolded in this workspace, verified as far as a CPU
    allows, and every practice kernel, judged by the installed torch. The ops run side
    by side; their compiles share the machine's cores (onboard.workflows.newop.jobs)."""
    from concurrent.futures import ThreadPoolExecutor

    from onboard.workflows.newop import branch_name
    from onboard.workflows.newop.checks import scaffolded_ops, verify_op
    from onboard.workflows.newop.judge import judge_op, practice_ops
    from onboard.workflows.newop.practice import branch_name as practice_branch

    present, absent = scaffolded_ops(ctx.ws)
    practised, elsewhere = practice_ops(ctx.ws)
    checkout = ctx.ws.checkout_path
    out: list[Check] = []
    for name in absent:
        out.append(
            Check(
                f"new-op {name}",
                NOT_CHECKED,
                f"aten::{name} is not in this checkout's native_functions.yaml; switch to its "
                f"branch (`git -C {quote(checkout)} switch {branch_name(name)}`) to check it",
            )
        )
    for name in elsewhere:
        out.append(
            Check(
                f"practice {name}",
                NOT_CHECKED,
                f"the practice files of aten::{name} are not in this checkout; switch to its "
                f"branch (`git -C {quote(checkout)} switch {practice_branch(name)}`) to judge them",
            )
        )
    work = [(f"new-op {n}", verify_op, n) for n in present]
    work += [(f"practice {n}", judge_op, n) for n in practised]
    with ThreadPoolExecutor(max_workers=max(1, len(work))) as pool:
        results = list(pool.map(lambda w: w[1](ctx.ws, w[2], reporter=ctx.reporter), work))
    for (label, _fn, _name), result in zip(work, results, strict=True):
        out += _checks(label, result)
    return out

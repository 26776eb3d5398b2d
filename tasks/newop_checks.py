"""`onboard new-op`'s checks in the workspace's `nox -s verify` (and `onboard verify`).

Registered with ``onboard.workflows.verify.check``; the work is done by
``onboard.workflows.newop.verify`` (children through onboard.proc). One verify
Check per step and op, named ``new-op NAME: <step>``; a failed step's detail
ends with the file and line to look at.
"""

from __future__ import annotations

from onboard.workflows.verify import FAILED, NOT_CHECKED, PASSED, Check, VerifyContext, check

_STATUS = {"passed": PASSED, "failed": FAILED, "not checked": NOT_CHECKED}


@check
def new_op(ctx: VerifyContext) -> list[Check]:
    """Every op `onboard new-op` scaffolded in this workspace, verified as far as a CPU allows."""
    from onboard.workflows.newop import branch_name
    from onboard.workflows.newop.verify import scaffolded_ops, verify_op

    present, absent = scaffolded_ops(ctx.ws)
    out: list[Check] = []
    for name in absent:
        out.append(
            Check(
                f"new-op {name}",
                NOT_CHECKED,
                f"aten::{name} is not in this checkout's native_functions.yaml; switch to its "
                f"branch (`git -C {ctx.ws.checkout_path} switch {branch_name(name)}`) to check it",
            )
        )
    for name in present:
        result = verify_op(ctx.ws, name)
        for step in result.steps:
            detail = step.detail
            if step.location:
                detail += f" [look at {step.location}]"
            if step.cached:
                detail += " (cached)"
            out.append(Check(f"new-op {name}: {step.name}", _STATUS[step.status], detail))
    return out

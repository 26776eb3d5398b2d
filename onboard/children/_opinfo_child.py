# Runs INSIDE an interpreter with torch, numpy and expecttest (the workspace's, or its
# nox venv .nox/opinfo): the OpInfo checks of some ops on CPU, as PyTorch's own
# OpInfo-driven tests make them. For each op (an OpInfo name of
# torch.testing._internal.common_methods_invocations.op_db) and each dtype the
# OpInfo lists for CPU:
# - reference: each of op.reference_inputs (sample_inputs first, then the edge
#   values test_ops.py's test_numpy_ref adds) computed by the op and by op.ref on
#   sample.numpy(), as common_utils.TestCase.compare_with_reference does
#   (test/test_ops.py: test_numpy_ref; test/test_unary_ufuncs.py compares a
#   UnaryUfuncInfo's ref the same way);
# - gradcheck: float64 samples with requires_grad, through op.gradcheck_wrapper
#   (test/test_ops_gradients.py: test_fn_grad), where op.supports_autograd;
# - error inputs: each op.error_inputs("cpu") raises its error_type matching its
#   error_regex (test/test_ops.py: test_errors).
# With "target": "practice" (run from _compile_child.py, which has built and loaded
# the learner's kernel as torch.ops.onboard_practice.NAME) the kernel is what is
# called, against op.ref and against the installed torch's own op.
# Answers one JSON object (onboard_answer): {"torch_version", "results": [...],
# "not_run": [{"op", "what", "why"}]}. Each result is one sample's.
import json
import re
import sys
import time

MAX_SAMPLES = 64


def _shapes(sample):
    def shape(v):
        return list(v.shape) if hasattr(v, "shape") and hasattr(v, "dtype") else None

    found = [shape(sample.input)] if shape(sample.input) is not None else []
    if isinstance(sample.input, (list, tuple)):
        found = [shape(v) for v in sample.input if shape(v) is not None]
    return found + [shape(a) for a in sample.args if shape(a) is not None]


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return "{}: {}".format(type(exc).__name__, text[0][:300] if text else "")


def _value(t):
    v = t.item()
    return v if isinstance(v, (int, float, bool)) else str(v)


def _first_input(sample, at):
    x = sample.input
    if hasattr(x, "shape") and hasattr(x, "dtype") and x.numel() and tuple(x.shape) == at[1]:
        return _value(x.detach().reshape(-1)[at[0]])
    return None


def _compare(torch, actual, expected, sample):
    """None when they agree (assert_close's tolerances for the dtype, nan equal to nan),
    else {"detail", "mismatch"}: the first element that differs, in row-major order."""
    import numpy

    if isinstance(expected, (numpy.ndarray, numpy.generic, int, float, bool, complex)):
        expected = torch.as_tensor(numpy.asarray(expected))
    if not isinstance(actual, torch.Tensor) or not isinstance(expected, torch.Tensor):
        try:
            torch.testing.assert_close(actual, expected, equal_nan=True, check_dtype=False)
            return None
        except Exception as exc:  # noqa: BLE001
            return {"detail": " ".join(str(exc).split())[:400], "mismatch": None}
    if expected.dtype != actual.dtype:
        expected = expected.to(actual.dtype)
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, check_device=False)
        return None
    except AssertionError as exc:
        detail = " ".join(str(exc).split())[:400]
    mismatch = None
    if actual.shape == expected.shape and actual.numel():
        a, e = actual.detach().reshape(-1), expected.detach().reshape(-1)
        if a.dtype.is_floating_point or a.dtype.is_complex:
            from torch.testing._comparison import default_tolerances

            rtol, atol = default_tolerances(a, e)
            close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        else:
            close = a == e
        bad = (~close).nonzero()
        if bad.numel():
            flat = int(bad[0])
            index = [int(i) for i in torch.unravel_index(torch.tensor(flat), actual.shape)]
            mismatch = {
                "index": index,
                "input": _first_input(sample, (flat, tuple(actual.shape))),
                "expected": _value(e[flat]),
                "got": _value(a[flat]),
            }
    return {"detail": detail, "mismatch": mismatch}


def _entries(op_db, name):
    return [o for o in op_db if o.name == name or o.full_name == name]


def run(args):
    import torch

    start = time.monotonic()
    from torch.testing._internal.common_methods_invocations import op_db

    target = args.get("target", "torch")
    limit = int(args.get("max_samples") or MAX_SAMPLES)
    results: list = []
    not_run = []

    def note(op, what, why):
        not_run.append({"op": op, "what": what, "why": why})

    for name in args["ops"]:
        entries = _entries(op_db, name)
        if not entries:
            note(name, "every check", "no OpInfo of that name in the installed torch's op_db")
            continue
        for info in entries:
            label = info.full_name if info.variant_test_name else info.name
            if target == "practice":
                namespace = getattr(torch.ops, args.get("namespace", "onboard_practice"))
                under_test = getattr(namespace, args["name"])
            else:
                under_test = info.op
            dtypes = sorted(info.supported_dtypes("cpu"), key=str)
            results += _reference(torch, info, label, under_test, dtypes, target, limit, note)
            if target == "practice":
                note(
                    label,
                    "gradcheck",
                    "the out-of-tree kernel has no derivative of its own "
                    "(PyTorch's derivatives.yaml entry is not in that build)",
                )
                note(
                    label,
                    "error inputs",
                    "the practice build registers only the kernel; "
                    "PyTorch's checks before it are the installed torch's",
                )
            else:
                results += _gradcheck(torch, info, label, limit, note)
                results += _errors(torch, info, label, note)
    cuda = torch.cuda.is_available()
    note(
        "*",
        "CUDA",
        "CUDA samples are not run (CPU only)" if cuda else "no CUDA device here: CPU samples only",
    )
    return {
        "torch_version": torch.__version__,
        "target": target,
        "results": results,
        "not_run": not_run,
        "seconds": round(time.monotonic() - start, 3),
    }


def _reference(torch, info, label, under_test, dtypes, target, limit, note):
    results: list = []
    ref = info.ref
    has_ref = ref is not None and callable(ref)
    if not has_ref and target != "practice":
        note(
            label,
            "reference",
            "its OpInfo has no ref (numpy or Python reference) for "
            "this torch%s" % ("" if _have("scipy") else "; some refs need scipy, not here"),
        )
        return results
    for dtype in dtypes:
        dname = str(dtype).replace("torch.", "")
        try:
            samples = info.reference_inputs("cpu", dtype, requires_grad=False)
            for index, sample in enumerate(samples):
                if index >= limit:
                    note(
                        label,
                        f"reference {dname}",
                        f"samples after the first {limit} not run",
                    )
                    break
                results.append(
                    _one_reference(
                        torch,
                        info,
                        label,
                        under_test,
                        ref if has_ref else None,
                        target,
                        dname,
                        index,
                        sample,
                    )
                )
        except Exception as exc:  # noqa: BLE001 - making the samples failed: say so
            note(label, f"reference {dname}", "making its samples raised " + _first_line(exc))
    return results


def _one_reference(torch, info, label, under_test, ref, target, dname, index, sample):
    row = {
        "op": label,
        "check": "reference",
        "dtype": dname,
        "index": index,
        "shapes": _shapes(sample),
        "status": "passed",
        "detail": "",
        "mismatch": None,
    }
    if target == "practice" and (sample.args or sample.kwargs):
        row.update(status="skipped", detail="the practice op takes the tensor alone")
        return row
    try:
        actual = under_test(sample.input, *sample.args, **sample.kwargs)
    except Exception as exc:  # noqa: BLE001
        row.update(status="failed", detail="the op raised " + _first_line(exc))
        return row
    against = []
    if ref is not None:
        try:
            n = sample.numpy()
            with _quiet_numpy():
                against.append(("op.ref", ref(n.input, *n.args, **n.kwargs)))
        except Exception as exc:  # noqa: BLE001 - the reference cannot take this sample
            row["detail"] = f"op.ref raised {_first_line(exc)}; "
    if target == "practice":
        against.append(
            (
                f"the installed torch.{info.name}",
                info.op(sample.input, *sample.args, **sample.kwargs),
            )
        )
    if not against:
        row.update(status="skipped", detail=row["detail"] + "nothing to compare with")
        return row
    for who, expected in against:
        wrong = _compare(torch, actual, expected, sample)
        if wrong is not None:
            row.update(
                status="failed",
                detail="differs from {}: {}".format(who, wrong["detail"]),
                mismatch=wrong["mismatch"],
                against=who,
            )
            return row
    row["against"] = " and ".join(who for who, _ in against)
    return row


class _quiet_numpy:
    def __enter__(self):
        import numpy

        self.old = numpy.seterr(all="ignore")

    def __exit__(self, *exc):
        import numpy

        numpy.seterr(**self.old)


def _have(module):
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _gradcheck(torch, info, label, limit, note):
    results: list = []
    if not info.supports_autograd:
        note(label, "gradcheck", "its OpInfo says supports_autograd=False")
        return results
    if torch.float64 not in info.supported_backward_dtypes("cpu"):
        note(label, "gradcheck", "float64 backward is not supported on CPU")
        return results
    samples = info.sample_inputs("cpu", torch.float64, requires_grad=True)
    for index, sample in enumerate(samples):
        if index >= limit:
            note(label, "gradcheck", f"samples after the first {limit} not run")
            break
        row = {
            "op": label,
            "check": "gradcheck",
            "dtype": "float64",
            "index": index,
            "shapes": _shapes(sample),
            "status": "passed",
            "detail": "",
            "mismatch": None,
        }
        results.append(row)
        leaves = [sample.input] if isinstance(sample.input, torch.Tensor) else list(sample.input)
        leaves += [a for a in sample.args if isinstance(a, torch.Tensor)]
        wanted = [t for t in leaves if t.requires_grad]
        if not wanted:
            row.update(status="skipped", detail="no input of this sample requires grad")
            continue

        def fn(*grads, sample=sample, wanted=wanted):
            swap = {id(w): g for w, g in zip(wanted, grads, strict=False)}

            def put(v):
                return swap.get(id(v), v)

            x = sample.input
            x = put(x) if isinstance(x, torch.Tensor) else type(x)(put(v) for v in x)
            args = [put(a) for a in sample.args]
            return info.gradcheck_wrapper(info.get_op(), x, *args, **sample.kwargs)

        try:
            torch.autograd.gradcheck(
                fn,
                tuple(wanted),
                check_batched_grad=False,
                nondet_tol=info.gradcheck_nondet_tol,
                fast_mode=info.gradcheck_fast_mode or False,
            )
            row["detail"] = f"gradcheck on {len(wanted)} input(s)"
        except Exception as exc:  # noqa: BLE001 - GradcheckError and the op's own errors
            row.update(status="failed", detail=" ".join(str(exc).split())[:600])
    return results


def _errors(torch, info, label, note):
    results: list = []
    if info.error_inputs_func is None:
        note(label, "error inputs", "its OpInfo has no error_inputs")
        return results
    for index, ei in enumerate(info.error_inputs("cpu")):
        si = ei.sample_input
        row = {
            "op": label,
            "check": "error inputs",
            "dtype": "",
            "index": index,
            "shapes": _shapes(si),
            "status": "passed",
            "mismatch": None,
            "detail": f"raises {ei.error_type.__name__} matching {ei.error_regex!r}",
        }
        results.append(row)
        if si.input is not None and hasattr(si.input, "dtype"):
            row["dtype"] = str(si.input.dtype).replace("torch.", "")
        try:
            info.op(si.input, *si.args, **si.kwargs)
        except Exception as exc:  # noqa: BLE001
            if not isinstance(exc, ei.error_type):
                row.update(
                    status="failed",
                    detail=f"expected {ei.error_type.__name__}, got {_first_line(exc)}",
                )
            elif not re.search(ei.error_regex, str(exc)):
                row.update(
                    status="failed",
                    detail=f"{ei.error_type.__name__}, but its message does not match "
                    f"{ei.error_regex!r}: {_first_line(exc)}",
                )
            continue
        row.update(
            status="failed",
            detail=f"raised nothing; expected {ei.error_type.__name__} matching {ei.error_regex!r}",
        )
    return results


if __name__ == "__main__":
    from onboard_answer import finish

    finish(run(json.loads(sys.argv[1])))

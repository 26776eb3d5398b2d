# Runs INSIDE the workspace's interpreter: builds the scaffolded op out of tree with
# torch.utils.cpp_extension.load against the installed torch, loads it, and checks
# it: numerics against REFERENCE over each dtype for the functional, out= and
# in-place variants (contiguous inputs take cpu_kernel_vec's Vectorized path,
# strided ones its scalar path), the meta device, and torch.library.opcheck.
# With "check": "oracle" (practice mode) the checks are _oracle_checks.py's.
# Must run with ATEN_CPU_CAPABILITY=default (see the stub shim). Run by path: it
# imports _oracle_checks.py beside it. Answers one JSON object (onboard_answer).
import io
import json
import os
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from onboard_answer import finish

args = json.loads(sys.argv[1])

import torch  # noqa: E402
from torch.utils import cpp_extension  # noqa: E402

captured = io.StringIO()
try:
    with redirect_stdout(captured), redirect_stderr(captured):
        cpp_extension.load(
            name=args["module"],
            sources=args["sources"],
            extra_cflags=args["cflags"],
            extra_include_paths=args["include_paths"],
            build_directory=args["build_dir"],
            is_python_module=False,
            # Not verbose: ninja's output (the compiler errors) then comes back in the
            # exception message instead of going straight to our stdout.
            verbose=False,
        )
except Exception as exc:  # noqa: BLE001 - the compiler output is the answer
    log = captured.getvalue() + "\n" + str(exc)
    log_path = os.path.join(args["build_dir"], "onboard-build.log")
    with open(log_path, "w") as fh:
        fh.write(log)
        fh.write(f"\n{type(exc).__name__}: {exc}\n")
    finish(
        {
            "ok": False,
            "stage": "build",
            "error": f"{type(exc).__name__}: {exc}",
            "log": log[-20000:],
            "log_path": log_path,
        }
    )

if args.get("check") == "oracle":
    # Practice mode: the learner's kernel against the installed torch (a file in this
    # script's folder, which Python put first on sys.path).
    import _oracle_checks  # noqa: E402

    finish(_oracle_checks.run(args))
if args.get("check") == "opinfo":
    # `onboard tests --run`: the installed torch's OpInfo samples of the op, run on the
    # learner's kernel (loaded above as torch.ops.onboard_practice.NAME).
    import _opinfo_child  # noqa: E402

    finish({"ok": True, "built": True, **_opinfo_child.run(args)})

name = args["name"]
kind = args["kind"]
supported = set(args["supported"])
ns = {"torch": torch}
try:
    reference = compile(args["reference"], args["reference_file"], "eval")
except SyntaxError as exc:
    finish({"ok": True, "built": True, "reference_error": f"SyntaxError: {exc}"})

packet = getattr(torch.ops.aten, name)
inplace = getattr(torch.ops.aten, name + "_")
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "int64": torch.int64,
}
torch.manual_seed(0)


def make(dtype, shape):
    if dtype.is_floating_point:
        return (torch.randn(shape, dtype=torch.float64) * 10).to(dtype)
    return torch.randint(-50, 50, shape, dtype=dtype)


def inputs(dtype, path):
    # "vector": contiguous and long enough for whole Vectorized chunks;
    # "scalar": every other column, a stride TensorIterator cannot coalesce away,
    # so cpu_kernel_vec runs its scalar lambda on every element.
    if path == "vector":
        x = make(dtype, (16, 64))
        return [x] if kind == "unary" else [x, make(dtype, (16, 64))]
    x = make(dtype, (13, 14))[:, ::2]
    return [x] if kind == "unary" else [x, make(dtype, (7, 14))[0, ::2]]


def first_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


cases: list[dict[str, Any]] = []
for dname, dtype in DTYPES.items():
    for path in ("vector", "scalar"):
        args_ = inputs(dtype, path)
        env = dict(ns, x=args_[0], y=args_[1] if len(args_) > 1 else None)
        try:
            expected = eval(reference, env)
        except Exception as exc:  # noqa: BLE001
            cases.append(
                {
                    "dtype": dname,
                    "path": path,
                    "variant": "reference",
                    "ok": False,
                    "error": f"REFERENCE raised {first_line(exc)}",
                }
            )
            continue
        variants = [("functional", lambda a: packet(*a))]

        def out_variant(a, expected=expected):
            out = torch.empty_like(expected)
            result = packet.out(*a, out=out)
            assert result is out or result.data_ptr() == out.data_ptr(), "out= did not return out"
            return out

        def inplace_variant(a):
            target = a[0].clone()
            result = inplace(target, *a[1:])
            assert result.data_ptr() == target.data_ptr(), "in-place did not return self"
            return target

        variants.append(("out", out_variant))
        if isinstance(expected, torch.Tensor) and expected.dtype == dtype:
            variants.append(("inplace", inplace_variant))
        for variant, fn in variants:
            case: dict[str, Any] = {"dtype": dname, "path": path, "variant": variant}
            try:
                actual = fn(args_)
            except Exception as exc:  # noqa: BLE001
                if dname not in supported:
                    case.update(ok=True, unsupported=True, error=first_line(exc))
                else:
                    case.update(ok=False, error=first_line(exc))
                cases.append(case)
                continue
            if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
                # A float result for integer inputs is the meta function's choice of
                # output dtype, not the kernel's: verify's hint says so.
                case["expected_dtype"] = str(expected.dtype).replace("torch.", "")
                case["actual_dtype"] = str(actual.dtype).replace("torch.", "")
                if expected.is_floating_point() and not dtype.is_floating_point:
                    fraction = (expected != expected.trunc()) & expected.isfinite()
                    if bool(fraction.any()):
                        at = int(fraction.reshape(-1).nonzero()[0])
                        given = [a.broadcast_to(expected.shape).reshape(-1)[at] for a in args_]
                        value = expected.reshape(-1)[at].item()
                        shown = ", ".join(str(a.item()) for a in given)
                        case["fraction_example"] = f"{shown} -> {value:.4g}"
            try:
                torch.testing.assert_close(actual, expected, equal_nan=True)
                case["ok"] = True
            except AssertionError as exc:
                diff = None
                try:
                    if actual.shape == expected.shape:
                        diff = float((actual.double() - expected.double()).abs().nan_to_num().max())
                except Exception:  # noqa: BLE001
                    pass
                case.update(ok=False, error=" ".join(str(exc).split())[:400], max_abs_diff=diff)
            cases.append(case)

checks: dict[str, Any] = {}
try:
    meta_args = [torch.empty(3, 5, device="meta") for _ in range(1 if kind == "unary" else 2)]
    cpu_args = [torch.zeros(3, 5) for _ in meta_args]
    m, c = packet(*meta_args), packet(*cpu_args)
    ok = m.device.type == "meta" and m.shape == c.shape and m.dtype == c.dtype
    checks["meta"] = {
        "ok": ok,
        "detail": f"meta gives {tuple(m.shape)} {m.dtype}, CPU {tuple(c.shape)} {c.dtype}",
    }
except Exception as exc:  # noqa: BLE001
    checks["meta"] = {"ok": False, "detail": first_line(exc)}

tests = ("test_schema", "test_autograd_registration", "test_faketensor")
opcheck: dict[str, Any] = {}
sample = [torch.randn(4, 6) for _ in range(1 if kind == "unary" else 2)]
for label, op, call_args, kwargs in (
    (name, packet.default, sample, {}),
    (f"{name}_", inplace.default, [sample[0].clone(), *sample[1:]], {}),
    (f"{name}.out", packet.out, sample, {"out": torch.empty(4, 6)}),
):
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            got = torch.library.opcheck(op, tuple(call_args), kwargs, test_utils=tests)
        bad = {k: v for k, v in got.items() if v != "SUCCESS"}
        opcheck[label] = {"ok": not bad, "detail": ", ".join(f"{k}: {v}" for k, v in got.items())}
    except Exception as exc:  # noqa: BLE001
        opcheck[label] = {
            "ok": False,
            "detail": first_line(exc),
            "trace": traceback.format_exc()[-2000:],
        }
checks["opcheck"] = opcheck
finish({"ok": True, "built": True, "cases": cases, "checks": checks})

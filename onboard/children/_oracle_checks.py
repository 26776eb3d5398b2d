# Runs INSIDE the workspace's interpreter, imported by _compile_child.py (practice
# mode) and _like_child.py. The installed torch is the oracle: the learner's kernel,
# built as torch.ops.onboard_practice.NAME, must give what torch.ops.aten.NAME gives
# for every dtype the installed op accepts, on edge values (nan, +-inf, -0.0,
# subnormals, the largest finite values, integer limits), empty, 0-dim,
# non-contiguous and random tensors, for the functional, out= and in-place variants.
# Standard library at import time; torch is imported by the callers.
import math
from typing import Any

DTYPES = (
    "float32",
    "float64",
    "bfloat16",
    "float16",
    "complex64",
    "complex128",
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
)
# torch.testing.assert_close's default tolerances per dtype: (rtol, atol).
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
SHOWN = 4  # mismatches listed per dtype


def literal(value: Any) -> str:
    """A Python expression for a number, nan and infinities included."""
    if isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, complex):
        return f"complex({literal(value.real)}, {literal(value.imag)})"
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "-float('inf')"
    return repr(float(value))


def float_edges(torch: Any, dtype: Any) -> list[float]:
    info = torch.finfo(dtype)
    digits = round(-math.log2(info.eps))  # mantissa bits: where .5 stops being representable
    subnormal = info.tiny * info.eps
    values = [0.0, 0.5, 1.0, 1.5, 2.5, 0.25, 0.75, 1e-3, 0.9999, 3.7, 123.456]
    values += [subnormal, info.tiny / 2, info.tiny, info.max, 2.0 ** (digits - 1) + 0.5]
    values += [2.0**digits, 2.0**digits + 2]
    values = values + [-v for v in values]
    return values + [math.inf, -math.inf, math.nan]


def int_edges(torch: Any, dtype: Any) -> list[int]:
    info = torch.iinfo(dtype)
    values = [0, 1, 7, 100, info.max, info.max - 1, info.min, info.min + 1, -1, -7, -100]
    return [v for v in values if info.min <= v <= info.max]


def edge_values(torch: Any, dtype: Any) -> list[Any]:
    if dtype == torch.bool:
        return [False, True]
    if dtype.is_complex:
        real = torch.float32 if dtype == torch.complex64 else torch.float64
        parts = [0.0, -0.0, 0.5, -1.5, 2.5, math.inf, -math.inf, math.nan]
        parts += [torch.finfo(real).max, torch.finfo(real).tiny / 2]
        return [complex(a, b) for a in parts for b in parts[:6]]
    if dtype.is_floating_point:
        return float_edges(torch, dtype)
    return int_edges(torch, dtype)


def edge_inputs(torch: Any, dtype: Any, kind: str) -> list[Any]:
    """The edge values as the op's inputs: one tensor, or every pair for a binary op."""
    values = edge_values(torch, dtype)
    if kind == "unary":
        return [torch.tensor(values, dtype=dtype)]
    xs = [a for a in values for _ in values]
    ys = [b for _ in values for b in values]
    return [torch.tensor(xs, dtype=dtype), torch.tensor(ys, dtype=dtype)]


def _random(torch: Any, dtype: Any, shape: tuple[int, ...]) -> Any:
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return (
            torch.randn(shape, dtype=torch.complex128 if dtype.is_complex else torch.float64) * 100
        ).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -(2**31)), min(info.max, 2**31 - 1), shape).to(dtype)


def layouts(torch: Any, dtype: Any, kind: str) -> list[tuple[str, list[Any]]]:
    """(what, inputs): the edge values as given and non-contiguous, 0-dim, empty, random."""
    edges = edge_inputs(torch, dtype, kind)
    strided = []
    for x in edges:
        base = torch.empty(2 * x.numel(), dtype=dtype)
        base[::2] = x
        strided.append(base[::2])
    nargs = len(edges)
    return [
        ("edge values", edges),
        ("edge values, non-contiguous", strided),
        ("0-dim", [x[min(3, x.numel() - 1)].clone() for x in edges]),
        ("empty", [torch.empty(0, dtype=dtype) for _ in range(nargs)]),
        ("empty 2-d", [torch.empty(2, 0, dtype=dtype) for _ in range(nargs)]),
        ("random", [_random(torch, dtype, (37, 29)) for _ in range(nargs)]),
        ("random, transposed", [_random(torch, dtype, (29, 37)).t() for _ in range(nargs)]),
    ]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def _show(value: Any) -> str:
    return literal(value).replace("float('nan')", "nan").replace("float('inf')", "inf")


def differences(torch: Any, inputs: list[Any], expected: Any, got: Any) -> tuple[int, list[str]]:
    """(how many elements differ, "input -> expected -> got" for the first few)."""
    if got.dtype != expected.dtype or got.shape != expected.shape:
        what = f"a {got.dtype} tensor of shape {tuple(got.shape)}"
        want = f"a {expected.dtype} tensor of shape {tuple(expected.shape)}"
        return max(1, expected.numel()), [f"expected {want}, got {what}"]
    name = str(expected.dtype).replace("torch.", "")
    if name in TOLERANCES:
        rtol, atol = TOLERANCES[name]
        same = torch.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        if expected.is_floating_point():  # -0.0 is not 0.0 (trunc(-0.5) is -0.0)
            zero = expected == 0
            same &= ~(zero & (torch.signbit(got) != torch.signbit(expected)))
    else:
        same = got == expected
    bad = (~same).nonzero()
    shown = []
    for index in bad[:SHOWN].tolist():
        at = tuple(index)
        args = ", ".join(_show(x.expand(expected.shape)[at].item()) for x in inputs)
        shown.append(
            f"{args} -> {_show(expected[at].item())} expected -> {_show(got[at].item())} got"
        )
    return int(bad.shape[0]), shown


def run(args: dict[str, Any]) -> dict[str, Any]:
    import torch

    name, kind = args["name"], args["kind"]
    oracle = getattr(torch.ops.aten, name)
    oracle_inplace = getattr(torch.ops.aten, name + "_")
    mine = getattr(torch.ops.onboard_practice, name)
    mine_inplace = getattr(torch.ops.onboard_practice, name + "_")
    torch.manual_seed(0)
    report: list[dict[str, Any]] = []
    for dname in DTYPES:
        dtype = getattr(torch, dname)
        entry: dict[str, Any] = {"dtype": dname, "cases": 0, "differing": 0, "shown": []}
        for what, inputs in layouts(torch, dtype, kind):
            try:
                expected = oracle(*inputs)
            except Exception as exc:  # noqa: BLE001 - the oracle refusing a dtype is an answer
                if what == "edge values":
                    entry["unsupported"] = _first_line(exc)
                    break
                continue
            calls: list[tuple[str, Any]] = [("functional", lambda a: mine(*a))]
            calls.append(("out=", lambda a, e=expected: mine.out(*a, out=torch.empty_like(e))))
            try:
                inplace_expected = oracle_inplace(inputs[0].clone(), *inputs[1:])
            except Exception:  # noqa: BLE001 - no in-place for this dtype (sin_ on int64)
                inplace_expected = None
            if inplace_expected is not None:

                def inplace(a: list[Any]) -> Any:
                    target = a[0].clone()
                    mine_inplace(target, *a[1:])
                    return target

                calls.append(("in-place", inplace))
            for variant, call in calls:
                entry["cases"] += 1
                want = inplace_expected if variant == "in-place" else expected
                try:
                    got = call(inputs)
                except Exception as exc:  # noqa: BLE001 - the learner's kernel raising is a finding
                    entry["differing"] += 1
                    entry["shown"].append(
                        f"{what}, {variant}: raised {_first_line(exc)} where torch.{name} "
                        "gives a result"
                    )
                    continue
                count, shown = differences(torch, inputs, want, got)
                if count:
                    entry["differing"] += count
                    entry["shown"] += [f"{what}, {variant}: {s}" for s in shown]
        entry["shown"] = entry["shown"][:SHOWN]
        report.append(entry)
    return {
        "ok": True,
        "built": True,
        "oracle": f"torch.{name}",
        "torch_version": torch.__version__,
        "dtypes": report,
    }

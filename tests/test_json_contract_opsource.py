"""The `--json` keys of the places in PyTorch's source (onboard/workflows/opsource/), which
`where`, `locate`, `trace` and `stuck` all print, through onboard/jsonable.py: each expected
key is worked out here from the values the test gives."""

from __future__ import annotations

import json

from onboard.jsonable import to_json
from onboard.workflows.opsource.anatomy import (
    Derivative,
    EntryPoint,
    KernelSite,
    Registration,
    WhereResult,
    YamlEntry,
)
from onboard.workflows.opsource.chain import Layer
from onboard.workflows.opsource.compiled import CompiledText
from onboard.workflows.opsource.paths import SourceLoc

PATH = "aten/src/ATen/native/UnaryOps.cpp"


def _loc_json(loc: SourceLoc) -> dict[str, object]:
    return {
        "path": loc.path,
        "line": loc.line,
        "url": loc.url,
        "in_checkout": loc.in_checkout,
        "generated": loc.generated,
        "text": loc.text,
        "local": loc.local,
        "local_change": loc.local_change,
        "label": f"{loc.path}:{loc.line}" if loc.line else loc.path,
        "regenerated_copy": (
            f"{loc.local}:{loc.line}"
            if loc.generated and loc.local and not loc.in_checkout
            else None
        ),
    }


def test_a_place_says_its_label_and_its_regenerated_copy() -> None:
    plain = SourceLoc(PATH, 42, "https://github.com/x#L42", in_checkout=True, text="int a;")
    made = SourceLoc(
        "build/aten/src/ATen/RegisterCPU.cpp", 7, generated=True, local="/cache/Reg.cpp"
    )
    outside = SourceLoc("/home/me/repro.py", None, in_torch=False)
    for loc in (plain, made, outside):
        got = to_json(loc)
        assert got == _loc_json(loc)
        assert "in_torch" not in got
    assert to_json(made)["regenerated_copy"] == "/cache/Reg.cpp:7"
    assert to_json(outside)["label"] == "/home/me/repro.py"


def test_a_where_answer_names_its_parts_under_their_json_keys() -> None:
    yaml_loc, kernel_loc = (
        SourceLoc("aten/src/ATen/native/native_functions.yaml", 10),
        SourceLoc(PATH, 99),
    )
    result = WhereResult(
        query="trunc",
        op="trunc",
        commit="f" * 40,
        checkout="/ws/pytorch",
        checkout_kind="clone",
        entry_points=[
            EntryPoint(
                "torch.trunc",
                "builtin_function_or_method",
                None,
                "THPVariable_trunc",
                ("aten::trunc",),
                ("aten::trunc",),
                None,
            )
        ],
        yaml_entries=[
            YamlEntry(
                "trunc",
                "trunc(Tensor self) -> Tensor",
                "functional",
                yaml_loc,
                ("function", "method"),
                False,
                "trunc.out",
                {},
                ("pointwise",),
            )
        ],
        dispatch=[Registration("aten::trunc", "CPU", kernel_loc, False, False)],
        kernels=[KernelSite("impl", "trunc_out", kernel_loc, ("CPU",), "TORCH_IMPL_FUNC")],
        derivatives=[Derivative("trunc", yaml_loc, {"self": "zeros_like(grad)"})],
        generated_dir="/cache/generated",
        warm={"yaml": True},
    )
    got = to_json(result)
    loc, kloc = _loc_json(yaml_loc), _loc_json(kernel_loc)
    assert got == {
        "ok": True,
        "query": "trunc",
        "op": "trunc",
        "commit": "f" * 40,
        "checkout": "/ws/pytorch",
        "checkout_kind": "clone",
        "entry_points": [
            {
                "name": "torch.trunc",
                "kind": "builtin_function_or_method",
                "source": None,
                "binding": "THPVariable_trunc",
                "reaches": ["aten::trunc"],
                "dispatched": ["aten::trunc"],
                "call_error": None,
            }
        ],
        "yaml": [
            {
                "name": "trunc",
                "schema": "trunc(Tensor self) -> Tensor",
                "kind": "functional",
                "location": loc,
                "variants": ["function", "method"],
                "structured": False,
                "structured_delegate": "trunc.out",
                "dispatch": {},
                "tags": ["pointwise"],
            }
        ],
        "dispatch_table": [
            {
                "op": "aten::trunc",
                "key": "CPU",
                "location": kloc,
                "alias": False,
                "inactive": False,
                "registered_at": None,
                "implementation": None,
                "via": None,
                "shadowed_by": None,
            }
        ],
        "kernels": [
            {
                "role": "impl",
                "name": "trunc_out",
                "location": kloc,
                "keys": ["CPU"],
                "detail": "TORCH_IMPL_FUNC",
            }
        ],
        "kernels_not_found": {},
        "derivatives": [
            {
                "name": "trunc",
                "location": loc,
                "formulas": {"self": "zeros_like(grad)"},
                "output_differentiability": None,
            }
        ],
        "opinfo": [],
        "decomposes_to": [],
        "generated_dir": "/cache/generated",
        "notes": [],
        "limitations": [],
        "cache_warm": {"yaml": True},
    }
    json.dumps(got)


def test_a_layer_and_a_compiled_text() -> None:
    at = SourceLoc(PATH, 5)
    layer = Layer("kernel", "at::native::trunc_out", "trunc", at, (at,), ("frame 1",), "")
    assert to_json(layer) == {
        "layer": "kernel",
        "name": "at::native::trunc_out",
        "op": "trunc",
        "location": _loc_json(at),
        "related": [_loc_json(at)],
        "frames": ["frame 1"],
        "note": "",
    }
    both = CompiledText("libtorch_cpu.so", "expected a tensor", PATH, PATH, "https://u")
    apart = CompiledText("libtorch_cpu.so", "expected a tensor", PATH, "aten/Other.cpp")
    for text in (both, apart):
        assert to_json(text) == {
            "library": text.library,
            "text": text.text,
            "nearest_path_before": text.before,
            "nearest_path_after": text.after,
            "url": text.url,
            "file": text.before if text.before == text.after else None,  # both neighbours agree
        }

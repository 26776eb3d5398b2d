# Runs INSIDE the workspace's interpreter via `python -c` (torchgen from its
# torch wheel, so the yaml is read by the parser of that very version).
# Reads native_functions.yaml with torchgen and derivatives.yaml with PyYAML,
# keeping line numbers; answers one JSON object (onboard_answer).
import os
import sys

import onboard_answer

native_path, tags_path, derivatives_path = sys.argv[1], sys.argv[2], sys.argv[3]
out: dict = {"functions": [], "derivatives": [], "errors": []}

import yaml  # noqa: E402 - torchgen needs it; a clear error if it is missing
from torchgen.gen import parse_native_yaml  # noqa: E402

if not os.path.isfile(tags_path):
    import torchgen

    tags_path = os.path.join(
        os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "tags.yaml"
    )

parsed = parse_native_yaml(native_path, tags_path)
dispatch: dict = {}
for key, index in parsed.backend_indices.items():
    for op_name, meta in index.index.items():
        dispatch.setdefault(str(op_name), {})[str(key)] = meta.kernel
for f in parsed.native_functions:
    name = str(f.func.name)
    out["functions"].append(
        {
            "name": name,
            "base": str(f.func.name.name.base),
            "inplace": bool(f.func.name.name.inplace),
            "overload": f.func.name.overload_name,
            "schema": str(f.func),
            "line": f.loc.line,
            "kind": f.func.kind().name,
            "variants": sorted(v.name for v in f.variants),
            "structured": bool(f.structured),
            "structured_delegate": str(f.structured_delegate) if f.structured_delegate else None,
            "structured_inherits": f.structured_inherits,
            "tags": sorted(f.tags),
            "dispatch": dict(sorted(dispatch.get(name, {}).items())),
            "autogen": [str(a) for a in f.autogen],
            "manual_kernel_registration": bool(f.manual_kernel_registration),
            "python_module": f.python_module,
        }
    )


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_Loader):  # type: ignore[misc,valid-type]
    def construct_mapping(self, node, deep=False):
        mapping = super().construct_mapping(node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping


if os.path.isfile(derivatives_path):
    with open(derivatives_path, encoding="utf-8") as fh:
        entries = yaml.load(fh, Loader=_LineLoader) or []
    for entry in entries:
        if not isinstance(entry, dict) or "name" not in entry:
            continue
        name = str(entry["name"])
        out["derivatives"].append(
            {
                "name": name,
                "op": name.split("(", 1)[0].strip(),
                "line": entry.get("__line__"),
                "formulas": {
                    str(k): str(v) for k, v in entry.items() if k not in ("name", "__line__")
                },
            }
        )
else:
    out["errors"].append("no derivatives.yaml at " + derivatives_path)

onboard_answer.answer(out)

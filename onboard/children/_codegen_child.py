# Runs INSIDE the workspace's interpreter with its torchgen (the installed wheel's).
# 1. parse the checkout's native_functions.yaml and load_derivatives;
# 2. the facts verify compares against the C++ (kernel names per dispatch key);
# 3. for the out-of-tree compile: the op's generated headers (ATen/ops/NAME_native.h,
#    NAME_meta.h) and Register{CPU,Meta} wrappers, rendered with torchgen's own
#    templates for this op alone (the Meta file's helpers renamed so both files
#    build as one translation unit), plus its schema registrations.
# Answers one JSON object (onboard_answer). Standard library + torchgen only.
import json
import re
import sys
import traceback
from pathlib import Path

from onboard_answer import finish

args = json.loads(sys.argv[1])
name = args["name"]
out = Path(args["out"])


try:
    import torchgen
    import torchgen.dest as dest
    from torchgen.gen import (
        RegisterSchema,
        compute_meta_function_declaration,
        get_grouped_native_functions,
        get_native_function_declarations,
        get_native_function_definitions,
        parse_native_yaml,
    )
    from torchgen.model import DispatchKey, NativeFunctionsGroup
    from torchgen.packaged.autograd.load_derivatives import load_derivatives
    from torchgen.selective_build.selector import SelectiveBuilder
    from torchgen.utils import FileManager
except Exception as exc:  # noqa: BLE001
    finish({"ok": False, "stage": "import", "error": f"{type(exc).__name__}: {exc}"})

try:
    parsed = parse_native_yaml(args["native_yaml"], args["tags_yaml"])
except Exception as exc:  # noqa: BLE001 - torchgen's messages are the point
    finish(
        {
            "ok": False,
            "stage": "native_functions.yaml",
            "error": f"{type(exc).__name__}: {exc}",
            "trace": traceback.format_exc()[-3000:],
        }
    )

groups = [g for g in get_grouped_native_functions(parsed.native_functions) if g.root_name == name]
if not groups:
    finish(
        {
            "ok": False,
            "stage": "native_functions.yaml",
            "error": f"torchgen parsed the yaml but found no op named {name}",
        }
    )
group = groups[0]
if not isinstance(group, NativeFunctionsGroup) or not group.structured:
    finish(
        {
            "ok": False,
            "stage": "native_functions.yaml",
            "error": f"{name} is not a structured group (functional + out= with "
            "`structured: True`); torchgen will not generate meta()/impl() wrappers",
        }
    )

try:
    derivs, _ = load_derivatives(args["derivatives_yaml"], args["native_yaml"], args["tags_yaml"])
except Exception as exc:  # noqa: BLE001
    finish(
        {
            "ok": False,
            "stage": "derivatives.yaml",
            "error": f"{type(exc).__name__}: {exc}",
            "trace": traceback.format_exc()[-3000:],
        }
    )
formulas = [str(schema) for schema in derivs if str(schema.name) == name]

bi = parsed.backend_indices
kernels = {}
for key in (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta):
    metadata = bi[key].get_kernel(group.out) if key in bi else None
    kernels[str(key)] = metadata.kernel if metadata is not None else None

facts = {
    "schemas": [str(f.func) for f in group.functions()],
    "structured": bool(group.structured),
    "kernels": kernels,
    "derivatives": formulas,
    "torchgen": str(Path(torchgen.__file__).parent),
}

templates = Path(torchgen.__file__).parent / "packaged" / "ATen" / "templates"
fm = FileManager(out, templates, False)
selector = SelectiveBuilder.get_nop_selector()
fm.write_with_template(
    f"include/ATen/ops/{name}_meta.h",
    "NativeMetaFunction.h",
    lambda: {"meta_function_declarations": [compute_meta_function_declaration(group)]},
)
declarations = get_native_function_declarations(
    grouped_native_functions=[group],
    backend_indices=bi,
    native_function_decl_gen=dest.compute_native_function_declaration,
)
fm.write_with_template(
    f"include/ATen/ops/{name}_native.h",
    "NativeFunction.h",
    lambda: {
        "extra_includes": f"#include <ATen/ops/{name}_meta.h>",
        "native_function_declarations": declarations,
    },
)
for key in (DispatchKey.CPU, DispatchKey.Meta):
    index = bi[key]
    fm.write_with_template(
        f"Register{key}_{name}.cpp",
        "RegisterDispatchKey.cpp",
        lambda index=index, key=key: {
            "extra_cuda_headers": "",
            "external_backend_headers": "",
            "dispatch_headers": dest.gen_registration_headers(index, True, False),
            "ops_headers": [f"#include <ATen/ops/{name}_native.h>"],
            "dispatch_helpers": dest.gen_registration_helpers(index),
            "dispatch_definitions": get_native_function_definitions(
                fm=fm,
                grouped_native_functions=[group],
                dispatch_key=key,
                backend_idx=index,
                selector=selector,
                rocm=False,
                symint=True,
                skip_dispatcher_op_registration=False,
                gen_dispatch_helpers=True,
            ),
        },
    )
# verify compiles both wrapper files as one translation unit (the headers they share
# cost most of the compile): the Meta file's helpers (create_out, resize_out, ...)
# get a suffix so they do not collide with the CPU file's.
helpers = "\n".join(dest.gen_registration_helpers(bi[DispatchKey.Meta]))
names = sorted(set(re.findall(r"^[\w:<>,]+(?:[ \t]*[*&]+[ \t]*|[ \t]+)(\w+)\(", helpers, re.M)))
meta_file = out / f"RegisterMeta_{name}.cpp"
text = meta_file.read_text()
for helper in names:
    text = re.sub(rf"\b{helper}\b", f"{helper}_Meta", text)
meta_file.write_text(text)
facts["meta_helpers"] = names
schema = RegisterSchema(selector)
facts["schema_registrations"] = [schema(f) for f in group.functions()]
finish({"ok": True, "facts": facts})

# Runs INSIDE the target interpreter via `python -c` (from the user's folder, so
# sys.path is theirs): imports torch first, as every extension built against it
# needs, then the module, and reports how that went and which compiled files
# could be that module. Standard library only. Answers one JSON object (onboard_answer).
#   argv[1]: the dotted module name
import importlib
import importlib.util
import os
import sys
import sysconfig

import onboard_answer

module = sys.argv[1]
out: dict = {
    "module": module,
    "torch": None,
    "torch_error": None,
    "error": None,
    "origin": None,
    "files": [],
    "distribution": None,
    "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or "",
}


try:
    import torch

    out["torch"] = str(torch.__version__)
except BaseException as exc:  # torch itself is broken: the doctor's probe says why
    out["torch_error"] = onboard_answer.error(exc)

try:
    loaded = importlib.import_module(module)
    out["origin"] = getattr(loaded, "__file__", None)
except BaseException as exc:
    out["error"] = onboard_answer.error(exc)

# Every compiled file on sys.path that is this module under some tag:
# name.cpython-310-x86_64-linux-gnu.so, name.abi3.so, name.so.
parts = module.split(".")
for entry in sys.path:
    folder = os.path.join(os.path.abspath(entry or os.getcwd()), *parts[:-1])
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        continue
    for name in names:
        if name.startswith(parts[-1] + ".") and name.endswith((".so", ".pyd", ".dylib")):
            path = os.path.join(folder, name)
            if path not in out["files"]:
                out["files"].append(path)

# The installed distribution that owns one of them, and what it says it needs.
wanted = {os.path.realpath(p) for p in out["files"] + ([out["origin"]] if out["origin"] else [])}
if wanted:
    try:
        from importlib import metadata

        for dist in metadata.distributions():
            owned = {os.path.realpath(str(dist.locate_file(f))) for f in (dist.files or ())}
            if owned & wanted:
                out["distribution"] = {
                    "name": dist.metadata["Name"],
                    "version": dist.version,
                    "requires": [r for r in (dist.requires or []) if r.startswith("torch")],
                }
                break
    except Exception:
        pass

onboard_answer.answer(out)

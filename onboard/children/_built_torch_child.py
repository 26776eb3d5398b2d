# Runs INSIDE a fresh venv's interpreter after `onboard build` (with -s, from a neutral
# folder): which torch it imports, its version and git_version, whether it is a debug
# build, and the compiled libraries it loads (torch._C and torch/lib/*.so*).
# Standard library + torch only. Answers one JSON object (onboard_answer).
import glob
import os

import onboard_answer
import torch

c_file = getattr(getattr(torch, "_C", None), "__file__", None)
libs = sorted(
    set(
        ([c_file] if c_file else [])
        + glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "*.so*"))
    )
)
onboard_answer.finish(
    {
        "file": torch.__file__,
        "version": str(torch.__version__),
        "git_version": getattr(torch.version, "git_version", None),
        "debug": bool(getattr(torch.version, "debug", False)),
        "libraries": libs,
    }
)

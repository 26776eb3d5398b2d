# Runs INSIDE the target interpreter via `python -c`, from an empty folder with
# PYTHONSAFEPATH=1 (torchenv.isolated), so it sees the torch the interpreter
# has installed, whatever folder onboard was started in; a torch shadowing it
# through PYTHONPATH or a .pth file is still seen (the candidates below), and
# doctor checks the user's own folder separately (torchenv.shadowing_tree).
# Standard library only: the target may be any Python 3 with or without torch.
# Answers twice (onboard_answer): before `import torch` and after it.
import importlib.util
import json
import os
import sys
import sysconfig

import onboard_answer

out: dict = {
    "python": {
        "executable": sys.executable,
        "version": ".".join(str(p) for p in sys.version_info[:3]),
        "implementation": sys.implementation.name,
        "abiflags": getattr(sys, "abiflags", ""),
        "soabi": sysconfig.get_config_var("SOABI") or "",
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or "",
        "prefix": sys.prefix,
        "ldlibrary": sysconfig.get_config_var("LDLIBRARY") or "",
        "cwd": os.getcwd(),
    },
    "candidates": [],
    "sys_path": [os.path.abspath(e or os.getcwd()) for e in sys.path],
    "pythonpath": [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e],
    "stage": "before-import",
    "torch": None,
    "import_error": None,
    "numpy": None,
    "dist": None,
}

# Every torch package visible on sys.path, in import order: the first one wins.
seen = set()
for entry in sys.path:
    base = os.path.abspath(entry or os.getcwd())
    init = os.path.join(base, "torch", "__init__.py")
    if os.path.isfile(init) and base not in seen:
        seen.add(base)
        out["candidates"].append(os.path.join(base, "torch"))

spec = importlib.util.find_spec("torch")
out["spec_origin"] = spec.origin if spec else None

try:
    from importlib import metadata

    dist = metadata.distribution("torch")
    wheel = dist.read_text("WHEEL") or ""
    direct = dist.read_text("direct_url.json")
    out["dist"] = {
        "version": dist.version,
        "location": str(dist.locate_file("")),
        "wheel_tags": [
            ln.split(":", 1)[1].strip() for ln in wheel.splitlines() if ln.startswith("Tag:")
        ],
        "direct_url": json.loads(direct) if direct else None,
        "installer": (dist.read_text("INSTALLER") or "").strip(),
    }
except Exception:
    pass

try:
    from importlib import metadata as _md

    np_spec = importlib.util.find_spec("numpy")
    out["numpy"] = _md.version("numpy") if np_spec else None
except Exception:
    out["numpy"] = None


# Everything known so far goes out first: if importing torch kills the
# interpreter (a segfault in a mismatched extension), the parent still gets
# these facts and reports how the child died.
onboard_answer.answer(out)

if spec is not None:
    out["stage"] = "imported"
    try:
        import torch

        info: dict = {
            "version": str(torch.__version__),
            "file": torch.__file__,
            "c_file": getattr(torch._C, "__file__", None),
            "git_version": getattr(torch.version, "git_version", None),
            "cuda": getattr(torch.version, "cuda", None),
            "hip": getattr(torch.version, "hip", None),
            "debug": bool(getattr(torch.version, "debug", False)),
            "cxx11_abi": bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", False)),
            "config": "",
            "cudnn": None,
            "cuda_available": False,
            "devices": [],
        }
        try:
            info["config"] = torch.__config__.show()
        except Exception as exc:
            info["config"] = f"unavailable: {exc}"
        try:
            info["cudnn"] = torch.backends.cudnn.version()
        except Exception:
            info["cudnn"] = None
        try:
            import warnings

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                available = torch.cuda.is_available()
            # "The NVIDIA driver on your system is too old" and friends come
            # as warnings from is_available(), not as exceptions.
            if caught and not available:
                info["cuda_error"] = "; ".join(str(w.message) for w in caught)
            if available:
                info["cuda_available"] = True
                for i in range(torch.cuda.device_count()):
                    major, minor = torch.cuda.get_device_capability(i)
                    info["devices"].append(
                        {
                            "index": i,
                            "name": torch.cuda.get_device_name(i),
                            "capability": f"{major}.{minor}",
                        }
                    )
        except Exception as exc:
            info["cuda_error"] = str(exc)
        out["torch"] = info
    except BaseException as exc:
        out["import_error"] = onboard_answer.error(exc)
        # Where the compiled extension is, even though it would not load.
        tdir = os.path.dirname(spec.origin) if spec.origin else None
        if tdir and os.path.isdir(tdir):
            out["import_error"]["extensions"] = sorted(
                os.path.join(tdir, n)
                for n in os.listdir(tdir)
                if n.startswith("_C") and n.endswith(".so")
            )

out["stage"] = "done"
onboard_answer.answer(out)

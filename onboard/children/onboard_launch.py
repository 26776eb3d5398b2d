# Runs INSIDE the user's interpreter via `python -c`, as the module
# `onboard_launch` (proc.ask_child registers it), before the body
# (_profile_child.py or _graph_child.py) that imports what it needs from it:
# imports torch, then runs the user's program the way `python SCRIPT ARGS`,
# `python -m MODULE ARGS` or `python -c CODE` would, and gives one JSON
# answer (onboard_answer, in a file: stdout and stderr are the program's).
#   argv[1]: JSON {"kind": "script" | "module" | "code", "target", "args",
#   "preimport", ...the body's keys}
from __future__ import annotations

import builtins
import json
import os
import sys
import time
import traceback
import types

REQUEST = json.loads(sys.argv[1])

# `python -c` puts "" (the current folder) first on sys.path. torch must come
# from the installed package: a PyTorch checkout's torch/ (no compiled
# libraries) in the current folder must not shadow it. The user's own folder
# goes back on sys.path below, after torch is imported, so `import mymodel`
# next to the script still works.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]
_started = time.perf_counter()
import torch  # noqa: E402 (only after sys.path is fixed)

IMPORT_SECONDS = time.perf_counter() - _started
_TORCH_SEEN = [False]
_REAL_IMPORT = builtins.__import__


def _watching_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = str((globals or {}).get("__name__") or "")
    # only the program's own imports count, not torch importing itself (the profiler does)
    if (
        level == 0
        and (name == "torch" or name.startswith("torch."))
        and not (importer == "torch" or importer.startswith(("torch.", "onboard")))
    ):
        _TORCH_SEEN[0] = True
    return _REAL_IMPORT(name, globals, locals, fromlist, level)


_OVERRIDES = os.sep + os.path.join("torch", "overrides.py")


def _frames(tb):
    return [
        {"path": f.filename, "line": f.lineno, "func": f.name}
        for f in traceback.extract_tb(tb)
        if f.filename != "<onboard>"
    ]


def _not_theirs(frames):
    """Frames `python SCRIPT` would not show: onboard's own (<onboard>), torch's
    __torch_function__ machinery (torch/overrides.py) that the tracer's mode sends a
    call through, and the line that handed the call to it."""
    skip = set()
    for i, frame in enumerate(frames):
        if frame.filename == "<onboard>" or frame.filename.endswith(_OVERRIDES):
            skip.add(i)
            if frame.filename.endswith(_OVERRIDES) and i > 0:
                skip.add(i - 1)
    return [f for i, f in enumerate(frames) if i not in skip]


def _print_traceback(exc):
    """The program's traceback as running it by itself prints it."""
    shown = traceback.TracebackException.from_exception(exc)
    pending, seen = [shown], set()
    while pending:
        part = pending.pop()
        if id(part) in seen:
            continue
        seen.add(id(part))
        part.stack = traceback.StackSummary.from_list(_not_theirs(list(part.stack)))
        pending.extend(p for p in (part.__cause__, part.__context__) if p is not None)
    sys.stderr.write("".join(shown.format()))


def _main_module(path):
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module
    return module.__dict__


def run_user_program(enter, leave):
    """Run the program between enter() and leave(); returns (status, its globals)."""
    kind, target, args = REQUEST["kind"], REQUEST["target"], REQUEST["args"]
    namespace = {}
    if kind == "script":
        sys.argv = [target, *args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        with open(target, "rb") as fh:
            code = compile(fh.read(), target, "exec")
        namespace = _main_module(target)
    elif kind == "code":
        sys.argv = ["-c", *args]
        sys.path.insert(0, "")
        try:
            code = compile(target, "<string>", "eval")
            REQUEST["expression"] = True
        except SyntaxError:
            code = compile(target, "<string>", "exec")
        namespace = _main_module("<string>")
        if REQUEST.get("preimport"):
            namespace["torch"] = torch
            _TORCH_SEEN[0] = True
    else:
        import runpy

        sys.argv = [target, *args]
        sys.path.insert(0, os.getcwd())
    status: dict = {"exit_code": 0, "exception": None, "seconds": 0.0}
    builtins.__import__ = _watching_import
    started = time.perf_counter()
    try:
        enter()
        try:
            if kind == "module":
                namespace = runpy.run_module(target, run_name="__main__", alter_sys=True)
            elif REQUEST.get("expression"):
                namespace["_"] = eval(code, namespace)
            else:
                exec(code, namespace)
        finally:
            leave()
    except SystemExit as exc:
        code_ = exc.code
        if code_ is None or isinstance(code_, int):
            status["exit_code"] = code_ or 0
        else:
            sys.stderr.write(str(code_) + "\n")
            status["exit_code"] = 1
    except BaseException as exc:  # the user's error, reported as theirs
        _print_traceback(exc)
        status["exit_code"] = 1
        status["exception"] = {
            "type": type(exc).__name__,
            "message": str(exc).splitlines()[0] if str(exc) else "",
            "frames": _frames(exc.__traceback__),
        }
    finally:
        builtins.__import__ = _REAL_IMPORT
        status["seconds"] = time.perf_counter() - started
    status["imported_torch"] = _TORCH_SEEN[0]
    return status, namespace


def torch_facts():
    return {
        "version": str(torch.__version__),
        "git_version": getattr(torch.version, "git_version", None),
        "file": torch.__file__,
        "cuda_available": bool(torch.cuda.is_available()),
        "import_seconds": IMPORT_SECONDS,
    }

# Runs INSIDE the target interpreter via `python -c` (torch is imported here,
# never in onboard): answers one live question, then indexes every op.
#
#   argv[1]: the path of _live_child.py, the per-op code this child runs.
# torch is imported first, and the per-op code run once (its first run pays for
# the profiler and meta kernels: seconds), while onboard is still reading the
# yaml; then the request comes on stdin as JSON:
#   {"first": one request of _live_child.py,
#    "index": null or {"path": file to write, "building": marker to remove,
#                      "ops": {base: request}}}
# The answer to "first" is given (onboard_answer) as _live_child.py gives it.
# After that nothing goes to stdout or stderr (onboard has stopped listening)
# and, with "index", every request in "ops" is answered by the same code in
# this one interpreter and written to "path" as JSON lines: a header line
# {"format", "torch_file", "torch_mtime_ns", "torch_version", "git_version",
#  "offsets": {base: [byte offset after the header, length]},
#  "names": {Python entry point: base}} and one line per base
# {"base": base, "request": request, "answer": answer}.
import contextlib
import functools
import importlib.abc
import importlib.util
import io
import json
import os
import sys
import warnings

import onboard_answer

FORMAT = 3  # live_index.FORMAT: the parent reads only headers of its own format
warnings.simplefilter("ignore")


# torch wraps its Python reference kernels (what a meta tensor runs for add,
# mul, ...) in torch._disable_dynamo, whose first call imports torch._dynamo:
# two seconds of a first `where`, to turn off a compiler that is not running.
# While torch._dynamo is not imported nothing can be compiling, so the wrapper
# may call the kernel directly; once it is imported (the user's entry point
# may import it), torch's own wrapper runs, as always. Installed before torch
# imports, because the wrapping happens while torch imports its kernels.
def _lazy_disable_dynamo(module):
    original = module._disable_dynamo

    def _disable_dynamo(fn=None, recursive=True):
        if fn is None:
            return functools.partial(_disable_dynamo, recursive=recursive)
        wrapped = original(fn, recursive)

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if "torch._dynamo" in sys.modules:
                return wrapped(*args, **kwargs)
            return fn(*args, **kwargs)

        return inner

    module._disable_dynamo = _disable_dynamo


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch._compile":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            with contextlib.suppress(Exception):  # another torch: leave it as it is
                _lazy_disable_dynamo(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _PatchAfterImport())

import torch  # noqa: E402

with open(sys.argv[1], encoding="utf-8") as per_op:
    code = compile(per_op.read(), "_live_child.py", "exec")


def ask(question):
    """What _live_child.py answers to `question`, run in this interpreter."""
    out = io.StringIO()
    argv = sys.argv
    sys.argv = ["-c", json.dumps(question)]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            exec(code, {"__name__": "__main__"})
    finally:
        sys.argv = argv
    found, _garbled = onboard_answer.read(out.getvalue())
    return found[-1] if found else None


# Warm up on a question nobody asked; then wait for the real one.
with contextlib.suppress(Exception):
    ask({"entries": ["torch.add"], "ops": ["aten::add.Tensor"], "record": True,
            "group_overloads": False})  # fmt: skip
request = json.loads(sys.stdin.read())
first = request.get("first")
if first is not None:
    onboard_answer.answer(ask(first))
# onboard stops reading here: writing to its pipes could kill this process.
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 1)
os.dup2(devnull, 2)
with contextlib.suppress(OSError):
    os.nice(19)  # the index is for later calls: never slow down this one

index = request.get("index")
if index:
    path = index["path"]
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        offsets: dict = {}
        names: dict = {}  # a Python entry point's name -> the op it was asked for
        body = io.BytesIO()
        for base, question in index["ops"].items():
            try:
                found = ask(question)
            except Exception:  # one op the per-op code cannot answer: it is asked live later
                found = None
            if found is not None:
                row = {"base": base, "request": question, "answer": found}
                data = (json.dumps(row) + "\n").encode()
                offsets[base] = [body.tell(), len(data)]
                body.write(data)
                for entry in found.get("entries", []):
                    if entry.get("exists"):
                        names.setdefault(entry["name"], base)
        header = {
            "format": FORMAT,
            "torch_file": torch.__file__,
            "torch_mtime_ns": os.stat(torch.__file__).st_mtime_ns,
            "torch_version": str(torch.__version__),
            "git_version": getattr(torch.version, "git_version", None),
            "offsets": offsets,
            "names": names,
        }
        head = (json.dumps(header) + "\n").encode()
        with open(tmp, "wb") as fh:
            fh.write(head)
            fh.write(body.getvalue())
        os.replace(tmp, path)
    except OSError:
        pass  # no cache this time: the next `where` asks live again
    finally:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        with contextlib.suppress(OSError):
            os.remove(index["building"])

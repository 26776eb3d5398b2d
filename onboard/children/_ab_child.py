# Runs the user's script for `onboard ab`, one fresh process per run, in the
# interpreter of that side: `python -c ... CONFIG_JSON` (proc.ask_child).
#
# With an overlay (the workspace, or a commit), the checkout's Python files that
# differ from the installed torch's are imported from the checkout, over the
# installed compiled torch: the idea of PyTorch's tools/nightly.py (binaries and
# Python sources side by side), done without writing a file into either tree.
# Such a module's __file__ stays the installed path, because torch finds its
# libraries next to __file__; its code (and tracebacks) come from the checkout.
# Where the installed torch reads its modules from cached bytecode, so does the
# overlay: onboard compiled those modules beforehand into the run's own folder
# (none is written into the checkout), so both sides pay the same start-up.
#
# Then the script runs as `python script.py ARGS` would (its folder first on
# sys.path). At exit, its answer (onboard_answer, in a file: the script's output is
# its own): the peak RSS of this
# process and its children, the number of .py files compiled from source
# during the run (the "compile" audit event, PEP 578: a side that compiles
# torch's Python on every run is measured against one that reads bytecode),
# and, when the script used CUDA, torch.cuda.max_memory_allocated(). Kept to
# Python 3.8 syntax: the other side may be another interpreter.
import atexit
import json
import os
import resource
import runpy
import sys

import onboard_answer

config = json.loads(sys.argv[1])

if config.get("overlay"):
    import importlib.abc
    import importlib.machinery
    import importlib.util

    with open(config["overlay"], encoding="utf-8") as fh:
        MODULES = json.load(fh)

    class CheckoutSources(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            entry = MODULES.get(fullname)
            if entry is None:
                return None
            source, installed, search, bytecode = entry
            # Compiled beforehand when it can be: tracebacks still name the checkout file.
            loader = (
                importlib.machinery.SourcelessFileLoader(fullname, bytecode)
                if bytecode
                else importlib.machinery.SourceFileLoader(fullname, source)
            )
            return importlib.util.spec_from_file_location(
                fullname, installed or source, loader=loader, submodule_search_locations=search
            )

    sys.meta_path.insert(0, CheckoutSources())


COMPILED = [0]


def count_compiled(event, args):
    if event == "compile" and isinstance(args[1], str) and args[1].endswith(".py"):
        COMPILED[0] += 1


sys.addaudithook(count_compiled)


def report():
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    data = {"maxrss_kb": max(own, children), "compiled": COMPILED[0]}
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                data["cuda_max_memory_allocated"] = torch.cuda.max_memory_allocated()
        except Exception:  # noqa: BLE001 - a report must not fail the run
            pass
    onboard_answer.answer(data)


script = config["script"]
sys.argv = [script, *config["args"]]
sys.path[0] = os.path.dirname(os.path.abspath(script))
atexit.register(report)
runpy.run_path(script, run_name="__main__")

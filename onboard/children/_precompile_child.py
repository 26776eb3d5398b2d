# Runs INSIDE one side's interpreter of an `onboard ab`: compile each overlaid module
# where the installed counterpart is read from cached bytecode (or Python may write
# one: the installed side then has it from its warm-up run on), so that the overlay
# imports as fast as the files it replaces. A module that does not compile is left to
# fail in the run itself, with its traceback.
#   argv[1]: a JSON file {module: [source, installed file or null, search path]}
#   argv[2]: the folder for the bytecode; argv[3]: the installed torch/__init__.py
# Standard library only. Answers {module: its bytecode file} (onboard_answer).
import importlib.util
import json
import os
import py_compile
import sys

import onboard_answer

with open(sys.argv[1], encoding="utf-8") as fh:
    modules = json.load(fh)
out, init = sys.argv[2], sys.argv[3]


def cached(path):
    return os.path.exists(importlib.util.cache_from_source(path))


done = {}
for name, (source, installed, _search) in modules.items():
    if sys.dont_write_bytecode and not cached(installed or init):
        continue
    target = os.path.join(out, name + ".pyc")
    try:
        py_compile.compile(source, cfile=target, dfile=source, doraise=True)
    except py_compile.PyCompileError:
        continue
    done[name] = target
onboard_answer.finish(done)

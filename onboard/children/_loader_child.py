# Runs INSIDE the target interpreter for `onboard doctor`: which of the symbols asked
# about this interpreter process does not export (ctypes.PyDLL(None): the python
# binary plus its libpython), and, for each library name, the file the dynamic loader
# picks in this process (its own environment: LD_LIBRARY_PATH and a conda env's
# libstdc++ count). Linux only (/proc/self/maps). Standard library only.
import ctypes
import json
import sys

import onboard_answer

names, libs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
this = ctypes.PyDLL(None)  # everything this interpreter process exports
missing = [n for n in names if not hasattr(this, n)]
paths: dict = {}  # a library name: the file it loads from, or None
for lib in libs:
    try:
        ctypes.CDLL(lib)
    except OSError:
        paths[lib] = None
        continue
    with open("/proc/self/maps") as fh:
        for line in fh:
            path = line.split(None, 5)[-1].strip()
            base = path.rsplit("/", 1)[-1]
            if base == lib or base.startswith(lib + "."):  # libstdc++.so.6 -> .so.6.0.30
                paths[lib] = path
                break
onboard_answer.finish({"missing": missing, "libraries": paths})

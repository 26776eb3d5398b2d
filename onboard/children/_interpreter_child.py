# Runs INSIDE one side's interpreter of an `onboard ab`, with that side's environment:
# what a run on it starts with (Python version, binary, the sys.flags named in argv[1],
# where bytecode is cached). Standard library only. Answers one JSON object
# (onboard_answer).
import json
import os
import sys

import onboard_answer

names = json.loads(sys.argv[1])
onboard_answer.finish(
    {
        "version": sys.version.split()[0],
        "executable": os.path.realpath(sys.executable),
        "flags": {n: getattr(sys.flags, n, None) for n in names},
        "pycache_prefix": getattr(sys, "pycache_prefix", None),
    }
)

# How a child that onboard runs in a target interpreter gives its answer: one JSON
# value after MARKER on a line of its own on stdout, or, where the parent asked for
# it (ONBOARD_ANSWER_FILE: a child whose stdout is a user's program's), in a file.
# The parent's side is `proc.ask_child`, which reads it with `read` below.
#
# Standard library only, in Python 3.8 syntax: the target interpreter (`--python`,
# a user's venv) need not have onboard installed, nor a recent Python. A child
# imports this module as `onboard_answer`: registered before the child runs when it
# runs as `-c` text, found beside it when it runs by path.
import json
import os
import sys
import traceback

MARKER = "@@ONBOARD-ANSWER@@"
FILE_ENV = "ONBOARD_ANSWER_FILE"
# Taken out of the environment as the child starts, so that a program it runs (the
# user's, in `ab` and `trace`) does not inherit it. (Only in a child: onboard itself
# imports this module as onboard.children.onboard_answer for MARKER and `read`.)
_FILE = os.environ.pop(FILE_ENV, None) if __name__ == "onboard_answer" else None


def answer(data):
    """Give ``data`` (JSON-able; anything else as its str) as the answer. A later answer
    replaces an earlier one: a child that may die half-way (in `import torch`)
    answers what it knows first, and the parent still has that."""
    # json.dumps, not json.dump: only the one-shot encoder is the C one (a trace
    # holds tens of thousands of nodes).
    text = json.dumps(data, default=str)
    if _FILE:
        with open(_FILE + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(_FILE + ".tmp", _FILE)
    else:
        sys.stdout.write("\n" + MARKER + text + "\n")
        sys.stdout.flush()


def finish(data):
    """``answer(data)`` and exit 0: the answer says how it went."""
    answer(data)
    sys.exit(0)


def error(exc, frames=6):
    """An exception as an answer carries it: its type, message and last frames."""
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {"type": type(exc).__name__, "message": str(exc), "traceback": "".join(tb[-frames:])}


def read(text):
    """(the answers in ``text``, a child's output, in order; how many were not JSON)."""
    found, garbled = [], 0
    for line in text.splitlines():
        if line.startswith(MARKER):
            try:
                found.append(json.loads(line[len(MARKER) :]))
            except ValueError:
                garbled += 1
    return found, garbled

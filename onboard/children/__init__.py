"""The code onboard runs inside a target interpreter: the one that has the user's
torch (``--python``, a venv), which does not have onboard installed.

So each file here imports only the standard library (and torch, torchgen where it
asks them), the shared ``onboard_answer`` (how a child gives its answer) and, for
some, one module beside it. ``proc.ask_child`` runs one and returns its answer:
as ``-c`` text, with ``onboard_answer`` (and the modules named) registered first,
or by path. A script run by path has its folder first on ``sys.path``, so no file
here is named like a module of the standard library or of the programs children
run (``_*_child.py``, ``onboard_*.py``, ``_oracle_checks.py``).
"""

"""Where onboard puts things in a workspace (the folder ``onboard setup DIR`` makes)."""

from __future__ import annotations

CHECKOUT_DIR = "pytorch"
GDB_FILE = "onboard.gdb"
NOXFILE = "noxfile.py"

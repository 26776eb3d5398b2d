"""nox session bodies for onboard workspaces.

A workspace's generated ``noxfile.py`` does ``from onboard.tasks.workspace
import *``, so ``nox -s verify`` run in the workspace and ``onboard verify``
drive the very same code.
"""

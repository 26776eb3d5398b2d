"""Click commands: parse options, call one workflow, print its result.

Options more than one command takes are defined once, in ``options.py``; what
Click parsed reaches the workflow by the same names (``**parsed``), as its
request object or its keyword arguments. Only click is imported at module
level; workflows load inside the command.
"""

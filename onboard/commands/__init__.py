"""Click commands: parse options, call one workflow, print its result.

Options more than one command takes are defined once, in ``options.py``; what
Click parsed becomes the workflow's request by the same names
(``BisectRequest(**parsed)``), and the command calls that one workflow entry with
it (tests/test_layers.py). Only click is imported at module level; workflows load
inside the command.
"""

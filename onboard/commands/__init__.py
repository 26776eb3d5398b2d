"""Click commands: parse options, call one workflow, print its result.

Only click is imported at module level; workflows load inside the command.
"""

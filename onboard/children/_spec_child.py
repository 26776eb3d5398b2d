# Runs INSIDE a target interpreter: the folder it would import each package named in
# argv from, found with importlib.util.find_spec (nothing is imported: a broken torch
# is still found), and its Python version. Standard library only, Python 3.8 syntax.
# Answers one JSON object (onboard_answer).
import importlib.util
import sys

import onboard_answer

packages = {}
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent that fails to import, a bad __spec__
        spec = None
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    packages[name] = folders[0] if folders else None
onboard_answer.finish({"python": "{}.{}".format(*sys.version_info[:2]), "packages": packages})

"""onboard: from "I use PyTorch" to contributing to PyTorch, for the torch you have."""

import os as _os

__version__ = "0.1.0"

# templates/ and tasks/ sit at the top of the repository and are installed as
# onboard.templates / onboard.tasks (see pyproject.toml). When this package is
# imported straight from a source checkout (`python -m onboard` run inside the
# repository, even with onboard installed), let those two resolve there too.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "templates")) and all(
    _os.path.isfile(_os.path.join(_root, name, "__init__.py")) for name in ("templates", "tasks")
):
    __path__.append(_root)  # noqa: F821 - a package's __path__ is set before its __init__ runs

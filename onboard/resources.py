"""Where the shipped templates are, in a wheel and in a source checkout alike."""

from __future__ import annotations

from pathlib import Path


def templates_dir() -> Path:
    # onboard.templates is mapped to the top-level templates/ folder in
    # pyproject.toml, so the package location is right for wheels and editable
    # installs alike.
    import onboard.templates as pkg

    return Path(next(iter(pkg.__path__)))

"""Jinja2 over templates/: StrictUndefined, a user override folder looked up first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from onboard.resources import templates_dir
from onboard.shell import quote


def environment(override: Path | None = None) -> Any:
    import jinja2

    search = []
    user = override or (
        Path(os.environ["ONBOARD_TEMPLATES"]) if os.environ.get("ONBOARD_TEMPLATES") else None
    )
    if user and user.is_dir():
        search.append(str(user))
    search.append(str(templates_dir()))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        undefined=jinja2.StrictUndefined,  # a missing variable is an error, never ""
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["quote"] = quote  # `{{ path | quote }}` in a command a user may paste
    return env


def render(name: str, /, **context: Any) -> str:
    return str(environment().get_template(name).render(**context))

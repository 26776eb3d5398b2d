"""Suggested commands are runnable as printed: the checker itself, and the suggestions
of the scenarios users met, run again to see they are not refused for the reason
they were given. (Every suggestion any test sees is also parsed at the end of the run,
by the plugin in tests/fixtures/suggestions.py.)"""

from __future__ import annotations

import pytest
from fixtures.suggestions import commands_in, parse_error


def test_commands_are_found_in_backticks_pipes_and_chains() -> None:
    text = (
        "Run `onboard locate -- python repro.py`, or `python x.py 2>&1 | onboard locate -`, "
        "or `cd WS && onboard verify`; not `git status` nor onboard setup unquoted."
    )
    assert list(commands_in(text)) == [
        "onboard locate -- python repro.py",
        "onboard locate -",
        "onboard verify",
    ]


@pytest.mark.parametrize(
    "command",
    [
        "onboard setup NEW_DIR --from-wheel",
        "onboard setup DIR --commit <sha or tag>",
        "onboard locate -- python repro.py",
        'onboard locate "MESSAGE"',
        "onboard new-op my_mm --kind binary",
        "onboard doctor --import MODULE",
        "onboard doctor -- python script.py",
        "onboard where trunc --generated",
        "onboard harvest show <ID>",
    ],
)
def test_commands_that_parse(command: str) -> None:
    assert parse_error(command) is None


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("onboard setup DIR --from-wheels", "No such option"),
        ("onboard new-op my_mm --kind ternary", "ternary"),
        ("onboard frobnicate", "no such command"),
        ("onboard locate a b", "unexpected extra argument"),
        ("onboard pr --issue", "requires an argument"),
    ],
)
def test_commands_that_do_not(command: str, why: str) -> None:
    error = parse_error(command)
    assert error is not None and why.lower() in error.lower()

"""Every command's --help ends with examples, and each one runs as printed: its
`onboard ...` commands parse with onboard's own Click commands (the checker of
tests/fixtures/suggestions.py), and the torch files it names are in the installed
torch, with the line it names. (Sources the wheel does not ship, such as .cpp
files, exist only in a full checkout: not checked here.)"""

from __future__ import annotations

import re
import shlex

import click
import pytest
from fixtures.cli import every_command
from fixtures.pytorch_repo import find_torch_dir
from fixtures.suggestions import parse_error

_OPERATORS = {"|", "||", "&&", ";", "&"}
_REDIRECTS = {">", ">>", "<", ">&", "&>"}
_TORCH_FILE = re.compile(r"^torch/[\w/.]+\.py(?::(\d+)(?:-(\d+))?)?$")


def examples(command: click.Command) -> list[str]:
    """The lines of the help's last paragraph, which is Click's `\\b` block `Examples:`."""
    last = (command.help or "").strip().split("\n\n")[-1].splitlines()
    words = [line.strip() for line in last]
    assert words[:2] == ["\b", "Examples:"], f"the help does not end with examples: {last}"
    return words[2:]


def onboard_commands(line: str) -> list[list[str]]:
    """The `onboard ...` commands of a shell line, as argv: cut at pipes and `&&`,
    without redirections and comments (`2>&1`, `> g.dot`, `# ...`)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    parts: list[list[str]] = [[]]
    words = list(lexer)
    while words:
        word = words.pop(0)
        if word in _OPERATORS:
            parts.append([])
        elif word in _REDIRECTS:
            if words:
                words.pop(0)
            if parts[-1] and parts[-1][-1].isdigit():  # the 2 of 2>&1
                parts[-1].pop()
        else:
            parts[-1].append(word)
    return [part for part in parts if part[:1] == ["onboard"]]


def test_shell_lines_are_cut_intoevery_command() -> None:
    line = "python repro.py 2>&1 | onboard locate -  # read a traceback"
    assert onboard_commands(line) == [["onboard", "locate", "-"]]
    line = 'onboard stuck --json "$(pgrep -of train.py)" && onboard graph --dot > g.dot'
    assert onboard_commands(line) == [
        ["onboard", "stuck", "--json", "$(pgrep -of train.py)"],
        ["onboard", "graph", "--dot"],
    ]


def test_a_group_checks_its_subcommand_options() -> None:
    assert parse_error("onboard harvest show abcd --offline") is None
    assert "No such option" in (parse_error("onboard harvest show abcd --no-such") or "")


@pytest.mark.parametrize(("name", "command"), every_command(), ids=[n for n, _ in every_command()])
def test_every_example_parses_as_printed(name: str, command: click.Command) -> None:
    lines = examples(command)
    assert 2 <= len(lines) <= 4, lines
    for line in lines:
        argvs = onboard_commands(line)
        assert any(argv[1 : 1 + len(name.split())] == name.split() for argv in argvs), (
            f"`{line}` does not run `onboard {name}`"
        )
        for argv in argvs:
            error = parse_error(shlex.join(argv))
            assert error is None, f"`{line}`: {error}"


def test_the_torch_files_the_examples_name_are_there() -> None:
    torch_dir = find_torch_dir()
    named = [
        (word, match)
        for _, command in every_command()
        for line in examples(command)
        for argv in onboard_commands(line)
        for word in argv
        if (match := _TORCH_FILE.match(word))
    ]
    assert named  # blame's and reviews' examples name some
    for word, match in named:
        path = torch_dir.parent / word.split(":")[0]
        assert path.is_file(), f"{word}: no {path}"
        last = int(match.group(2) or match.group(1) or 1)
        lines = path.read_text(encoding="utf-8").count("\n")
        assert last <= lines, f"{word}: {path} has {lines} lines"

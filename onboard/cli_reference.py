"""The command reference (docs/commands.md), written from the Click commands themselves.

`nox -s docs` writes it; tests/test_docs.py fails when the file in the
repository differs from what the commands say, so the reference cannot
drift from the code. Each command's ``--help`` text is the source: its first
paragraph is the summary, ``\\b`` blocks (Click's "keep as is") become code
blocks (the examples), options and arguments become a table.
"""

from __future__ import annotations

import click

from onboard.cli import COMMANDS, cli

HEADER = """\
# Command reference

Generated from the commands themselves by `nox -s docs` (`onboard/cli_reference.py`);
do not edit by hand. `onboard COMMAND --help` prints the same text.

Every command also takes `--json` (one JSON object on stdout, nothing else)
and `-v/--verbose`; exit codes are `0` done, `1` a finding or an expected
failure, `2` bad usage, `3` a bug in onboard (with a log file), `130`
interrupted.
"""


def _help_markdown(text: str) -> str:
    """Click help text as Markdown: ``\\b`` blocks verbatim in a code block."""
    out: list[str] = []
    for block in click.unstyle(text).strip().split("\n\n"):
        lines = block.splitlines()
        if lines and lines[0].strip() == "\b":
            body = [ln.strip() for ln in lines[1:]]
            title = []
            while body and body[0].endswith(":") and not body[0].startswith("onboard"):
                title.append(body.pop(0))
            if title:
                out.append(" ".join(title))
            out.append("```\n" + "\n".join(body) + "\n```")
        else:
            out.append(" ".join(ln.strip() for ln in lines))
    return "\n\n".join(out)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _params_table(command: click.Command, ctx: click.Context) -> str:
    rows = []
    for param in command.params:
        if isinstance(param, click.Argument):
            rows.append((param.human_readable_name, "argument"))
            continue
        if not isinstance(param, click.Option) or param.hidden:
            continue
        record = param.get_help_record(ctx)
        if record is None or param.name in ("as_json", "verbose"):
            continue
        names, help_text = record
        rows.append((f"`{names}`", help_text))
    if not rows:
        return ""
    lines = ["| | |", "|---|---|"]
    lines += [f"| {_escape(name)} | {_escape(text)} |" for name, text in rows]
    return "\n".join(lines)


def _section(name: str, command: click.Command, parent: click.Context) -> str:
    ctx = click.Context(command, info_name=name, parent=parent)
    usage = " ".join(command.collect_usage_pieces(ctx))
    parts = [f"## {ctx.command_path}", f"```\n{ctx.command_path} {usage}\n```"]
    if command.help:
        parts.append(_help_markdown(command.help))
    table = _params_table(command, ctx)
    if table:
        parts.append(table)
    text = "\n\n".join(parts)
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is not None and not sub.hidden:
                text += "\n\n" + _section(sub_name, sub, ctx).replace("\n## ", "\n### ", 1)
    return text


def render() -> str:
    root = click.Context(cli, info_name="onboard")
    sections = []
    for name in sorted(COMMANDS):
        command = cli.get_command(root, name)
        assert command is not None, name
        sections.append(_section(name, command, root))
    return HEADER + "\n" + "\n\n".join(sections) + "\n"


def main() -> None:
    import sys
    from pathlib import Path

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/commands.md")
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

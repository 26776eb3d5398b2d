"""How results look in a terminal: one module per command, the only place that
knows rich besides ``console.py``. Workflows return results; views draw them.

Every view writes through a ``Screen`` (``screen(console, verbose)``), the one place
that decides how output fits where it goes (onboard/console.py decides what the
console is: a terminal, with its width from ``COLUMNS`` or the terminal itself, or
anything else, a pipe or a log, without a width):

- in a terminal, a line longer than the width wraps inside its indentation (a wrapped
  line would otherwise start at column 0 and break the structure the indentation
  carries); a long path is shortened from the left (``…/native/UnaryOps.cpp:123``);
  a GitHub URL is a hyperlink on the path it belongs to, not a line of its own
  (``-v`` prints the URLs too);
- anywhere else lines are whole, paths full and URLs printed; a table becomes plain
  rows under a header line, one item per line, as git, rg and ``pip list`` print
  them, so ``| head -1`` or ``| grep`` see an item, not a border.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from onboard.workflows.opsource.paths import SourceLoc

# Continuation lines of a wrapped line start this much further in than its first line.
HANG = 2
# In a terminal a path may take the width less this much (the label before it, the
# status after), and never less than MIN_PATH: at 80 columns
# aten/src/ATen/native/UnaryOps.cpp:123 becomes …/ATen/native/UnaryOps.cpp:123.
PATH_MARGIN = 48
MIN_PATH = 24
ELLIPSIS = "…"


def shorten_path(path: str, budget: int) -> str:
    """``path`` cut from the left at a ``/`` so that it takes at most ``budget`` cells
    (``…/native/UnaryOps.cpp:123``); the file name (and its ``:line``) always stays."""
    if len(path) <= budget:
        return path
    parts = path.split("/")
    for start in range(1, len(parts)):
        shown = ELLIPSIS + "/" + "/".join(parts[start:])
        if len(shown) <= budget:
            return shown
    return ELLIPSIS + "/" + parts[-1] if len(parts) > 1 else path


def _esc(text: str) -> str:
    """Text for markup: escaped, and terminal control characters shown as escapes (a
    path or URL can come from a pasted log)."""
    from onboard.console import escape, printable

    return escape(printable(text))


def _link_target(url: str) -> str:
    # rich's markup ends a tag at "]"; GitHub URLs have none, but be safe.
    return url.replace("[", "%5B").replace("]", "%5D")


@dataclass
class Screen:
    """A console and what fits on it: ``width``, ``is_terminal``, and the ways every
    view prints a line, a location and a table there."""

    console: Console
    verbose: bool = False

    @property
    def is_terminal(self) -> bool:
        return bool(self.console.is_terminal)

    @property
    def width(self) -> int:
        return int(self.console.width)

    @property
    def urls_as_text(self) -> bool:
        """URLs on lines of their own: in a pipe or a log (no hyperlinks there), or -v."""
        return self.verbose or not self.is_terminal

    @property
    def path_budget(self) -> int:
        return max(MIN_PATH, self.width - PATH_MARGIN)

    # --- lines ---

    def print(
        self,
        *objects: Any,
        markup: bool = True,
        highlight: bool = False,
        end: str = "\n",
        **kwargs: Any,
    ) -> None:
        """``console.print`` for one line of markup (or text, ``markup=False``): in a
        terminal wrapped at the width with its indentation kept; elsewhere whole.
        Anything else (a table, a rule, code) goes to rich as it is. Never highlighted:
        what onboard prints is styled by its markup, not guessed at."""
        if len(objects) != 1 or not isinstance(objects[0], str) or kwargs:
            self.console.print(*objects, markup=markup, highlight=highlight, end=end, **kwargs)
            return
        text: str = objects[0]
        if not self.is_terminal:
            self.console.print(text, markup=markup, highlight=False, soft_wrap=True, end=end)
            return
        rendered = self.console.render_str(text, markup=markup, highlight=False)
        lines = rendered.split("\n", allow_blank=True)
        for i, line in enumerate(lines):
            self._wrapped(line, end if i == len(lines) - 1 else "\n")

    def _wrapped(self, line: Text, end: str) -> None:
        from rich.text import Text

        plain = line.plain
        indent = len(plain) - len(plain.lstrip(" "))
        body = line[indent:]
        body.rstrip()
        room = self.width - indent - HANG
        if indent + body.cell_len <= self.width or room < 20:
            self.console.print(line, soft_wrap=True, end=end, overflow="fold")
            return
        parts = body.wrap(self.console, room, overflow="fold")
        for i, part in enumerate(parts):
            part.rstrip()
            pad = " " * (indent if i == 0 else indent + HANG)
            self.console.print(
                Text(pad) + part, soft_wrap=True, end=end if i == len(parts) - 1 else "\n"
            )

    # --- locations ---

    def path(self, path: str, line: int | None = None, url: str | None = None) -> str:
        """Markup for ``path:line``: in a terminal shortened to fit and, with a URL,
        a hyperlink to it; elsewhere the full path."""
        label = f"{path}:{line}" if line else path
        if not self.is_terminal:
            return _esc(label)
        return self.link(_esc(shorten_path(label, self.path_budget)), url)

    def link(self, markup: str, url: str | None) -> str:
        """``markup`` as a hyperlink to ``url`` in a terminal; elsewhere as it is (the
        URL is printed on its own line there: ``Screen.url``)."""
        if url and self.is_terminal:
            return f"[link={_link_target(url)}]{markup}[/link]"
        return markup

    def location(self, path: str, line: int | None = None, url: str | None = None) -> str:
        """``path`` (markup, in bold) as ``Screen.path`` makes it."""
        return f"[bold]{self.path(path, line, url)}[/bold]"

    def loc(self, loc: SourceLoc, *, status: bool = True) -> str:
        """A SourceLoc's place (bold), with what its status says when ``status``."""
        after = _esc(loc.status) if status else ""
        return f"[bold]{self.path(loc.path, loc.line, loc.url)}{after}[/bold]"

    def place(self, loc: SourceLoc, indent: str) -> None:
        """A place on its own line, then (further in) its source line, onboard's
        regenerated copy of a generated file, and its URL where that is text."""
        self.print(f"{indent}{self.loc(loc)}")
        if loc.text:
            self.print(f"{indent}  [dim]{_esc(loc.text.strip())}[/]")
        if loc.copy:
            self.print(f"{indent}  onboard's regenerated copy: {self.path(loc.copy)}")
        self.url(loc.url, indent + "  ")

    def url(self, url: str | None, indent: str) -> None:
        """The URL's own line, where it is not a hyperlink already (a pipe, -v)."""
        if url and self.urls_as_text:
            self.print(f"{indent}[blue]{_esc(url)}[/]")

    # --- tables ---

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        title: str | None = None,
        header: bool = True,
        styles: Sequence[str | None] = (),
        justify: Sequence[str] = (),
        show_lines: bool = False,
        plain_rows: Sequence[Sequence[str]] | None = None,
    ) -> None:
        """Rows of markup cells: a rich table that fits the terminal's width (cells
        fold), or, anywhere else, plain rows (the header line, then one row per line,
        columns padded with spaces as ``pip list`` does; a cell's line breaks become
        two spaces). ``plain_rows`` replaces the rows there (plain text, not markup)."""
        if self.is_terminal:
            from rich.table import Table

            table = Table(
                title=title,
                title_justify="left",
                show_header=header,
                show_lines=show_lines,
                pad_edge=False,
            )
            for i, name in enumerate(columns):
                table.add_column(
                    name,
                    style=styles[i] if i < len(styles) else None,
                    justify=justify[i] if i < len(justify) else "left",  # type: ignore[arg-type]
                    overflow="fold",
                )
            for row in rows:
                table.add_row(*row)
            self.console.print(table)
            return
        plain = (
            [list(r) for r in plain_rows]
            if plain_rows is not None
            else [[_plain(self.console, cell) for cell in row] for row in rows]
        )
        lines = ([list(columns)] if header else []) + plain
        if title:
            self.console.print(_plain(self.console, title), markup=False, soft_wrap=True)
        self.console.print(
            "\n".join(plain_rows_text(lines)),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _plain(console: Console, markup: str) -> str:
    lines = console.render_str(markup, highlight=False).plain.split("\n")
    return "  ".join(line.strip() for line in lines if line.strip())


def plain_rows_text(rows: Sequence[Sequence[str]]) -> list[str]:
    """Plain rows as lines: each cell but the last padded to its column's widest, two
    spaces between (``pip list``'s layout)."""
    count = max((len(r) for r in rows), default=0)
    widths = [max((len(r[i]) for r in rows if i < len(r)), default=0) for i in range(count)]
    return [
        "  ".join([c.ljust(widths[i]) for i, c in enumerate(r[:-1])] + list(r[-1:])).rstrip()
        for r in rows
    ]


def screen(console: Console, verbose: bool = False) -> Screen:
    """The Screen a view prints on (a view handed one already keeps it)."""
    if isinstance(console, Screen):
        return console
    return Screen(console, verbose)

"""`onboard where`'s output: an op's anatomy, one section per layer, each place with
its line and GitHub link."""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard.console import escape
from onboard.views import Screen, screen
from onboard.workflows.opsource.native_yaml import DERIVATIVES, NATIVE_FUNCTIONS
from onboard.workflows.reviews import hint

if TYPE_CHECKING:
    from rich.console import Console

    from onboard.workflows.opsource.anatomy import Registration, WhereResult
    from onboard.workflows.opsource.paths import SourceLoc

_ROLES = {
    "meta": "meta (TORCH_META_FUNC)",
    "impl": "impl (TORCH_IMPL_FUNC)",
    "kernel": "kernel",
    "stub_declare": "DECLARE_DISPATCH",
    "stub_define": "DEFINE_DISPATCH",
    "stub_register": "REGISTER_DISPATCH",
    "stub_kernel": "stub kernel body",
    "decomposition": "decomposition (torch._decomp; torch.compile, export)",
    "python_dispatcher": "Python dispatcher kernel (torch.compile, export)",
}


def render(result: WhereResult, console: Console, verbose: bool) -> None:
    out = screen(console, verbose)
    out.print(
        f"[bold]{escape(result.query)}[/] -> aten::{escape(result.op)}  "
        f"(commit {escape((result.commit or 'unknown')[:12])}, {escape(result.checkout_kind)} "
        f"checkout {escape(result.checkout)})"
    )
    _entry_points(result, out, verbose)
    _yaml(result, out, verbose)
    _dispatch(result, out, verbose)
    _kernels(result, out, verbose)
    if result.derivatives:
        out.print(f"\n[bold cyan]{DERIVATIVES}[/]")
        for d in result.derivatives:
            _place(out, verbose, d.name, d.location)
            for key, formula in d.formulas.items():
                out.print(f"      [dim]{escape(key)}: {escape(formula)}[/]")
            if d.output_differentiability is not None:
                flags = ", ".join(str(v) for v in d.output_differentiability)
                out.print(f"      [dim]output_differentiability: {escape(f'[{flags}]')}[/]")
    if result.opinfo:
        out.print("\n[bold cyan]OpInfo (the op's tests)[/]")
        for o in result.opinfo:
            _place(out, verbose, "", o)
    if result.decomposes_to:
        out.print(
            "\n[dim]On meta tensors the call runs as: "
            + escape(", ".join(result.decomposes_to))
            + "[/]"
        )
    for note in result.notes:
        out.print(f"\n[yellow]Note:[/] {escape(note)}")
    for limit in result.limitations:
        out.print(f"\n[yellow]Limitation:[/] {escape(limit)}")
    reviews = hint.line(op=result.query)
    if reviews:
        out.print(f"\n[dim]{escape(reviews)}[/]")


def _place(out: Screen, verbose: bool, label: str, loc: SourceLoc | None, extra: str = "") -> None:
    """A labelled place: its line, the line's text, onboard's copy and its link."""
    if loc is None:
        out.print(f"  {escape(label)}{escape(extra)}")
        return
    out.print(f"  {escape(label)}  {out.loc(loc)}{escape(extra)}")
    if loc.text and (verbose or not loc.generated or loc.local):
        out.print(f"      [dim]{escape(loc.text.strip())}[/]")
    if loc.copy:
        out.print(f"      onboard's regenerated copy: {out.path(loc.copy)}")
    out.url(loc.url, "      ")


def _at(out: Screen, loc: SourceLoc) -> str:
    return out.path(loc.path, loc.line, loc.url)


def _entry_points(result: WhereResult, out: Screen, verbose: bool) -> None:
    if not result.entry_points:
        return
    out.print("\n[bold cyan]Python entry points[/]")
    for e in result.entry_points:
        reaches = ", ".join(e.top_ops) or "?"
        extra = f"  -> {reaches}"
        if e.dispatched and list(e.dispatched) != [
            t.replace("::", ".") + ".default" for t in e.top_ops
        ]:
            extra += f" (runs {', '.join(e.dispatched)})"
        if e.source is not None:
            _place(out, verbose, e.name, e.source, extra)
        else:
            out.print(f"  {escape(e.name)}  [dim]{escape(e.kind)}[/]{escape(extra)}")
            if e.binding:
                out.print(f"      [dim]binding: {escape(e.binding)}[/]")
        if not e.top_ops:  # "?": say why no op was recorded
            why = (
                f"the call on meta tensors failed: {e.call_error}"
                if e.call_error
                else "the call on meta tensors reached no aten op"
            )
            out.print(f"      [dim]? = not recorded: {escape(why)}[/]")
        elif e.call_error and verbose:
            out.print(f"      [dim]meta call: {escape(e.call_error)}[/]")


def _yaml(result: WhereResult, out: Screen, verbose: bool) -> None:
    out.print(f"\n[bold cyan]{NATIVE_FUNCTIONS}[/]")
    for y in result.yaml_entries:
        facts = [y.kind]
        if y.variants:
            facts.append("variants: " + ", ".join(y.variants))
        if y.structured:
            facts.append("structured")
        if y.structured_delegate:
            facts.append(f"structured_delegate: {y.structured_delegate}")
        if y.dispatch:
            facts.append(
                "dispatch: " + ", ".join(f"{k}: {v}" for k, v in y.dispatch.items())
                if verbose or len(y.dispatch) <= 4
                else f"dispatch: {len(y.dispatch)} keys"
            )
        if y.tags:
            facts.append("tags: " + ", ".join(y.tags))
        out.print(f"  {out.loc(y.location, status=False)}  {escape(y.schema)}")
        out.print(f"      [dim]{escape('; '.join(facts))}[/]")
        out.url(y.location.url, "      ")


def _dispatch(result: WhereResult, out: Screen, verbose: bool) -> None:
    if not result.dispatch:
        return
    out.print("\n[bold cyan]Dispatch table (live, from the installed binary)[/]")
    # An inactive kernel is shown when a Python kernel shadows it (that is news:
    # the C++ one is not what runs); other inactive ones with -v.
    shown = [r for r in result.dispatch if verbose or not r.inactive or r.shadowed_by]
    # trunc, trunc_ and trunc.out usually share one registration line per key.
    grouped: dict[tuple[str, str], list[Registration]] = {}
    first_seen = {r.key: i for i, r in reversed(list(enumerate(shown)))}
    for r in sorted(shown, key=lambda r: first_seen[r.key]):  # a key's rows together
        grouped.setdefault((r.key, r.location.label), []).append(r)
    for regs in grouped.values():
        ops = ", ".join(r.op.removeprefix("aten::") for r in regs)
        first = regs[0]
        extra = f"  {first.implementation}" if first.implementation else ""
        if first.shadowed_by:
            extra += f"  (not run: {first.shadowed_by})"
        _place(out, verbose, f"{first.key} ({ops}):", first.location, extra)
        if first.registered_at is not None and first.registered_at.generated:
            out.print(
                "      [dim]registered in the TORCH_LIBRARY_IMPL block at "
                f"{_at(out, first.registered_at)} (the line the binary names)[/]"
            )
        elif first.registered_at is not None:
            via = f" (torch._decomp's {first.via} table)" if first.via else ""
            out.print(
                f"      [dim]a Python kernel{escape(via)}, registered through the "
                f"torch.library.Library at {_at(out, first.registered_at)}[/]"
            )
        if first.registered_at is not None:
            out.url(first.registered_at.url, "      ")


def _kernels(result: WhereResult, out: Screen, verbose: bool) -> None:
    if result.kernels or result.kernels_not_found:
        out.print("\n[bold cyan]Kernels in the checkout[/]")
        for k in result.kernels:
            keys = f" [{', '.join(k.keys)}]" if k.keys else ""
            _place(
                out,
                verbose,
                f"{_ROLES.get(k.role, k.role)} {k.name}{keys}",
                k.location,
                f"  {k.detail}" if verbose and k.detail else "",
            )
    if result.kernels_not_found:
        missing = "; ".join(
            f"{name} ({', '.join(keys)})" for name, keys in result.kernels_not_found.items()
        )
        out.print(f"  [dim]not found in this checkout: {escape(missing)}[/]")

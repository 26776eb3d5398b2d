"""What `onboard where` answers about one op, as result objects: the Python entry
points, the yaml entries, the live dispatch table, the kernels, the derivative and
the OpInfo entry, each place as a ``SourceLoc``. The same objects feed the rich
text, the JSON and the tests (and `trace` / `graph`, which reuse the locations).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onboard.workflows.opsource.native_yaml import DERIVATIVES, NATIVE_FUNCTIONS
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.reviews import hint as reviews_hint

if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class EntryPoint:
    name: str  # torch.nn.functional.linear
    kind: str  # builtin_function_or_method / function / method_descriptor
    source: SourceLoc | None  # the Python definition, when it is Python
    binding: str | None  # the generated C++ binding for builtins
    top_ops: tuple[str, ...]  # aten ops the call enters first (profiler)
    dispatched: tuple[str, ...]  # ops that reached the backend (TorchDispatchMode)
    call_error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source.to_json() if self.source else None,
            "binding": self.binding,
            "reaches": list(self.top_ops),
            "dispatched": list(self.dispatched),
            "call_error": self.call_error,
        }


@dataclass(frozen=True)
class YamlEntry:
    name: str  # trunc.out
    schema: str
    kind: str  # functional / inplace / out / mutable / scratch
    location: SourceLoc
    variants: tuple[str, ...]
    structured: bool
    structured_delegate: str | None
    dispatch: dict[str, str]
    tags: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "schema": self.schema,
            "kind": self.kind,
            "location": self.location.to_json(),
            "variants": list(self.variants),
            "structured": self.structured,
            "structured_delegate": self.structured_delegate,
            "dispatch": self.dispatch,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class Registration:
    op: str  # aten::trunc
    key: str  # CPU
    location: SourceLoc  # where the kernel is written (a Python kernel: its function)
    alias: bool
    inactive: bool
    # A kernel registered from Python: the torch.library.Library(...) line the binary
    # names, the implementing function's dotted name and the registry it came from.
    registered_at: SourceLoc | None = None
    implementation: str | None = None
    via: str | None = None
    shadowed_by: str | None = None  # an inactive kernel: what runs instead

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "key": self.key,
            "alias": self.alias,
            "inactive": self.inactive,
            "location": self.location.to_json(),
            "registered_at": self.registered_at.to_json() if self.registered_at else None,
            "implementation": self.implementation,
            "via": self.via,
            "shadowed_by": self.shadowed_by,
        }


@dataclass(frozen=True)
class KernelSite:
    role: str  # meta / impl / kernel / stub_declare / stub_define / stub_register / stub_kernel
    name: str
    location: SourceLoc
    keys: tuple[str, ...] = ()  # the dispatch keys that name this kernel
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "name": self.name,
            "keys": list(self.keys),
            "detail": self.detail,
            "location": self.location.to_json(),
        }


@dataclass(frozen=True)
class Derivative:
    name: str
    location: SourceLoc
    formulas: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "location": self.location.to_json(), "formulas": self.formulas}


@dataclass
class WhereResult:
    query: str
    op: str  # the aten base name (trunc)
    commit: str | None
    checkout: str
    checkout_kind: str
    entry_points: list[EntryPoint] = field(default_factory=list)
    yaml_entries: list[YamlEntry] = field(default_factory=list)
    dispatch: list[Registration] = field(default_factory=list)
    kernels: list[KernelSite] = field(default_factory=list)
    kernels_not_found: dict[str, list[str]] = field(default_factory=dict)  # kernel -> keys
    derivatives: list[Derivative] = field(default_factory=list)
    opinfo: list[SourceLoc] = field(default_factory=list)
    decomposes_to: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    limitations: list[str] = field(default_factory=list)
    generated_dir: str | None = None
    warm: dict[str, bool] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "query": self.query,
            "op": self.op,
            "commit": self.commit,
            "checkout": self.checkout,
            "checkout_kind": self.checkout_kind,
            "entry_points": [e.to_json() for e in self.entry_points],
            "yaml": [e.to_json() for e in self.yaml_entries],
            "dispatch_table": [r.to_json() for r in self.dispatch],
            "kernels": [k.to_json() for k in self.kernels],
            "kernels_not_found": self.kernels_not_found,
            "derivatives": [d.to_json() for d in self.derivatives],
            "opinfo": [o.to_json() for o in self.opinfo],
            "decomposes_to": self.decomposes_to,
            "generated_dir": self.generated_dir,
            "notes": self.notes,
            "limitations": self.limitations,
            "cache_warm": self.warm,
        }

    def render(self, console: Console, verbose: bool) -> None:
        from rich.markup import escape

        def loc_line(label: str, loc: SourceLoc | None, extra: str = "") -> None:
            if loc is None:
                console.print(f"  {escape(label)}{escape(extra)}")
                return
            where = loc.label + loc.status
            console.print(f"  {escape(label)}  [bold]{escape(where)}[/]{escape(extra)}")
            if loc.text and (verbose or not loc.generated or loc.local):
                console.print(f"      [dim]{escape(loc.text.strip())}[/]")
            if loc.copy:
                console.print(f"      onboard's regenerated copy: {escape(loc.copy)}")
            if loc.url:
                console.print(f"      [blue]{escape(loc.url)}[/]")

        console.print(
            f"[bold]{escape(self.query)}[/] -> aten::{escape(self.op)}  "
            f"(commit {escape((self.commit or 'unknown')[:12])}, {escape(self.checkout_kind)} "
            f"checkout {escape(self.checkout)})"
        )
        if self.entry_points:
            console.print("\n[bold cyan]Python entry points[/]")
            for e in self.entry_points:
                reaches = ", ".join(e.top_ops) or "?"
                extra = f"  -> {reaches}"
                if e.dispatched and list(e.dispatched) != [
                    t.replace("::", ".") + ".default" for t in e.top_ops
                ]:
                    extra += f" (runs {', '.join(e.dispatched)})"
                if e.source is not None:
                    loc_line(e.name, e.source, extra)
                else:
                    console.print(f"  {escape(e.name)}  [dim]{escape(e.kind)}[/]{escape(extra)}")
                    if e.binding:
                        console.print(f"      [dim]binding: {escape(e.binding)}[/]")
                if not e.top_ops:  # "?": say why no op was recorded
                    why = (
                        f"the call on meta tensors failed: {e.call_error}"
                        if e.call_error
                        else "the call on meta tensors reached no aten op"
                    )
                    console.print(f"      [dim]? = not recorded: {escape(why)}[/]")
                elif e.call_error and verbose:
                    console.print(f"      [dim]meta call: {escape(e.call_error)}[/]")
        console.print(f"\n[bold cyan]{NATIVE_FUNCTIONS}[/]")
        for y in self.yaml_entries:
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
            console.print(f"  [bold]{escape(y.location.label)}[/]  {escape(y.schema)}")
            console.print(f"      [dim]{escape('; '.join(facts))}[/]")
            if y.location.url:
                console.print(f"      [blue]{escape(y.location.url)}[/]")
        if self.dispatch:
            console.print("\n[bold cyan]Dispatch table (live, from the installed binary)[/]")
            # An inactive kernel is shown when a Python kernel shadows it (that is news:
            # the C++ one is not what runs); other inactive ones with -v.
            shown = [r for r in self.dispatch if verbose or not r.inactive or r.shadowed_by]
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
                loc_line(f"{first.key} ({ops}):", first.location, extra)
                if first.registered_at is not None and first.registered_at.generated:
                    console.print(
                        "      [dim]registered in the TORCH_LIBRARY_IMPL block at "
                        f"{escape(first.registered_at.label)} (the line the binary names)[/]"
                    )
                elif first.registered_at is not None:
                    via = f" (torch._decomp's {first.via} table)" if first.via else ""
                    console.print(
                        f"      [dim]a Python kernel{escape(via)}, registered through the "
                        f"torch.library.Library at {escape(first.registered_at.label)}[/]"
                    )
        if self.kernels or self.kernels_not_found:
            console.print("\n[bold cyan]Kernels in the checkout[/]")
            for k in self.kernels:
                label = {
                    "meta": "meta (TORCH_META_FUNC)",
                    "impl": "impl (TORCH_IMPL_FUNC)",
                    "kernel": "kernel",
                    "stub_declare": "DECLARE_DISPATCH",
                    "stub_define": "DEFINE_DISPATCH",
                    "stub_register": "REGISTER_DISPATCH",
                    "stub_kernel": "stub kernel body",
                    "decomposition": "decomposition (torch._decomp; torch.compile, export)",
                    "python_dispatcher": "Python dispatcher kernel (torch.compile, export)",
                }.get(k.role, k.role)
                keys = f" [{', '.join(k.keys)}]" if k.keys else ""
                loc_line(
                    f"{label} {k.name}{keys}",
                    k.location,
                    f"  {k.detail}" if verbose and k.detail else "",
                )
        if self.kernels_not_found:
            missing = "; ".join(
                f"{name} ({', '.join(keys)})" for name, keys in self.kernels_not_found.items()
            )
            console.print(f"  [dim]not found in this checkout: {escape(missing)}[/]")
        if self.derivatives:
            console.print(f"\n[bold cyan]{DERIVATIVES}[/]")
            for d in self.derivatives:
                loc_line(d.name, d.location)
                for key, formula in d.formulas.items():
                    console.print(f"      [dim]{escape(key)}: {escape(formula)}[/]")
        if self.opinfo:
            console.print("\n[bold cyan]OpInfo (the op's tests)[/]")
            for o in self.opinfo:
                loc_line("", o)
        if self.decomposes_to:
            console.print(
                "\n[dim]On meta tensors the call runs as: "
                + escape(", ".join(self.decomposes_to))
                + "[/]"
            )
        for note in self.notes:
            console.print(f"\n[yellow]Note:[/] {escape(note)}")
        for limit in self.limitations:
            console.print(f"\n[yellow]Limitation:[/] {escape(limit)}")
        reviews_hint.show(console, self)

"""`onboard graph`: the autograd graph of the tensors the user's program leaves behind.

The child (``_graph_child.py``) runs the program and walks ``grad_fn`` /
``next_functions`` from the tensors in its module globals (or ``--var``);
here each Node is tied to its derivatives.yaml formula and line
(``backward_nodes``) and to its generated C++ class, and what the user sees
is explained: leaves and non-leaves, views, ``.detach()`` / ``.data``, and why
a tensor has no graph (``no_grad``, ``inference_mode``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import proc
from onboard.errors import BadInput, OnboardError
from onboard.jsonable import spec
from onboard.report import Reporter
from onboard.workflows.opsource.paths import SourceLoc
from onboard.workflows.trace import backward_nodes, launch
from onboard.workflows.trace.locations import Sources

MAX_NODES = 300
DOT_HELP = (
    "Install Graphviz's `dot` (Debian/Ubuntu: `apt-get install graphviz`, macOS: `brew install "
    "graphviz`, conda: `conda install graphviz`); the Python `graphviz` package only drives that "
    "same binary. Or write the text with `onboard graph --dot -- python SCRIPT > g.dot` and "
    "render it elsewhere (`dot -Tsvg g.dot -o g.svg`)."
)


def _edges(next: list[tuple[int | None, int]]) -> list[dict[str, int | None]]:
    return [{"node": n, "input_nr": nr} for n, nr in next]


@dataclass
class GraphNode:
    index: int = field(metadata=spec(key="id"))
    cls: str = field(metadata=spec(key="class"))  # MulBackward0
    # mul.Tensor (the aten op whose derivative this is); JSON: aten::mul.Tensor
    op: str | None = field(metadata=spec(empty=None, convert="aten::{}".format))
    derivative: SourceLoc | None
    formulas: dict[str, str]
    # the class in Functions.h
    generated: SourceLoc | None = field(metadata=spec(key="generated_class"))
    # (node index or None for an input without grad, input_nr)
    next: list[tuple[int | None, int]] = field(metadata=spec(convert=_edges))
    saved: list[dict[str, Any]]
    variable: dict[str, Any] | None  # AccumulateGrad: the leaf
    truncated: bool = False

    @property
    def label(self) -> str:
        if self.variable is not None:
            return f"AccumulateGrad {self.variable.get('name') or '(unnamed leaf)'}"
        return self.cls


@dataclass(kw_only=True)
class GraphResult(launch.ProgramResult):
    roots: list[str]
    tensors: dict[str, dict[str, Any]]
    nodes: list[GraphNode]
    explanations: list[str] = field(default_factory=list)
    dot: str = ""
    svg: str | None = None
    dot_only: bool = field(default=False, metadata=spec(omit=True))


@dataclass(frozen=True, kw_only=True)
class GraphRequest(launch.LaunchOptions):
    """`onboard graph`: the program, the module globals whose graph to draw
    (``variables``; none: every tensor's), and how: Graphviz text (``dot``), also an SVG
    file (``svg``)."""

    variables: Sequence[str] = ()
    dot: bool = False
    svg: str | None = None


def graph(request: GraphRequest, reporter: Reporter | None = None) -> GraphResult:
    reporter = reporter or Reporter()
    svg = request.svg
    dot_exe = proc.which("dot") if svg else None
    # Said before the program runs, so it is not run for nothing.
    if svg and not Path(svg).resolve().parent.is_dir():
        raise BadInput(
            f"--svg {svg}: the folder {Path(svg).resolve().parent} does not exist.",
            next_step="Create it, or name a file in an existing folder.",
        )
    if svg and dot_exe is None:
        raise OnboardError(
            f"--svg {svg} needs Graphviz's `dot` program, which is not on PATH.", next_step=DOT_HELP
        )
    program = launch.program(request)
    ask = {"vars": list(request.variables), "max_nodes": MAX_NODES}
    ran = launch.run(
        program, "_graph_child.py", ask, timeout=request.timeout, reporter=reporter, what="Running"
    )
    answer = ran.answer
    tensors: dict[str, dict[str, Any]] = answer.get("tensors") or {}
    if ran.exit_code or not ran.status.get("imported_torch"):
        # a program that failed early or never used torch: that, not --var, is the news
        launch.check_started(
            ran, program, did_something=bool(tensors), what="no tensor in its module globals"
        )
    if answer.get("missing"):
        raise _no_such_variable(answer["missing"], tensors, answer.get("globals") or [])
    launch.check_started(
        ran, program, did_something=bool(tensors), what="no tensor in its module globals"
    )
    raw_nodes = answer.get("nodes") or []
    sources = Sources.open(request.workspace, program.python, answer["torch"], reporter)
    entries = backward_nodes.index(sources.ctx.yaml().derivatives)
    result = GraphResult(
        **launch.ProgramResult.ran(ran, program, sources.commit),
        roots=list(answer.get("roots") or []),
        tensors=tensors,
        nodes=[_node(i, raw, entries, sources) for i, raw in enumerate(raw_nodes)],
    )
    result.explanations = explain(tensors, result.roots, bool(answer.get("grad_enabled", True)))
    if answer.get("truncated"):
        result.notes.append(
            f"The graph has more than {MAX_NODES} nodes; {answer['truncated']} were cut. Name a "
            "smaller tensor with --var to see its part."
        )
    result.notes.append(
        "Hooks registered on a Node (grad_fn.register_hook) live in C++ and cannot be read back "
        "from Python; tensor hooks (tensor.register_hook) are counted per tensor."
    )
    if any(n.cls == "CopySlices" for n in result.nodes):
        result.notes.append(
            "CopySlices stands for an in-place op on a view: it wraps that op's own Node "
            "(torch/csrc/autograd/functions/tensor.h), which torch does not expose to Python, "
            "so the tensors that Node saved for backward are not listed."
        )
    result.notes.extend(saved_notes(result.nodes))
    limitation = sources.limitation()
    if limitation:
        result.notes.append(limitation)
    result.dot = to_dot(result)
    result.dot_only = request.dot
    if svg and dot_exe:
        proc.run(
            [dot_exe, "-Tsvg", "-o", svg],
            input=result.dot,
            timeout=120,
            what="Rendering the graph with dot",
        )
        result.svg = str(Path(svg).resolve())
        reporter.step(f"Rendered the graph to {result.svg}")
    return result


def saved_notes(nodes: list[GraphNode]) -> list[str]:
    """What the saved-for-backward lines that hold no tensor mean."""
    saved = [s for n in nodes for s in n.saved]
    notes = []
    if any(s.get("freed") for s in saved):
        notes.append(
            "Saved tensors marked freed: backward() (or autograd.grad) released them once it "
            "used them (torch/csrc/autograd/saved_variable.cpp); backward(retain_graph=True) "
            "keeps them, and graph run before backward shows their shapes."
        )
    if any(s.get("recomputed") for s in saved):
        notes.append(
            "Saved tensors marked 'not kept' are under torch.utils.checkpoint "
            "(use_reentrant=False): its saved_tensors_hooks pack hook keeps no tensor, and "
            "backward re-runs the checkpointed forward to get them back "
            "(torch/utils/checkpoint.py). graph does not unpack them, as that would run your "
            "forward again; their shapes are the ones that forward makes."
        )
    if any(s.get("packed_by") for s in saved):
        notes.append(
            "Saved tensors marked 'packed by the hook' went through a "
            "torch.autograd.graph.saved_tensors_hooks pack hook; graph does not call its "
            "unpack hook (your code), so their shapes are not shown."
        )
    if any(n.cls == "CheckpointFunctionBackward" for n in nodes):
        notes.append(
            "CheckpointFunctionBackward is torch.utils.checkpoint with use_reentrant=True: it "
            "keeps only the checkpointed function's inputs (saved_tensors), and backward re-runs "
            "the function with grad on, so the ops inside it are not in this graph."
        )
    return notes


def _no_such_variable(
    missing: list[str], tensors: dict[str, Any], all_globals: list[str]
) -> BadInput:
    others = [g for g in all_globals if g not in tensors]
    return BadInput(
        f"--var {', '.join(missing)}: no such tensor in the program's module globals after it "
        f"ran. Its tensors: {', '.join(sorted(tensors)) or 'none'}; its other globals: "
        f"{', '.join(others) or 'none'}.",
        next_step="Name one of its tensors with --var, or leave --var out to draw every "
        "tensor that has a grad_fn.",
    )


def _node(
    i: int, raw: dict[str, Any], entries: dict[str, backward_nodes.BackwardEntry], sources: Sources
) -> GraphNode:
    cls = str(raw.get("cls", "?"))
    entry = backward_nodes.lookup(entries, cls)
    return GraphNode(
        index=i,
        cls=cls,
        op=entry.op if entry else None,
        derivative=sources.file("tools/autograd/derivatives.yaml", entry.line) if entry else None,
        formulas=dict(entry.formulas) if entry else {},
        generated=_generated_class(sources, cls) if entry else None,
        next=[(n, int(nr)) for n, nr in raw.get("next", [])],
        saved=list(raw.get("saved") or []),
        variable=raw.get("variable"),
        truncated=bool(raw.get("truncated")),
    )


def _generated_class(sources: Sources, cls: str) -> SourceLoc:
    """``struct TORCH_API MulBackward0`` in Functions.h (the checkout's, else the wheel's copy)."""
    rel = backward_nodes.FUNCTIONS_H
    needle = f"struct TORCH_API {cls.removesuffix('_copy')} "
    for path in (
        sources.ctx.checkout / rel,
        (sources.ctx.checkout / "torch").resolve() / "include" / rel,
    ):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        at = text.find(needle)
        if at >= 0:
            return sources.file(rel, text.count("\n", 0, at) + 1)
    return sources.file(rel, None)


def explain(tensors: dict[str, dict[str, Any]], roots: list[str], grad_enabled: bool) -> list[str]:
    """What the user sees, in one sentence per tensor kind that is present."""
    out = []
    leaves = [k for k, t in tensors.items() if t["is_leaf"] and t["requires_grad"]]
    if leaves:
        out.append(
            f"Leaves ({', '.join(leaves)}): tensors you made with requires_grad=True; backward "
            "accumulates their gradient into .grad through an AccumulateGrad node."
        )
    nonleaf = [k for k, t in tensors.items() if not t["is_leaf"]]
    if nonleaf:
        out.append(
            f"Non-leaves ({', '.join(nonleaf)}): results of ops, each with the grad_fn that "
            "computes its inputs' gradients; their .grad stays None unless you call "
            ".retain_grad()."
        )
    views = [k for k, t in tensors.items() if t["is_view"]]
    if views:
        out.append(
            f"Views ({', '.join(k + ' of ' + str(tensors[k]['base']) for k in views)}): they share "
            "memory with their base; their grad_fn is a view node (SliceBackward0, "
            "AsStridedBackward0), and an in-place change to a view puts a CopySlices node on "
            "the base."
        )
    detached = [
        k
        for k, t in tensors.items()
        if not t["requires_grad"]
        and t["shares_storage_with"]
        and any(tensors[o]["requires_grad"] for o in t["shares_storage_with"])
    ]
    if detached:
        out.append(
            f"Detached ({', '.join(detached)}): they share memory with a tensor in the graph "
            "but are outside it, as .detach() and .data make them. .detach() shares the version "
            "counter, so backward raises if the shared memory was changed in place; .data does "
            "not, so such a change silently gives wrong gradients."
        )
    inference = [k for k, t in tensors.items() if t["inference"]]
    if inference:
        out.append(
            f"Inference tensors ({', '.join(inference)}): made under torch.inference_mode(), "
            "which records no graph at all and forbids using them in one later."
        )
    if not roots:
        plain = [k for k, t in tensors.items() if not t["requires_grad"] and not t["inference"]]
        reason = (
            "grad mode was off when the program ended (torch.set_grad_enabled(False))"
            if not grad_enabled
            else "none of their inputs required grad, or they were computed under "
            "torch.no_grad() (ops there record no grad_fn)"
        )
        out.append(
            "No tensor in the module globals has a grad_fn, so there is no graph: "
            + reason
            + (f". Tensors without one: {', '.join(plain)}" if plain else "")
            + ". Make a leaf with requires_grad=True and compute outside no_grad to get one."
        )
    return out


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def edge_label(position: int, input_nr: int) -> str:
    """An edge is ``next_functions[position] == (node, input_nr)``: the gradient for the
    forward op's input ``position`` goes to that node's input ``input_nr``, which is not 0
    only when the node has several (the backward of an op with several outputs)."""
    return str(position) if input_nr == 0 else f"{position} -> input_nr {input_nr}"


def to_dot(result: GraphResult) -> str:
    """A Graphviz digraph of the roots and their Nodes; each edge is labelled with its
    place in next_functions (and the input_nr it feeds, when not 0)."""
    lines = ["digraph autograd {", '  rankdir="TB";', '  node [fontname="monospace" fontsize=10];']
    for name in result.roots:
        t = result.tensors.get(name, {})
        shape = "x".join(str(s) for s in t.get("shape", [])) or "scalar"
        label = _quote(f"{name}\n{shape} {t.get('dtype', '')}")
        lines.append(
            f"  {_quote('t_' + name)} [shape=box style=filled fillcolor=lightblue label={label}];"
        )
        if isinstance(t.get("grad_fn"), int):
            lines.append(f"  {_quote('t_' + name)} -> n{t['grad_fn']};")
    for node in result.nodes:
        label = node.label
        if node.op:
            label += f"\naten::{node.op}"
        if node.derivative is not None and node.derivative.line:
            label += f"\nderivatives.yaml:{node.derivative.line}"
        color = "lightgrey" if node.variable is not None else "white"
        lines.append(
            f"  n{node.index} [shape=box style=filled fillcolor={color} label={_quote(label)}];"
        )
        for position, (target, nr) in enumerate(node.next):
            if target is not None:
                lines.append(
                    f"  n{node.index} -> n{target} [label={_quote(edge_label(position, nr))}];"
                )
    lines.append("}")
    return "\n".join(lines) + "\n"

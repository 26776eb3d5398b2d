"""What `onboard compile` answers: the graph breaks, the recompilations, the failures
and the cost of the program's torch.compile calls, read from torch's structured trace
of one run. Serialised by ``onboard/jsonable.py`` from these fields."""

from __future__ import annotations

from dataclasses import dataclass, field

from onboard.jsonable import spec
from onboard.workflows.program import passed_through


@dataclass
class Place:
    """A line of a file: the user's code, or torch's (``in_checkout``: the workspace
    checkout's copy, else the installed wheel's)."""

    path: str
    line: int
    function: str = field(default="", metadata=spec(empty=None))
    code: str = field(default="", metadata=spec(empty=None))
    in_checkout: bool = False

    @property
    def label(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class RegistryEntry:
    """torch/_dynamo/graph_break_registry.json's entry for a graph break type."""

    id: str  # "GB0170"
    gb_type: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)


@dataclass
class GraphBreak:
    """One distinct graph break (its user line and type), however often it happened."""

    user: Place
    reason: str  # the type of break, in torch's words ("Data-dependent branching")
    count: int = 1
    explanation: str = field(default="", metadata=spec(empty=None))
    hints: list[str] = field(default_factory=list)  # as torch printed them for this run
    registry: RegistryEntry | None = None
    # The unimplemented(...) call in torch/_dynamo that decided it; more than one when
    # several calls name the same registry entry and the run did not say which.
    decided_by: list[Place] = field(default_factory=list)
    uncompiled: str = ""  # what the frame ran without compiling, in words
    resumed_in: list[str] = field(default_factory=list)  # the resume functions dynamo made
    stack: list[Place] = field(default_factory=list)  # the user's frames, outermost first


@dataclass
class FailedGuard:
    guard: str  # "tensor 'x' size mismatch at index 0. expected 8, actual 16", "n == 1"
    kind: str  # size / dtype / constant / type / identity / length / grad / other
    count: int = 1  # recompilations it was among the failed guards of
    fix: str = ""  # what torch documents for this kind of guard
    at: Place | None = None  # the user line the guard came from, when torch says it


@dataclass
class Recompiled:
    """The recompilations of one function."""

    function: str
    path: str
    line: int  # its first line
    recompiles: int  # how many times it was compiled again
    guards: list[FailedGuard] = field(default_factory=list)
    limit_hit: bool = False
    limit_note: str = field(default="", metadata=spec(empty=None))


@dataclass
class Failure:
    """An exception raised while compiling a frame."""

    kind: str  # Unsupported / BackendCompilerFailed / InternalTorchDynamoError ...
    message: str
    function: str
    compile_id: str
    user: Place | None = None  # the user's line it happened at
    raised_at: Place | None = None  # the line in torch (or a backend) that raised it
    registry: RegistryEntry | None = None
    minifier: str = ""  # the command torch documents to cut it down, or what to run


@dataclass
class FrameCost:
    """What compiling one function cost: its graphs, their ops, the time."""

    function: str
    path: str
    line: int
    compiles: int
    graphs: int  # compiles that produced a graph
    ops_per_graph: list[int] = field(default_factory=list)
    compile_seconds: float = field(default=0.0, metadata=spec(digits=3))
    cache_hits: int = 0  # AOTAutograd and Inductor FX graph cache hits
    cache_misses: int = 0


@dataclass
class CompileResult:
    command: str
    backend: str | None  # the backend forced with --backend (None: the program's own)
    program_exit: int | None = None
    breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompiled] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    frames: list[FrameCost] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    torch_version: str | None = None
    torch_dir: str | None = None  # the torch package the run imported
    checkout: str | None = None  # the workspace checkout torch's lines are shown in
    processes: int = 0  # trace files read (one per process that compiled)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The program's own exit status passes through (128+N for signal N)."""
        return passed_through(self.program_exit)

    def json_extra(self) -> dict[str, object]:
        return {
            "ok": self.program_exit == 0,
            "graph_breaks": sum(b.count for b in self.breaks),
            "recompilations": sum(r.recompiles for r in self.recompiles),
        }

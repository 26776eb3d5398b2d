"""What `onboard memory` answers: the census of live tensors at each step boundary,
what grows (by the line that made it, with what holds it and the graph it keeps),
the known patterns seen, and what was not checked. Serialised by
``onboard/jsonable.py`` from these fields."""

from __future__ import annotations

from dataclasses import dataclass, field

from onboard.jsonable import spec
from onboard.workflows.program import passed_through


@dataclass
class Census:
    """The live tensors at one step boundary (each storage counted once)."""

    step: int
    seconds: float = field(metadata=spec(digits=3))  # since the program started
    tensors: int
    bytes: int  # their storages, each once
    graph_nodes: int  # autograd nodes their graphs hold
    saved_bytes: int  # saved tensors of those graphs that no live tensor holds
    hooks: int  # module hooks registered
    rss: int  # the process's resident memory
    workers: dict[str, int] = field(default_factory=dict, metadata=spec(empty=None))
    # where the hook functions registered were defined ("train.py:12"), how many each
    hook_sites: dict[str, int] = field(default_factory=dict, metadata=spec(omit=True))
    cuda_allocated: int | None = field(default=None, metadata=spec(empty=None))
    cuda_reserved: int | None = field(default=None, metadata=spec(empty=None))

    @property
    def total(self) -> int:
        return self.bytes + self.saved_bytes


@dataclass
class Holder:
    """The name the user wrote that holds the growth: ``expression`` is how their code
    reaches it (``losses[3]``, ``model.cache['k']``)."""

    kind: str  # global / local
    name: str
    expression: str
    type: str  # what the name is bound to: list, dict, Tensor, Model ...
    path: str
    line: int | None  # where the name is bound (a global) or the frame's line (a local)

    @property
    def label(self) -> str:
        where = f" at {self.path}:{self.line}" if self.line else f" in {self.path}"
        return f"{self.type} `{self.name}`{where}"


@dataclass
class Growth:
    """Tensors made at one line that the loop keeps, per step."""

    path: str
    line: int
    function: str
    count_per_step: float = field(metadata=spec(digits=2))
    bytes_per_step: int
    with_graph: bool  # they carry autograd history (a grad_fn)
    graph_nodes_per_step: int = 0  # nodes of the graphs they keep alive
    saved_bytes_per_step: int = 0  # saved tensors of those graphs
    example: str = ""  # "float32[] MeanBackward0"
    holder: Holder | None = None
    pattern: str | None = None  # the known pattern's id, when it is one


@dataclass
class Pattern:
    """A known cause of growth, named with its fix, seen on its evidence."""

    id: str  # history / stored_outputs / eval_with_grad / hooks / cache / worker_rss / kept
    title: str
    evidence: str
    fix: str
    path: str | None = field(default=None, metadata=spec(empty=None))
    line: int | None = field(default=None, metadata=spec(empty=None))


@dataclass
class PeakGroup:
    """Live bytes at the peak of one of torch's categories (parameter, gradient,
    optimizer_state, activation, temporary, input, autograd_detail, unknown),
    allocated in one function of the user's code: the innermost one on the stack
    (``line`` is its first line: the profiler names a Python call by it; None: no
    function of theirs was on the stack)."""

    category: str
    bytes: int
    path: str | None = field(default=None, metadata=spec(empty=None))
    line: int | None = field(default=None, metadata=spec(empty=None))
    function: str | None = field(default=None, metadata=spec(empty=None))


@dataclass
class Peak:
    """--peak: torch.profiler's memory profile over the steps after the first."""

    bytes: int  # live at the peak
    from_step: int
    to_step: int
    groups: list[PeakGroup] = field(default_factory=list)


@dataclass
class CudaSummary:
    """The caching allocator at the end (torch.cuda.memory_stats), and where the
    snapshot for memory_viz was kept."""

    allocated: int
    reserved: int
    peak_allocated: int
    # inactive split blocks / reserved: memory reserved that no request can use whole
    fragmentation: float = field(metadata=spec(digits=3))
    empty_cache_gain: int = 0  # segments with nothing allocated: what empty_cache() frees
    driver_used: int | None = None  # the device's used memory, as the driver sees it
    ooms: int = 0  # out-of-memory errors the allocator raised
    snapshot: str | None = None  # kept for memory_viz (--snapshot)


@dataclass
class MemoryResult:
    command: str
    step_kind: str  # optimizer / function / line / every
    program_exit: int | None = None
    steps: int = 0
    censuses: list[Census] = field(default_factory=list)
    growth: list[Growth] = field(default_factory=list)
    patterns: list[Pattern] = field(default_factory=list)
    cuda: CudaSummary | None = None
    peak: Peak | None = None
    not_checked: list[str] = field(default_factory=list)
    census_seconds: float = field(default=0.0, metadata=spec(digits=3))
    finished: bool = True  # False: the program died before onboard's last write
    plot: str | None = field(default=None, metadata=spec(empty=None))  # --plot's file
    torch_version: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def grows(self) -> bool:
        return bool(self.growth or self.patterns)

    @property
    def exit_code(self) -> int:
        """The program's own exit status passes through (128+N for signal N)."""
        return passed_through(self.program_exit)

    def json_extra(self) -> dict[str, object]:
        return {"ok": self.program_exit == 0, "grows": self.grows}

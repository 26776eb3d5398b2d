"""From the child's censuses to what grows: a series grows when, past the first
step (optimizers make their state there), it ends higher than it started and never
falls back below where it was; the probe's groups (what a step made that was still
alive two boundaries later) are reported only then, each with the pattern its
evidence shows."""

from __future__ import annotations

from typing import Any

from onboard.workflows.memory.result import Census, Growth, Holder, Pattern

WARM_UP = 1  # steps whose census is not compared (first-step state)
WORKER_GROWTH = 1 << 20  # bytes a worker's RSS must gain, over the run, to count


def censuses(raw: list[dict[str, Any]]) -> list[Census]:
    out = []
    for c in raw:
        cuda = c.get("cuda") or {}
        out.append(
            Census(
                step=int(c["step"]),
                seconds=float(c["seconds"]),
                tensors=int(c["tensors"]),
                bytes=int(c["bytes"]),
                graph_nodes=int(c["graph_nodes"]),
                saved_bytes=int(c["saved_bytes"]),
                hooks=int(c["hooks"]),
                rss=int(c["rss"]),
                hook_sites={str(k): int(v) for k, v in (c.get("hook_sites") or {}).items()},
                workers={str(k): int(v) for k, v in (c.get("workers") or {}).items()},
                cuda_allocated=cuda.get("allocated"),
                cuda_reserved=cuda.get("reserved"),
            )  # fmt: skip
        )
    return out


def steady(series: list[Census]) -> list[Census]:
    return [c for c in series if c.step > WARM_UP]


def rate(values: list[tuple[int, int]]) -> float:
    """Growth per step of (step, value) pairs, 0.0 unless it grows: higher at the end,
    and no value below the first."""
    if len(values) < 3:
        return 0.0
    (s0, v0), (s1, v1) = values[0], values[-1]
    if v1 <= v0 or s1 <= s0 or any(v < v0 for _, v in values):
        return 0.0
    rises = sum(1 for (_, a), (_, b) in zip(values, values[1:], strict=False) if b > a)
    if rises * 2 < len(values) - 1:  # a step up once is not growth every step
        return 0.0
    return (v1 - v0) / (s1 - s0)


def _holder(raw: dict[str, Any] | None) -> Holder | None:
    if not raw:
        return None
    return Holder(
        kind=str(raw["kind"]), name=str(raw["name"]), expression=str(raw["expression"]),
        type=str(raw["type"]), path=str(raw["path"]), line=raw.get("line"),
    )  # fmt: skip


def growth(answer: dict[str, Any], series: list[Census]) -> tuple[list[Growth], list[Pattern]]:
    later = steady(series)
    tensors = rate([(c.step, c.tensors) for c in later])
    total = rate([(c.step, c.total) for c in later])
    nodes = rate([(c.step, c.graph_nodes) for c in later])
    found: list[Growth] = []
    patterns: list[Pattern] = []
    if tensors > 0 or total > 0 or nodes > 0:
        for raw in answer.get("kept") or []:
            steps = max(int(raw.get("steps") or 1), 1)
            example = raw.get("example") or {}
            shape = "x".join(str(n) for n in example.get("shape") or [])
            grad_fn = example.get("grad_fn")
            g = Growth(
                path=str(raw["path"]), line=int(raw["line"]), function=str(raw["function"]),
                count_per_step=raw["count"] / steps, bytes_per_step=int(raw["bytes"]) // steps,
                with_graph=bool(raw["with_graph"]),
                graph_nodes_per_step=int(raw["graph_nodes"]) // steps,
                saved_bytes_per_step=int(raw["saved_bytes"]) // steps,
                example=f"{example.get('dtype', '?')}[{shape}]"
                + (f" {grad_fn}" if grad_fn else ""),
                holder=_holder(raw.get("holder")),
            )  # fmt: skip
            g.pattern = _kept_pattern(g, raw, patterns)
            found.append(g)
    if nodes > 0 and (_history(answer, nodes, patterns) | _grown(answer, nodes, patterns)):
        # What the growing graph holds (its inputs) has no name of the user's: it is
        # that pattern's, not a growth of its own.
        kept = [g for g in found if g.holder is None]
        found = [g for g in found if g.holder is not None]
        patterns = [p for p in patterns if (p.path, p.line) not in {(g.path, g.line) for g in kept}
                    or p.id == "history"]  # fmt: skip
    hooks = rate([(c.step, c.hooks) for c in later])
    if hooks > 0:
        site = _hook_site(later)
        path, _, line = site.rpartition(":") if site else ("", "", "")
        patterns.append(
            Pattern(
                id="hooks",
                title="hooks registered every step",
                evidence=f"module hooks grow by {hooks:g} per step "
                f"({later[0].hooks} at step {later[0].step}, {later[-1].hooks} at step "
                f"{later[-1].step}); each keeps its closure alive",
                fix="register the hook once, before the loop, or keep the handle "
                "register_*_hook returns and call handle.remove() when the step ends",
                path=path or None,
                line=int(line) if line else None,
            )
        )
    _workers(later, patterns)
    return found, patterns


def _kept_pattern(g: Growth, raw: dict[str, Any], patterns: list[Pattern]) -> str:
    holder = g.holder
    held = f" in {holder.type} `{holder.expression}`" if holder else ""
    at = f"{g.path}:{g.line}"
    no_backward = not raw.get("backward_in_step")
    if g.with_graph and raw.get("saved_intact") and raw.get("grad_enabled") and no_backward:
        pid, title = "eval_with_grad", "evaluation without no_grad"
        evidence = (f"outputs made at {at} keep their whole graph, saved tensors included "
                    f"({g.saved_bytes_per_step:,} bytes a step), and no backward() ran in "
                    "that step")  # fmt: skip
        fix = "run evaluation under `with torch.inference_mode():` (or `torch.no_grad()`)"
    elif g.with_graph:
        pid, title = "stored_outputs", "outputs stored without detach()/.item()"
        evidence = (f"{g.count_per_step:g} tensor(s) a step made at {at} are kept{held}, "
                    f"each with its autograd graph ({g.graph_nodes_per_step} nodes a "
                    "step)")  # fmt: skip
        fix = "store `.item()` (a Python number) or `.detach()` instead of the tensor"
    elif holder is not None and (holder.type == "dict" or "['" in holder.expression):
        pid, title = "cache", "a cache that only grows"
        evidence = f"{g.count_per_step:g} entr(y/ies) a step made at {at} stay{held}"
        fix = "bound it (evict old keys, functools.lru_cache(maxsize=...)) or key it on " \
              "something that repeats"  # fmt: skip
    else:
        pid, title = "kept", "tensors kept across steps"
        evidence = f"{g.count_per_step:g} tensor(s) a step made at {at} stay{held}"
        fix = "drop the reference when the step ends, or keep only what you need of it"
    patterns.append(Pattern(id=pid, title=title, evidence=evidence, fix=fix,
                            path=g.path, line=g.line))  # fmt: skip
    return pid


def _history(answer: dict[str, Any], nodes: float, patterns: list[Pattern]) -> bool:
    seen = False
    for raw in answer.get("history") or []:
        sizes = [int(n) for _, n in raw.get("sizes") or []]
        if len(sizes) < 2 or sizes[-1] <= sizes[0]:
            continue
        seen = True
        holder = _holder(raw.get("holder"))
        name = f" `{holder.expression}`" if holder else ""
        patterns.append(
            _history_pattern(
                f"the tensor{name} made at {raw['path']}:{raw['line']} carries a graph that "
                f"grows by {sizes[-1] - sizes[0]} node(s) every step (all live graphs: "
                f"+{nodes:g} nodes a step)",
                str(raw["path"]),
                int(raw["line"]),
            )
        )
    return seen


def _hook_site(later: list[Census]) -> str | None:
    """The hook function (its first line) whose registrations grow the most."""
    first, last = later[0].hook_sites, later[-1].hook_sites
    gains = {site: n - first.get(site, 0) for site, n in last.items()}
    best = max(gains, key=lambda s: gains[s], default=None)
    return best if best is not None and gains[best] > 0 else None


def _grown(answer: dict[str, Any], nodes: float, patterns: list[Pattern]) -> bool:
    """One tensor whose own graph grew between censuses (an in-place accumulation)."""
    raw = answer.get("grown_graph")
    if not raw or any(p.id == "history" for p in patterns):
        return bool(raw)
    holder = _holder(raw.get("holder"))
    steps = max(int(raw["last_step"]) - int(raw["first_step"]), 1)
    per_step = (int(raw["last_size"]) - int(raw["first_size"])) / steps
    name = f" `{holder.expression}`" if holder else ""
    patterns.append(
        _history_pattern(
            f"the tensor{name} ({raw.get('grad_fn')}) holds a graph that grows by "
            f"{per_step:g} node(s) every step: {raw['first_size']} nodes at step "
            f"{raw['first_step']}, {raw['last_size']} at step {raw['last_step']}",
            holder.path if holder else None,
            holder.line if holder else None,
        )
    )
    return True


def _history_pattern(evidence: str, path: str | None, line: int | None) -> Pattern:
    return Pattern(
        id="history",
        title="history kept across the loop",
        evidence=evidence,
        fix="accumulate a number, not the tensor: `total += loss.item()` (or "
        "`loss.detach()`); PyTorch's FAQ, 'My model reports cuda runtime error(2)'",
        path=path,
        line=line,
    )


def _workers(later: list[Census], patterns: list[Pattern]) -> None:
    pids: dict[str, list[tuple[int, int]]] = {}
    for c in later:
        for pid, rss in c.workers.items():
            pids.setdefault(pid, []).append((c.step, rss))
    for pid, values in pids.items():
        per_step = rate(values)
        if per_step <= 0 or values[-1][1] - values[0][1] < WORKER_GROWTH:
            continue
        patterns.append(
            Pattern(
                id="worker_rss",
                title="a DataLoader worker whose memory grows",
                evidence=f"worker process {pid}: resident memory {values[0][1]:,} -> "
                f"{values[-1][1]:,} bytes from step {values[0][0]} to {values[-1][0]} "
                f"(+{per_step:,.0f} a step)",
                fix="keep the dataset's items in numpy arrays or tensors, not Python lists "
                "or dicts of objects (reading one copies its page in each worker: "
                "pytorch/pytorch#13246), and do not keep what __getitem__ makes",
            )  # fmt: skip
        )

"""`onboard memory --plot FILE.svg|png`: the censuses as a picture, with matplotlib
(the `plot` extra: ``pip install 'onboard[plot]'``), drawn off-screen (the Agg
backend: no display is needed)."""

from __future__ import annotations

from pathlib import Path

from onboard.errors import BadInput
from onboard.workflows.memory.result import MemoryResult

SUFFIXES = (".svg", ".png")


def check(path: str) -> None:
    """Refuse, before the program runs, a --plot that cannot be drawn."""
    if Path(path).suffix.lower() not in SUFFIXES:
        raise BadInput(
            f"--plot {path}: the picture is written as SVG or PNG, chosen by the name.",
            next_step="Name the file FILE.svg or FILE.png.",
        )
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise BadInput(
            "--plot draws the memory per step with matplotlib, which is not installed in "
            "the Python that runs onboard. It is an optional extra: onboard works without "
            "it, and the terminal shows the same series as a line of blocks.",
            next_step="Install it with `pip install 'onboard[plot]'` (or `pip install "
            "matplotlib`), or drop --plot.",
        ) from None


def draw(result: MemoryResult, path: str) -> None:
    """Live tensor bytes, graph-saved bytes and RSS per census, one line each."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    steps = [c.step for c in result.censuses]
    mib = 1024 * 1024
    figure, left = pyplot.subplots(figsize=(8, 4))
    try:
        left.plot(steps, [c.bytes / mib for c in result.censuses], marker=".", label="tensors")
        left.plot(
            steps, [c.saved_bytes / mib for c in result.censuses], marker=".",
            label="graphs' saved tensors",
        )  # fmt: skip
        left.set_xlabel(f"step ({result.step_kind})")
        left.set_ylabel("MiB")
        right = left.twinx()
        right.plot(steps, [c.rss / mib for c in result.censuses], color="grey", linestyle="--",
                   label="process RSS")  # fmt: skip
        right.set_ylabel("RSS MiB")
        lines = left.get_legend_handles_labels()
        more = right.get_legend_handles_labels()
        left.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left")
        left.set_title(result.command[:80])
        figure.tight_layout()
        figure.savefig(path)
    finally:
        pyplot.close(figure)

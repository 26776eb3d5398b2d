"""`onboard memory --json`: the keys come from the result's dataclass fields, in
their order, through the one serialiser (onboard/jsonable.py), then `ok` and `grows`."""

from __future__ import annotations

import dataclasses
import json

from onboard.jsonable import to_json
from onboard.workflows.memory import Census, Growth, Holder, MemoryResult, Pattern


def test_memory_json_follows_the_fields() -> None:
    census = Census(
        step=3,
        seconds=1.23456,
        tensors=10,
        bytes=400,
        graph_nodes=11,
        saved_bytes=96,
        hooks=2,
        rss=1 << 20,
        hook_sites={"train.py:5": 2},
    )
    holder = Holder(
        kind="global", name="losses", expression="losses[3]", type="list", path="train.py", line=12
    )
    growth = Growth(
        path="train.py",
        line=8,
        function="<module>",
        count_per_step=1.0,
        bytes_per_step=4,
        with_graph=True,
        holder=holder,
        pattern="stored_outputs",
    )
    pattern = Pattern(
        id="stored_outputs", title="t", evidence="e", fix="f", path="train.py", line=8
    )
    result = MemoryResult(
        command="python train.py",
        step_kind="optimizer",
        program_exit=0,
        steps=3,
        censuses=[census],
        growth=[growth],
        patterns=[pattern],
    )
    data = to_json(result)
    json.dumps(data)
    fields = [f.name for f in dataclasses.fields(MemoryResult)]
    assert list(data) == [*fields, "ok", "grows"]
    assert data["ok"] is True and data["grows"] is True
    assert data["plot"] is None and data["cuda"] is None and data["peak"] is None
    (c,) = data["censuses"]
    assert "hook_sites" not in c  # omitted: the pattern carries the site
    assert c["seconds"] == round(census.seconds, 3)
    assert c["workers"] is None and c["cuda_allocated"] is None
    assert data["growth"][0]["holder"] == dataclasses.asdict(holder)
    assert data["patterns"][0]["line"] == 8


def test_a_program_killed_by_a_signal_exits_128_plus_it() -> None:
    result = MemoryResult(command="x", step_kind="every", program_exit=-9)
    assert result.exit_code == 137
    assert to_json(result)["ok"] is False
    assert MemoryResult(command="x", step_kind="every").exit_code == 1

"""The one serialiser behind every `--json` (onboard/jsonable.py)."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path

from onboard.jsonable import spec, to_json


class Verdict(enum.Enum):
    GOOD = "good"


@dataclass
class Where:
    file: Path
    line: int


@dataclass
class Step:
    name: str
    where: Where | None = field(default=None, metadata=spec(key="source"))
    note: str = field(default="", metadata=spec(empty=None))
    seconds: float = field(default=0.0, metadata=spec(digits=3))
    cache: dict = field(default_factory=dict, metadata=spec(omit=True))
    verdict: Verdict = Verdict.GOOD
    tags: frozenset[str] = frozenset()
    sizes: tuple[int, ...] = ()
    upper: str = field(default="", metadata=spec(convert=str.upper))

    def json_extra(self) -> dict[str, object]:
        return {"busy": self.seconds > 1}


def test_fields_in_order_with_their_rules() -> None:
    step = Step(
        "mm",
        Where(Path("/a/b.cpp"), 7),
        seconds=1.23456,
        cache={"x": 1},
        tags=frozenset({"b", "a"}),
        sizes=(2, 3),
        upper="cpu",
    )
    got = to_json(step)
    assert list(got) == [
        *("name", "source", "note", "seconds", "verdict", "tags", "sizes", "upper", "busy")
    ]
    assert got == {
        "name": "mm",
        "source": {"file": "/a/b.cpp", "line": 7},
        "note": None,
        "seconds": 1.235,
        "verdict": "good",
        "tags": ["a", "b"],
        "sizes": [2, 3],
        "upper": "CPU",
        "busy": True,
    }
    json.dumps(got)  # nothing left that json cannot write


def test_nested_containers_and_keys() -> None:
    got = to_json({Path("/x"): [Step("a")], Verdict.GOOD: (1, None)})
    assert got["/x"][0]["name"] == "a" and got["/x"][0]["source"] is None
    assert got["good"] == [1, None]


def test_empty_keeps_a_zero() -> None:
    @dataclass
    class Count:
        n: int = field(default=0, metadata=spec(empty=None))

    assert to_json(Count()) == {"n": 0}

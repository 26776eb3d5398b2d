"""`onboard locate` against torch's own errors, on the reference tree `onboard setup
--from-wheel` makes (what a user with only the wheel has).

The corpus: OpInfo's ``error_inputs`` (tests/locate_oracle.py runs them on CPU and
says where each was raised, from ``TORCH_SHOW_CPP_STACKTRACES=1``'s ``Exception
raised from`` or the traceback's raising line). What must hold: the output of a
program that raised it (pasted, or the command itself) is answered exactly and with
certainty; a message alone is never answered above ``low`` at a site that is not the
truth. A seeded sample runs in the normal suite, the whole corpus as a slow test.
Then the errors of the issue, each with its truth from the binary.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opsource_helpers import (
    cache_fixture,  # noqa: F401 (a pytest fixture)
    shared_cache_fixture,  # noqa: F401 (a pytest fixture)
)

from onboard.workflows.locate import FOUND, NOT_TORCH, LocateRequest, LocateResult, locate
from onboard.workflows.setup import SetupRequest

PY = sys.executable
ORACLE = Path(__file__).resolve().parent / "locate_oracle.py"
RAISED = re.compile(r"Exception raised from (?P<func>.+?) at (?P<path>\S+?):(?P<line>\d+)")
BUILD = "/__w/pytorch/pytorch/"
SURE_OR_MEDIUM = ("certain", "high", "medium")
SAMPLE_SEED, SAMPLE_SIZE = 20261202, 16


@pytest.fixture(scope="module", name="wheel_ws")
def wheel_ws_fixture(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    from onboard.workflows.setup import setup

    os.environ["XDG_CACHE_HOME"] = str(shared_cache)  # (the autouse fixture is per test)
    root = tmp_path_factory.mktemp("wheel") / "ws"
    setup(SetupRequest(dest=root, from_wheel=True))
    return root


def oracle(*args: str) -> dict[str, Any]:
    ran = subprocess.run(
        [PY, str(ORACLE), "list", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1"},
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    data: dict[str, Any] = json.loads(ran.stdout.strip().splitlines()[-1])
    return data


def where(result: LocateResult) -> tuple[str, int | None] | None:
    """The site an answer puts first: the line it names, else its best candidate."""
    loc = result.check or (result.candidates[0].location if result.candidates else None)
    return (loc.path, loc.line) if loc is not None else None


def sweep(ws: Path, errors: list[dict[str, Any]], commands: int) -> tuple[Counter[str], list[str]]:
    """Each error pasted as its program printed it, and as its message alone; the first
    ``commands`` of them also run as programs. The counts, and what was wrong."""
    seen: Counter[str] = Counter()
    wrong: list[str] = []
    for e in errors:
        if e["type"] is None:
            seen["did not raise"] += 1
            continue
        seen["errors"] += 1
        truth = tuple(e["truth"]) if e["truth"] else None
        name = f"{e['op']}[{e['i']}]"
        pasted = locate(LocateRequest(text=e["printed"], workspace=str(ws)))
        if truth is not None:
            seen["with truth"] += 1
            if where(pasted) == truth and pasted.confidence == "certain":
                seen["pasted exact"] += 1
            else:
                wrong.append(f"pasted {name}: {where(pasted)} ({pasted.confidence}), truth {truth}")
            if seen["with truth"] <= commands:
                seen["commands"] += 1
                ran = locate(
                    LocateRequest(
                        command=[PY, str(ORACLE), "run", e["op"], str(e["i"])],
                        workspace=str(ws),
                        timeout=300,
                    )
                )
                if where(ran) == truth and ran.confidence == "certain":
                    seen["command exact"] += 1
                else:
                    wrong.append(f"command {name}: {where(ran)} ({ran.confidence}), truth {truth}")
        said = locate(LocateRequest(message=f"{e['type']}: {e['message']}", workspace=str(ws)))
        seen[f"message {said.confidence}"] += 1
        if said.confidence in SURE_OR_MEDIUM:
            if truth is not None and where(said) == truth:
                seen["message above low, true"] += 1
            else:
                seen["message above low, not true"] += 1
                wrong.append(
                    f"message {name}: {where(said)} ({said.confidence}), truth {truth}: "
                    f"{e['message'][:120]!r}"
                )
    return seen, wrong


def test_error_inputs_sample(wheel_ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_SHOW_CPP_STACKTRACES", "1")
    data = oracle(str(SAMPLE_SEED), str(SAMPLE_SIZE))
    seen, wrong = sweep(wheel_ws, data["errors"], commands=1)
    assert seen["errors"] >= SAMPLE_SIZE // 2 and seen["commands"] == 1, seen
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_error_inputs_corpus(wheel_ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_SHOW_CPP_STACKTRACES", "1")
    data = oracle()
    seen, wrong = sweep(wheel_ws, data["errors"], commands=20)
    print(f"error inputs: {data['inputs']}; {dict(seen)}")  # the numbers docs/truth.md records
    assert not wrong, "\n".join(wrong)


# --- the errors of the issue, each with the line the binary names -------------------

_ISSUE_ERRORS = """
import json, traceback, torch
out = {}
def grab(key, fn):
    try:
        fn()
    except Exception as exc:
        said = str(exc)
        at = said.find("Exception raised from")
        frames = traceback.format_list(traceback.extract_tb(exc.__traceback__)[1:])
        message = said[:at].rstrip() if at >= 0 else said
        out[key] = {
            "type": type(exc).__name__,
            "message": message,
            "raised": said[at:].splitlines()[0] if at >= 0 else None,
            "pasted": "Traceback (most recent call last):\\n" + "".join(frames)
            + f"{type(exc).__name__}: {message}\\n",
        }
grab("cast", lambda: torch.zeros(3, dtype=torch.long).add_(torch.randn(3)))
grab("stride", lambda: torch.nn.functional.conv1d(
    torch.randn(1, 1, 5), torch.randn(1, 1, 2), stride=[1, 2]))
grab("embedding", lambda: torch.nn.functional.embedding(torch.tensor([5]), torch.randn(3, 2)))
# Words that a Python site of torch has too, each raised elsewhere: by a .cpp check the
# reference tree lacks, by a file generated from a template, by the interpreter itself.
grab("in_cpp_too", lambda: torch.nn.functional.triplet_margin_loss(
    torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4, 5)))
grab("generated", lambda: torch.aminmax(
    torch.randn(3), dim=0, out=(torch.empty(()), torch.empty((), dtype=torch.double))))
grab("interpreter", lambda: (2).reciprocal())
print(json.dumps(out))
"""


@pytest.fixture(scope="module", name="issue_errors")
def issue_errors_fixture() -> dict[str, dict[str, Any]]:
    ran = subprocess.run(
        [PY, "-c", _ISSUE_ERRORS],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1"},
    )
    assert ran.returncode == 0, ran.stderr
    data: dict[str, dict[str, Any]] = json.loads(ran.stdout.strip().splitlines()[-1])
    return data


def binary_site(error: dict[str, Any]) -> tuple[str, int]:
    mo = RAISED.search(error["raised"] or "")
    assert mo, error
    return mo.group("path").removeprefix(BUILD), int(mo.group("line"))


def test_a_cast_error_is_not_answered_at_a_decomposition(
    wheel_ws: Path, issue_errors: dict[str, dict[str, Any]]
) -> None:
    error = issue_errors["cast"]
    path, _line = binary_site(error)
    assert path == "aten/src/ATen/TensorIterator.cpp"
    assert not (wheel_ws / "pytorch" / path).exists()  # the reference tree has no .cpp
    pasted = locate(LocateRequest(text=error["pasted"], workspace=str(wheel_ws)))
    # The traceback has no torch frame: torch's Python sites with these words
    # (torch/_decomp, torch/_meta_registrations) did not raise it.
    assert not any(c.location.path.endswith(".py") for c in pasted.candidates)
    assert pasted.verdict != NOT_TORCH  # the words are in the compiled libraries
    assert [c.file for c in pasted.compiled if c.file] == [path]
    said = locate(
        LocateRequest(message=f"{error['type']}: {error['message']}", workspace=str(wheel_ws))
    )
    assert said.confidence == "low" and said.candidates
    assert said.candidates[0].location.path.startswith(("torch/_decomp/", "torch/_meta_"))
    assert "when tracing" in said.blind_spots[0]


def test_a_traceback_that_never_enters_torch_is_not_torchs(wheel_ws: Path) -> None:
    ran = subprocess.run([PY, "-c", "1/0"], capture_output=True, text=True, timeout=60)
    result = locate(LocateRequest(text=ran.stderr, workspace=str(wheel_ws)))
    assert result.verdict == NOT_TORCH and result.exit_code == 1
    assert not result.candidates
    assert result.explanation and "not torch's" in result.explanation
    # torch/utils/_sympy has `raise ZeroDivisionError("division by zero")`: not this one.
    assert any("Python site(s) of torch" in n for n in result.notes)


def test_a_message_built_in_an_ostringstream_is_found(
    wheel_ws: Path, issue_errors: dict[str, dict[str, Any]]
) -> None:
    error = issue_errors["stride"]
    path, line = binary_site(error)
    assert path == "aten/src/ATen/native/utils/ParamUtils.h"
    result = locate(
        LocateRequest(message=f"{error['type']}: {error['message']}", workspace=str(wheel_ws))
    )
    assert where(result) == (path, line)
    assert result.confidence == "medium"  # one site; the .cpp files were not searched


def test_a_torch_frame_that_calls_into_cpp_is_not_the_raise(
    wheel_ws: Path, issue_errors: dict[str, dict[str, Any]]
) -> None:
    error = issue_errors["embedding"]
    path, _line = binary_site(error)
    assert path.endswith(".cpp")  # raised in C++, below torch/nn/functional.py's call
    assert "torch/nn/functional.py" in error["pasted"]
    result = locate(LocateRequest(text=error["pasted"], workspace=str(wheel_ws)))
    assert result.confidence not in SURE_OR_MEDIUM
    assert result.verdict == FOUND and result.check is not None
    assert result.check.path == "torch/nn/functional.py"
    assert any("does not raise itself" in s for s in result.blind_spots)


def test_a_chain_layer_is_placed_in_its_own_namespace(tmp_path: Path, wheel_ws: Path) -> None:
    script = tmp_path / "dot.py"
    script.write_text("import torch\ntorch.dot(torch.randn(3), torch.randn(4))\n")
    result = locate(LocateRequest(command=[PY, str(script)], workspace=str(wheel_ws)))
    kernel = next(layer for layer in result.chain if layer.name == "at::native::dot")
    # The tree's only `dot(` definitions are at::cuda::blas's (CUDABlas.h); the
    # at::native one is in Blas.cpp, which a reference tree does not have.
    assert (wheel_ws / "pytorch/aten/src/ATen/cuda/CUDABlas.h").is_file()
    assert not (wheel_ws / "pytorch/aten/src/ATen/native/Blas.cpp").exists()
    assert kernel.location is None
    assert "other namespaces" in kernel.note


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("in_cpp_too", "also in the installed torch's compiled libraries"),
        ("generated", "torchgen template"),
        ("interpreter", "the Python interpreter raises these words itself"),
    ],
)
def test_a_message_whose_best_site_is_not_the_truth_is_low(
    wheel_ws: Path, issue_errors: dict[str, dict[str, Any]], key: str, why: str
) -> None:
    error = issue_errors[key]
    # The truth: a line the best site is not (for the interpreter's own error, no torch
    # line at all: the binary names none and the traceback has no torch frame).
    truth = binary_site(error) if error["raised"] else None
    assert (truth is None) == (key == "interpreter")
    result = locate(
        LocateRequest(message=f"{error['type']}: {error['message']}", workspace=str(wheel_ws))
    )
    assert result.candidates and where(result) != truth
    assert result.confidence == "low", result.blind_spots
    assert why in result.blind_spots[0]

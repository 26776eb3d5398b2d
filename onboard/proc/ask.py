"""Asking a child in a target interpreter (``onboard/children/``) for its answer.

The target interpreter (``--python``, a user's venv) does not have onboard, so a
child runs as ``-c`` text (the boot below first registers ``onboard_answer`` and
any other module the child imports, each from its text), or, for the two that
import a module beside them under their own rules, by path. Either way the
child gives its answer through ``onboard_answer``: on stdout after its marker,
or in a file when its stdout is a user's program's (``via_file``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard.children import onboard_answer
from onboard.errors import ProcError, ProcTimeout
from onboard.proc.running import Result, run

CHILDREN = Path(onboard_answer.__file__).parent
# argv[1]: the names of the modules to register, comma-separated; then their texts,
# then the child's own text. All are taken off argv first, so that each runs seeing
# argv as `python -c` would give the child alone. Frames of this code are named
# <onboard> (a traceback shown to a user leaves them out).
_BOOT = (
    "import sys,types\n"
    "n=sys.argv.pop(1).split(',');t=[sys.argv.pop(1) for _ in n];c=sys.argv.pop(1)\n"
    "for k,s in zip(n,t):\n"
    "    m=types.ModuleType(k);sys.modules[k]=m;exec(compile(s,'<onboard>','exec'),m.__dict__)\n"
    "exec(compile(c,'<onboard>','exec'),{'__name__':'onboard_child'})\n"
)


@dataclass(frozen=True)
class Answer:
    data: Any  # the child's (last) answer
    result: Result  # its run: exit status, output (answer lines included), what it left


class NoAnswer(ProcError):
    """The child ended without an answer (its exit status and output are here)."""

    result: Result


class Unreadable(NoAnswer):
    """The child's answer is not JSON (a child that died half-way through writing it)."""


class ChildTimeout(ProcTimeout):
    """The child gave no answer in time and was stopped, with everything it started."""


def child_command(
    python: str,
    child: str | os.PathLike[str],
    *args: str,
    by_path: bool = False,
    modules: Sequence[str] = (),
    options: Sequence[str] = (),
) -> list[str]:
    """The command that runs ``child`` (a file of ``onboard/children``) in ``python``
    with ``args``: as ``-c`` text with ``onboard_answer`` and ``modules`` registered,
    or ``by_path``. ``options`` go to the interpreter (``-X dev``, ``-W error``)."""
    path = CHILDREN / child
    if by_path:
        return [python, *options, str(path), *args]
    names = ["onboard_answer", *modules]
    texts = [(CHILDREN / f"{name}.py").read_text(encoding="utf-8") for name in names]
    code = path.read_text(encoding="utf-8")
    return [python, *options, "-c", _BOOT, ",".join(names), *texts, code, *args]


def ask_child(
    python: str,
    child: str,
    *args: str,
    what: str,
    timeout: float,
    next_step: str | None = None,
    by_path: bool = False,
    modules: Sequence[str] = (),
    options: Sequence[str] = (),
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    via_file: bool = False,
    until_main_exits: bool = False,
) -> Answer:
    """Run ``child`` in ``python`` (``child_command``) and return its last answer.

    A child that gives none raises ``NoAnswer`` (``Unreadable`` when what it gave is
    not JSON), one past ``timeout`` ``ChildTimeout``: each names ``what`` asked and
    the child's own last words, with ``next_step``. An interpreter that cannot be
    started raises ``OnboardError`` as ``proc.run`` does."""
    argv = child_command(python, child, *args, by_path=by_path, modules=modules, options=options)
    with tempfile.TemporaryDirectory(prefix="onboard-answer-") as folder:
        answer_file = Path(folder) / "answer.json"
        if via_file:
            extra_env = {**(extra_env or {}), onboard_answer.FILE_ENV: str(answer_file)}
        try:
            result = run(
                argv, cwd=cwd, env=env, extra_env=extra_env, timeout=timeout, check=False,
                what=what, next_step=next_step, until_main_exits=until_main_exits,
            )  # fmt: skip
        except ProcTimeout as exc:
            raise ChildTimeout(
                f"{what} gave no answer within {timeout:g} s and was stopped.",
                args=argv, returncode=None, stdout=exc.stdout, stderr=exc.stderr,
                next_step=next_step,
            ) from None  # fmt: skip
        found, garbled = _from_file(answer_file) if via_file else onboard_answer.read(result.stdout)
    if found:
        return Answer(found[-1], result)
    raise _no_answer(Unreadable if garbled else NoAnswer, argv, result, what, next_step)


def without_answers(text: str) -> str:
    """A child's output as a person may read it: the protocol's answer lines taken out
    (an answer that could not be read is said by ``Unreadable``, never shown raw)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith(onboard_answer.MARKER))


def _from_file(path: Path) -> tuple[list[Any], int]:
    """(the answer written to ``path``, if any; 1 when it is not JSON)."""
    try:
        return [json.loads(path.read_text(encoding="utf-8"))], 0
    except OSError:
        return [], 0
    except ValueError:
        return [], 1


def _no_answer(
    kind: type[NoAnswer], argv: list[str], result: Result, what: str, next_step: str | None
) -> NoAnswer:
    said = (result.stderr.strip().splitlines() or ["no output"])[-1]
    how = died(result.returncode)
    gave = "an answer onboard cannot read" if kind is Unreadable else "no answer"
    error = kind(
        f"{what} gave {gave} ({how}): {said}",
        args=argv, returncode=result.returncode, stdout=result.stdout, stderr=result.stderr,
        next_step=next_step,
    )  # fmt: skip
    error.result = result
    return error


def died(returncode: int) -> str:
    """How a child ended, in words: "exit 1", "killed by SIGSEGV"."""
    if returncode < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit {returncode}"

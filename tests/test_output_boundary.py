"""The one place output leaves onboard: a token a program printed (which a result
carries in a run's tail, an error's message) is in no command's --json or text
output, on stdout or stderr, whichever view or paragraph shows it."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.pytorch_repo import REPRO_SCRIPT, RepoInfo
from opsource_helpers import clone_ws_fixture  # noqa: F401 (a pytest fixture)

from onboard.cli import cli
from onboard.crash import run_cli
from onboard.redact import RedactingStream

PY = sys.executable
TOKENS = [
    "ghp_" + "A1b2C3d4" * 4 + "wXyZ",
    "github_pat_11ABCDEFG0" + "aBcD_1234" * 9,
    "ghs_" + "q" * 36,
]
# A value a token shape would not catch: redacted because it is the user's token.
PLAIN = "plain-token-value-7d1e"
LEAK = (
    "import sys\n"
    f"TOKENS = {[*TOKENS, PLAIN]!r}\n"
    "for t in TOKENS:\n"
    "    print('using', t, flush=True)\n"
    "    print('auth with', t, file=sys.stderr, flush=True)\n"
)


def _no_token(text: str) -> None:
    for token in (*TOKENS, PLAIN):
        assert token not in text
        assert token[10:] not in text  # nor a part of it


def _both_ways(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """stdout and stderr of ``argv`` with --json and without (the text view)."""
    shown = ""
    for extra in (["--json"], []):
        cut = argv.index("--") if "--" in argv else len(argv)
        run_cli(cli, [*argv[:cut], *extra, *argv[cut:]])
        out, err = capsys.readouterr()
        shown += out + err
    return shown


@pytest.fixture(autouse=True)
def _token_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", PLAIN)


def test_a_token_written_in_pieces_is_still_redacted() -> None:
    out = io.StringIO()
    stream = RedactingStream(out)
    token = TOKENS[0]
    stream.write("token: " + token[:8])
    stream.write(token[8:] + " end\nnext")
    assert out.getvalue() == "token: *** end\n"
    stream.flush()
    assert out.getvalue() == "token: *** end\nnext"
    with pytest.raises(TypeError):
        stream.write(b"")  # type: ignore[arg-type]  # Click tells text from bytes so


def test_bisect_json_and_text_hide_the_tokens_the_repro_printed(
    pytorch_repo_factory: Callable[..., RepoInfo],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The runs' tails (steps[N].runs[0].tail in --json) carry what the repro printed.
    info = pytorch_repo_factory(commits=6, regression_at=3, seed_from_wheel=False)
    repro = tmp_path / "repro.py"
    repro.write_text(LEAK + REPRO_SCRIPT)
    argv = ["bisect", str(repro), "--good", info.commits[0], "--repo", str(info.path), "-v"]
    shown = _both_ways(capsys, argv)
    assert '"tail"' in shown and "using ***" in shown  # the tails are shown...
    _no_token(shown)  # ...without the tokens


@pytest.mark.parametrize(
    ("argv", "as_json"),
    [
        (["trace", "--", PY, "PROG"], True),
        (["locate", "--workspace", "WS", "--", PY, "PROG"], False),
        (["doctor", "--python", PY, "--", PY, "PROG"], True),
    ],
    ids=["trace-json", "locate-text", "doctor-json"],
)
def test_a_programs_tokens_are_not_shown_by(
    argv: list[str],
    as_json: bool,
    clone_ws: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    prog = tmp_path / "prog.py"
    prog.write_text(
        LEAK + "import torch\ntorch.ones(2) * 2\n"
        "raise RuntimeError('bad credentials ' + TOKENS[0])\n"
    )
    argv = [{"PROG": str(prog), "WS": str(clone_ws)}.get(a, a) for a in argv]
    cut = argv.index("--")
    run_cli(cli, [*argv[:cut], *(["--json"] if as_json else ["-v"]), *argv[cut:]])
    out, err = capsys.readouterr()
    assert "bad credentials ***" in out + err  # the error is shown...
    _no_token(out + err)  # ...without the tokens


def test_ab_hides_the_tokens_its_script_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bench = tmp_path / "bench.py"
    bench.write_text(LEAK + "raise SystemExit('failed with ' + TOKENS[1])\n")
    argv = ["ab", str(bench), "--a", PY, "--b", PY, "--rounds", "1"]
    shown = _both_ways(capsys, argv)
    assert "auth with ***" in shown  # the failing script's stderr is shown...
    _no_token(shown)  # ...without the tokens

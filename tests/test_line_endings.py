"""new-op edits keep each file's line endings: a CRLF native_functions.yaml stays CRLF
(the inserted entry too), and in a file with mixed endings every line it had keeps
its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

from test_new_op import NATIVE_YAML, make_workspace

from onboard.workflows.newop import scaffold

HEADER = "aten/src/ATen/native/UnaryOps.h"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _lines(data: bytes) -> list[bytes]:
    """Lines with their own endings (CRLF, LF, or none at the end)."""
    return data.splitlines(keepends=True)


def _is_subsequence(part: list[bytes], whole: list[bytes]) -> bool:
    it = iter(whole)
    return all(any(line == other for other in it) for line in part)


def test_edits_keep_each_files_line_endings(tmp_path: Path) -> None:
    # The truth: the same scaffold in a checkout whose files end their lines with LF.
    plain = make_workspace(tmp_path / "lf")
    scaffold(plain, "my_frac")
    expected = {rel: (plain.checkout_path / rel).read_bytes() for rel in (NATIVE_YAML, HEADER)}

    ws = make_workspace(tmp_path / "crlf")
    repo = ws.checkout_path
    crlf = (repo / NATIVE_YAML).read_bytes().replace(b"\n", b"\r\n")
    (repo / NATIVE_YAML).write_bytes(crlf)
    # every other line CRLF, the rest LF
    mixed = b"".join(
        line.replace(b"\n", b"\r\n") if i % 2 else line
        for i, line in enumerate(_lines((repo / HEADER).read_bytes()))
    )
    (repo / HEADER).write_bytes(mixed)
    _git(repo, "commit", "-q", "-am", "CRLF and mixed line endings")
    scaffold(ws, "my_frac")

    yaml_after = (repo / NATIVE_YAML).read_bytes()
    assert b"\n" not in yaml_after.replace(b"\r\n", b""), "a line of the yaml lost its CR"
    assert yaml_after.replace(b"\r\n", b"\n") == expected[NATIVE_YAML]
    header_after = (repo / HEADER).read_bytes()
    assert header_after.replace(b"\r\n", b"\n") == expected[HEADER]
    assert _is_subsequence(_lines(mixed), _lines(header_after)), "a line changed its ending"

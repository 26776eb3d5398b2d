"""`onboard tests [PATH...]`: which of PyTorch's tests cover a change, ranked, each
with why and its command; lintrunner's state and lint; with --run, run them."""

from __future__ import annotations

from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import PathParam, reporter


@click.command("tests")
@click.argument("paths", nargs=-1, type=PathParam())
@click.option(
    "--op",
    "ops",
    multiple=True,
    metavar="NAME",
    help="Select for this op instead of a change (an OpInfo name such as `trunc` or "
    "`nn.functional.gelu`, or an aten name); repeatable.",
)
@click.option(
    "--base",
    default=None,
    metavar="REF",
    help="Measure the branch's change against REF (default: as `onboard pr` does: "
    "origin/main, upstream/main, main, then the workspace's own base).",
)
@click.option("--no-lint", "no_lint", is_flag=True, help="Skip lintrunner (state and lint).")
@click.option(
    "--run",
    "run_them",
    is_flag=True,
    help="Run the selection: the test files in a full checkout with a build, the changed "
    "ops' OpInfo samples in a reference tree.",
)
@options.timeout(default=None, help="With --run: stop each run after this long.")
@options.workspace()
@options.python(help="The interpreter whose torch's OpInfo database is read (default: the "
                "workspace's).")  # fmt: skip
@options.output()
def tests_(
    paths: tuple[str, ...],
    ops: tuple[str, ...],
    no_lint: bool,
    run_them: bool,
    as_json: bool,
    verbose: bool,
    **parsed: Any,
) -> int:
    """Name the tests of PyTorch that cover a change, most relevant first, each with
    why and the exact command to run it from the checkout's root.

    The change is the branch since where it started (as `onboard pr` measures it),
    uncommitted edits included; or the PATHs given (whole files); or --op. A kernel
    change maps to its ops through what `onboard where` knows (kernel, DispatchStub,
    native_functions.yaml entry) and then to the installed torch's OpInfo entries:
    their tests in test_ops.py, test_unary_ufuncs.py, test_ops_gradients.py and the
    other OpInfo-driven files, each with `-k NAME`. Besides: a test file the change
    edits, the public-bindings rule (any torch/ change runs test_public_bindings.py),
    the package's suite, file-path keywords and `# Owner(s)` headers (in a full
    checkout). Then lintrunner: installed, initialised, which linters miss their tools,
    and the lint of the changed files.

    Exit status: 0, or 1 when lint finds errors or a --run test fails.

    \b
    Examples:
      onboard tests                                   # the branch's change
      onboard tests aten/src/ATen/native/cpu/UnaryOpsKernel.cpp
      onboard tests --op trunc --op nn.functional.gelu
      onboard tests --run                             # and run them here
    """
    from onboard.commands._common import finish
    from onboard.views import tests as view
    from onboard.workflows.tests import TestsRequest
    from onboard.workflows.tests import tests as select_tests

    request = TestsRequest(paths=paths, ops=ops, lint=not no_lint, run=run_them, **parsed)
    result = select_tests(request, reporter(as_json, verbose))
    return finish(result, view.render, as_json, verbose)

"""The check index's truth: macro families read from the tree's headers (with the
Python exception each raises), Python raise sites however their message is built,
and the ranking and confidence of a message-only answer.

The headers are the installed wheel's own (c10/util/Exception.h, c10/core/SymBool.h,
torch/csrc/Exceptions.h), read at run time; nothing imports torch."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.pytorch_repo import find_torch_dir

from onboard.workflows.opsource import checks, confidence, macros, scan

INCLUDE = find_torch_dir() / "include"


def _families_of_the_wheel() -> tuple[dict[str, macros.Family], dict[str, str]]:
    defines = {}
    for rel in (
        "c10/util/Exception.h",
        "c10/core/SymBool.h",
        "torch/headeronly/util/Exception.h",
        "ATen/TensorUtils.h",
    ):
        defines[rel] = macros.scan_defines(scan.read(INCLUDE / rel))
    table = macros.python_exceptions(scan.read(INCLUDE / "torch/csrc/Exceptions.h"))
    return macros.resolve(defines), table


def test_families_from_the_installed_headers() -> None:
    families, table = _families_of_the_wheel()

    def raises(name: str) -> str:
        family = families[name]
        return macros.python_type(family.error, family.kind, table)

    # The typed variants map to the Python exceptions torch/csrc/Exceptions.h names.
    assert raises("TORCH_CHECK") == "RuntimeError"
    assert raises("TORCH_CHECK_VALUE") == "ValueError"
    assert raises("TORCH_CHECK_INDEX") == "IndexError"
    assert raises("TORCH_CHECK_TYPE") == "TypeError"
    assert raises("TORCH_CHECK_NOT_IMPLEMENTED") == "NotImplementedError"
    assert raises("TORCH_CHECK_LINALG") == "LinAlgError"
    assert raises("TORCH_WARN_ONCE") == "UserWarning"
    assert raises("TORCH_WARN_DEPRECATION") == "DeprecationWarning"
    # Built on TORCH_CHECK in other headers, found without a list of names.
    for name in ("TORCH_SYM_CHECK", "TORCH_MAYBE_SYM_CHECK", "TORCH_CHECK_TENSOR_ALL", "AT_ERROR"):
        assert raises(name) == "RuntimeError", name
    # The message is the variadic argument; TORCH_CHECK_ARG adds its own words.
    assert families["TORCH_MAYBE_SYM_CHECK"].message_pieces([[], ["shape '"], [], ["' is"]]) == [
        "shape '",
        "' is",
    ]
    arg = families["TORCH_CHECK_ARG"]
    assert arg.message_pieces([[], [], ["must be 1-D"]])[0] == "invalid argument "
    # The release-build definitions: the STRIP_ERROR_MESSAGES and STANDALONE variants
    # are skipped, and the debug-only assert is compiled out under NDEBUG.
    assert families["TORCH_CHECK_WITH"].type_param == 0
    assert families["TORCH_CHECK_WITH"].error_of("IndexError") == "IndexError"
    assert not families["TORCH_INTERNAL_ASSERT_DEBUG_ONLY"].fires
    assert families["TORCH_CHECK"].defined_at is not None
    assert families["TORCH_CHECK"].defined_at.startswith("c10/util/Exception.h:")
    assert "TORCH_CHECK_EQ" not in families  # streams its operands: no literal message


def test_local_macro_of_a_cpp_file() -> None:
    families, _table = _families_of_the_wheel()
    text = (
        '#define CHECK_INPUT(x) TORCH_CHECK_VALUE(x.is_cuda(), #x " must be a CUDA tensor")\n'
        "void f(const Tensor& self) {\n"
        "  CHECK_INPUT(self);\n"
        "}\n"
    )
    record = checks.scan_cpp(text)
    local = macros.resolve({"f.cpp": record["d"]}, base=families)
    family = local["CHECK_INPUT"]
    assert family.error == "ValueError"
    assert family.message_pieces([[]]) == [" must be a CUDA tensor"]


def test_preprocessor_conditions() -> None:
    assert macros.evaluate("defined(STRIP_ERROR_MESSAGES)") is False
    assert macros.evaluate("!defined(NDEBUG) || defined(C10_MOBILE)") is False
    assert macros.evaluate("defined(__CUDACC__) || defined(__HIPCC__)") is False
    assert macros.evaluate("defined(SOMETHING_ELSE)") is None
    text = (
        "#ifdef STRIP_ERROR_MESSAGES\n"
        "#define MY_CHECK(cond, ...) C10_THROW_ERROR(Error, #cond)\n"
        "#else\n"
        "#define MY_CHECK(cond, ...) C10_THROW_ERROR(ValueError, __VA_ARGS__)\n"
        "#endif\n"
    )
    defines = macros.scan_defines(text)
    assert [d[4] for d in defines] == [False, True]


def test_python_exception_table_and_torch_check() -> None:
    table = macros.python_exceptions(scan.read(INCLUDE / "torch/csrc/Exceptions.h"))
    assert table["Error"] == "RuntimeError"
    assert table["NotImplementedError"] == "NotImplementedError"  # split over two lines there
    init = (find_torch_dir() / "__init__.py").read_text(encoding="utf-8")
    assert macros.python_checks(init)["torch._check_value"] == "ValueError"
    assert macros.python_checks(init)["torch._check"] == "RuntimeError"


@pytest.mark.parametrize(
    ("source", "pieces"),
    [
        ('        if lr < 0.0: raise ValueError(f"Invalid learning rate: {lr}")\n',
         ["Invalid learning rate: "]),
        ('    raise ValueError("expected %s but got %d items" % (a, n))\n',
         ["expected ", " but got ", " items"]),
        ('    raise TypeError("expected {} got {}".format(a, b))\n', ["expected ", " got "]),
        ('    raise RuntimeError("size " + str(n) + " is too big")\n', ["size ", " is too big"]),
        ('    raise IndexError(\n        "index out of "\n        f"range: {i}"\n    )\n',
         ["index out of range: "]),
        ('    msg = f"cannot pickle {obj!r}: "\n    msg += "use torch.save"\n'
         "    raise pickle.PicklingError(msg)\n", ["cannot pickle ", ": ", "use torch.save"]),
    ],
)  # fmt: skip
def test_python_raise_sites(source: str, pieces: list[str]) -> None:
    sites = checks.scan_python("def f(lr, a, b, n, i, obj):\n" + source)
    assert len(sites) == 1
    assert sites[0][2] == pieces


def test_warning_category_and_keyerror_as_printed() -> None:
    sites = checks.scan_python(
        'import warnings\nwarnings.warn("this is going away", FutureWarning, stacklevel=2)\n'
    )
    assert sites == [[2, "warnings.warn:FutureWarning", ["this is going away"]]]
    # KeyError prints repr() of its argument
    printed = "'buffer name can\\'t contain \".\"'"
    assert checks.as_printed("KeyError", printed) == 'buffer name can\'t contain "."'
    assert checks.as_printed("RuntimeError", printed) == printed


def _index(tmp_path: Path, files: dict[str, str]) -> checks.CheckIndex:
    root = tmp_path / "tree"
    record: dict[str, dict[str, object]] = {}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        scanned = {"s": checks.scan_python(text)} if rel.endswith(".py") else checks.scan_cpp(text)
        if scanned:
            record[rel] = scanned
    header = root / "c10/util/Exception.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(scan.read(INCLUDE / "c10/util/Exception.h"), encoding="utf-8")
    record["c10/util/Exception.h"] = checks.scan_cpp(header.read_text(encoding="utf-8"))
    return checks.CheckIndex(root, record, warm=False)  # type: ignore[arg-type]


def test_ranking_uses_the_exception_type_and_who_can_reach_a_site(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        {
            "torch/optim/sgd.py": (
                'def f(lr):\n    if lr < 0: raise ValueError(f"Invalid lr: {lr}")\n'
            ),
            "torch/csrc/api/include/torch/optim/sgd.h": (
                'void g(double lr) { TORCH_CHECK(lr >= 0, "Invalid lr: ", lr); }\n'
            ),
            "aten/src/ATen/native/Foo.cpp": (
                'void h(double lr) { TORCH_CHECK(lr >= 0, "Invalid lr: ", lr); }\n'
            ),
        },
    )
    typed = checks.search(index, "Invalid lr: -0.1", exc_type="ValueError", limit=0)
    assert typed[0].path == "torch/optim/sgd.py" and typed[0].type_fit == 1
    assert [m.type_fit for m in typed[1:]] == [-1, -1]
    assert "raises RuntimeError, not ValueError" in typed[1].reasons
    judged = confidence.judge(typed, exc_type="ValueError", reference=False)
    assert judged.confidence == confidence.HIGH and judged.sure

    untyped = checks.search(index, "Invalid lr: -0.1", limit=0)
    # Without a type, the two eager sites tie; the C++ frontend one ranks last.
    assert untyped[-1].path.startswith("torch/csrc/api/")
    assert "not reached from Python" in untyped[-1].reasons[0]
    judged = confidence.judge(untyped, exc_type=None, reference=False)
    assert judged.confidence == confidence.LOW
    assert judged.blind_spots[0].startswith("2 sites match equally in 2 files")
    assert "no exception type" in judged.blind_spots[1]


def test_confidence_on_a_reference_tree_and_partial_matches(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        {"aten/src/ATen/InferSize.h": 'void f() { TORCH_CHECK(ok, "only one dimension"); }\n'},
    )
    matches = checks.search(index, "only one dimension", limit=0)
    judged = confidence.judge(matches, exc_type=None, reference=True)
    assert judged.confidence == confidence.MEDIUM and not judged.sure
    assert judged.blind_spots == (confidence.REFERENCE_BLIND_SPOT,)
    partial = checks.search(index, "only one dimension can be inferred here and more", limit=0)
    judged = confidence.judge(partial, exc_type=None, reference=False)
    assert judged.confidence == confidence.LOW
    assert "the best match covers only" in judged.blind_spots[0]
    assert confidence.judge([], exc_type=None, reference=False).confidence == confidence.NONE

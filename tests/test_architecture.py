"""The package's shape, as docs/architecture.md draws it: layers, no circles, small modules."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "examples"))
import import_graph  # noqa: E402

PACKAGE = ROOT / "vault_tools"
# lowest first: a module may import its own layer and those below, never one above
LAYERS = [
    {"errors", "findings", "vocabulary", "bundled"},
    {"infra"},
    {"config"},
    {"notes", "ledger"},
    {"checks", "store"},
    {"review"},
    {"integrations"},
    {"cli"},
    {"__main__"},
]
USE_CASES = {"apply", "preview", "draft", "revert", "status", "history"}
GRAPH, SIZES = import_graph.read_package(PACKAGE)


def layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else ""
    for index, names in enumerate(LAYERS):
        if part in names:
            return index
    return -1  # vault_tools itself: the version, below everything


def test_every_subpackage_has_a_layer() -> None:
    unplaced = {m for m in GRAPH if "." in m and layer(m) < 0}
    assert not unplaced


def test_no_module_imports_a_higher_layer() -> None:
    upward = [(m, t) for m, targets in GRAPH.items() for t in targets if layer(t) > layer(m)]
    assert not upward


def test_no_import_circle() -> None:
    assert import_graph.circles(GRAPH) == []


def test_use_cases_do_not_import_each_other() -> None:
    cases = {f"vault_tools.review.{name}" for name in USE_CASES}
    assert not [(m, t) for m in cases for t in GRAPH.get(m, ()) if t in cases]


def test_no_module_over_700_lines() -> None:
    assert not {m: n for m, n in SIZES.items() if n > 700}


def test_at_most_ten_modules_at_the_top_level() -> None:
    top = [p for p in PACKAGE.glob("*.py")]
    assert len(top) <= 10, sorted(p.name for p in top)


def test_packages_stand_on_at_most_nine_floors() -> None:
    assert max(import_graph.floors(import_graph.by_package(GRAPH)).values()) <= 9


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_the_graph_script_runs_standalone(flag: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs/examples/import_graph.py"), str(PACKAGE), *flag],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "floors" in done.stdout


def test_the_graph_script_finds_a_planted_circle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg import b\n")
    (package / "b.py").write_text("from pkg.a import f\n")
    (package / "c.py").write_text("from . import b\n")
    graph, _ = import_graph.read_package(package)
    assert import_graph.circles(graph) == [["pkg.a", "pkg.b"]]
    assert import_graph.floors(graph)["pkg.c"] == 2


def test_the_tests_mirror_the_subpackages() -> None:
    """tests/NAME/ holds the tests of vault_tools/NAME/; the top-level modules' tests and
    the project-wide ones (lint, docs, packaging, benchmarks) sit in tests/ itself."""
    tests = ROOT / "tests"
    folders = {p.parent.name for p in tests.glob("*/test_*.py")}
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert folders == subpackages
    for folder in folders:
        assert (tests / folder / "__init__.py").is_file(), folder


def test_every_memo_has_a_property_test_in_its_mirror() -> None:
    """A functools memo is speed machinery (docs/architecture.md): the test module of its
    module (vault_tools/a/b.py: tests/a/test_b.py) holds it to the function it memoizes
    with `tests/memo_oracle.py`, from a strategy of arguments in its `MEMO_ARGS`."""
    import importlib

    from tests.memo_oracle import memo_names

    missing = []
    for source in sorted(PACKAGE.rglob("*.py")):
        relative = source.relative_to(PACKAGE).with_suffix("")
        module = importlib.import_module(".".join(("vault_tools", *relative.parts)))
        names = memo_names(module)
        if not names:
            continue
        mirror = ROOT / "tests" / relative.parent / f"test_{relative.name}.py"
        covered: set[str] = set()
        if mirror.is_file():
            tests = importlib.import_module(
                ".".join(("tests", *mirror.relative_to(ROOT / "tests").with_suffix("").parts))
            )
            given = getattr(tests, "MEMO_ARGS", None)
            covered = set(given if given is not None else getattr(tests, "memo_args", dict)([]))
        missing += [f"{relative}.py: {name}" for name in sorted(names - covered)]
    assert not missing, missing


def test_every_piece_of_speed_machinery_names_a_test_that_exists() -> None:
    """docs/architecture.md's table of speed machinery: each row names, in its last
    column, the test (`tests/….py::name`) that holds the piece to its plain rule."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page[page.index("| piece | where |") : page.index("Removed because they did not pay")]
    rows = [row for row in table.splitlines()[2:] if row.startswith("|")]
    assert len(rows) >= 20
    for row in rows:
        named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row.rsplit(" | ", 1)[-1])
        assert named, row
        for path, name in named:
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name}"


def test_one_meaning_per_module_name() -> None:
    """Outside `cli/` (where `cli/NAME.py` is `vt NAME`, named after its core on purpose),
    no two modules share a name: `history.py` in two packages would be two meanings."""
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if path.name != "__init__.py" and relative.parts[0] != "cli":
            names.setdefault(path.name, []).append(str(relative))
    assert not {name: where for name, where in names.items() if len(where) > 1}


CLASS_OR_ALIAS = re.compile(r"^class (\w+)|^(\w+) = (?:tuple|dict|list)\b", re.M)


def class_twins(package: Path) -> dict[str, list[str]]:
    """Class (or `X = tuple[...]` alias) names defined in more than one module, a
    leading underscore ignored."""
    where: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for match in CLASS_OR_ALIAS.finditer(path.read_text(encoding="utf-8")):
            name = (match.group(1) or match.group(2)).lstrip("_")
            where.setdefault(name, []).append(str(path.relative_to(package)))
    return {name: files for name, files in where.items() if len(files) > 1}


def test_one_meaning_per_class_name() -> None:
    """Two `Entry` classes, one a skipped note and one a line of history, read as one
    thing: each class name is defined once in the package."""
    assert not class_twins(PACKAGE)


def test_a_planted_class_twin_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Entry:\n    pass\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "c.py").write_text("_Entry = tuple[int, str]\nclass Other:\n    pass\n")
    assert class_twins(tmp_path) == {"Entry": ["a.py", "b/c.py"]}


def private_imports(package: Path) -> list[str]:
    """`module: name` for every `_private` name a module of `package` imports from another
    module of it (`from pkg.x import _name`, or `x._name` on a module imported whole)."""
    import ast

    name = package.name
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules: set[str] = set()  # names bound to a module of the package
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == name or node.module.startswith(f"{name}."):
                    for alias in node.names:
                        if is_private(alias.name):
                            found.append(f"{path.relative_to(package)}: {alias.name}")
                        elif alias.name.islower():  # maybe a submodule: `from pkg import x`
                            modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(f"{name}.") and alias.asname:
                        modules.add(alias.asname)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and is_private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
            ):
                found.append(f"{path.relative_to(package)}: {node.value.id}.{node.attr}")
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_imports_a_private_name_of_another() -> None:
    """What one module uses of another is its public API: named without an underscore and
    with a docstring. A `_name` is the module's own."""
    assert private_imports(PACKAGE) == []


def test_a_planted_private_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("def _helper():\n    pass\n\n_LIMIT = 1\n")
    (package / "b.py").write_text("from pkg.sub.a import (\n    _LIMIT,\n    _helper,\n)\n")
    (package / "c.py").write_text("from pkg.sub import a\n\nx = a._helper\n")
    (package / "d.py").write_text("from pkg.sub.a import __doc__\n")
    assert private_imports(package) == ["b.py: _LIMIT", "b.py: _helper", "c.py: a._helper"]

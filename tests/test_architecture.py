"""The arrows point one way: the library never imports the harness or its heavy dependencies,
and nothing anywhere imports a top-level ``evals`` (a different package on PyPI)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS_DEPENDENCIES = ("pandas", "pyarrow", "matplotlib", "datasets", "tqdm", "numpy", "rouge_score", "nltk")
FORBIDDEN_IN_LIBRARY = ("rollsum_evals", "evals", *HARNESS_DEPENDENCIES)
SOURCES = ("rollsum", "evals", "tests", "benchmarks", "noxfile.py")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value.split(".")[0])
    return out


def _python_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        p = ROOT / name
        files += [p] if p.is_file() else [f for f in p.rglob("*.py") if "__pycache__" not in f.parts]
    return files


def test_library_source_never_imports_the_harness_or_its_dependencies() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(imported_modules(p) & set(FORBIDDEN_IN_LIBRARY))
        for p in (ROOT / "rollsum").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_the_library_loads_none_of_them() -> None:
    code = ("import sys, rollsum, rollsum.aio, rollsum.presets, rollsum.models, rollsum.store, "
            "rollsum.summarizers; print(','.join(sorted(m for m in sys.modules "
            f"if m.split('.')[0] in {FORBIDDEN_IN_LIBRARY!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


def test_the_scan_sees_what_it_forbids(tmp_path: Path) -> None:
    """The checks above would pass vacuously if the scanner missed import forms."""
    probe = tmp_path / "probe.py"
    probe.write_text("import pandas.io\nfrom tqdm import tqdm\nimportlib.import_module('matplotlib.pyplot')\n"
                     "from evals.x import y\nfrom . import relative\n")
    assert imported_modules(probe) == {"pandas", "tqdm", "matplotlib", "evals"}


def test_nothing_imports_a_top_level_evals_module() -> None:
    """The harness is `rollsum_evals` (its source root is the evals/ folder): an installed
    top-level `evals` would collide with the `evals` package on PyPI."""
    offenders = [str(p.relative_to(ROOT)) for p in _python_files() if "evals" in imported_modules(p)]
    assert offenders == []
    assert not (ROOT / "evals" / "__init__.py").exists()


def test_datasets_folder_is_data_only() -> None:
    assert not list((ROOT / "datasets").rglob("*.py"))
    assert not (ROOT / "datasets" / "__init__.py").exists()


def test_a_harness_module_over_400_lines_says_why_in_its_docstring() -> None:
    """One module one job: a long module is allowed only with the reason written where a reader
    opens it (issue #12), so growth is a decision rather than drift."""
    long = []
    for f in sorted((ROOT / "evals").rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        if len(text.splitlines()) > 400 and "Over ~400 lines because" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append(f"{f.relative_to(ROOT)}: {len(text.splitlines())} lines")
    assert not long, "modules over 400 lines without a note on why: " + "; ".join(long)


def test_the_engine_module_stays_the_state_machine() -> None:
    """Issue #20, item 4: `rollsum/engine.py` holds the state machine only (<= ~600 lines); its
    parts (settings, jobs, guard, window, cadence, opening, events) live beside it. A change that
    needs more room there is a part that belongs in one of them (docs/architecture.md)."""
    lines = len((ROOT / "rollsum" / "engine.py").read_text(encoding="utf-8").splitlines())
    assert lines <= 600, f"rollsum/engine.py has {lines} lines (issue #20: <= ~600): move a part out"


# ----------------------------------------------------------------------------------------------
# no import cycles (issue #20)

PACKAGES = {"rollsum": ROOT / "rollsum", "rollsum_evals": ROOT / "evals" / "rollsum_evals"}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at module level or inside a function; the body of
    an ``if TYPE_CHECKING:`` block never runs, so it is left out (its ``else`` is kept)."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for branch in node.orelse:
                visit(branch)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _imported_by_name(tree: ast.AST) -> set[str]:
    """Modules imported at run time by name: ``importlib.import_module("a.b")`` /
    ``__import__("a.b")``, and a table of dotted module names (a lazy ``__getattr__``'s dict, the
    CLI's tuple of command modules: every string in it a dotted name). A stray string that
    happens to be a package's name (a logger, a distribution) is neither."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
                in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value)
        items = (node.values if isinstance(node, ast.Dict)
                 else node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [])
        names = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
        if names and len(names) == len(items) and all(re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", n) for n in names):
            out.update(names)
    return out


def module_graph(packages: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `packages` it imports (edges to the packages' own modules only).

    ``from a.b import c`` points at ``a.b.c`` when that is a module, else at ``a.b``; a relative
    import is resolved against the importing module's package. A submodule that imports its own
    package (``from rollsum import X`` inside ``rollsum.engine``) points at the package's
    ``__init__``: when that ``__init__`` re-exports the submodule, that is a cycle like any other.
    A module imported by name (`_imported_by_name`: ``importlib.import_module("a.b")``, a
    lazy-import table) is an edge too. The implicit import of a parent package (Python runs
    ``a/__init__`` before ``a.b``) is not an edge: it is the same for every module and says
    nothing about the design."""
    files: dict[str, Path] = {}
    for top, base in packages.items():
        for f in base.rglob("*.py"):
            if "__pycache__" in f.parts:
                continue
            parts = [top, *f.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = f

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, f in files.items():
        package = mod if f.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
        graph[mod].update(m for m in _imported_by_name(tree) if m in files and m != mod)
        for node in _runtime_imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    anchor = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
                    source = f"{anchor}.{node.module}" if node.module else anchor
                else:
                    source = node.module or ""
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in files else source for a in node.names]
            for t in targets:
                if t.split(".")[0] in packages:
                    found = resolve(t)
                    if found is not None and found != mod:
                        graph[mod].add(found)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def test_no_import_cycles_in_the_library_or_the_harness() -> None:
    """Each module sits above the ones it imports, function-local imports included (a local
    import that only exists to dodge a cycle is still the cycle). ``if TYPE_CHECKING:`` imports
    are exempt: they never run, so they cannot leave a module half-initialised or make the
    import order matter, and a type named in an annotation is not a call into that module."""
    cycles = import_cycles(module_graph(PACKAGES))
    assert cycles == []


def test_the_cycle_scan_sees_every_import_form(tmp_path: Path) -> None:
    """The check above would pass vacuously if the scanner missed an import form: a package
    with one cycle per form (module level, function-local, relative, a package ``__init__``
    re-exporting a submodule that imports the package back, a lazy import by name) and one
    TYPE_CHECKING-only loop."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "lazy").mkdir()
    files = {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    import pkg.a\n",
        "c.py": "from . import d\n",
        "d.py": "from .c import x\n",
        "sub/__init__.py": "from pkg.sub.e import y\n",
        "sub/e.py": "from pkg.sub import z\n",
        "t1.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import t2\n",
        "t2.py": "import pkg.t1\n",
        "free.py": "import pkg.a\nfrom pkg.sub import e\n",
        "lazy/__init__.py": "_LAZY = {'g': 'pkg.lazy.f'}\ndef __getattr__(name):\n    return _LAZY[name]\n",
        "lazy/f.py": "from pkg.lazy import shared\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    assert import_cycles(module_graph({"pkg": pkg})) == [
        ["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.lazy", "pkg.lazy.f"], ["pkg.sub", "pkg.sub.e"]]


def _dotted_imports(path: Path) -> set[str]:
    """Every absolute module name `path` imports, in full (``from a.b import c`` -> a.b, a.b.c)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_library_tests_and_shared_helpers_never_import_the_harness_or_its_tests() -> None:
    """The library's tests run without the harness: they and the helpers in tests/support (which
    both test trees share) import neither `rollsum_evals` nor anything under tests/evals."""
    offenders = {}
    for folder in ("tests/rollsum", "tests/seeds", "tests/support"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            bad = sorted(m for m in _dotted_imports(f)
                         if m.split(".")[0] == "rollsum_evals" or m == "tests.evals" or m.startswith("tests.evals."))
            if bad:
                offenders[str(f.relative_to(ROOT))] = bad
    assert offenders == {}

"""The arrows point one way: the library never imports the harness or its heavy dependencies,
and nothing anywhere imports a top-level ``evals`` (a different package on PyPI)."""

from __future__ import annotations

import ast
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

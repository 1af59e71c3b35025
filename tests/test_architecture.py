"""The arrows point one way: the library never imports the harness or its heavy dependencies."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("evals", "pandas", "matplotlib", "datasets", "pyarrow", "rouge_score", "tqdm", "numpy")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_library_source_never_imports_the_harness_or_its_dependencies() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(imported_modules(p) & set(FORBIDDEN))
        for p in (ROOT / "rollsum").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_the_library_loads_none_of_them() -> None:
    code = ("import sys, rollsum, rollsum.aio, rollsum.presets, rollsum.models, rollsum.store, "
            "rollsum.summarizers; print(','.join(sorted(m for m in sys.modules "
            f"if m.split('.')[0] in {FORBIDDEN!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


def test_datasets_folder_is_data_only() -> None:
    assert not list((ROOT / "datasets").rglob("*.py"))
    assert not (ROOT / "datasets" / "__init__.py").exists()

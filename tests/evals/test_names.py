"""Names made from user text stay one harmless path component, with secrets masked."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollsum_evals.fileio import safe_name

KEY = "sk-ant-api03-REDTEAMSECRET123-abcdefghij"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_becomes_one_component_inside_the_root(text: str) -> None:
    name = safe_name(text)
    assert name and len(name) <= 80
    assert "/" not in name and "\\" not in name and "\0" not in name
    assert not name.startswith(".") and name not in {".", ".."}
    root = Path("/tmp/rollsum-root")
    assert (root / name).resolve().parent == root.resolve()


def test_the_default_run_directory_stays_in_runs_and_masks_a_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum_evals.cli.run_cmd import _default_out

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for name in ("../../escape", "/etc/x", "..", f"k-{KEY}", "tail REDTEAMSECRET123 here", "*[?]"):
        out = _default_out(name)
        assert out.parent == Path("runs") and (tmp_path / "runs").resolve() in (tmp_path / out).resolve().parents
        assert "REDTEAMS" not in str(out) and KEY[:8] not in str(out), out

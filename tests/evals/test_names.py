"""Names made from user text stay one harmless path component under their root."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollsum_evals.names import MAX_COMPONENT, inside, safe_component

KEY = "sk-ant-api03-REDTEAMSECRET123-abcdefghij"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_becomes_one_component_inside_the_root(text: str) -> None:
    name = safe_component(text)
    assert name and len(name) <= MAX_COMPONENT
    assert "/" not in name and "\\" not in name and "\0" not in name
    assert not name.startswith(".") and name not in {".", ".."}
    root = Path("/tmp/rollsum-root")
    path = inside(root, text, text)
    assert path.parent.parent == root and root.resolve() in path.resolve().parents


@pytest.mark.parametrize("text", ["../../x", "/abs/x", "..", ".hidden", "a/../../b", "*[?]", "~/x", "C:\\x"])
def test_traversal_and_globs_are_flattened(text: str) -> None:
    name = safe_component(text)
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._=+-")
    assert inside("runs", text).parent == Path("runs")


def test_a_secret_in_a_name_is_masked_before_it_becomes_a_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    name = safe_component(f"nightly-{KEY}")
    assert name == "nightly"
    assert "REDTEAMS" not in safe_component("tail REDTEAMSECRET123 here")


def test_default_run_directory_of_a_spec_named_with_traversal_stays_in_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum_evals.cli.run_cmd import _default_out

    monkeypatch.chdir(tmp_path)
    for name in ("../../escape", "/etc/x", "..", f"k-{KEY}"):
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        out = _default_out(name)
        assert out.parent == Path("runs") and (tmp_path / "runs").resolve() in (tmp_path / out).resolve().parents
        assert "REDTEAMS" not in str(out)

"""Sweeps that name the Anthropic peers run offline: the peers are skipped, named, and why."""

from __future__ import annotations

from pathlib import Path

import pytest
from rollsum_evals.cli import main
from rollsum_evals.spec.parse import load_spec, parse_spec

from rollsum import plugins

ROOT = Path(__file__).resolve().parents[3]
SWEEPS = ROOT / "evals" / "sweeps"
API = {"anthropic-context-editing": "rollsum_evals.peers.anthropic_api:ContextEditingMemory",
       "anthropic-compaction": "rollsum_evals.peers.anthropic_api:CompactionMemory"}


def test_agents_sweep_runs_offline_and_says_which_configs_it_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code = main(["run", str(SWEEPS / "agents.toml"), "--out", str(out), "--limit", "1", "--no-progress"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    for label in API:
        assert f"config '{label}' skipped: needs ANTHROPIC_API_KEY (not set)" in printed.err
    ran = set(load_configs(out))
    assert {"truncate", "since-last", "evict-window"} <= ran and not ran & set(API)


def load_configs(run: Path) -> list[str]:
    from rollsum_evals.rundir import load_run

    return sorted(set(load_run(run).units["config"]))


def test_agents_sweep_names_truncate_the_presets_and_both_api_peers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-SECRET")  # read, never called: nothing runs here
    spec = load_spec(SWEEPS / "agents.toml")
    assert not spec.skipped
    presets = {c.preset for c in spec.configs}
    assert {"truncate", "since-last", "budget-rule-based", "token-ratio", "evict-window"} <= presets
    assert {c.label: c.preset for c in spec.configs if plugins.is_import_path(c.preset)} == API
    assert spec.context_windows == (8000,) and all(d.source.startswith("synth:agent") for d in spec.datasets)
    for c in spec.configs:
        if c.preset in API.values():
            assert c.models is not None and c.models[0].startswith("anthropic:")
    assert {"clear-tool-results", "clear+since-last"} <= presets  # issue #23 item 1 (were commented out)


def test_a_sweep_of_only_api_peers_without_a_key_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum.errors import ConfigError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    text = ('models = ["extractive"]\ncontext_window = 8000\n[[datasets]]\nname = "a"\n'
            'source = "synth:agent?conversations=1&messages=50&seed=1"\n[[configs]]\n'
            'memory = "rollsum_evals.peers.anthropic_api:CompactionMemory"\nmodels = ["anthropic:claude-sonnet-4-6"]\n')
    with pytest.raises(ConfigError) as err:
        parse_spec(text, "only.toml")
    assert "only.toml:" in str(err.value) and "needs ANTHROPIC_API_KEY" in str(err.value)
    assert "\n" not in str(err.value)

"""Price table: usage to dollars, aliases, free offline models, overrides, loud unknowns."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rollsum.errors import ConfigError
from rollsum.models import PriceTable, cost_usd, price_for
from rollsum.models.anthropic_model import known_models
from rollsum.types import Usage


def test_haiku_cost_from_all_four_token_kinds() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=200_000,
                  cache_write_tokens=40_000)
    # 1.00 + 0.1 * 5.00 + 0.2 * 0.10 + 0.04 * 1.25
    assert cost_usd("claude-haiku-4-5", usage) == pytest.approx(1.0 + 0.5 + 0.02 + 0.05)


@pytest.mark.parametrize("name", ["anthropic:claude-sonnet-4-5", "claude-sonnet-4-5-20250929",
                                  "record:c.jsonl:anthropic:claude-sonnet-4-5"])
def test_specs_dated_ids_and_recorders_price_as_the_model(name: str) -> None:
    assert price_for(name).input == 3.0 and price_for(name).output == 15.0


@pytest.mark.parametrize("name", ["fake", "fake:mode=json", "extractive", "local:gemma3-270m", "replay:x.jsonl"])
def test_offline_models_are_free(name: str) -> None:
    assert cost_usd(name, Usage(input_tokens=10**6, output_tokens=10**6)) == 0.0


def test_required_models_and_dated_table() -> None:
    table = PriceTable.load()
    assert table.as_of
    for name in ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5"):
        assert table.price_for(name).known
    priced = [m for m in known_models() if table.price_for(m).known]
    assert len(priced) >= len(known_models()) - 4  # the few the price page did not list


def test_unknown_model_costs_zero_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    table = PriceTable.load()
    with caplog.at_level(logging.WARNING):
        assert table.cost_usd("claude-unreleased-9", Usage(input_tokens=1000)) == 0.0
        table.cost_usd("claude-unreleased-9", Usage(input_tokens=1000))
    assert caplog.text.count("claude-unreleased-9") == 1


def test_user_override_by_path_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "prices.toml"
    custom.write_text('as_of = "2030-01-01"\n[models."claude-haiku-4-5"]\n'
                      'input = 2.0\noutput = 4.0\ncache_read = 0.0\ncache_write = 0.0\n')
    assert price_for("claude-haiku-4-5", custom).input == 2.0
    monkeypatch.setenv("ROLLSUM_PRICES", str(custom))
    assert cost_usd("claude-haiku-4-5", Usage(output_tokens=1_000_000)) == pytest.approx(4.0)


def test_bad_price_file_names_file_model_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text('[models."m"]\ninput = "cheap"\noutput = 1\ncache_read = 0\ncache_write = 0\n')
    with pytest.raises(ConfigError, match=r"p\.toml.*\"m\".*'input'"):
        PriceTable.load(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        PriceTable.load(tmp_path / "missing.toml")


def test_a_price_file_with_a_byte_order_mark_reads_as_without_it(tmp_path: Path) -> None:
    # (was "not valid TOML (Invalid statement (at line 1, column 1))": Notepad writes UTF-8 with a BOM)
    f = tmp_path / "p.toml"
    f.write_bytes(b'\xef\xbb\xbf[models."m"]\ninput = 2\noutput = 4\ncache_read = 0\ncache_write = 0\n')
    assert PriceTable.load(f).price_for("m").input == 2.0

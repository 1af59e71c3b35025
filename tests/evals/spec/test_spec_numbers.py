"""A sweep spec's numbers are checked by the library's own routine, at spec load, before any
Unit runs: the same values are refused with the same words as `RollingSummarizer.from_preset`."""

from __future__ import annotations

from typing import Any

import pytest
from rollsum_evals.spec.parse import parse_spec

from rollsum import RollingSummarizer
from rollsum.errors import ConfigError


@pytest.mark.parametrize(("key", "value"), [("keep_last", True), ("keep_last", 2.5), ("max_passes", 0),
                                            ("summary_share", 1.5), ("ledger", "x")])
def test_a_spec_and_the_library_refuse_a_value_with_the_same_words(key: str, value: Any) -> None:
    toml = {True: "true"}.get(value, repr(value)) if not isinstance(value, str) else f'"{value}"'
    text = ('name = "t"\n[[datasets]]\nname = "d"\nsource = "synth:chat"\n[[configs]]\npreset = "since-last"\n'
            f"params = {{ {key} = {toml} }}\n")
    with pytest.raises(ConfigError) as spec_err:
        parse_spec(text, "t.toml")
    with pytest.raises(ConfigError) as lib_err:
        RollingSummarizer.from_preset("since-last", **{key: value})
    words = str(lib_err.value).split(f"{key}: ", 1)[1]
    assert str(spec_err.value) == f"t.toml:7: field 'configs[0].params.{key}': {words}"



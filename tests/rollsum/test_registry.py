"""`rollsum.registry.Registry`: the public registries' rules (one owner per name; a test's
registration is undone whatever happens in its block)."""

from __future__ import annotations

import pytest

from rollsum.errors import ConfigError
from rollsum.registry import Registry


def test_a_taken_name_is_refused_unless_replacing_is_asked_for() -> None:
    reg: Registry[int] = Registry("widget", {"a": 1})
    with pytest.raises(ConfigError, match="widget 'a' is already registered"):
        reg.register("a", 2)
    reg.register("a", 2, replace=True)
    assert reg["a"] == 2 and reg.names() == ("a",)


def test_an_import_path_is_not_a_name() -> None:
    with pytest.raises(ConfigError, match="without ':'"):
        Registry[int]("widget").register("pkg.mod:Class", 1)


def test_registered_restores_the_previous_entry_even_when_the_block_fails() -> None:
    reg: Registry[int] = Registry("widget", {"a": 1})
    with pytest.raises(RuntimeError), reg.registered("a", 5):
        assert reg["a"] == 5
        raise RuntimeError
    assert reg["a"] == 1
    with reg.registered("b", 7):
        assert list(reg) == ["a", "b"] and "b" in reg and len(reg) == 2
    assert "b" not in reg and reg.unregister("a") == 1 and len(reg) == 0

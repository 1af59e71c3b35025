"""Components by import path: loading, constructor conventions, declared capabilities, and the
`Memory` protocol the library's own engine satisfies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rollsum import RollingSummarizer, plugins
from rollsum.capabilities import OFFLINE_SCRIPTED
from rollsum.errors import ConfigError
from rollsum.memory import Memory
from rollsum.types import Message
from tests.support.helpers import chat

HERE = "tests.rollsum.test_plugins"


class Named:
    capabilities = OFFLINE_SCRIPTED

    def __init__(self, size: int = 1, *, model: Any = None, context_window: int | None = None) -> None:
        self.size, self.model, self.context_window = size, model, context_window


class Forwarding:
    """Forwards **kwargs elsewhere: it must not receive conventions it never named."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class Inner:
    class Deeper:
        pass


def test_import_paths_and_their_mistakes() -> None:
    assert plugins.load(f"{HERE}:Named") is Named
    assert plugins.load(f"{HERE}:Inner.Deeper") is Inner.Deeper
    assert plugins.is_import_path("a.b:C") and plugins.is_import_path("a:C.D")
    for not_a_path in ("since-last", "fake:mode=echo", "anthropic:claude-haiku-4-5", "a.b:", ":C", "a b:C", 3):
        assert not plugins.is_import_path(not_a_path)
    for path, needle in [("nosuch.mod:X", "cannot import 'nosuch.mod' (ModuleNotFoundError"),
                         (f"{HERE}:Missing", f"'{HERE}' has no attribute 'Missing'"),
                         (f"{HERE}:Inner.Gone", f"'{HERE}:Inner' has no attribute 'Gone'"),
                         ("since-last", "expected an import path")]:
        with pytest.raises(ConfigError, match=None) as err:
            plugins.load(path)
        assert needle in str(err.value) and "\n" not in str(err.value)


def test_conventions_reach_only_constructors_that_name_them() -> None:
    conv: dict[str, Any] = {"model": "M", "context_window": 4000, "counter": "C", "on_event": print}
    named = plugins.construct(Named, {"size": 3}, conv, what="x")
    assert (named.size, named.model, named.context_window) == (3, "M", 4000)
    # a parameter the user gives wins over the convention; None conventions are not passed
    assert plugins.construct(Named, {"context_window": 10}, conv, what="x").context_window == 10
    def own_default(model: Any = "own") -> Any:
        return model

    assert plugins.construct(own_default, {}, {"model": None}, what="x") == "own"
    assert plugins.construct(Forwarding, {"a": 1}, conv, what="x").kwargs == {"a": 1}
    with pytest.raises(ConfigError, match=r"^x: TypeError: .*unexpected keyword argument 'nope'$"):
        plugins.construct(Named, {"nope": 1}, conv, what="x")


def test_constructor_errors_are_one_line_even_when_the_exception_is_not() -> None:
    def boom(**_: Any) -> None:
        raise ValueError("first line\n  second line\n")

    with pytest.raises(ConfigError) as err:
        plugins.construct(boom, {}, {}, what="memory m:boom")
    assert str(err.value) == "memory m:boom: ValueError: first line second line"


def test_capabilities_are_declared_or_conservative() -> None:
    assert plugins.capabilities(Named) == OFFLINE_SCRIPTED
    assert plugins.capabilities(Named()) == OFFLINE_SCRIPTED
    undeclared = plugins.capabilities(Forwarding)
    assert undeclared == plugins.UNDECLARED
    assert not (undeclared.offline or undeclared.free or undeclared.deterministic)


def test_the_rolling_summarizer_is_a_memory() -> None:
    rs = RollingSummarizer.from_preset("since-last", context_window=2000)
    memory: Memory = rs  # checked by mypy as well as at run time
    assert isinstance(memory, Memory)
    for m in chat(40):
        memory.add(m)
    assert memory.context() == rs.context() and memory.context()


def test_a_memory_needs_both_methods() -> None:
    class AddOnly:
        def add(self, message: Message) -> None: ...

    class Both(AddOnly):
        def context(self) -> list[Message]:
            return []

    assert not isinstance(AddOnly(), Memory) and isinstance(Both(), Memory)


def test_requires_and_accepts_read_the_signature() -> None:
    def f(model: Any, *, counter: Any = None, **kw: Any) -> None: ...

    g: Callable[..., None] = lambda *a: None  # noqa: E731
    assert plugins.requires(f, "model") and not plugins.requires(f, "counter")
    assert plugins.accepts(f, "counter") and not plugins.accepts(f, "kw") and not plugins.accepts(g, "model")
    assert plugins.takes_any_keyword(f) and not plugins.takes_any_keyword(g)

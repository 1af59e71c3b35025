"""`Message.with_id`: the engine names every message added without an id (one call per `add()`);
`quick_init`: the records the engine makes per message or summary are built as the generated
``__init__`` builds them."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import UTC, date, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum import RollingSummarizer
from rollsum.jobs import Maker
from rollsum.policies.base import Decision
from rollsum.types import ROLES, Message, SummaryEvent, SummaryRecord, Usage


def test_with_id_passes_on_every_field_a_message_has() -> None:
    """`with_id` spells the fields out (cheaper than `dataclasses.replace`): a field added to
    `Message` must be added there too, or renamed messages would lose it."""
    assert [f.name for f in dataclasses.fields(Message)] == ["role", "content", "id", "name", "created_at", "meta"]


@settings(max_examples=100, deadline=None)
@given(role=st.sampled_from(sorted(ROLES)), content=st.text(max_size=20), old=st.none() | st.text(max_size=5),
       name=st.none() | st.text(max_size=5), created_at=st.none() | st.text(max_size=5),
       meta=st.dictionaries(st.text(max_size=4), st.integers(), max_size=3), new=st.text(min_size=1, max_size=8))
def test_with_id_is_replace_with_the_new_id(role: str, content: str, old: str | None, name: str | None,
                                            created_at: str | None, meta: dict[str, int], new: str) -> None:
    m = Message(role, content, old, name, created_at, meta)  # type: ignore[arg-type]
    renamed = m.with_id(new)
    assert renamed == dataclasses.replace(m, id=new) and renamed.id == new
    assert renamed.meta is m.meta  # shared as `replace` shares it: a message is not copied


QUICK = [Message, Usage, SummaryRecord, SummaryEvent, Decision, Maker]
"""Every class `quick_init` gives an ``__init__`` (the ones the engine makes per message or summary)."""


def _generated(cls: type) -> type:
    """The same dataclass with the ``__init__`` `dataclasses` generates: the reference."""
    specs = [(f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory))
             for f in dataclasses.fields(cls)]
    namespace = {"__post_init__": cls.__post_init__} if hasattr(cls, "__post_init__") else {}
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True, namespace=namespace)


@pytest.mark.parametrize("cls", QUICK, ids=lambda c: c.__name__)
def test_quick_init_has_the_generated_signature(cls: type) -> None:
    assert str(inspect.signature(vars(cls)["__init__"])) == str(inspect.signature(vars(_generated(cls))["__init__"]))


@settings(max_examples=60, deadline=None)
@given(cls=st.sampled_from(QUICK), data=st.data())
def test_quick_init_stores_what_the_generated_init_stores(cls: type, data: st.DataObject) -> None:
    """Any subset of the fields given, by position or keyword: every field holds what the
    generated ``__init__`` holds (the given object itself, else the default, else a fresh
    factory value), the instance is of its class, equal to itself and still frozen. Catches a
    field stored wrongly, a default factory called once for every instance, a skipped
    ``__post_init__`` and a twin with other slots (a TypeError)."""
    fs = dataclasses.fields(cls)
    given_: dict[str, object] = {}
    for f in fs:
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required or data.draw(st.booleans(), label=f.name):
            n = data.draw(st.integers(0, 9))
            given_[f.name] = "user" if f.name == "role" else {"n": n} if f.name == "meta" else f"{f.name}-{n}"
    positional = data.draw(st.integers(0, len(given_)), label="positional")
    names = [f.name for f in fs]
    while (positional and names[positional - 1] not in given_) or any(n not in given_ for n in names[:positional]):
        positional -= 1
    args = [given_[n] for n in names[:positional]]
    kwargs = {k: v for k, v in given_.items() if k not in names[:positional]}
    quick, reference = cls(*args, **kwargs), _generated(cls)(*args, **kwargs)
    assert type(quick) is cls
    for f in fs:
        got, want = getattr(quick, f.name), getattr(reference, f.name)
        assert got == want and (f.name not in given_ or got is given_[f.name]), f.name
        if f.default_factory is not dataclasses.MISSING and f.name not in given_:
            assert got is not getattr(cls(*args, **kwargs), f.name), f"{f.name}: one default for every instance"
    assert quick == quick
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(quick, fs[0].name, "changed")


def test_quick_init_still_validates_a_message() -> None:
    with pytest.raises(ValueError, match="role must be one of"):
        Message("robot", "hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content must be str"):
        Message("user", 3)  # type: ignore[arg-type]


def test_a_message_takes_a_datetime_and_a_none_meta_as_an_application_has_them() -> None:
    """A datetime `created_at` (naive or aware) is kept as its ISO 8601 text, as a store gives it
    back, and a None `meta` is empty: before, the first made ``context(timestamps=...)`` raise
    AttributeError, the second broke tool pairing and clearing inside ``add()``."""
    naive, aware = datetime(2024, 5, 1, 12, 30), datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    assert Message("user", "hi", created_at=naive).created_at == "2024-05-01T12:30:00"  # type: ignore[arg-type]
    assert Message("user", "hi", created_at=aware).created_at == "2024-05-01T12:30:00+00:00"  # type: ignore[arg-type]
    assert Message("user", "hi", created_at=date(2024, 5, 1)).created_at == "2024-05-01"  # type: ignore[arg-type]
    assert Message("tool", "out", meta=None).meta == {}  # type: ignore[arg-type]
    rs = RollingSummarizer.from_preset("since-last")
    rs.add(Message("user", "hi", created_at=naive))  # type: ignore[arg-type]
    assert rs.context(timestamps="message")[0].content == "[1 May 2024, 12:30] hi"


@pytest.mark.parametrize(("field", "value", "words"), [
    ("created_at", 1714566600, "created_at must be an ISO 8601 string, a datetime or None, got int"),
    ("name", 5, "name must be str or None, got int"),
    ("id", 7, "id must be str or None, got int"),
    ("meta", "tool_call_id=1", "meta must be a mapping or None, got str"),
])
def test_a_message_field_of_the_wrong_type_is_refused_where_it_is_made(field: str, value: object, words: str) -> None:
    """Not deep inside the engine later (a non-str name broke ``to_anthropic()``)."""
    with pytest.raises(TypeError, match=words):
        Message("tool", "out", **{field: value})  # type: ignore[arg-type]


def test_a_subclass_is_built_as_itself() -> None:
    """A subclass has another layout: it is built by the generated ``__init__`` and stays of
    its class (not turned into the class `quick_init` decorated)."""

    class Tagged(SummaryEvent):
        pass

    @dataclasses.dataclass(frozen=True)
    class Stamped(Message):
        stamp: int = 0

    event, message = Tagged("drop", 1, "why", messages=2), Stamped("user", "hi", stamp=3)
    assert type(event) is Tagged and (event.kind, event.messages, event.usage) == ("drop", 2, Usage())
    assert type(message) is Stamped and (message.content, message.stamp, message.meta) == ("hi", 3, {})


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(["drop", "evict"]), turn=st.integers(-1, 10**6), reason=st.text(max_size=10),
       messages=st.integers(0, 50), before=st.integers(0, 10**6), after=st.integers(0, 10**6), guard=st.booleans())
def test_a_removal_event_is_the_event_init_makes(kind: str, turn: int, reason: str, messages: int, before: int,
                                                 after: int, guard: bool) -> None:
    """`SummaryEvent.removal` (the engine's drops and evictions) sets every field as
    ``__init__`` does: equal, the same `to_dict`, every field (one added to the class and not
    to `removal` would be unset), of its class and still frozen."""
    fast = SummaryEvent.removal(kind, turn, reason, messages, before, after, guard)  # type: ignore[arg-type]
    slow = SummaryEvent(kind, turn, reason, messages=messages, tokens_before=before,  # type: ignore[arg-type]
                        tokens_after=after, guard=guard)
    assert type(fast) is SummaryEvent
    assert fast == slow and fast.to_dict() == slow.to_dict()
    assert all(getattr(fast, f.name) is getattr(slow, f.name) or getattr(fast, f.name) == getattr(slow, f.name)
               for f in dataclasses.fields(SummaryEvent))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.turn = 0  # type: ignore[misc]


@settings(max_examples=100, deadline=None)
@given(action=st.sampled_from(["summarize", "evict", "drop"]), old=st.lists(st.integers(0, 9), max_size=4),
       new=st.lists(st.integers(0, 9), max_size=4), reason=st.text(max_size=8), pending=st.booleans(),
       fold=st.booleans())
def test_with_indices_is_replace_with_the_new_indices(action: str, old: list[int], new: list[int], reason: str,
                                                      pending: bool, fold: bool) -> None:
    """`Decision.with_indices` (the engine's narrowing to whole tool groups) spells the fields
    out: it must keep every other field as `dataclasses.replace` does."""
    d = Decision(action, tuple(old), reason, pending, fold)  # type: ignore[arg-type]
    assert d.with_indices(tuple(new)) == dataclasses.replace(d, indices=tuple(new))
    assert [f.name for f in dataclasses.fields(Decision)] == ["action", "indices", "reason", "include_pending", "fold"]

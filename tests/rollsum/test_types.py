"""`Message.with_id`: the engine names every message added without an id (one call per `add()`)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.types import ROLES, Message


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

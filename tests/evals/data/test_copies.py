"""The copies a run keeps of its hub datasets (`data.copies`): read back exactly what was kept,
and anything else in their place (edited, cut, not gzip, a link, a bomb, records that are not
conversations) refused with one line naming the file, never parsed as anything but JSON."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from rollsum_evals.data import copies
from rollsum_evals.data.canonical import canonical_jsonl, conversations_hash
from rollsum_evals.data.copies import DatasetCopies
from rollsum_evals.data.formats import load
from rollsum_evals.data.types import Conversation

from rollsum.errors import ConfigError

SOURCE = "synth:agent?conversations=2&messages=40&seed=7"


@pytest.fixture
def kept(tmp_path: Path) -> tuple[DatasetCopies, str, list[Conversation]]:
    convs = list(load(SOURCE))
    sha = conversations_hash(convs)
    store = DatasetCopies(tmp_path / "datasets")
    assert store.write(sha, convs) is None
    return store, sha, convs


def test_a_kept_set_reads_back_identical_and_is_the_hashed_bytes(
        kept: tuple[DatasetCopies, str, list[Conversation]]) -> None:
    store, sha, convs = kept
    path = store.path(sha)
    assert path is not None and path.name == f"{sha}.jsonl.gz"
    assert hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest() == sha  # one serialiser
    again = store.read(sha)
    assert again == convs and [c.to_dict() for c in again] == [c.to_dict() for c in convs]
    assert store.read("0" * 64) is None  # no copy: the caller goes to the hub
    assert store.read("../../etc/passwd") is None and store.path("../x") is None  # never a path


def _rewrite(path: Path, text: bytes) -> None:
    path.write_bytes(gzip.compress(text))


@pytest.mark.parametrize(("damage", "says"), [
    ("edited", "the dataset copy was changed"),
    ("cut", "cut short"),
    ("garbage", "not gzip"),
    ("bomb", "inflates to more than"),
])
def test_a_damaged_copy_is_one_line_naming_it(kept: tuple[DatasetCopies, str, list[Conversation]],
                                              monkeypatch: pytest.MonkeyPatch, damage: str, says: str) -> None:
    store, sha, _ = kept
    path = store.path(sha)
    assert path is not None
    data = path.read_bytes()
    if damage == "edited":
        _rewrite(path, gzip.decompress(data).replace(b"a", b"e", 1))
    elif damage == "cut":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x80\x04\x95 a pickle, say" + data)
    else:  # a copy that inflates past the limit (the limit made small, not the file large)
        monkeypatch.setattr(copies, "MAX_COPY_BYTES", 1000)
    with pytest.raises(ConfigError) as err:
        store.read(sha)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and msg.startswith(str(path)) and says in msg, msg
    assert "delete it to load the dataset from the hub again" in msg


def test_records_that_hash_right_but_are_no_conversations_are_refused(tmp_path: Path) -> None:
    # a received run directory can carry a manifest and a copy made to match each other: the
    # copy is still only data, checked by the dataset validator as a dataset file would be
    store = DatasetCopies(tmp_path)
    raw = json.dumps({"id": "c1", "messages": [{"role": "user"}]}).encode() + b"\n"
    sha = hashlib.sha256(raw).hexdigest()
    _rewrite(tmp_path / f"{sha}.jsonl.gz", raw)
    with pytest.raises(ConfigError) as err:
        store.read(sha)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and msg.startswith(f"{tmp_path / sha}.jsonl.gz:1") and "content" in msg, msg


def test_a_link_in_place_of_a_copy_is_refused_not_followed(
        tmp_path: Path, kept: tuple[DatasetCopies, str, list[Conversation]]) -> None:
    store, sha, _ = kept
    path = store.path(sha)
    assert path is not None
    elsewhere = tmp_path / "elsewhere.gz"
    path.rename(elsewhere)  # a whole, right copy: only the link is wrong
    path.symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="a symbolic link"):
        store.read(sha)
    assert store.write(sha, list(load(SOURCE))) is None and not path.is_symlink()  # the run replaces it


def test_a_set_too_large_or_holding_a_secret_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    convs = list(load(SOURCE))
    store = DatasetCopies(tmp_path)
    monkeypatch.setattr(copies, "MAX_COPY_BYTES", len(canonical_jsonl(convs)) - 1)
    assert "MB of JSON, over the" in str(store.write(conversations_hash(convs), convs))
    monkeypatch.undo()
    secret = "sk-proj-" + "Zq8" * 10
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    first = convs[0].to_dict()
    first["messages"][0]["content"] = f"my key is {secret}"
    leaky = [Conversation.from_dict(first), *convs[1:]]
    assert "credential-looking" in str(store.write(conversations_hash(leaky), leaky))
    assert not tmp_path.exists() or not any(tmp_path.iterdir())

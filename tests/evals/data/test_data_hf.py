from pathlib import Path

import pytest
from rollsum_evals.data import hf, load
from rollsum_evals.data.synth import make_conversation

pytest.importorskip("datasets")


def test_round_trip_through_a_dataset_keeps_everything(tmp_path: Path) -> None:
    convs = [make_conversation("agent", n_messages=60, seed=1), make_conversation("chat", n_messages=40, seed=2)]
    out = tmp_path / "hfdir"
    hf.save(convs, out)
    assert load(out) == convs


def test_plain_chat_datasets_are_read_as_exports() -> None:
    from datasets import Dataset  # type: ignore[attr-defined]

    ds = Dataset.from_list([{"messages": [{"role": "user", "content": "hi"},
                                          {"role": "assistant", "content": "hello"}]}])
    (conv,) = list(hf.from_dataset(ds))
    assert [m.role for m in conv.messages] == ["user", "assistant"]


def test_not_a_dataset_is_a_config_error(tmp_path: Path) -> None:
    from rollsum.errors import ConfigError

    with pytest.raises(ConfigError):
        load(tmp_path, "hf")

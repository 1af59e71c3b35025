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


def test_scoring_a_hub_run_says_it_loads_the_data_again_and_refuses_other_data(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    # a run directory keeps no copy of its data: `rollsum score` fetches an hf: dataset again.
    # It must say so before it happens, and refuse what the hub serves now unless it is what the
    # run replayed (its manifest's sha256). The hub is `hf._hf`'s `load_dataset`, faked: no network.
    import importlib
    import logging
    from types import SimpleNamespace

    from rollsum_evals.cli import main

    real = importlib.import_module("datasets")
    served = {"dir": tmp_path / "v1"}
    hf.save(load("synth:chat?conversations=2&messages=60&seed=4"), served["dir"])
    hf.save(load("synth:chat?conversations=2&messages=60&seed=5"), tmp_path / "v2")
    calls: list[str] = []

    def load_dataset(name: str, split: str = "train") -> object:
        calls.append(f"{name}:{split}")
        return real.load_from_disk(str(served["dir"]))

    fake = SimpleNamespace(Dataset=real.Dataset, DatasetDict=real.DatasetDict, load_from_disk=real.load_from_disk,
                           load_dataset=load_dataset)
    monkeypatch.setattr(hf, "_hf", lambda: fake)
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "hub.toml"
    spec.write_text('name = "hub"\nmodels = ["extractive"]\nscorers = ["answer_retention", "cost", "health"]\n'
                    'context_window = 4000\n[report]\ntruncate_curve = false\n'
                    '[[datasets]]\nname = "hub"\nsource = "hf:me/chat"\n[[configs]]\npreset = "since-last"\n')
    run = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(run), "--no-progress"]) == 0
    assert calls == ["me/chat:train"]

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["score", str(run)]) == 0
    said = [r.getMessage() for r in caplog.records if "hf:me/chat" in r.getMessage()]
    assert len(calls) == 2 and len(said) == 1
    assert "loaded again" in said[0] and "refused unless it hashes to the run's sha256" in said[0]

    served["dir"] = tmp_path / "v2"  # the hub's dataset was updated since the run
    capsys.readouterr()
    assert main(["score", str(run)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "dataset 'hub' (hf:me/chat) changed since the run" in err

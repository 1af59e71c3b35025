import logging
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


def test_a_chat_dataset_says_how_many_empty_messages_it_left_out(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """As a chat file does: the canonical format has no empty messages, so they are dropped, but
    never silently (the rows were read whole, with no count, before)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""},
                          {"role": "user", "content": "  "}, {"role": "assistant", "content": "hello"}]},
            {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
            {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "c"}]}]
    path = tmp_path / "chat.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with caplog.at_level(logging.WARNING, logger="rollsum_evals.data.hf"):
        convs = load(str(path))
    assert [len(c.messages) for c in convs] == [2, 2, 1]
    said = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(said) == 1 and "dropped 3 empty message(s)" in said[0] and "in 2 conversation(s)" in said[0], said


def test_two_rows_with_one_conversation_id_are_refused_as_in_every_format(tmp_path: Path) -> None:
    """`data stats` counted both and `data convert` wrote both 'a's (a file `data validate`
    then refused); a run refused them only later, by another rule."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rollsum.errors import ConfigError

    path = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a", "messages": [{"role": "user", "content": "x"}]},
                                         {"id": "a", "messages": [{"role": "user", "content": "y"}]}]), path)
    with pytest.raises(ConfigError, match=r"dup\.parquet row 1: conversation 'a' field id: expected a "
                                          r"conversation id unique in the file \(duplicate\)"):
        load(str(path), strict=True)
    assert [c.messages[0].content for c in load(str(path))] == ["x"]  # the second skipped, with a warning


def test_not_a_dataset_is_a_config_error(tmp_path: Path) -> None:
    from rollsum.errors import ConfigError

    with pytest.raises(ConfigError):
        load(tmp_path, "hf")


class FakeHub:
    """Hugging Face's hub as `hf._hf` sees it, without a network: ``load_dataset`` serves the
    `save_to_disk` directory `served` (swap it for an update of the hub's dataset), counts its
    calls, and raises like an unreachable hub once `online` is False."""

    def __init__(self, served: Path) -> None:
        import importlib

        self.real = importlib.import_module("datasets")
        self.served, self.online = served, True
        self.calls: list[str] = []

    def load_dataset(self, name: str, split: str = "train") -> object:
        self.calls.append(f"{name}:{split}")
        if not self.online:
            raise ConnectionError(f"Couldn't reach 'https://huggingface.co/datasets/{name}' (offline)")
        return self.real.load_from_disk(str(self.served))

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)


def _hub_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FakeHub, Path]:
    """A finished run of a spec whose dataset is ``hf:me/chat`` (two synthetic conversations on
    the fake hub), and the hub."""
    from rollsum_evals.cli import main

    hf.save(load("synth:chat?conversations=2&messages=200&seed=4"), tmp_path / "v1")
    hub = FakeHub(tmp_path / "v1")
    monkeypatch.setattr(hf, "_hf", lambda: hub)
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "hub.toml"
    spec.write_text('name = "hub"\nmodels = ["extractive"]\nscorers = ["answer_retention", "cost", "health"]\n'
                    'context_window = 1500\n[report]\ntruncate_curve = false\n'
                    '[[datasets]]\nname = "hub"\nsource = "hf:me/chat"\n[[configs]]\npreset = "since-last"\n')
    run = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(run), "--no-progress"]) == 0
    assert hub.calls == ["me/chat:train"]
    return hub, run


def test_a_hub_run_is_scored_and_reported_from_its_own_copy_once_the_hub_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # a run keeps what it replayed of an hf: dataset in its directory: `rollsum score` and
    # `rollsum report` (whose drill-down reloads conversations) then need neither the network nor
    # the hub's dataset as it was

    from rollsum_evals.cli import main
    from rollsum_evals.data.pinned import conversations_hash
    from rollsum_evals.rundir import load_run

    hub, run = _hub_run(tmp_path, monkeypatch)
    sha = load_run(run).manifest["datasets"]["hub"]["sha256"]
    assert [p.name for p in (run / "datasets").iterdir()] == [f"{sha}.jsonl.gz"]
    hub.online = False
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["score", str(run)]) == 0
        assert main(["report", str(run), "--out", str(tmp_path / "report"), "--resamples", "200"]) == 0
    assert hub.calls == ["me/chat:train"]  # not asked again
    assert not [r for r in caplog.records if "hf:me/chat" in r.getMessage()]  # nor said to be
    trace_unit = next(iter(load_run(run).trace_records()))
    assert load_run(run).load_trace(trace_unit).messages  # the drill-down's conversation, from the copy
    assert conversations_hash(list(load("synth:chat?conversations=2&messages=200&seed=4"))) == sha


def test_without_a_copy_a_hub_run_says_it_loads_the_data_again_and_refuses_other_data(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    # a run made before runs kept copies (or one whose set was too large to keep) fetches an
    # hf: dataset again: it must say so before it happens, and refuse what the hub serves now
    # unless it is what the run replayed (its manifest's sha256)
    import shutil

    from rollsum_evals.cli import main

    hub, run = _hub_run(tmp_path, monkeypatch)
    shutil.rmtree(run / "datasets")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["score", str(run)]) == 0
    said = [r.getMessage() for r in caplog.records if "hf:me/chat" in r.getMessage()]
    assert len(hub.calls) == 2 and len(said) == 1
    assert "loaded again" in said[0] and "refused unless it hashes to the run's sha256" in said[0]

    hf.save(load("synth:chat?conversations=2&messages=60&seed=5"), tmp_path / "v2")
    hub.served = tmp_path / "v2"  # the hub's dataset was updated since the run
    capsys.readouterr()
    assert main(["score", str(run)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "dataset 'hub' (hf:me/chat) changed since the run" in err


def test_a_tampered_copy_is_refused_naming_it_and_the_hub_is_not_asked_instead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    from rollsum_evals.cli import main

    hub, run = _hub_run(tmp_path, monkeypatch)
    (copy,) = (run / "datasets").iterdir()
    text = gzip.decompress(copy.read_bytes()).replace(b"a", b"e", 1)  # one letter of one message
    copy.write_bytes(gzip.compress(text))
    capsys.readouterr()
    assert main(["score", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(copy) in err and "the dataset copy was changed" in err, err
    assert hub.calls == ["me/chat:train"]  # not swapped for whatever the hub serves now


def test_a_hub_run_resumes_from_its_own_copy_offline_and_refuses_a_tampered_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # `rollsum run --resume` must continue with the data the run started with: the copy it
    # kept, not whatever the hub serves now (nor an error because the hub cannot be reached)
    import gzip

    from rollsum_evals.cli import main

    hub, run = _hub_run(tmp_path, monkeypatch)
    hub.online = False
    spec = str(tmp_path / "hub.toml")
    assert main(["run", spec, "--out", str(run), "--resume", "--no-progress"]) == 0
    assert hub.calls == ["me/chat:train"]  # the hub was not asked
    (copy,) = (run / "datasets").iterdir()
    copy.write_bytes(gzip.compress(gzip.decompress(copy.read_bytes()).replace(b"a", b"e", 1)))
    capsys.readouterr()
    assert main(["run", spec, "--out", str(run), "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(copy) in err and "the dataset copy was changed" in err, err
    assert hub.calls == ["me/chat:train"]

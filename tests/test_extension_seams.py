"""Adding a policy, summarizer, model backend, loader or scorer (or a context format or preset) is
one class plus one registration.

Each test registers a new one here, in the test, and reaches it through production code only: a
sweep spec that names it, run by `run_sweep` (the loop `rollsum run` drives). If a second list of
names anywhere had to learn the new name, the sweep would reject or ignore it and the test would
fail. The last test checks the extension table in docs/architecture.md against the code.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals import scoring
from rollsum_evals.cli import main
from rollsum_evals.data import formats, load
from rollsum_evals.data.checks import RecordError
from rollsum_evals.data.types import Conversation
from rollsum_evals.run import run_sweep
from rollsum_evals.run.model_factory import ModelFactory
from rollsum_evals.rundir import Run, load_run
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.spec.parse import parse_spec

from rollsum import RollingSummarizer, summarizers
from rollsum.context import FORMATS, ContextFormat
from rollsum.errors import ConfigError
from rollsum.models.spec import BACKENDS
from rollsum.policies import POLICIES
from rollsum.presets import PRESETS, Preset
from rollsum.registry import Registry
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.types import Message
from tests.support.plugin_components import PARROT, EveryFive, Parrot

ROOT = Path(__file__).resolve().parents[1]
DATASET = 'name = "chat"\nsource = "synth:chat?conversations=1&messages=60&seed=4"\n'


def sweep(tmp_path: Path, body: str, *, dataset: str = DATASET, head: str = "") -> Run:
    text = (f'name = "seam"\ncontext_window = 1500\ncache = "off"\n{head}\n'
            f"[[datasets]]\n{dataset}\n[[configs]]\n{body}\n")
    run_sweep(parse_spec(text, str(tmp_path / "seam.toml")), tmp_path / "run", progress=False)
    run = load_run(tmp_path / "run")
    assert (run.units["status"] == "ok").all(), run.units["error"].tolist()
    return run


def engine_config(run: Run) -> dict[str, Any]:
    configs: dict[str, Any] = json.loads((run.path / "manifest.json").read_text())["configs"]
    return dict(next(iter(configs.values()))["engine"])


def test_a_registered_policy_is_reachable_from_a_sweep(tmp_path: Path) -> None:
    with POLICIES.registered(EveryFive.name, EveryFive):
        run = sweep(tmp_path, 'preset = "since-last"\n'  # the engine's attempt cap off: the policy's own cadence
                    'params = { policy = "every-five", keep = 3, min_messages_per_attempt = 0 }')
    assert EveryFive.name not in POLICIES  # the block put the registry back
    assert engine_config(run)["policy"] == {"name": "every-five", "params": {"keep": 3}}
    assert int(run.units["n_summaries"].iloc[0]) >= 10


class Shout:
    name = "shout"

    def __init__(self, *, volume: int = 1) -> None:
        self.volume = volume

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        return SummaryDraft(text="!" * self.volume + " " + request.messages[-1].content[:80].upper())


def test_a_registered_summarizer_is_reachable_from_a_sweep(tmp_path: Path) -> None:
    with summarizers.REGISTRY.registered("shout", (Shout, False)):
        run = sweep(tmp_path, 'preset = "since-last"\nsummarizer = "shout"\nsummarizer_params = { volume = 3 }')
    assert "shout" not in summarizers.names()  # the block put the registry back
    texts = [r["record"]["text"] for r in run.summaries()]
    assert texts and all(t.startswith("!!! ") and t[4:] == t[4:].upper() for t in texts)


def test_a_registered_model_backend_is_reachable_from_a_sweep_and_listed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One registration: the spec's ``models = ["parrot:polly"]`` passes the spec check, the
    run's model factory builds it, `rollsum list models` shows it; afterwards it is gone."""
    with BACKENDS.registered(PARROT.prefix, PARROT):
        run = sweep(tmp_path, 'preset = "since-last"', head='models = ["parrot:polly"]')
        assert main(["list", "models"]) == 0
        listed = [line.split(None, 1) for line in capsys.readouterr().out.splitlines()]
        assert ["parrot:", "parrot:NAME (a test model that repeats)"] in listed
    assert PARROT.prefix not in BACKENDS  # the block put the registry back
    assert main(["list", "models"]) == 0  # read at each listing, not remembered from the first
    assert "parrot:" not in capsys.readouterr().out
    texts = [r["record"]["text"] for r in run.summaries()]
    assert texts and all("PARROT polly" in t for t in texts)
    # its capabilities (free) come from the registration: no price table knows "parrot"
    assert float(run.units["cost_summarizer_usd"].iloc[0]) == 0.0
    assert int(run.units["summarizer_calls"].iloc[0]) > 0


def lines(path: str, **_: Any) -> Iterator[Conversation]:
    """A loader no registry knows until a test registers it: one ``role|text`` message a line."""
    rows = [line.split("|", 1) for line in Path(path).read_text().splitlines()]
    yield Conversation(id="txt-1", messages=tuple(Message(r, c, id=f"t{i}")  # type: ignore[arg-type]
                                                 for i, (r, c) in enumerate(rows)))


def talk(tmp_path: Path, n: int = 30) -> Path:
    data = tmp_path / "talk.txt"
    data.write_text("\n".join(f"{'user' if i % 2 == 0 else 'assistant'}|line {i} about topic {i % 7}."
                              for i in range(n)))
    return data


def test_a_registered_loader_is_reachable_from_a_sweep(tmp_path: Path) -> None:
    data = talk(tmp_path)
    with formats.LOADERS.registered("lines", lines):
        run = sweep(tmp_path, 'preset = "full-context"',
                    dataset=f'name = "txt"\nsource = "{data}"\nformat = "lines"\n')
    assert "lines" not in formats.LOADERS  # the block put the registry back
    assert run.units["conversation_id"].tolist() == ["txt-1"] and int(run.units["n_messages"].iloc[0]) == 30


def test_a_registered_loader_reads_files_for_data_validate_stats_and_a_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One registration makes ``--format lines`` and a dataset's ``format = "lines"`` work, and
    the name appears wherever the known formats are listed; afterwards it is refused again."""
    data, bad = talk(tmp_path), tmp_path / "bad.txt"
    bad.write_text("user|hello.\nuser|   \n")  # an empty message: refused like in any other format
    spec = f'[[datasets]]\nname = "txt"\nsource = "{data}"\nformat = "lines"\n[[configs]]\npreset = "truncate"\n'
    with formats.LOADERS.registered("lines", lines):
        assert main(["data", "validate", str(data), "--format", "lines"]) == 0
        assert f"{data}: ok: 1 record(s), 1 valid" in capsys.readouterr().out
        assert main(["data", "stats", str(data), "--format", "lines", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["messages"] == 30
        assert main(["data", "validate", str(bad), "--format", "lines"]) == 2  # checked, not trusted
        assert "field messages[1].content: expected non-empty text" in capsys.readouterr().err
        assert main(["data", "validate", str(data), "--format", "nope"]) == 2
        assert "expected one of jsonl, chat, locomo, hf, synth, lines, got 'nope'" in capsys.readouterr().err
        assert parse_spec(spec, str(tmp_path / "s.toml")).datasets[0].format == "lines"
    assert main(["data", "validate", str(data), "--format", "lines"]) == 2
    assert "expected one of jsonl, chat, locomo, hf, synth, got 'lines'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"s\.toml:\d+: field 'datasets\[0\]\.format'"):
        parse_spec(spec, str(tmp_path / "s.toml"))


class LongestMessage:
    name = "longest_message"
    version = "1"
    needs: frozenset[str] = frozenset()
    unit_columns = (Column("longest_message_chars", "int", 0, "the longest message's length"),)
    probe_columns = ()

    def score(self, inp: ScoreInput) -> Scores:
        return Scores(unit={"longest_message_chars": max(len(m.content) for m in inp.trace.messages)})


def test_a_registered_scorer_is_reachable_from_a_sweep(tmp_path: Path) -> None:
    with scoring.REGISTRY.registered(LongestMessage.name, LongestMessage):
        run = sweep(tmp_path, 'preset = "truncate"', head='scorers = ["cost", "longest_message"]')
    assert int(run.units["longest_message_chars"].iloc[0]) > 20
    assert "longest_message@1" in run.units["scorers"].iloc[0]


def test_a_scorer_named_by_import_path_is_reachable_from_a_sweep(tmp_path: Path) -> None:
    """No registration at all: ``scorers = ["package.module:Class"]``, like a summarizer or a
    memory; the version the run records carries the scorer's code fingerprint."""
    path = f"{__name__}:LongestMessage"
    run = sweep(tmp_path, 'preset = "truncate"', head=f'scorers = ["cost", "{path}"]')
    assert int(run.units["longest_message_chars"].iloc[0]) > 20
    assert path not in scoring.names()
    recorded = json.loads((run.path / "manifest.json").read_text())["scoring"]["versions"]
    assert recorded[path].startswith("1+code:")


def test_a_scorer_import_path_that_is_not_a_scorer_is_one_line_at_the_spec(tmp_path: Path) -> None:
    expected = r"s\.toml:\d+: field 'scorers\[1\]': scorer .*Shout.* does not make a Scorer"
    with pytest.raises(ConfigError, match=expected):
        parse_spec(f'scorers = ["cost", "{__name__}:Shout"]\n[[datasets]]\n{DATASET}\n[[configs]]\n'
                   'preset = "truncate"\n', "s.toml")


MEMO = ContextFormat("memo", "system", "MEMO: {summary}")
MEMO_PRESET = Preset("memo-every-five", "-", "a test preset", "every-five", "memo", None, "extractive")


@pytest.mark.parametrize("seam", ["preset", "policy", "summarizer", "context", "model", "loader", "scorer"])
def test_the_registry_the_docs_name_is_the_one_the_code_reads(seam: str, tmp_path: Path) -> None:
    """Registering through the object docs/architecture.md names makes the component
    reachable by the code that builds it (a registry that is a copy would not)."""
    row = next(r for r in _table() if r[0].split(" ")[0] == seam)
    dotted = re.findall(r"`((?:rollsum|rollsum_evals)\.[\w.]+)`", row[2])[0]
    module_name, _, attr = dotted.rpartition(".")
    registry = getattr(importlib.import_module(module_name), attr)
    assert isinstance(registry, Registry), dotted
    if seam == "summarizer":
        with registry.registered("shout", (Shout, False)):
            assert isinstance(summarizers.create("shout", volume=2), Shout)
    elif seam == "scorer":
        with registry.registered(LongestMessage.name, LongestMessage):
            assert isinstance(scoring.get(LongestMessage.name), LongestMessage)
    elif seam == "policy":
        with registry.registered(EveryFive.name, EveryFive):
            assert RollingSummarizer.from_preset("since-last", policy="every-five", keep=4).policy == EveryFive(4)
    elif seam == "context":
        with registry.registered(MEMO.name, MEMO):
            assert RollingSummarizer.from_preset("since-last", context_format="memo").format is MEMO
    elif seam == "model":
        with registry.registered(PARROT.prefix, PARROT):
            model = ModelFactory()("parrot:polly")  # the run's model factory
            assert isinstance(model, Parrot) and model.rest == "polly"
    elif seam == "loader":
        with registry.registered("lines", lines):
            assert [len(c.messages) for c in load(talk(tmp_path, 12), "lines")] == [12]
    else:
        with registry.registered(MEMO_PRESET.name, MEMO_PRESET), POLICIES.registered(EveryFive.name, EveryFive), \
                FORMATS.registered(MEMO.name, MEMO):
            assert RollingSummarizer.from_preset(MEMO_PRESET.name).preset == MEMO_PRESET.name


def test_a_registered_context_format_and_preset_are_reachable_from_a_sweep_and_listed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One registration each (format, preset, policy) and a spec naming the preset runs with
    them, `rollsum list` shows the preset; afterwards none of them is left registered."""
    with FORMATS.registered(MEMO.name, MEMO), PRESETS.registered(MEMO_PRESET.name, MEMO_PRESET), \
            POLICIES.registered(EveryFive.name, EveryFive):
        run = sweep(tmp_path, 'preset = "memo-every-five"')
        assert main(["list", "presets"]) == 0
        listed = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert engine_config(run)["context_format"] == "memo"
    assert engine_config(run)["policy"]["name"] == "every-five"
    assert any(t.content.startswith("MEMO: ") for t in run.texts().values())
    assert ["memo-every-five", "(seed", "-)", "a", "test", "preset"] in listed
    assert "memo" not in FORMATS and "memo-every-five" not in PRESETS and "every-five" not in POLICIES
    assert main(["list", "presets"]) == 0  # read at each listing, not remembered from the first
    assert "memo-every-five" not in capsys.readouterr().out


def _table() -> list[list[str]]:
    """The extension table's rows: [seam, protocol, registry, add one by]."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Seams and the registries production code reads"):]
    lines = [line for line in section.splitlines() if line.startswith("| ")]  # not the |---| line
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[1:]]


def _exists(dotted: str) -> bool:
    module_name, _, attr = dotted.rpartition(".")
    return hasattr(importlib.import_module(module_name), attr)


def test_the_extension_table_names_protocols_and_registries_that_exist() -> None:
    rows = _table()
    seams = {r[0].split(" ")[0] for r in rows}
    assert {"preset", "policy", "summarizer", "context", "model", "loader", "scorer", "memory"} <= seams, seams
    for seam, protocol, registry, _add in rows:
        for cell in (protocol, registry):
            names = re.findall(r"`((?:rollsum|rollsum_evals)\.[\w.]+)`", cell)
            assert names, f"row {seam!r}: {cell!r} names nothing importable"
            assert _exists(names[0]), f"row {seam!r}: {names[0]} does not exist"


def test_a_loader_registered_over_a_built_in_name_is_checked_not_trusted(tmp_path: Path) -> None:
    """The built-in "jsonl" loader checks its own records; one registered in its place
    (``replace=True``) does not inherit that trust because it took the name."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("user|hello.\nuser|   \n")  # `lines` reads it: an empty message
    with formats.LOADERS.registered("jsonl", lines), \
            pytest.raises(RecordError, match=r"messages\[1\]\.content: expected non-empty text"):
        list(formats.iter_conversations(str(bad), "jsonl", strict=True))
    assert formats.LOADERS["jsonl"] in formats.SELF_CHECKED  # the built-in is back, and trusted

"""The malformed-input corpus (issue #11, input validation): bad datasets, questions sidecars,
sweep specs, parameters, command-line arguments, cassettes and run files, each one a `Case`.

Every case is generated in a temporary directory (nothing big is committed) and run through the
real CLI by `tests/evals/cli/test_malformed_inputs.py`, which checks the refusal contract of
`tests.evals.cli.malformed`: exit 2, one line on stderr naming the file (line or field), no
traceback, nothing written (no run directory).

A case's files are text, bytes, or a function of the case directory (parquet, a run dir).
Paths in ``argv`` are relative to the case directory, which is the working directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

FileMaker = str | bytes | Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    argv: tuple[str, ...]
    files: Mapping[str, FileMaker] = field(default_factory=dict)
    needle: tuple[str, ...] = ()
    """Substrings the one error line must hold (the file, the line or field, the value)."""
    may_write: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def materialize(self, root: Path) -> None:
        for rel, content in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if callable(content):
                content(path)
            elif isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")


# ----------------------------------------------------------------------------------------------
# building blocks


def msg(i: int, role: str = "", content: object = None, cid: str = "c1") -> dict[str, object]:
    return {"id": f"{cid}:{i}", "role": role or ("user" if i % 2 == 0 else "assistant"),
            "content": f"message {i}: the harbour cat is called Biscuit number {i}." if content is None else content}


def conversation(cid: str = "c1", n: int = 12, **changes: object) -> dict[str, object]:
    conv: dict[str, object] = {"id": cid, "messages": [msg(i, cid=cid) for i in range(n)],
                               "probes": [{"id": f"{cid}:p0", "question": "What is the cat called?",
                                           "answer": "Biscuit", "evidence": [f"{cid}:0"], "category": "fact"}]}
    conv.update(changes)
    return conv


def jsonl(*records: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


GOOD = jsonl(conversation("c1"), conversation("c2"))


def spec(*, source: str = "data.jsonl", preset: str = "truncate", params: str = "", top: str = "",
         config: str = "", dataset: str = "", name: str = "t") -> str:
    """A small valid spec, with text spliced in where a case needs it."""
    return (f'name = "{name}"\ncache = "off"\n{top}\n'
            f'[[datasets]]\nname = "d"\nsource = "{source}"\n{dataset}\n'
            f'[[configs]]\npreset = "{preset}"\n{config}\n' + (f"params = {{ {params} }}\n" if params else ""))


def run(*extra: str) -> tuple[str, ...]:
    return ("run", "s.toml", "--out", "out", "--no-progress", "--jobs", "1", *extra)


def deep(n: int = 100_000, open_: str = "[", close: str = "]") -> str:
    return open_ * n + close * n


def parquet(rows: list[dict[str, object]]) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)

    return make


def manifest_list(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "manifest.json").write_text("[1, 2, 3]\n")
    (path / "units.jsonl").write_text("")


def hf_dir_without_data(path: Path) -> None:
    path.mkdir()
    (path / "dataset_info.json").write_text("{}")


GARBAGE = bytes(range(256)) * 8
CHAT = json.dumps([{"role": "user", "content": "My locker code is 4417."},
                   {"role": "assistant", "content": "Noted: 4417."}] * 6)


def data_case(id: str, data: FileMaker, needle: tuple[str, ...], *, file: str = "data.jsonl",
              fmt: str = "") -> Case:
    """A bad dataset, as a sweep reads it: strict by default, so the run stops at the record."""
    return Case(id, "dataset", run(), {"s.toml": spec(source=file, dataset=f'format = "{fmt}"' if fmt else ""),
                                      file: data}, needle)


def param_case(id: str, params: str, needle: tuple[str, ...], *, preset: str = "since-last") -> Case:
    return Case(id, "params", run(), {"s.toml": spec(preset=preset, params=params), "data.jsonl": GOOD},
                ("s.toml", *needle))


def spec_case(id: str, text: str | bytes, needle: tuple[str, ...], *argv: str,
              files: Mapping[str, FileMaker] | None = None) -> Case:
    return Case(id, "spec", argv or run(), {"s.toml": text, "data.jsonl": GOOD, **(files or {})}, needle)


def cli_case(id: str, argv: tuple[str, ...], needle: tuple[str, ...], files: Mapping[str, FileMaker] | None = None,
             may_write: tuple[str, ...] = ()) -> Case:
    return Case(id, "cli", argv, {"s.toml": spec(), "data.jsonl": GOOD, **(files or {})}, needle, may_write)


def sidecar_case(id: str, questions: FileMaker, needle: tuple[str, ...], *, file: str = "q.jsonl") -> Case:
    return Case(id, "sidecar", run(), {"s.toml": spec(source="chat.json", dataset=f'questions = "{file}"'),
                                      "chat.json": CHAT, file: questions}, (file, *needle))


def cassette_case(id: str, cassette: FileMaker, needle: tuple[str, ...], file: str = "c.jsonl") -> Case:
    return Case(id, "cassette", run("--model", f"replay:{file}"),
                {"s.toml": spec(preset="since-last"), "data.jsonl": GOOD, file: cassette}, (file, *needle))


# ----------------------------------------------------------------------------------------------
# the cases

CASES: list[Case] = [
    # --- datasets, read by a sweep (strict by default) -----------------------------------------
    data_case("jsonl-invalid-json-line", jsonl(conversation("c1"), '{"id": "c2", "messages": [}'),
              ("data.jsonl:2", "invalid JSON")),
    data_case("jsonl-truncated-line", jsonl(conversation("c1"), json.dumps(conversation("c2"))[:60]),
              ("data.jsonl:2", "truncated")),
    data_case("jsonl-role-missing", jsonl(conversation("c1", messages=[{"id": "c1:0", "content": "hi"}])),
              ("data.jsonl:1", "role")),
    data_case("jsonl-role-unknown", jsonl(conversation("c1", messages=[msg(0, role="robot")])),
              ("data.jsonl:1", "robot")),
    data_case("jsonl-content-null", jsonl(conversation("c2"), conversation("c1", messages=[
        msg(0), {"id": "c1:1", "role": "assistant", "content": None}])), ("data.jsonl:2", "content")),
    data_case("jsonl-content-number", jsonl(conversation("c1", messages=[msg(0, content=42)])),
              ("data.jsonl:1", "content")),
    data_case("jsonl-duplicate-conversation", jsonl(conversation("c1"), conversation("c1")),
              ("data.jsonl:2", "c1")),
    data_case("jsonl-probe-evidence-nowhere", jsonl(conversation("c1", probes=[
        {"id": "p", "question": "q?", "answer": "a", "evidence": ["c9:9"], "category": "fact"}])),
              ("data.jsonl:1", "c9:9")),
    data_case("jsonl-messages-empty", jsonl(conversation("c1", messages=[], probes=[])),
              ("data.jsonl:1", "messages")),
    data_case("jsonl-lone-surrogate",
              jsonl(conversation("c2"), conversation("c1", messages=[msg(0, content="x\ud800y")])),
              ("data.jsonl:2", "surrogate")),
    data_case("jsonl-surrogate-in-meta", jsonl(conversation("c1", meta={"note": "\udfff"})),
              ("data.jsonl:1", "surrogate")),
    data_case("jsonl-nested-100k", jsonl(conversation("c1"), '{"id": "c2", "messages": ' + deep() + "}"),
              ("data.jsonl:2", "nested")),
    data_case("jsonl-nested-meta", jsonl('{"id": "c1", "messages": [], "meta": ' + deep(50_000, '{"a":', "}")
                                         + "}"), ("data.jsonl:1", "nested")),
    data_case("jsonl-nan-literal", '{"id": "c1", "messages": [{"id": "c1:0", "role": "user", "content": "x", '
              '"meta": {"v": NaN}}]}\n', ("data.jsonl:1", "NaN")),
    data_case("jsonl-invalid-utf8", GOOD.encode() + b'{"id": "c3", "messages": [{"id": "c3:0", "role": "user", '
              b'"content": "caf\xe9"}]}\n', ("data.jsonl:3", "UTF-8")),
    data_case("jsonl-number-line", jsonl(conversation("c1"), "42"), ("data.jsonl:2", "object")),
    data_case("jsonl-created-at-number", jsonl(conversation("c1", messages=[{**msg(0), "created_at": 5}])),
              ("data.jsonl:1", "created_at")),
    data_case("jsonl-probe-category", jsonl(conversation("c1", probes=[
        {"id": "p", "question": "q?", "answer": "a", "evidence": ["c1:0"], "category": "bogus"}])),
              ("data.jsonl:1", "bogus")),
    data_case("jsonl-meta-not-object", jsonl(conversation("c1", meta=[1])), ("data.jsonl:1", "meta")),
    data_case("jsonl-empty-file", "", ("data.jsonl", "empty")),
    data_case("jsonl-blank-lines", "\n\n  \n", ("data.jsonl", "empty")),
    data_case("binary-garbage", GARBAGE, ("data.jsonl",)),
    data_case("chat-deep-array", deep(), ("chat.json", "nested"), file="chat.json"),
    data_case("chat-role-missing", json.dumps([{"content": "hi"}, {"role": "user", "content": "x"}]),
              ("chat.json",), file="chat.json"),
    data_case("chat-sharegpt-alien", json.dumps({"conversations": [{"from": "alien", "value": "hi"}]}),
              ("chat.json", "alien"), file="chat.json"),
    data_case("chat-messages-not-list", json.dumps([{"messages": "hello"}]), ("chat.json",), file="chat.json"),
    data_case("chat-mixed-shapes", json.dumps([[{"role": "user", "content": "a"}], {"role": "user", "content": "b"}]),
              ("chat.json", "[1]"), file="chat.json"),
    data_case("chat-jsonl-bad-line", jsonl({"role": "user", "content": "a"}, "{oops",
                                           {"role": "assistant", "content": "b"}),
              ("chat.jsonl:2",), file="chat.jsonl", fmt="chat"),
    data_case("chat-lone-surrogate", json.dumps([{"role": "user", "content": "a\ud800"}]),
              ("chat.json", "surrogate"), file="chat.json"),
    data_case("chat-not-utf8", b'[{"role": "user", "content": "caf\xe9"}]', ("chat.json", "UTF-8"), file="chat.json"),
    data_case("locomo-bad-category", json.dumps([{"sample_id": "s", "conversation": {
        "speaker_a": "A", "speaker_b": "B", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]},
        "qa": [{"question": "q", "answer": "a", "evidence": ["D1:1"], "category": 9}]}]),
              ("locomo.json", "category"), file="locomo.json"),
    data_case("locomo-session-not-list", json.dumps([{"sample_id": "s", "conversation": {
        "speaker_a": "A", "session_1": "hello"}, "qa": []}]), ("locomo.json", "session_1"), file="locomo.json"),
    data_case("locomo-deep", '[{"qa": [], "sample_id": "s", "conversation": ' + deep(100_000, '{"a":', "}") + "}]",
              ("locomo.json", "nested"), file="locomo.json"),
    data_case("hf-parquet-null-content", parquet([{"messages": [{"role": "user", "content": None}]}]),
              ("data.parquet row 0", "messages"), file="data.parquet"),
    data_case("hf-parquet-missing-content", parquet([{"messages": [{"role": "user", "text2": "x"}]}]),
              ("data.parquet", "content"), file="data.parquet"),
    data_case("hf-parquet-canonical-null-content", parquet([{"id": "c1", "meta": "{}", "probes": [], "messages": [
        {"id": "c1:0", "role": "user", "content": None, "meta": "{}"}]}]), ("data.parquet", "content"),
              file="data.parquet"),
    data_case("hf-parquet-garbage", GARBAGE, ("data.parquet",), file="data.parquet"),
    data_case("hf-arrow-garbage", GARBAGE, ("data.arrow",), file="data.arrow"),
    data_case("hf-parquet-no-messages", parquet([{"a": 1}]), ("data.parquet",), file="data.parquet"),
    data_case("dataset-is-plain-directory", lambda p: p.mkdir(), ("somedir",), file="somedir"),

    # --- questions sidecars -------------------------------------------------------------------
    sidecar_case("sidecar-invalid-json", jsonl({"question": "q?", "answer": "4417", "evidence": 0}, "{oops"),
                 ("q.jsonl:2",)),
    sidecar_case("sidecar-evidence-out-of-range", jsonl({"question": "q?", "answer": "4417", "evidence": 99}),
                 ("q.jsonl:1", "99")),
    sidecar_case("sidecar-deep-json", deep(), ("nested",), file="q.json"),
    sidecar_case("sidecar-csv-not-utf8", b"question,answer\ncaf\xe9?,4417\n", ("UTF-8",), file="q.csv"),
    sidecar_case("sidecar-binary", GARBAGE, (), file="q.jsonl"),
    sidecar_case("sidecar-csv-no-header", "", ("header",), file="q.csv"),
    sidecar_case("sidecar-json-object", json.dumps({"question": "q"}), ("array",), file="q.json"),
    sidecar_case("sidecar-answer-nan", '{"question": "q?", "answer": NaN, "evidence": 0}\n', ("q.jsonl:1", "NaN")),
    sidecar_case("sidecar-answer-huge", '{"question": "q?", "answer": 1e999, "evidence": 0}\n', ("q.jsonl:1", "1e999")),
    sidecar_case("sidecar-ask-at-negative", jsonl({"question": "q?", "answer": "4417", "evidence": 0, "ask_at": -1}),
                 ("q.jsonl:1", "ask_at")),
    sidecar_case("sidecar-surrogate", jsonl('{"question": "q\\ud800?", "answer": "4417", "evidence": 0}'),
                 ("q.jsonl:1", "surrogate")),
    sidecar_case("sidecar-is-directory", lambda p: p.mkdir(), (), file="qdir"),

    # --- sweep specs --------------------------------------------------------------------------
    spec_case("spec-not-utf8", b'name = "caf\xe9"\n' + spec().encode(), ("s.toml", "UTF-8")),
    spec_case("spec-not-toml", "name = = 1\n", ("s.toml", "TOML")),
    spec_case("spec-binary", GARBAGE, ("s.toml",)),
    spec_case("spec-nul-in-name", spec(name="a\\u0000b"), ("s.toml", "name")),
    spec_case("spec-seeds-empty", spec(top="seeds = []"), ("s.toml", "seeds")),
    spec_case("spec-context-window-empty", spec(top="context_window = []"), ("s.toml", "context_window")),
    spec_case("spec-context-window-float", spec(top="context_window = 8000.5"), ("s.toml", "context_window")),
    spec_case("spec-context-window-inf", spec(top="context_window = inf"), ("s.toml", "context_window")),
    spec_case("spec-rpm-true", spec(top="[limits]\nrequests_per_minute = true"), ("s.toml", "requests_per_minute")),
    spec_case("spec-rpm-nan", spec(top="[limits]\nrequests_per_minute = nan"), ("s.toml", "requests_per_minute")),
    spec_case("spec-rpm-tiny", spec(top="[limits]\nrequests_per_minute = 1e-300"), ("s.toml", "requests_per_minute")),
    spec_case("spec-rpm-inf", spec(top="[limits]\nrequests_per_minute = inf"), ("s.toml", "requests_per_minute")),
    spec_case("spec-dataset-limit-true", spec(dataset="limit = true"), ("s.toml", "limit")),
    spec_case("spec-probes-draws-true", spec(top="[probes]\ndraws = true"), ("s.toml", "draws")),
    spec_case("spec-probes-ages-float", spec(top="[probes]\nages = [5, 2.5]"), ("s.toml", "ages")),
    spec_case("spec-probes-after-float", spec(top='[probes]\nask = "after"\nafter_turns = 1e3'),
              ("s.toml", "after_turns")),
    spec_case("spec-synth-range-inverted", spec(source="synth:chat?messages=50-10"), ("messages", "50-10")),
    spec_case("spec-synth-zero-messages", spec(source="synth:chat?messages=0"), ("messages",)),
    spec_case("spec-synth-negative-facts", spec(source="synth:chat?facts=-1"), ("facts",)),
    spec_case("spec-main-model-unpriced", spec(top='main_model = "gpt-9"'), ("s.toml", "main_model")),
    spec_case("spec-is-directory", "", ("specdir",), "run", "specdir", "--out", "out",
              files={"specdir": lambda p: p.mkdir()}),

    # --- preset / engine / policy parameters (checked before any Unit runs) --------------------
    param_case("param-store", 'store = "sqlite:x.db"', ("store",)),
    param_case("param-on-event", 'on_event = "print"', ("on_event",)),
    param_case("param-conversation-id", 'conversation_id = "x"', ("conversation_id",)),
    param_case("param-clock", "clock = 5", ("clock",)),
    param_case("param-counter", 'counter = "words"', ("counter",)),
    param_case("param-keep-last-inf", "keep_last = inf", ("keep_last", "inf")),
    param_case("param-keep-last-true", "keep_last = true", ("keep_last", "True")),
    param_case("param-keep-last-float", "keep_last = 2.5", ("keep_last", "2.5")),
    param_case("param-keep-last-nan", "keep_last = nan", ("keep_last", "nan")),
    param_case("param-keep-last-string", 'keep_last = "ten"', ("keep_last", "ten")),
    Case("param-grid-bool", "params", run(),
         {"s.toml": spec(preset="since-last", config="grid = { keep_last = [2, true] }"), "data.jsonl": GOOD},
         ("s.toml", "keep_last", "True")),
    param_case("param-head-tail-negative", "head = -3, tail = -2", ("head", "-3"), preset="evict-window"),
    param_case("param-max-passes-zero", "max_passes = 0", ("max_passes", "0")),
    param_case("param-trigger-ratio-nan", "trigger_ratio = nan", ("trigger_ratio",), preset="token-ratio"),
    param_case("param-trigger-ratio-true", "trigger_ratio = true", ("trigger_ratio",), preset="token-ratio"),
    param_case("param-summary-share-inf", "summary_share = inf", ("summary_share",)),
    param_case("param-retries-float", "retries = 2.5", ("retries",)),
    param_case("param-backoff-negative", "backoff_s = -1.0", ("backoff_s",)),
    param_case("param-lag-turns-true", "lag_turns = true", ("lag_turns",)),
    param_case("param-max-output-tokens-zero", "max_output_tokens = 0", ("max_output_tokens",)),
    param_case("param-transcript-overflow", 'transcript_overflow = "bogus"', ("transcript_overflow", "bogus"),
               preset="token-ratio"),
    param_case("param-filter-noise-string", 'filter_noise = "yes"', ("filter_noise",), preset="token-ratio"),
    param_case("param-merge-number", "merge = 5", ("merge",), preset="budget-rule-based"),
    param_case("param-context-window-negative", "context_window = -1", ("context_window",)),
    param_case("param-reserved-output-nan", "reserved_output_tokens = nan", ("reserved_output_tokens",),
               preset="budget-rule-based"),
    param_case("param-max-context-tokens-true", "max_context_tokens = true", ("max_context_tokens",),
               preset="budget-rule-based"),
    param_case("param-truncate-keep-inf", "keep = inf", ("keep",), preset="truncate"),
    param_case("param-policy-number", "policy = 5", ("policy",)),
    param_case("param-ledger-share-nan", "ledger_share = nan", ("ledger_share",)),
    param_case("param-failure-cooldown-float", "failure_cooldown = 1.5", ("failure_cooldown",)),
    param_case("param-count-since", 'count_since = "bogus"', ("count_since", "bogus")),
    cli_case("param-set-keep-last-inf", run("--set", "truncate.keep=inf"), ("keep", "inf")),
    cli_case("param-set-keep-last-true", run("--set", "truncate.keep=true"), ("keep", "True")),

    # --- command-line arguments ---------------------------------------------------------------
    cli_case("cli-out-is-file", ("run", "s.toml", "--out", "data.jsonl", "--no-progress"), ("data.jsonl", "directory")),
    cli_case("cli-jobs-zero", run("--jobs", "0"), ("--jobs",)),
    cli_case("cli-jobs-negative", run("--jobs", "-3"), ("--jobs",)),
    cli_case("cli-jobs-not-int", run("--jobs", "many"), ("--jobs", "many")),
    cli_case("cli-limit-zero", run("--limit", "0"), ("--limit",)),
    cli_case("cli-limit-negative", run("--limit", "-2"), ("--limit",)),
    cli_case("cli-max-cost-nan", run("--max-cost-usd", "nan"), ("--max-cost-usd",)),
    cli_case("cli-max-cost-negative", run("--max-cost-usd", "-1"), ("--max-cost-usd",)),
    cli_case("cli-max-cost-inf", run("--max-cost-usd", "inf"), ("--max-cost-usd",)),
    cli_case("cli-fail-on-error-nan", run("--fail-on-error", "nan"), ("--fail-on-error",)),
    cli_case("cli-max-line-bytes-zero", run("--max-line-bytes", "0"), ("--max-line-bytes",)),
    cli_case("cli-max-line-bytes-small", run("--max-line-bytes", "100"), ("data.jsonl:1", "--max-line-bytes")),
    cli_case("cli-executor-bogus", run("--executor", "gpu"), ("--executor", "gpu")),
    cli_case("cli-unknown-option", run("--frobnicate"), ("--frobnicate",)),
    cli_case("cli-locomo-missing", run("--locomo", "nowhere.json"), ("nowhere.json",)),
    cli_case("cli-synth-range-inverted", ("data", "synth", "--messages", "50-10", "--out", "o.jsonl"),
             ("--messages", "50-10")),
    cli_case("cli-synth-messages-zero", ("data", "synth", "--messages", "0", "--out", "o.jsonl"), ("--messages",)),
    cli_case("cli-synth-messages-word", ("data", "synth", "--messages", "lots", "--out", "o.jsonl"),
             ("--messages", "lots")),
    cli_case("cli-synth-conversations-zero", ("data", "synth", "--conversations", "0", "--out", "o.jsonl"),
             ("conversations",)),
    cli_case("cli-synth-facts-negative", ("data", "synth", "--facts", "-1", "--out", "o.jsonl"), ("facts",)),
    cli_case("cli-synth-out-directory", ("data", "synth", "--messages", "20", "--out", "outdir"), ("outdir",),
             {"outdir/keep": ""}),
    cli_case("cli-validate-empty", ("data", "validate", "empty.jsonl"), ("empty.jsonl", "empty"),
             {"empty.jsonl": ""}),
    cli_case("cli-validate-empty-jsonl", ("data", "validate", "empty.jsonl", "--format", "jsonl"),
             ("empty.jsonl", "empty"), {"empty.jsonl": ""}),
    cli_case("cli-validate-blank-jsonl", ("data", "validate", "blank.jsonl", "--format", "jsonl"),
             ("blank.jsonl", "empty"), {"blank.jsonl": "\n \n"}),
    cli_case("cli-validate-nan", ("data", "validate", "nan.jsonl"), ("nan.jsonl:1", "NaN"),
             {"nan.jsonl": '{"id": "c1", "messages": [{"id": "c1:0", "role": "user", "content": "x", "meta": '
                           '{"v": NaN}}]}\n'}),
    cli_case("cli-validate-surrogate", ("data", "validate", "sur.jsonl"), ("sur.jsonl:1", "surrogate"),
             {"sur.jsonl": jsonl(conversation("c1", messages=[msg(0, content="\ud800")]))}),
    cli_case("cli-validate-deep", ("data", "validate", "deep.json"), ("deep.json", "nested"),
             {"deep.json": deep()}),
    cli_case("cli-validate-format-bogus", ("data", "validate", "data.jsonl", "--format", "xml"), ("xml",)),
    cli_case("cli-validate-max-line-bytes-negative", ("data", "validate", "data.jsonl", "--max-line-bytes", "-5"),
             ("--max-line-bytes",)),
    cli_case("cli-stats-deep", ("data", "stats", "deep.json"), ("deep.json", "nested"), {"deep.json": deep()}),
    cli_case("cli-stats-parquet-garbage", ("data", "stats", "g.parquet"), ("g.parquet",), {"g.parquet": GARBAGE}),
    cli_case("cli-convert-out-directory", ("data", "convert", "data.jsonl", "outdir"), ("outdir",),
             {"outdir/keep": ""}),
    cli_case("cli-convert-out-trailing-slash", ("data", "convert", "data.jsonl", "newdir/"),
             ("newdir/", "ends with a slash")),
    cli_case("cli-synth-out-trailing-slash", ("data", "synth", "--messages", "20", "--out", "newdir/"),
             ("newdir/", "ends with a slash")),
    cli_case("cli-init-deep", ("init", "deep.json"), ("deep.json", "nested"), {"deep.json": deep()}),
    cli_case("cli-init-chat-directory", ("init", "chatdir"), ("chatdir", "is a directory"), {"chatdir/keep": ""}),
    cli_case("cli-init-questions-directory", ("init", "chat.json", "--questions", "qdir"), ("qdir", "is a directory"),
             {"chat.json": CHAT, "qdir/keep": ""}),
    cli_case("cli-init-surrogate-chat", ("init", "chat.json"), ("chat.json", "surrogate"),
             {"chat.json": json.dumps([{"role": "user", "content": "a\ud800b"}])}),
    cli_case("cli-score-ages-word", ("score", "somerun", "--ages", "5,x"), ("--ages",), {"somerun/keep": ""}),
    cli_case("cli-score-after-negative", ("score", "somerun", "--after", "-3"), ("--after",), {"somerun/keep": ""}),

    # --- cassettes -----------------------------------------------------------------------------
    cassette_case("cassette-binary", GARBAGE, ()),
    cassette_case("cassette-wrong-types", jsonl({"key": 5, "response": {"text": 7}}), ("line 1",)),
    cassette_case("cassette-array-line", jsonl([1, 2]), ("line 1",)),
    cassette_case("cassette-invalid-json", jsonl("{oops"), ("line 1",)),
    cassette_case("cassette-tokens-garbage", jsonl({"key": "k", "response": {"text": "t", "input_tokens": "lots"}}),
                  ("line 1", "input_tokens")),
    cassette_case("cassette-deep", deep() + "\n", ("line 1", "nested")),
    cassette_case("cassette-directory", lambda p: p.mkdir(), (), file="cdir"),

    # --- run files given back to the CLI ------------------------------------------------------
    Case("manifest-is-list-resume", "rundir", ("run", "s.toml", "--out", "out", "--resume", "--no-progress"),
         {"s.toml": spec(), "data.jsonl": GOOD, "out": manifest_list}, ("manifest.json",)),
    Case("manifest-is-list-score", "rundir", ("score", "out"), {"out": manifest_list}, ("manifest.json",)),
]

CASES += [
    # --- more of the same spirit -----------------------------------------------------------------
    data_case("chat-tool-calls-not-list", json.dumps([{"role": "assistant", "content": "x", "tool_calls": 5}]),
              ("chat.json", "tool_calls"), file="chat.json"),
    data_case("chat-timestamp-overflow", json.dumps([{"role": "user", "content": "x", "timestamp": 1e20}]),
              ("chat.json", "timestamp"), file="chat.json"),
    data_case("chat-created-at-boolean", json.dumps([{"role": "user", "content": "x", "created_at": True}]),
              ("chat.json", "messages[0].created_at", "a boolean"), file="chat.json"),
    data_case("chat-timestamp-object", json.dumps([{"role": "user", "content": "x", "timestamp": {"s": 1}}]),
              ("chat.json", "messages[0].timestamp", "an object"), file="chat.json"),
    data_case("chat-timestamp-nan-string", json.dumps([{"role": "user", "content": "x", "create_time": -1e18}]),
              ("chat.json", "create_time"), file="chat.json"),
    data_case("chat-content-block-number", json.dumps([{"role": "user", "content": [5]}]),
              ("chat.json", "content"), file="chat.json"),
    data_case("chat-only-empty-messages", json.dumps([{"role": "user", "content": ""}, {"role": "assistant",
                                                                                        "content": None}]),
              ("chat.json", "message"), file="chat.json"),
    data_case("jsonl-evidence-string", jsonl(conversation("c1", probes=[
        {"id": "p", "question": "q?", "answer": "a", "evidence": "c1:0", "category": "fact"}])),
              ("data.jsonl:1", "evidence")),
    data_case("jsonl-id-control-chars", jsonl(conversation("c\n1")), ("data.jsonl:1", "id")),
    data_case("jsonl-message-too-long", jsonl(conversation("c1", messages=[msg(0, content="x" * 1_000_001)])),
              ("data.jsonl:1", "content")),
    data_case("locomo-sample-not-object", json.dumps([{"qa": [], "conversation": {}}, 5]), ("locomo.json",),
              file="locomo.json"),
    data_case("hf-dir-without-data", hf_dir_without_data, ("hfdir",), file="hfdir"),
    sidecar_case("sidecar-evidence-bool", jsonl({"question": "q?", "answer": "4417", "evidence": [True]}),
                 ("q.jsonl:1", "evidence")),
    sidecar_case("sidecar-evidence-float", jsonl({"question": "q?", "answer": "4417", "evidence": 1.5}),
                 ("q.jsonl:1", "evidence")),
    sidecar_case("sidecar-ask-at-float", jsonl({"question": "q?", "answer": "4417", "evidence": 0, "ask_at": 1.5}),
                 ("q.jsonl:1", "ask_at")),
    sidecar_case("sidecar-stale-not-list", jsonl({"question": "q?", "answer": "4417", "evidence": 0,
                                                  "stale_answers": "x"}), ("q.jsonl:1", "stale_answers")),
    sidecar_case("sidecar-category-number", jsonl({"question": "q?", "answer": "4417", "evidence": 0, "category": 5}),
                 ("q.jsonl:1", "category")),
    sidecar_case("sidecar-id-list", jsonl({"question": "q?", "answer": "4417", "evidence": 0, "id": []}),
                 ("q.jsonl:1", "id")),
    spec_case("spec-grid-not-list", spec(preset="since-last", config="grid = { keep_last = 5 }"),
              ("s.toml", "keep_last")),
    spec_case("spec-grid-empty", spec(preset="since-last", config="grid = { keep_last = [] }"),
              ("s.toml", "keep_last")),
    spec_case("spec-models-empty-string", spec(top='models = [""]'), ("s.toml", "models")),
    spec_case("spec-models-unknown", spec(preset="since-last", top='models = ["nonsense:x"]'), ("nonsense",)),
    spec_case("spec-fake-fail-rate-nan", spec(preset="since-last", top='models = ["fake:fail_rate=nan"]'),
              ("fail_rate",)),
    spec_case("spec-fake-latency-negative", spec(preset="since-last", top='models = ["fake:latency_ms=-5"]'),
              ("latency_ms",)),
    spec_case("spec-scorers-empty", spec(top="scorers = []"), ("s.toml", "scorers")),
    spec_case("spec-prompts-empty", spec(top="prompts = []"), ("s.toml", "prompts")),
    spec_case("spec-scorer-needs-arguments", spec(top='scorers = ["answer_retention", "rollsum.types:Message"]'),
              ("s.toml", "scorers[1]", "rollsum.types:Message")),
    spec_case("spec-prompt-unknown", spec(preset="since-last", top='prompts = ["nope/v9"]\nmodels = ["fake"]'),
              ("nope/v9",)),
    spec_case("spec-cache-bogus", spec(top='cache = "disk"').replace('cache = "off"\n', ""), ("s.toml", "cache")),
    spec_case("spec-huge-int", spec(top="context_window = 99999999999999999999999"), ("s.toml", "context_window")),
    spec_case("spec-seed-float", spec(top="seeds = [1e3]"), ("s.toml", "seeds")),
    spec_case("spec-label-empty", spec(config='label = ""'), ("s.toml", "label")),
    spec_case("spec-summarizer-not-a-summarizer", spec(preset="since-last", config='summarizer = "os:getcwd"'),
              ("s.toml", "summarizer")),
    spec_case("spec-summarizer-missing-module", spec(preset="since-last", config='summarizer = "nope_mod:X"'),
              ("s.toml", "summarizer")),
    spec_case("spec-memory-not-a-memory", spec(preset="since-last").replace('preset = "since-last"',
                                                                            'memory = "os:getcwd"'),
              ("s.toml", "memory")),
    spec_case("spec-summarizer-params-unknown", spec(preset="since-last",
                                                     config='summarizer = "extractive"\nsummarizer_params = { x = 1 }'),
              ("s.toml", "summarizer")),
    spec_case("spec-dataset-format-unknown", spec(dataset='format = "xml"'), ("xml",)),
    spec_case("spec-dataset-source-empty", spec(source=""), ("s.toml", "source")),
    spec_case("spec-dataset-name-control", spec().replace('name = "d"', 'name = "d\\n"'), ("s.toml", "name")),
    spec_case("spec-qa-model-number", spec(top="[qa]\nmodel = 5"), ("s.toml", "qa.model")),
    spec_case("spec-probes-not-table", spec(top="probes = 5"), ("s.toml", "probes")),
    param_case("param-enforce-window-string", 'enforce_window = "yes"', ("enforce_window",)),
    param_case("param-context-format-unknown", 'context_format = "fancy"', ("context_format", "fancy")),
    param_case("param-ledger-number", "ledger = 1", ("ledger",)),
    param_case("param-prompt-number", "prompt = 5", ("prompt",)),
    param_case("param-fallback-bogus", 'fallback = "magic"', ("fallback",)),
    param_case("param-guard-low-water-one", "guard_low_water = 1.0", ("guard_low_water",)),
    param_case("param-low-water-zero", "low_water = 0.0", ("low_water",), preset="budget-rule-based"),
    param_case("param-max-depth-zero", "max_depth = 0", ("max_depth",), preset="token-ratio"),
    cli_case("cli-out-empty", (*run()[:3], "", "--no-progress"), ("--out",)),
    cli_case("cli-set-empty", run("--set", ""), ("--set",)),
    cli_case("cli-set-no-param", run("--set", "truncate.=3"), ("--set",)),
    cli_case("cli-model-empty", run("--model", ""), ("--model",)),
    cli_case("cli-model-unknown", run("--model", "gpt4"), ("gpt4",)),
    cli_case("cli-list-bogus", ("list", "everything"), ("everything",)),
    Case("cli-prices-garbage", "cli", run(), {"s.toml": spec(), "data.jsonl": GOOD, "prices.bin": GARBAGE},
         ("prices.bin",), env={"ROLLSUM_PRICES": "prices.bin"}),
    Case("cli-prices-negative", "cli", run(), {"s.toml": spec(), "data.jsonl": GOOD, "prices.toml":
         '[models."claude-haiku-4-5"]\ninput = -1\noutput = 1\ncache_read = 0\ncache_write = 0\n'},
         ("prices.toml", "input"), env={"ROLLSUM_PRICES": "prices.toml"}),
    cli_case("cli-score-scorers-unknown", ("score", "somerun", "--scorers", "nope"), ("nope",), {"somerun/keep": ""}),
    cli_case("cli-score-timing-zero", ("score", "somerun", "--timing", "sampled:0"), ("--timing",),
             {"somerun/keep": ""}),
    cli_case("cli-init-out-is-directory", ("init", "chat.json", "--out", "outdir"), ("outdir",),
             {"chat.json": CHAT, "outdir/keep": ""}),
    cli_case("cli-convert-same-file", ("data", "convert", "data.jsonl", "./data.jsonl"), ("data.jsonl",)),
    cassette_case("cassette-context-window-zero", jsonl({"key": "k", "response": {"text": "t"}, "context_window": 0}),
                  ("line 1", "context_window")),
    cassette_case("cassette-surrogate", '{"key": "k", "response": {"text": "\\ud800"}}\n', ("line 1", "surrogate")),
    # --- issue #19: kinds that were accepted silently ------------------------------------------
    data_case("jsonl-message-id-missing", jsonl(conversation("c1", messages=[{"role": "user", "content": "hi"},
                                                                             msg(1)])),
              ("data.jsonl:1", "messages[0].id")),
    data_case("jsonl-message-id-number", jsonl(conversation("c1", messages=[{**msg(0), "id": 5}, msg(1)])),
              ("data.jsonl:1", "messages[0].id", "integer")),
    data_case("jsonl-tool-calls-not-list", jsonl(conversation("c1", messages=[
        msg(0), {**msg(1), "meta": {"tool_calls": "call_1"}}])), ("data.jsonl:1", "messages[1].meta.tool_calls")),
    data_case("jsonl-tool-call-id-number", jsonl(conversation("c1", messages=[
        msg(0), {**msg(1, role="tool"), "meta": {"tool_call_id": 7}}])), ("data.jsonl:1", "tool_call_id")),
    data_case("chat-text-part-without-text", json.dumps([{"role": "user", "content": [{"type": "text"}]},
                                                         {"role": "assistant", "content": "b"}]),
              ("chat.json", "messages[0].content[0].text"), file="chat.json"),
    data_case("chat-duplicate-conversation-ids",
              json.dumps([{"id": "x", "messages": [{"role": "user", "content": t}]} for t in ("a", "b")]),
              ("chat.json", "'x'", "unique"), file="chat.json"),
    data_case("chat-duplicate-message-ids", json.dumps([{"role": "user", "content": "a", "id": 1},
                                                        {"role": "assistant", "content": "b", "id": 1}]),
              ("chat.json", "messages[1].id"), file="chat.json"),
    data_case("chat-name-number", json.dumps([{"role": "user", "content": "a", "name": 5},
                                              {"role": "assistant", "content": "b"}]),
              ("chat.json", "messages[0].name"), file="chat.json"),
    data_case("locomo-third-speaker", json.dumps([{"sample_id": "s", "conversation": {
        "speaker_a": "A", "speaker_b": "B", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                                                          {"speaker": "C", "dia_id": "D1:2", "text": "yo"}]},
        "qa": []}]), ("locomo.json", "session_1[1].speaker", "'C'"), file="locomo.json"),
    data_case("locomo-speaker-number", json.dumps([{"sample_id": "s", "conversation": {
        "speaker_a": 5, "speaker_b": "B", "session_1": [{"speaker": "B", "dia_id": "D1:1", "text": "hi"}]},
        "qa": []}]), ("locomo.json", "speaker_a"), file="locomo.json"),
    spec_case("spec-label-twice", spec(config='label = "x"') + '[[configs]]\npreset = "full-context"\nlabel = "x"\n',
              ("s.toml:13", "configs[1].label", "configs[0]")),
    spec_case("spec-label-auto-suffix", spec(config='label = "x"') + '[[configs]]\npreset = "full-context"\n'
              'label = "x#2"\n', ("s.toml:13", "configs[1].label", "x#2")),
    spec_case("spec-label-equals-generated", spec(params="keep = 5") + '[[configs]]\npreset = "full-context"\n'
              'label = "truncate[keep=5]"\n', ("s.toml", "configs[0]", "configs[1]", "truncate[keep=5]")),
    param_case("param-max-summary-below-min", "max_summary_tokens = 40, min_summary_tokens = 50",
               ("max_summary_tokens", "40", "50")),
    param_case("param-max-summary-below-default-min", "max_summary_tokens = 30", ("max_summary_tokens", "30")),
    Case("param-min-summary-grid-above-max", "params", run(),
         {"s.toml": spec(preset="since-last", config="grid = { min_summary_tokens = [10, 2000] }"),
          "data.jsonl": GOOD}, ("s.toml", "min_summary_tokens", "2000")),
    spec_case("spec-fake-latency-nan", spec(preset="since-last", top='models = ["fake:latency_ms=nan"]'),
              ("latency_ms", "nan")),
    spec_case("spec-fake-jitter-inf", spec(preset="since-last", top='models = ["fake:jitter_ms=inf"]'),
              ("jitter_ms", "inf")),
    cli_case("cli-convert-output-symlink-to-input", ("data", "convert", "data.jsonl", "out.jsonl"),
             ("out.jsonl", "symbolic link"), {"out.jsonl": lambda p: p.symlink_to("data.jsonl")}),
    cli_case("cli-convert-output-hard-link-to-input", ("data", "convert", "data.jsonl", "out.jsonl"),
             ("out.jsonl", "same file"), {"out.jsonl": lambda p: p.hardlink_to(p.parent / "data.jsonl")}),
    cassette_case("cassette-empty", "", ("holds no call",)),
    cassette_case("cassette-blank-lines", "\n\n", ("holds no call",)),
    # session 36 (fix36): what was accepted silently or said without its line
    sidecar_case("sidecar-unknown-key", jsonl({"question": "q?", "answer": "4417", "evidence": 0, "proof": 1}),
                 ("q.jsonl:1", "field proof", "expected one of answer, ask_at", "unknown key")),
    sidecar_case("sidecar-typo-key", jsonl({"question": "q?", "answer": "4417", "evidance": 0}),
                 ("q.jsonl:1", "field evidance", "did you mean 'evidence'?")),
    sidecar_case("sidecar-csv-unknown-column", "question,answer,evidance\nq?,4417,0\n",
                 ("q.csv:1", "column 'evidance'", "did you mean 'evidence'?", "meta.NAME"), file="q.csv"),
    sidecar_case("sidecar-meta-not-object", jsonl({"question": "q?", "answer": "4417", "evidence": 0, "meta": 5}),
                 ("q.jsonl:1", "field meta", "an object")),
    spec_case("spec-config-twice", spec() + '[[configs]]\npreset = "truncate"\n',
              ("s.toml:11", "(line 8)", "expected each configuration once")),
    spec_case("spec-seeds-twice", spec(top="seeds = [1, 1]"), ("s.toml:3", "seeds", "each value listed once")),
    spec_case("spec-grid-value-twice", spec(preset="since-last", config="grid = { keep_last = [2, 2] }"),
              ("s.toml:10", "grid.keep_last", "each value listed once")),
    spec_case("tune-spec-not-utf8", b'# t\nname = "caf\xe9"\n' + spec().encode(), ("s.toml:2", "UTF-8"),
              "tune", "s.toml", "--out", "tout"),
]
assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"


def by_id() -> dict[str, Case]:
    return {c.id: c for c in CASES}


def classify(code: int, stderr: str, needle_ok: bool, one_line: bool, clean_write: bool) -> str:
    """Before/after bookkeeping: what a user saw."""
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if code == 0:
        return "warnings-only" if "WARNING" in stderr else "exit-0"
    if code == 2 and one_line and needle_ok and clean_write:
        return "clean"
    return "unclear"


# ----------------------------------------------------------------------------------------------
# baselines given to `rollsum regress` (each a change to a baseline promoted from a real run)

Edit = Callable[[dict[str, object]], object]


def _cfg(b: dict[str, object]) -> dict[str, object]:
    configs = b["configs"]
    assert isinstance(configs, dict)
    first: dict[str, object] = configs[sorted(configs)[0]]
    return first


def _set_band(value: object) -> Edit:
    def edit(b: dict[str, object]) -> None:
        band = _cfg(b)["retention"]
        assert isinstance(band, dict)
        band["estimate"] = value
    return edit


def _set_cfg(key: str, value: object) -> Edit:
    def edit(b: dict[str, object]) -> None:
        _cfg(b)[key] = value
    return edit


def _set_top(key: str, value: object) -> Edit:
    def edit(b: dict[str, object]) -> None:
        b[key] = value
    return edit


def _first_asks(value: object) -> Edit:
    def edit(b: dict[str, object]) -> None:
        asks = b["asks"]
        assert isinstance(asks, dict)
        asks[sorted(asks)[0]] = value
    return edit


BASELINE_EDITS: dict[str, tuple[Edit | str | bytes, tuple[str, ...]]] = {
    "baseline-estimate-string": (_set_band("abc"), ("retention.estimate", "'abc'")),
    "baseline-estimate-bool": (_set_band(True), ("retention.estimate", "True")),
    "baseline-deterministic-string": (_set_cfg("deterministic", "yes"), ("deterministic", "'yes'")),
    "baseline-verdicts-number": (_set_cfg("verdicts", 5), ("verdicts",)),
    "baseline-verdicts-bad-mark": (_set_cfg("verdicts", {"d/c1/0": "1x0"}), ("verdicts",)),
    "baseline-status-number": (_set_cfg("status", 5), ("status",)),
    "baseline-units-negative": (_set_cfg("units", -1), ("units", "-1")),
    "baseline-configs-empty": (_set_top("configs", {}), ("configs", "at least one")),
    "baseline-thresholds-unknown": (_set_top("thresholds", {"max_bogus": 1}), ("thresholds.max_bogus",)),
    "baseline-thresholds-string": (_set_top("thresholds", {"max_failure_rate": "high"}),
                                   ("thresholds.max_failure_rate", "'high'")),
    "baseline-asks-not-list": (_first_asks("x"), ("asks.",)),
    "baseline-is-a-list": ("[1, 2]", ("configs",)),
    "baseline-nan": ('{"format": 2, "configs": {"x": NaN}, "asks": {}}', ("NaN",)),
    "baseline-binary": (GARBAGE, ("b.json",)),
    "baseline-empty": ("", ("b.json", "the file is empty")),
    "baseline-string": ('"nightly"', ("b.json", "expected a baseline JSON object", "a string")),
    "baseline-deep": (deep(), ("nested",)),
}


# ----------------------------------------------------------------------------------------------
# finished run directories, tampered with, given to report / compare / regress / score
# (each a change to a copy of a real finished run; the command must name the file and what is wrong)

RunEdit = Callable[[Path], None]


def _replace_line(name: str, n: int, text: bytes) -> RunEdit:
    def edit(run: Path) -> None:
        lines = (run / name).read_bytes().split(b"\n")
        lines[n] = text
        (run / name).write_bytes(b"\n".join(lines))
    return edit


def _cut(name: str, keep: float) -> RunEdit:
    def edit(run: Path) -> None:
        data = (run / name).read_bytes()
        (run / name).write_bytes(data[:int(len(data) * keep)])
    return edit


def _write(name: str, data: bytes | str) -> RunEdit:
    def edit(run: Path) -> None:
        (run / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return edit


def _delete(name: str) -> RunEdit:
    def edit(run: Path) -> None:
        (run / name).unlink()
    return edit


def _manifest(key: str, value: object) -> RunEdit:
    def edit(run: Path) -> None:
        m = json.loads((run / "manifest.json").read_text())
        m[key] = value
        (run / "manifest.json").write_text(json.dumps(m))
    return edit


def _manifest_at(keys: tuple[str, ...], value: object) -> RunEdit:
    """One nested manifest value replaced (``("scoring", "scorers")``: ``manifest["scoring"]["scorers"]``)."""
    def edit(run: Path) -> None:
        m = json.loads((run / "manifest.json").read_text())
        inner = m
        for key in keys[:-1]:
            inner = inner[key]
        inner[keys[-1]] = value
        (run / "manifest.json").write_text(json.dumps(m))
    return edit


def _flip_byte(name: str) -> RunEdit:
    """Same size, one byte changed: only the seal's sha256 can tell."""
    def edit(run: Path) -> None:
        data = bytearray((run / name).read_bytes())
        i = len(data) // 2
        data[i] = data[i] ^ 0x01
        (run / name).write_bytes(bytes(data))
    return edit


def _other_parquet(name: str) -> RunEdit:
    """A valid parquet file with other columns in place of a table."""
    def edit(run: Path) -> None:
        parquet([{"unit_id": "x", "retention": 1.0}])(run / name)
    return edit


def _linked_out(name: str) -> RunEdit:
    """The file moved out of the run directory and a symbolic link left in its place: the same
    bytes (the seal still matches), but reading or writing through it leaves the directory."""
    def edit(run: Path) -> None:
        outside = run.parent / f"outside-{name}"
        (run / name).rename(outside)
        (run / name).symlink_to(outside)
    return edit


def _fifo(name: str) -> RunEdit:
    """A named pipe in place of a file: reading it would wait forever for a writer."""
    def edit(run: Path) -> None:
        (run / name).unlink()
        os.mkfifo(run / name)
    return edit


def unsealed(edit: RunEdit) -> RunEdit:
    """The same damage in a run whose manifest has no seal (an older or interrupted run): the
    reader's own checks must catch it, line by line and column by column."""
    def both(run: Path) -> None:
        m = json.loads((run / "manifest.json").read_text())
        del m["files"]
        (run / "manifest.json").write_text(json.dumps(m))
        edit(run)
    return both


REPORT = ("report", "{run}", "--out", "rep", "--resamples", "200")
COMPARE = ("compare", "{run}", "--a", "$\\frac{1}{$", "--b", "truncate", "--out", "cmp", "--resamples", "200")
REGRESS = ("regress", "{run}", "--baseline", "{good}", "--resamples", "200")
SCORE = ("score", "{run}")

RUN_EDITS: dict[str, tuple[RunEdit, tuple[str, ...], tuple[str, ...]]] = {
    # journals: a bad line in the middle, a cut, an edit the seal catches
    "probes-jsonl-bad-line-report": (_replace_line("probes.jsonl", 1, b"{not json"), REPORT, ("probes.jsonl",)),
    "probes-jsonl-bad-line-score": (_replace_line("probes.jsonl", 1, b"{not json"), SCORE, ("probes.jsonl",)),
    "units-jsonl-cut-score": (_cut("units.jsonl", 0.5), SCORE, ("units.jsonl",)),
    "units-jsonl-not-object-score": (_replace_line("units.jsonl", 0, b"[1, 2]"), SCORE, ("units.jsonl",)),
    "traces-jsonl-byte-flipped-score": (_flip_byte("traces.jsonl"), SCORE, ("traces.jsonl",)),
    "traces-jsonl-deleted-score": (_delete("traces.jsonl"), SCORE, ("traces.jsonl", "missing")),
    # tables: garbage, cut, replaced, deleted, one byte changed
    "units-parquet-garbage-report": (_write("units.parquet", GARBAGE), REPORT, ("units.parquet",)),
    "units-parquet-cut-compare": (_cut("units.parquet", 0.6), COMPARE, ("units.parquet",)),
    "units-parquet-other-table-regress": (_other_parquet("units.parquet"), REGRESS, ("units.parquet",)),
    "probes-parquet-cut-report": (_cut("probes.parquet", 0.5), REPORT, ("probes.parquet",)),
    "probes-parquet-byte-flipped-compare": (_flip_byte("probes.parquet"), COMPARE, ("probes.parquet",)),
    "turns-parquet-deleted-report": (_delete("turns.parquet"), REPORT, ("turns.parquet",)),
    "probes-parquet-empty-regress": (_write("probes.parquet", b""), REGRESS, ("probes.parquet",)),
    # the manifest: not an object, not JSON, not UTF-8, NaN, deep, wrong types, missing
    "manifest-list-report": (_write("manifest.json", "[1, 2]"), REPORT, ("manifest.json", "object")),
    "manifest-cut-compare": (_cut("manifest.json", 0.5), COMPARE, ("manifest.json",)),
    "manifest-binary-regress": (_write("manifest.json", GARBAGE), REGRESS, ("manifest.json",)),
    "manifest-nan-report": (_write("manifest.json", '{"status": NaN}'), REPORT, ("manifest.json", "NaN")),
    "manifest-deep-report": (_write("manifest.json", deep(100_000, '{"a":', "}")), REPORT, ("manifest.json",)),
    "manifest-files-string-report": (_manifest("files", "all of them"), REPORT, ("manifest.json", "files")),
    "manifest-configs-list-compare": (_manifest("configs", [1]), COMPARE, ("manifest.json", "configs")),
    "manifest-deleted-report": (_delete("manifest.json"), REPORT, ("manifest.json",)),
    # parts of the manifest that score and the report's readers use: a wrong type was a traceback
    "manifest-scorers-number-score": (_manifest_at(("scoring", "scorers"), 5), SCORE,
                                      ("manifest.json", "scoring.scorers")),
    "manifest-scorers-null-report": (_manifest_at(("scoring", "scorers"), None), REPORT,
                                     ("manifest.json", "scoring.scorers")),
    "manifest-probe-timing-word-score": (_manifest_at(("scoring", "probe_timing"), "often"), SCORE,
                                         ("manifest.json", "scoring.probe_timing", "often")),
    "manifest-unit-cache-string-report": (_manifest("unit_cache", "on"), REPORT, ("manifest.json", "unit_cache")),
    "manifest-dataset-format-object-score": (_manifest_at(("datasets", "d", "format"), {"x": 1}), SCORE,
                                             ("manifest.json", "datasets.d.format")),
    "manifest-dataset-source-missing-score": (_manifest_at(("datasets", "d"), {"sha256": "0" * 64}), SCORE,
                                              ("manifest.json", "datasets.d.source")),
    # the spec hash edited: no longer the hash of the spec the manifest records (issue #19)
    "manifest-spec-hash-edited-report": (_manifest("spec_sha256", "0" * 64), REPORT, ("manifest.json", "spec_sha256")),
    "manifest-spec-hash-edited-compare": (_manifest("spec_sha256", "0" * 64), COMPARE,
                                          ("manifest.json", "spec_sha256")),
    "manifest-spec-hash-edited-regress": (_manifest("spec_sha256", "0" * 64), REGRESS,
                                          ("manifest.json", "spec_sha256")),
    "manifest-spec-hash-edited-score": (_manifest("spec_sha256", "0" * 64), SCORE, ("manifest.json", "spec_sha256")),
    # a received directory's links and special files: never followed, never read (nothing leaves the run)
    "units-parquet-symlink-report": (_linked_out("units.parquet"), REPORT, ("units.parquet", "symbolic link")),
    "run-lock-symlink-score": (_linked_out("run.lock"), SCORE, ("run.lock", "symbolic link")),
    "manifest-symlink-regress": (_linked_out("manifest.json"), REGRESS, ("manifest.json", "symbolic link")),
    "unsealed-probes-parquet-fifo-report": (unsealed(_fifo("probes.parquet")), REPORT,
                                            ("probes.parquet", "not a regular file")),
    # no seal to compare with
    "unsealed-traces-jsonl-bad-line-score": (unsealed(_replace_line("traces.jsonl", 1, b"{not json")), SCORE,
                                             ("traces.jsonl", "line 2")),
    "unsealed-units-jsonl-not-object-score": (unsealed(_replace_line("units.jsonl", 0, b"[1, 2]")), SCORE,
                                              ("units.jsonl", "line 1")),
    "unsealed-units-parquet-garbage-report": (unsealed(_write("units.parquet", GARBAGE)), REPORT,
                                              ("units.parquet",)),
    "unsealed-units-parquet-other-table-compare": (unsealed(_other_parquet("units.parquet")), COMPARE,
                                                   ("units.parquet",)),
    "unsealed-probes-parquet-cut-regress": (unsealed(_cut("probes.parquet", 0.5)), REGRESS, ("probes.parquet",)),
}


if __name__ == "__main__":  # pragma: no cover - the inventory: python tests/evals/cli/corpus.py
    import collections
    import sys
    import tempfile

    from tests.evals.cli.malformed import CACHE, HOME, lock_file, run_cli

    only = set(sys.argv[1:])
    counts: collections.Counter[str] = collections.Counter()
    by_cat: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for case in CASES:
        if only and case.id not in only and case.category not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            case.materialize(root)
            out = run_cli(case.argv, root, env=case.env)
            line = out.lines[0] if out.lines else ""
            written = [p for p in out.written if not p.startswith((HOME, CACHE)) and not lock_file(p)]
            kind = classify(out.code, out.stderr, all(n in line for n in case.needle), len(out.lines) == 1,
                            not written)
        counts[kind] += 1
        by_cat[case.category][kind] += 1
        last = out.stderr.strip().splitlines()[-1:] if out.stderr.strip() else [""]
        print(f"{kind:14} {case.category:9} {case.id:40} exit {out.code} lines {len(out.lines)} "
              f"written {len(written)} | {last[0][:150]}", flush=True)
    print(dict(counts))
    for cat, c in sorted(by_cat.items()):
        print(f"  {cat}: {dict(c)}")

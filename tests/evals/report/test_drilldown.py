"""The drill-down's data: the context at the asking turn exactly as the trace rebuilds it, where the
evidence went, bounded, and embedded so no conversation text can become markup."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rollsum_evals import drilldown
from rollsum_evals.analysis import answerable_probes, load
from rollsum_evals.report import write_report
from rollsum_evals.report_keys import config_keys

from tests.evals.report.realrun import grid_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return grid_run(tmp_path_factory.mktemp("drill"))


@pytest.fixture(scope="module")
def data(run_dir: Path) -> dict:
    run = load(run_dir)
    probes = answerable_probes(run)
    return drilldown.collect(run, probes, config_keys(probes["config"]))


def test_each_lost_fact_shows_the_context_the_trace_rebuilds_at_its_asking_turn(run_dir: Path, data: dict) -> None:
    run = load(run_dir)
    probes = answerable_probes(run)
    assert data["configs"] and not data["missing"]
    keys = config_keys(probes["config"])
    assert [c["key"] for c in data["configs"]] == [k for k in keys.keys.values()
                                                   if k in {c["key"] for c in data["configs"]}]  # key order
    checked = 0
    for cfg in data["configs"]:
        lost = probes[(probes["config"] == cfg["label"]) & ~probes["retained"].astype(bool)]
        assert cfg["lost"] == len(lost) and 0 < len(cfg["facts"]) <= drilldown.DEFAULT_LIMITS.facts_per_config
        for fact in cfg["facts"]:
            row = lost[(lost["question"] == fact["question"]) & (lost["asked_turn"] == fact["asked_turn"])
                       & (lost["conversation_id"] == fact["conversation"])].iloc[0]
            trace = run.load_trace(str(row["unit_id"]))
            items = trace.context_at(fact["asked_turn"])
            ctx = data["contexts"][fact["context"]]
            summaries = [i.text for i in items if not i.verbatim]
            keep = drilldown.DEFAULT_LIMITS.summary_items
            assert len(ctx["summary"]) == min(len(summaries), keep)
            assert ctx["summary_omitted"] == max(0, len(summaries) - keep)
            for shown, full in zip(ctx["summary"], summaries[-keep:], strict=True):
                assert shown["text"] == full or (shown["text"].startswith(full[:2000])
                                                 and shown["text"].endswith("not embedded]"))
            verbatim = [i.message_index for i in items if i.verbatim]
            assert [m["index"] for m in ctx["tail"]] == verbatim[-drilldown.DEFAULT_LIMITS.tail_messages:]
            assert ctx["omitted"] == max(0, len(verbatim) - drilldown.DEFAULT_LIMITS.tail_messages)
            ev = fact["evidence_turn"]
            assert fact["evidence"] == trace.messages[ev].content[:2000] or fact["evidence"].endswith("embedded]")
            m = re.search(r"verbatim in the context until turn (\d+);", fact["where"])
            if m:  # the evidence left the context right after that turn
                last = int(m.group(1))
                assert ev in [i.message_index for i in trace.context_at(last) if i.verbatim]
                assert ev not in [i.message_index for i in trace.context_at(last + 1) if i.verbatim]
                checked += 1
    assert checked > 0


def test_the_facts_shown_are_the_oldest_lost_ones_first(run_dir: Path, data: dict) -> None:
    """A summary's job is carrying old facts: with a bound on facts shown, the ones kept are the
    lost asks with the oldest evidence, in that order (not the first rows of the table)."""
    probes = answerable_probes(load(run_dir))
    assert "age_turns" in probes.columns
    varied = 0
    for cfg in data["configs"]:
        lost = probes[(probes["config"] == cfg["label"]) & ~probes["retained"].astype(bool)]
        ages = [f["age"] for f in cfg["facts"]]
        assert ages == sorted(ages, reverse=True)
        assert ages == sorted(lost["age_turns"].astype(int), reverse=True)[:len(ages)]
        varied += len(set(lost["age_turns"])) > 1
    assert varied > 0  # the check above would hold for any order if every age were equal


def test_the_embedded_data_is_bounded_and_says_what_it_cut(run_dir: Path) -> None:
    run = load(run_dir)
    probes = answerable_probes(run)
    limits = drilldown.Limits(facts_per_config=1, configs=2, tail_messages=2, summary_items=1, chars=40)
    data = drilldown.collect(run, probes, config_keys(probes["config"]), limits)
    assert len(data["configs"]) == 2 and data["configs_omitted"] >= 1
    assert all(len(c["facts"]) == 1 for c in data["configs"])
    texts = [t["text"] for ctx in data["contexts"].values() for t in [*ctx["summary"], *ctx["tail"]]]
    assert all(len(t) <= 40 or (t[:40] and t.endswith("more characters not embedded]")) for t in texts)
    assert any(t.endswith("not embedded]") for t in texts)
    assert all(len(ctx["tail"]) <= 2 and len(ctx["summary"]) <= 1 for ctx in data["contexts"].values())
    html = drilldown.section(run, probes, config_keys(probes["config"]), limits)
    assert "at most 1 lost facts per configuration" in html and "more configuration(s) with lost facts" in html


@given(st.text())
def test_embedded_json_round_trips_and_never_contains_markup(text: str) -> None:
    out = drilldown.embed_json({"t": text, "s": "</script><!--"})
    assert not set(out) & set("<>&")
    assert json.loads(out) == {"t": text, "s": "</script><!--"}


def test_the_report_page_carries_the_drill_down_and_the_grid_heatmap(run_dir: Path, tmp_path: Path) -> None:
    page = write_report(run_dir, tmp_path, n_resamples=200).read_text()
    assert 'id="dd-config"' in page and 'id="dd-fact"' in page
    assert "https://" not in page and "http://" not in page  # no CDN
    md = (tmp_path / "report.md").read_text()
    assert "## Grid: since-last, " in md and (tmp_path / "grid_1.svg").read_bytes().startswith(b"<?xml")
    assert "## Legend" in md


def test_without_the_conversation_data_the_drill_down_says_so(run_dir: Path, tmp_path: Path) -> None:
    run = load(run_dir)
    probes = answerable_probes(run)
    run.manifest["datasets"] = {k: {**v, "sha256": "0" * 64} for k, v in run.manifest["datasets"].items()}
    data = drilldown.collect(run, probes, config_keys(probes["config"]))
    assert data["missing"] and all(f["context"] is None for c in data["configs"] for f in c["facts"])
    assert "could not be loaded" in drilldown.section(run, probes, config_keys(probes["config"]))


def test_the_drill_down_decodes_only_the_traces_it_shows_and_they_equal_whole_journal_ones(
        run_dir: Path) -> None:
    """Issue #20 item 3: the drill-down announces the Units it shows (`Run.want_traces`), so only
    their journal lines are decoded (the events journal is most of a run's bytes), and each trace
    is the one a reader of the whole journals rebuilds."""
    from rollsum_evals.rundir.format import EVENTS, SUMMARIES

    run = load(run_dir)
    probes = answerable_probes(run)
    shown = drilldown.collect(run, probes, config_keys(probes["config"]))
    wanted = run._cache["wanted"]
    units = set(run.units["unit_id"])
    assert shown["configs"] and wanted and wanted < units  # a strict subset of the run's Units
    assert SUMMARIES not in run._cache and set(run._cache[f"{SUMMARIES}:some"]) == wanted
    assert EVENTS not in run._cache and f"{EVENTS}:some" not in run._cache  # contexts need no events
    assert "traces" not in run._cache and set(run._cache["traces:some"]) == wanted  # nor every trace line
    assert "texts" not in run._cache  # nor every text: those the shown traces name
    whole = load(run_dir)  # nothing announced: traces from the whole journals
    for uid in sorted(wanted):
        assert run.trace_record(uid) == whole.trace_records()[uid]
        light, a, b = run.load_trace(uid, contexts_only=True), run.load_trace(uid), whole.load_trace(uid)
        assert run._cache[f"{EVENTS}:some"][uid] == whole._by_unit(EVENTS).get(uid, [])
        assert a.events == b.events and a.summaries == b.summaries
        assert light.events == [] and light.summaries == [] and light.summary_turns == b.summary_turns
        assert light.turns == b.turns and light.texts == b.texts and light.messages == b.messages
        for t in (a, light):
            assert [t.context_at(i) for i in range(len(t.turns))] == [b.context_at(i) for i in range(len(b.turns))]


def test_the_report_never_reads_the_events_journal(run_dir: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #20 item 3: the drill-down shows contexts, which a trace rebuilds from its turns and
    texts; the events journal (the run's largest file) is not read for them, nor by any other
    part of the report. The summaries journal is read once: the drill-down's Units are announced
    with the checkpoint's (`drilldown.plan`), not scanned for separately."""
    from rollsum_evals.rundir.format import EVENTS, SUMMARIES
    from rollsum_evals.rundir.journal import RunDir

    read: list[str] = []
    original = RunDir.read_bytes

    def recording(self: RunDir, name: str) -> bytes | None:
        read.append(name)
        return original(self, name)

    monkeypatch.setattr(RunDir, "read_bytes", recording)
    html = write_report(run_dir, tmp_path / "report").read_text()
    assert 'id="dd-config"' in html and '"contexts":{"' in html  # the drill-down shows contexts
    assert read and EVENTS not in read
    assert "<h2>Summaries at a checkpoint</h2>" in html and read.count(SUMMARIES) == 1


def test_journal_of_keeps_exactly_the_rows_of_the_units_asked_for(run_dir: Path, tmp_path: Path) -> None:
    """`RunDir.journal_of` on a sealed journal: the rows of those Units, in file order, never a
    row of another Unit that merely mentions one of their ids in its text; on an unsealed
    journal it reads every line strictly, so a damaged line is still reported."""
    import shutil

    from rollsum_evals.rundir.format import EVENTS, SUMMARIES
    from rollsum_evals.rundir.integrity import DamagedRun, file_digest
    from rollsum_evals.rundir.journal import RunDir

    run = load(run_dir)
    rd = run.rundir
    units = sorted(set(run.units["unit_id"]))
    for name in (SUMMARIES, EVENTS):
        rows = rd.journal(name)
        for ids in ({units[0]}, set(units[1:4]), set(units)):
            assert rd.journal_of(name, ids) == [r for r in rows if r["unit_id"] in ids]
    # a copy whose first event of one Unit names another Unit in a nested "unit_id" field (before
    # its own, keys are sorted) and in its text, sealed again
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    path = copy / EVENTS
    lines = path.read_bytes().split(b"\n")[:-1]
    first = json.loads(lines[0])
    with_events = {r["unit_id"] for r in rd.journal(EVENTS)}
    other = next(u for u in units if u != first["unit_id"] and u in with_events)
    first["about"] = {"unit_id": other}
    first["reason"] = f'see "unit_id": "{other}"'
    lines[0] = json.dumps(first, sort_keys=True).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    resealed = RunDir(copy)
    resealed.sealed = {EVENTS: file_digest(path)}
    for ids in ({other}, {first["unit_id"]}):
        expected = [r for r in resealed.journal(EVENTS) if r["unit_id"] in ids]
        assert expected and resealed.journal_of(EVENTS, ids) == expected
    loose = RunDir(copy)  # nothing expected: no seal, every line read strictly
    path.write_bytes(b"\n".join(lines) + b"\n{not json\n")
    assert not loose.sealed
    with pytest.raises(DamagedRun):
        RunDir(copy).journal_of(EVENTS, {other})


def test_texts_of_are_exactly_the_texts_asked_for_sealed_or_not(run_dir: Path, tmp_path: Path) -> None:
    """`RunDir.texts_of` (the drill-down's texts): the rows `texts` has for those ids, whether
    only their lines are decoded (sealed) or every line is read (unsealed: strictly)."""
    import shutil

    from rollsum_evals.rundir.format import TEXTS
    from rollsum_evals.rundir.integrity import DamagedRun
    from rollsum_evals.rundir.journal import RunDir

    rd = load(run_dir).rundir
    every = rd.texts()
    ids = sorted(every)
    assert TEXTS in rd.sealed and len(ids) > 4
    for some in ({ids[0]}, set(ids[1:4]), set(ids), {ids[0], "no-such-text"}):
        assert rd.texts_of(some) == {k: v for k, v in every.items() if k in some}
    assert rd.texts_of(set()) == {}
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    loose = RunDir(copy)  # nothing expected: no seal, every line read strictly
    assert not loose.sealed and loose.texts_of(set(ids[:3])) == {k: every[k] for k in ids[:3]}
    with (copy / TEXTS).open("ab") as fh:
        fh.write(b"{not json\n")
    with pytest.raises(DamagedRun):
        RunDir(copy).texts_of({ids[0]})


def test_summarized_units_are_the_units_with_summary_lines_without_decoding_the_journal(run_dir: Path) -> None:
    """`Run.summarized_units` (which configurations the report can show summaries of) comes from
    the units table's `n_summaries`, else each trace's count of the summary lines it wrote; it
    equals the Units found in the summaries journal whichever it is read from (older runs without
    either: from the journal), and the checkpoint's summaries are the journal's lines of that Unit."""
    from rollsum_evals.analysis import summaries_at_checkpoint
    from rollsum_evals.rundir.format import SUMMARIES

    run = load(run_dir)
    units = set(run.units["unit_id"])
    lines = [r for r in run.rundir.journal(SUMMARIES) if r["unit_id"] in units]
    from_journal = {r["unit_id"] for r in lines}
    assert from_journal and from_journal < units  # some Units (baselines) never summarize
    assert run.summarized_units() == from_journal and SUMMARIES not in run._cache
    assert "traces" not in run._cache  # from the units table: no trace line decoded
    configs = sorted(set(run.units.loc[run.units["unit_id"].isin(from_journal), "config"]))[:2]
    check = summaries_at_checkpoint(run, configs)
    assert check is not None and SUMMARIES not in run._cache
    whole = load(run_dir)
    assert summaries_at_checkpoint(whole, configs, check.conversation_id, check.turn) == check
    for uid in sorted(from_journal)[:5]:
        assert whole.unit_summaries(uid) == [r for r in lines if r["unit_id"] == uid]
    counted = load(run_dir)  # a units table without n_summaries: the traces' counts
    counted.units = counted.units.drop(columns="n_summaries")
    assert counted.summarized_units() == from_journal and SUMMARIES not in counted._cache
    old = load(run_dir)  # neither: the journal
    old.units = old.units.drop(columns="n_summaries")
    for rec in old.trace_records().values():
        rec.pop("journal_rows", None)
    assert old.summarized_units() == from_journal and SUMMARIES in old._cache


def test_lines_naming_selects_whole_lines_naming_a_wanted_id_once_each_in_file_order() -> None:
    """The scan behind `journal_of` (one regex over the buffer): a line is kept when any of its
    ``"unit_id": "…"`` fields is exactly a wanted id (``u1`` never selects ``u10``'s lines), with
    either spacing JSON allows, once even when it names the id twice, whole and in file order;
    an id merely quoted inside a string value (escaped quotes) selects nothing."""
    from rollsum_evals.rundir.journal import _lines_naming

    lines = [b'{"unit_id": "u10", "x": 1}\n',
             b'{"unit_id": "u1", "x": 2}\n',
             b'{"about": {"unit_id": "u1"}, "unit_id": "u2"}\n',
             b'{"unit_id":"u3","x":3}\n',
             b'{"text": "see \\"unit_id\\": \\"u1\\"", "unit_id": "u4"}\n',
             b'{"a": {"unit_id": "u1"}, "unit_id": "u1"}\n',
             b'{"unit_id": "u2", "x": 5}\n']
    data = b"".join(lines)
    assert _lines_naming(data, {"u1"}) == lines[1] + lines[2] + lines[5]
    assert _lines_naming(data, {"u3", "u10"}) == lines[0] + lines[3]
    assert _lines_naming(data, {"u2", "u1"}) == lines[1] + lines[2] + lines[5] + lines[6]
    assert _lines_naming(data, {"u9"}) == b""

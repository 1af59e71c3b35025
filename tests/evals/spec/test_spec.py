from __future__ import annotations

import re
from pathlib import Path

import pytest
from rollsum_evals.spec.expand import expand, variants
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.units import Unit

from rollsum.errors import ConfigError

SPEC = """
name = "t"
models = ["extractive"]
context_window = 4000
seeds = [0, 1]

[[datasets]]
name = "d"
source = "synth:chat?conversations=2&messages=40&seed=1"

[[datasets]]
name = "lc"
source = "@locomo"

[[configs]]
preset = "since-last"
grid = { keep_last = [2, 5] }

[[configs]]
preset = "full-context"
"""

def _units(text: str = SPEC, **kw: object) -> list[Unit]:
    spec = parse_spec(text, "t.toml", **kw)  # type: ignore[arg-type]
    return expand(spec, {d.name: ("h", ["c1", "c2"]) for d in spec.datasets})


def test_grid_expands_to_labelled_units_per_conversation_and_seed() -> None:
    units = _units()
    assert len(units) == 3 * 2 * 2  # (2 grid points + baseline) x conversations x seeds
    assert {u.config for u in units} == {"since-last[keep_last=2]", "since-last[keep_last=5]",
                                         "full-context"}
    assert all(u.context_window == 4000 for u in units)


def test_unit_ids_are_stable_and_change_with_what_defines_a_unit() -> None:
    a, b = _units(), _units()
    assert [u.unit_id for u in a] == [u.unit_id for u in b]
    changed = _units(SPEC.replace("context_window = 4000", "context_window = 5000"))
    assert not {u.unit_id for u in a} & {u.unit_id for u in changed}
    other_data = expand(parse_spec(SPEC, "t.toml"), {"d": ("h2", ["c1", "c2"])})
    assert not {u.unit_id for u in a} & {u.unit_id for u in other_data}


def test_unit_ids_are_the_replay_identity_only() -> None:
    """Scoring (scorers, probe timing, main-model prices, QA model) never changes a Unit id:
    a re-scored or differently scored run re-uses its replays."""
    a = _units()
    scored_otherwise = _units('scorers = ["answer_retention", "rouge"]\nmain_model = "claude-sonnet-4-5"\n'
                              + SPEC + '\n[probes]\nages = [3, 9]\n')
    assert [u.unit_id for u in a] == [u.unit_id for u in scored_otherwise]


def test_locomo_dataset_is_included_only_with_a_path() -> None:
    assert {u.dataset for u in _units()} == {"d"}
    assert {u.dataset for u in _units(locomo="/x/locomo10.json")} == {"d", "lc"}


def test_model_override_replaces_models_and_labels_stay_unique() -> None:
    text = SPEC.replace('models = ["extractive"]', 'models = ["extractive", "fake:mode=extractive"]')
    labels = [v.label for v in variants(parse_spec(text, "t.toml"))]
    assert len(labels) == len(set(labels)) == 5
    units = _units(text, model_override="fake:mode=extractive")
    assert {u.model for u in units if u.preset == "since-last"} == {"fake:mode=extractive"}
    # baselines never call a model, so they are not multiplied by models
    assert {u.model for u in units if u.preset == "full-context"} == {"extractive"}


@pytest.mark.parametrize(("text", "needle"), [
    (SPEC.replace("seeds = [0, 1]", "seeds = [0, 1]\ncolour = 3"), "t.toml:6: field 'colour'"),
    (SPEC.replace('preset = "full-context"', 'preset = 3'), "configs[1].preset"),
    (SPEC.replace("context_window = 4000", "context_window = -1"), "t.toml:4: field 'context_window'"),
    (SPEC + '\n[probes]\nask = "sometimes"\n', "probes.ask"),
    (SPEC.replace('"synth:chat?conversations=2&messages=40&seed=1"', "7"), "datasets[0].source"),
    ('scorers = ["vibes"]\n' + SPEC, "scorers[0]"),
    ("name = [", "not valid TOML"),
])
def test_mistakes_name_file_line_and_field(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        _units(text)
    assert needle in str(err.value)


AGES = SPEC + '\n[probes]\nages = [60, 5, 20]\n'


def test_probe_ages_become_the_scoring_plans_timing() -> None:
    spec = parse_spec(AGES, "t.toml")
    assert spec.probes.key == "ages:5,20,60+end"
    assert spec.scoring.timing.ages == (5, 20, 60) and spec.scoring.timing.end
    no_end = parse_spec(AGES.replace("[60, 5, 20]", "[60, 5, 20]\nend = false"), "t.toml")
    assert no_end.scoring.timing.key == "ages:5,20,60"


def test_old_probe_timings_still_parse() -> None:
    after = parse_spec(SPEC + '\n[probes]\nask = "after"\nafter_turns = 7\n', "t.toml").scoring.timing
    assert after.key == "after:7" and after.after_turns == 7
    assert parse_spec(SPEC + '\n[probes]\nask = "end"\n', "t.toml").scoring.timing.key == "end"


def test_the_default_timing_is_one_sampled_age_per_fact_plus_the_end() -> None:
    assert parse_spec(SPEC, "t.toml").scoring.timing.key == "sampled:1+end"
    three = parse_spec(SPEC + '\n[probes]\nask = "sampled"\ndraws = 3\nseed = 7\nend = false\n', "t.toml")
    assert three.scoring.timing.key == "sampled:3,seed=7"
    assert (three.probes.draws, three.probes.seed, three.probes.end) == (3, 7, False)


def test_health_runs_whatever_the_spec_lists_and_projected_model_is_a_priced_model() -> None:
    spec = parse_spec('scorers = ["answer_retention"]\nprojected_model = "claude-sonnet-4-5"\n' + SPEC, "t.toml")
    assert spec.scoring.scorers == ("answer_retention", "health")
    assert spec.scoring.projected_model == "claude-sonnet-4-5"
    assert parse_spec(SPEC, "t.toml").scoring.projected_model == "claude-haiku-4-5"
    with pytest.raises(ConfigError, match="field 'projected_model'"):
        parse_spec('projected_model = "gpt-9"\n' + SPEC, "t.toml")


@pytest.mark.parametrize(("probes", "needle"), [
    ("ages = []", "t.toml:23: field 'probes.ages': expected a non-empty list of positive integers"),
    ("ages = [5, 0]", "field 'probes.ages'"),
    ("ages = [5, 5]", "ages listed once each"),
    ('ages = [5]\nask = "after"', "either 'ages' or 'ask'"),
    ('ages = [5]\nend = "yes"', "field 'probes.end': expected true or false"),
    ('ask = "end"\nend = false', "only with ask = 'sampled' or 'ages'"),
    ('ask = "after"\nafter_turns = 3\ndraws = 2', "'draws' and 'seed' only with ask = 'sampled'"),
    ("draws = 0", "field 'probes.draws': expected a positive integer"),
    ('ages = [5]\ndraws = 2', "either 'ages' or 'ask'"),
])
def test_probe_age_mistakes_name_the_field(probes: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        parse_spec(SPEC + "\n[probes]\n" + probes + "\n", "t.toml")


def test_set_fixes_a_param_replacing_its_grid_and_keeps_explicit_labels() -> None:
    spec = parse_spec(SPEC, "t.toml", overrides=["since-last.keep_last=7"])
    assert [v.label for v in variants(spec)] == ["since-last[keep_last=7]", "full-context"]
    assert spec.raw["configs"][0]["params"] == {"keep_last": 7}
    assert spec.sha256() != parse_spec(SPEC, "t.toml").sha256()
    labelled = SPEC.replace('grid = { keep_last = [2, 5] }', 'label = "sl"\nparams = { keep_last = 5 }')
    spec = parse_spec(labelled, "t.toml", overrides=["sl.keep_last=2", "sl.count_since=\"event\""])
    assert next((v.label, dict(v.params)) for v in variants(spec)) == ("sl", {"keep_last": 2, "count_since": "event"})


@pytest.mark.parametrize(("item", "needle"), [
    ("keep_last=2", "expected PRESET.PARAM=VALUE"),
    ("since-last.keep_last", "expected PRESET.PARAM=VALUE"),
    ("nope.keep_last=2", "no config with preset or label 'nope' (expected one of: full-context, since-last)"),
])
def test_set_mistakes_are_config_errors(item: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        parse_spec(SPEC, "t.toml", overrides=[item])


def test_unit_cache_switch_is_a_checked_boolean(tmp_path: Path) -> None:
    from rollsum_evals.spec.parse import load_spec

    p = tmp_path / "s.toml"
    p.write_text('name = "x"\nunit_cache = false\n[[datasets]]\nname = "d"\n'
                 'source = "synth:chat?conversations=1&messages=40"\n[[configs]]\npreset = "since-last"\n')
    assert load_spec(p).unit_cache is False
    p.write_text(p.read_text().replace("unit_cache = false", 'unit_cache = "no"'))
    with pytest.raises(ConfigError, match="unit_cache"):
        load_spec(p)


def test_dataset_paths_are_relative_to_the_spec_and_locomo_to_the_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum_evals.spec.parse import load_spec

    (tmp_path / "project" / "data").mkdir(parents=True)
    spec = tmp_path / "project" / "s.toml"
    spec.write_text('[[datasets]]\nname = "mine"\nsource = "data/chat.json"\nquestions = "data/q.jsonl"\n'
                    '[[datasets]]\nname = "gen"\nsource = "synth:chat?conversations=1"\n'
                    '[[datasets]]\nname = "locomo"\nsource = "@locomo"\n'
                    '[[configs]]\npreset = "truncate"\n')
    monkeypatch.chdir(tmp_path)
    loaded = load_spec("project/s.toml", locomo="lc/locomo10.json")
    by = {d.name: d for d in loaded.datasets}
    assert by["mine"].source == str(tmp_path / "project" / "data" / "chat.json")
    assert by["mine"].questions == str(tmp_path / "project" / "data" / "q.jsonl")
    assert by["gen"].source == "synth:chat?conversations=1"
    assert by["locomo"].source == str(tmp_path / "lc" / "locomo10.json")


def test_a_missing_dataset_file_names_the_rule(tmp_path: Path) -> None:
    from rollsum_evals.data.pinned import load_dataset
    from rollsum_evals.spec.parse import load_spec

    spec = tmp_path / "s.toml"
    spec.write_text('[[datasets]]\nname = "mine"\nsource = "chat.json"\n[[configs]]\npreset = "truncate"\n')
    with pytest.raises(ConfigError, match=r"dataset 'mine' source: .*chat\.json: no such file \(paths in a spec "
                                          r"are relative to the spec file\)"):
        load_dataset(load_spec(spec).datasets[0])


def test_a_format_written_as_a_prefix_of_the_source_gets_the_spelling_that_works(tmp_path: Path) -> None:
    """`source = "locomo:data/x.json"` reads as a file named "locomo:data/x.json" beside the spec: the
    error says to name the format in `format`, and only for a registered format's name."""
    from rollsum_evals.data.pinned import load_dataset
    from rollsum_evals.spec.parse import load_spec

    spec = tmp_path / "s.toml"
    for source, hint in (("locomo:data/x.json", "write source = 'data/x.json' and format = 'locomo'"),
                         ("notaformat:data/x.json", None), ("chat.json", None)):
        spec.write_text(f'[[datasets]]\nname = "d"\nsource = "{source}"\n[[configs]]\npreset = "truncate"\n')
        with pytest.raises(ConfigError, match="no such file") as err:
            load_dataset(load_spec(spec).datasets[0])
        assert (hint in str(err.value)) if hint else "format =" not in str(err.value)


def test_a_configs_own_context_window_is_the_one_its_units_and_engine_use() -> None:
    """Issue #19: spec ``context_window = 8000`` with a config's ``params = { context_window =
    4000 }`` ran the engine at 4,000 while the Unit, the trace and the health scorer used 8,000.
    A config's own value (params, grid, or seed 002's ``max_context_tokens``) is its one window."""
    from rollsum_evals.replay.seam import default_engine

    text = SPEC.replace("context_window = 4000", "context_window = [8000, 16000]") + """
[[configs]]
preset = "token-ratio"
params = { context_window = 4000 }

[[configs]]
preset = "budget-rule-based"
params = { max_context_tokens = 3000 }

[[configs]]
preset = "evict-window"
grid = { context_window = [2000, 5000] }
"""
    units = [u for u in _units(text) if u.dataset == "d" and u.seed == 0 and u.conversation_id == "c1"]
    by_preset: dict[str, list[int]] = {}
    for u in units:
        by_preset.setdefault(u.preset, []).append(u.context_window)
    assert sorted(by_preset["token-ratio"]) == [4000]
    assert sorted(by_preset["budget-rule-based"]) == [3000]
    assert sorted(by_preset["evict-window"]) == [2000, 5000]
    assert sorted(by_preset["since-last"]) == [8000, 8000, 16000, 16000]  # no own value: the spec's
    for u in units:
        engine = default_engine(u, None, lambda e: None)
        assert engine.config()["context_window"] == u.context_window, u.config


def test_a_spec_with_a_byte_order_mark_reads_as_without_it(tmp_path: Path) -> None:
    # Notepad and other Windows editors write UTF-8 with a BOM: it was "not valid TOML: Invalid
    # statement (at line 1, column 1)", without a word of what was wrong
    from rollsum_evals.spec.parse import load_spec

    plain, bom = tmp_path / "plain.toml", tmp_path / "bom.toml"
    plain.write_text(SPEC)
    bom.write_bytes(b"\xef\xbb\xbf" + SPEC.encode())
    assert load_spec(bom).raw == load_spec(plain).raw
    assert parse_spec("\ufeff" + SPEC, "t.toml").raw == parse_spec(SPEC, "t.toml").raw  # (`rollsum tune`'s path)
    bom.write_bytes(b"\xef\xbb\xbf" + SPEC.replace("seeds = [0, 1]", "seeds = [0, 1")
                    .replace('name = "t"', 'name = "t\xff"').encode("latin-1"))  # errors keep their line
    with pytest.raises(ConfigError, match=re.escape(f"{bom}:2: invalid UTF-8 at byte 13 ")):
        load_spec(bom)


_ONE_DATASET = """name = "t"
models = ["extractive"]
context_window = 4000

[[datasets]]
name = "d"
source = "synth:chat?conversations=1&messages=40&seed=1"
"""


def test_a_config_listed_twice_names_both_lines() -> None:
    # was "t.toml: two Units are identical (a config or dataset is listed twice)": no line, no config
    text = _ONE_DATASET + '\n[[configs]]\npreset = "since-last"\n\n[[configs]]\npreset = "truncate"\n' \
        '\n[[configs]]\npreset = "since-last"\n'
    with pytest.raises(ConfigError, match=re.escape(
            "t.toml:15: config 'since-last#2' (line 15) replays exactly what config 'since-last' (line 9) does "
            "(same preset, parameters, prompt, model and window; expected each configuration once: remove one")):
        _units(text)


def test_overlapping_grids_of_two_configs_name_both_lines() -> None:
    text = _ONE_DATASET + ('\n[[configs]]\npreset = "since-last"\ngrid = { keep_last = [2, 5] }\n'
                           '\n[[configs]]\npreset = "since-last"\ngrid = { keep_last = [5, 9] }\n')
    with pytest.raises(ConfigError, match=r"^t\.toml:13: config 'since-last\[keep_last=5\]#2' \(line 13\) replays "
                       r"exactly what config 'since-last\[keep_last=5\]' \(line 9\) does"):
        _units(text)


def test_a_truncate_point_the_curve_has_too_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROLLSUM_TRUNCATE_CURVE", raising=False)
    text = _ONE_DATASET + '\n[[configs]]\npreset = "truncate"\nparams = { keep = 2, max_tokens = 4000 }\n'
    with pytest.raises(ConfigError, match=re.escape(
            "t.toml:9: config 'truncate-curve[keep=2]' (the truncate curve the report adds) replays exactly what "
            "config 'truncate[keep=2,max_tokens=4000]' (line 9) does") + ".*set \\[report\\] truncate_curve = false"):
        _units(text)


@pytest.mark.parametrize(("edit", "needle"), [
    (("seeds = [0, 1]", "seeds = [0, 1, 0]"), "t.toml:5: field 'seeds': expected each value listed once"),
    (("context_window = 4000", "context_window = [4000, 4000]"),
     "t.toml:4: field 'context_window': expected each value listed once"),
    (('grid = { keep_last = [2, 5] }', 'grid = { keep_last = [2, 5, 2] }'),
     "t.toml:17: field 'configs[0].grid.keep_last': expected each value listed once"),
    (('models = ["extractive"]', 'models = ["extractive", "extractive"]'),
     "t.toml:3: field 'models': expected each value listed once"),
])
def test_a_value_listed_twice_is_refused_at_its_line(edit: tuple[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        _units(SPEC.replace(*edit))


def test_an_unknown_spec_key_lists_the_allowed_ones_and_the_near_miss() -> None:
    # the wording a questions sidecar's unknown key uses too (`data.checks.unknown_key`)
    with pytest.raises(ConfigError, match=re.escape(
            "t.toml:5: field 'seed': expected one of cache, configs, context_window, datasets, description, "
            "limits, main_model, models, name, probes, projected_model, prompts, qa, report, scorers, seeds, "
            "tune, unit_cache (unknown key; did you mean 'seeds'?)")):
        parse_spec(SPEC.replace("seeds = [0, 1]", "seed = [0, 1]"), "t.toml")


def test_a_bad_prompt_is_refused_at_the_spec_line_and_the_template_line(tmp_path: Path) -> None:
    """Prompts were read only by the run's first engine: "config 'since-last': summarizer
    prompted: p.txt: unknown placeholder" named neither the spec's line nor the template's."""
    template = tmp_path / "p.txt"
    template.write_text("--- system ---\nYou summarize.\n--- user ---\n{transcript} {previous_summary} {nonsense}\n")
    text = SPEC.replace('preset = "full-context"', f'preset = "full-context"\nprompts = ["{template}"]')
    with pytest.raises(ConfigError) as err:
        parse_spec(text, "t.toml")
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "[[configs]]" in s
                and "full-context" in text.splitlines()[n])
    assert f"t.toml:{line}: field 'configs[1].prompts': {template}:4: unknown placeholder {{nonsense}}" \
        in str(err.value)
    with pytest.raises(ConfigError, match=r"t\.toml:1: field 'prompts': prompt 'nope/v9': no such template"):
        parse_spec('prompts = ["nope/v9"]\n' + SPEC, "t.toml")


@pytest.mark.parametrize(("edit", "needle"), [
    # a second table's unknown key: its line, not none (occurrence counted tables, not the key)
    (('name = "lc"', 'name = "lc"\nsorce = 1'), "t.toml:13: field 'datasets[1].sorce'"),
    (('preset = "full-context"', 'preset = "full-context"\nlable = "x"'), "t.toml:21: field 'configs[1].lable'"),
    # a config's own models: its line, not the top-level `models` (line 3)
    (('preset = "full-context"', 'preset = "full-context"\nmodels = ["x"]'), "t.toml:21: field 'configs[1].models'"),
])
def test_a_mistake_in_the_nth_table_names_the_line_in_that_table(edit: tuple[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        _units(SPEC.replace(*edit))
    assert needle in str(err.value)


def test_a_misspelt_preset_parameter_gets_the_near_miss() -> None:
    with pytest.raises(ConfigError, match=r"configs\[0\]\.grid\.keep_lst': .*did you mean 'keep_last'\?"):
        _units(SPEC.replace("keep_last = [2, 5]", "keep_lst = [2, 5]"))


def test_an_integer_too_long_to_read_is_one_line_at_its_line() -> None:
    # tomllib let int()'s ValueError (past 4,300 digits) through: a traceback
    with pytest.raises(ConfigError,
                       match=r"t\.toml: not valid TOML: an integer of more than 4,300 digits \(at line 4\)"):
        _units(SPEC.replace("context_window = 4000", "context_window = " + "9" * 5000))


@pytest.mark.parametrize(("edit", "where"), [
    (('models = ["extractive"]', 'models = ["anthropic:claude-haku-4-5"]'), "t.toml:3: field 'models'"),
    (('seeds = [0, 1]', 'seeds = [0, 1]\nscorers = ["qa"]\n[qa]\nmodel = "anthropic:claude-haku-4-5"'),
     "t.toml:8: field 'qa.model'"),
    (('seeds = [0, 1]', 'seeds = [0, 1]\nscorers = ["qa"]\n[qa]\nmodel = "nonsense:x"'), "t.toml:8: field 'qa.model'"),
    (('seeds = [0, 1]', 'seeds = [0, 1]\nscorers = ["qa"]\n[qa]\nmodel = "fake"\njudge = true\n'
                        'judge_model = "record:c.jsonl:anthropic:claude-haku-4-5"'),
     "t.toml:10: field 'qa.judge_model'"),
])
def test_a_model_the_sdk_does_not_know_is_named_with_its_file_and_field(edit: tuple[str, str], where: str) -> None:
    """A misspelt Anthropic model name passed the spec check (only the spec's form was checked,
    and a ``[qa] model`` not even that) and failed when the sweep built the model, in one line
    naming neither the file nor the field."""
    with pytest.raises(ConfigError) as err:
        parse_spec(SPEC.replace(*edit), "t.toml")
    assert str(err.value).startswith(where), str(err.value)
    if "haku" in edit[1]:
        assert "did you mean 'claude-haiku-4-5'?" in str(err.value)
        # the library's allow_unknown_model=True is not something a spec can say
        assert "allow_unknown_model" not in str(err.value) and "pip install -U anthropic" in str(err.value)

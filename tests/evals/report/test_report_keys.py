"""Short stable configuration keys, the legend, grid views, and plots that never overlap labels."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from rollsum_evals import plots
from rollsum_evals.report import write_report
from rollsum_evals.report_keys import config_keys, config_params, grid_views, legend_rows

from tests.evals.report.fakerun import make_run

LABELS = ["truncate", "since-last[keep_last=10,messages_per_summary=5]",
          "since-last[keep_last=2,messages_per_summary=20]", "since-last[keep_last=2,messages_per_summary=5]",
          "full-context"]


def test_keys_follow_the_sorted_labels_with_numbers_as_numbers() -> None:
    keys = config_keys(LABELS)
    assert keys.labels() == ["full-context", "since-last[keep_last=2,messages_per_summary=5]",
                             "since-last[keep_last=2,messages_per_summary=20]",
                             "since-last[keep_last=10,messages_per_summary=5]", "truncate"]
    assert [keys[c] for c in keys.labels()] == ["C1", "C2", "C3", "C4", "C5"]


@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=12, unique=True), st.randoms())
def test_the_same_labels_in_any_order_get_the_same_keys(labels: list[str], rnd: random.Random) -> None:
    shuffled = labels[:]
    rnd.shuffle(shuffled)
    assert dict(config_keys(labels).keys) == dict(config_keys(shuffled + labels[:1]).keys)
    assert sorted(config_keys(labels).keys.values(), key=lambda k: int(k[1:])) == [
        f"C{i}" for i in range(1, len(labels) + 1)]


def _units() -> pd.DataFrame:
    rows: list[dict[str, object]] = []
    for kl in (2, 10):
        for mps in (5, 20):
            rows.append({"config": f"since-last[keep_last={kl},messages_per_summary={mps}]", "preset": "since-last",
                         "param_keep_last": kl, "param_messages_per_summary": mps, "param_trigger_ratio": None})
    rows += [{"config": "token-ratio[trigger_ratio=0.7]", "preset": "token-ratio", "param_keep_last": None,
              "param_messages_per_summary": None, "param_trigger_ratio": 0.7},
             {"config": "token-ratio[trigger_ratio=0.9]", "preset": "token-ratio", "param_keep_last": None,
              "param_messages_per_summary": None, "param_trigger_ratio": 0.9},
             {"config": "truncate", "preset": "truncate", "param_keep_last": None, "param_messages_per_summary": None,
              "param_trigger_ratio": None}]
    units = pd.DataFrame(rows)
    return pd.concat([units, units])  # two conversations each


def test_only_a_preset_that_sweeps_two_parameters_gets_a_grid_view() -> None:
    units = _units()
    params = config_params(units)
    table = units.drop_duplicates("config")[["config", "preset"]].assign(
        retention=np.linspace(0.2, 0.9, 7), cost_usd=np.linspace(0.01, 0.07, 7), status="ok")
    keys = config_keys(table["config"])
    views = grid_views(table, params, keys)
    assert [(v.preset, {v.x, v.y}) for v in views] == [("since-last", {"keep_last", "messages_per_summary"})]
    frame = views[0].frame
    assert len(frame) == 4 and set(frame["key"]) == {keys[c] for c in table["config"][:4]}
    legend = {r[0]: r for r in legend_rows(keys, table, params)}
    assert legend[keys["since-last[keep_last=10,messages_per_summary=5]"]][4] == "keep_last=10, messages_per_summary=5"
    assert legend[keys["token-ratio[trigger_ratio=0.7]"]][4] == "trigger_ratio=0.7"
    assert legend[keys["truncate"]][4] == "–"


def test_crowded_point_labels_never_overlap() -> None:
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    rng = np.random.default_rng(0)
    xs, ys = (1000 + rng.normal(0, 5, 25)).tolist(), (0.9 + rng.normal(0, 0.002, 25)).tolist()
    ax.plot(xs, ys, "o")
    ax.set_xlim(900, 1100)
    ax.set_ylim(0, 1)
    fig.tight_layout()
    texts = plots.place_labels(fig, ax, xs, ys, [f"C{i}" for i in range(1, 26)])
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # the boxes where the labels are drawn (a draw puts each annotation in place)
    renderer = canvas.get_renderer()
    boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the text, not its leader line
    assert len(boxes) == 25
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (texts[i].get_text(), texts[j].get_text())


def test_labels_of_points_far_apart_sit_next_to_their_points() -> None:
    """Each label is measured where it will be drawn: labels of points that are far apart never
    collide, so each takes the first (nearest) place beside its own point, without a leader line."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    xs, ys = [100.0, 500.0, 900.0], [0.2, 0.5, 0.8]
    ax.plot(xs, ys, "o")
    ax.set_xlim(0, 1000)
    ax.set_ylim(0, 1)
    fig.tight_layout()
    texts = [t for t in plots.place_labels(fig, ax, xs, ys, ["C1", "C2", "C3"]) if isinstance(t, Annotation)]
    assert [t.xyann for t in texts] == [plots._OFFSETS[0]] * 3
    assert all(t.arrow_patch is None for t in texts)


def test_a_token_axis_is_log_scaled_only_when_its_range_demands_it() -> None:
    assert plots.wants_log([500, 800, 40_000])
    assert not plots.wants_log([500, 800, 9_000])
    assert not plots.wants_log([0, 10, float("nan")])


def test_plots_name_configurations_by_key_never_by_a_cut_label(tmp_path: Path) -> None:
    long = "since-last[keep_last=6,messages_per_summary=20,summary_max_tokens=400]"
    run = make_run(tmp_path / "run", {long: 0.8, long.replace("=6,", "=60,"): 0.6, "truncate[n=10]": 0.2},
                   tokens={long: 2_000, long.replace("=6,", "=60,"): 9_000, "truncate[n=10]": 90_000})
    out = tmp_path / "out"
    write_report(run, out, n_resamples=200)
    md = (out / "report.md").read_text()
    assert f"| C1 | {long} |" in md  # the legend maps the key back to the full label
    assert "…" not in md.split("## Legend")[1].split("##")[0]


def test_an_interrupted_run_carries_its_banner_in_both_reports(tmp_path: Path) -> None:
    import json

    run = make_run(tmp_path / "run", {"since-last[keep_last=2]": 0.5, "truncate[n=10]": 0.2})
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted", "units_total": 20}))
    html = write_report(run, tmp_path / "out", n_resamples=200).read_text()
    md = (tmp_path / "out" / "report.md").read_text()
    for page in (md, html):
        assert "INTERRUPTED: 16 of 20 units finished; the numbers below are partial" in page
    assert md.index("INTERRUPTED") < md.index("## Verdict") and html.index("INTERRUPTED") < html.index("Verdict")
    complete = make_run(tmp_path / "whole", {"since-last[keep_last=2]": 0.5})
    write_report(complete, tmp_path / "whole-out", n_resamples=200)
    assert "units finished" not in (tmp_path / "whole-out" / "report.md").read_text()


def test_facts_lost_by_the_top_candidate_show_when_full_context_fits_and_ranks_first(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", {"full-context": 1.0, "since-last[keep_last=2]": 0.6, "truncate[n=10]": 0.3})
    write_report(run, tmp_path / "out", n_resamples=200)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| 1 | full-context |" in md  # the baseline fits this window, so it ranks first
    section = md[md.index("## Facts lost by the top configuration"):]
    assert section.startswith("## Facts lost by the top configuration (C2: since-last[keep_last=2])")
    assert "What is fact" in section


def test_a_third_swept_parameter_is_averaged_over_and_named(tmp_path: Path) -> None:
    rows = [{"config": f"p[a={a},b={b},c={c}]", "preset": "p", "param_a": a, "param_b": b, "param_c": c}
            for a in (1, 2) for b in (3, 4, 5) for c in (6, 7)]
    units = pd.DataFrame(rows)
    table = units[["config", "preset"]].assign(retention=np.linspace(0, 1, len(rows)), cost_usd=1.0, status="ok")
    views = grid_views(table, config_params(units), config_keys(table["config"]))
    assert [(v.x, v.y, v.averaged_over) for v in views] == [("b", "a", ("c",)), ("b", "c", ("a",)),
                                                            ("a", "c", ("b",))]
    png = plots.param_heatmap(views[0].frame, views[0].x, views[0].y, tmp_path / "g.png", "p")
    assert png.stat().st_size > 5_000

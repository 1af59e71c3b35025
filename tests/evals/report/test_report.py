import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import matplotlib.image as mpimg
import pytest
from rollsum_evals.analysis import config_table, load, pareto_frontier, summaries_at_checkpoint
from rollsum_evals.cli import main
from rollsum_evals.report import write_report

from rollsum.errors import ConfigError
from tests.evals.report.fakerun import INJECTION, make_run

CONFIGS = {"since-last[keep_last=2]": 0.35, "since-last[keep_last=20]": 0.85, "truncate[n=10]": 0.2}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("runs") / "demo", CONFIGS, errors={"truncate[n=10]": 1})


@pytest.fixture(scope="module")
def built(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(run_dir, tmp_path_factory.mktemp("out"), n_resamples=300)


FIGURES = ("retention_vs_tokens", "context_vs_window", "retention_by_age", "where_facts_die", "cost_split",
           "retention_by_category")
SVG = "{http://www.w3.org/2000/svg}"


def _svg_texts(data: bytes) -> list[str]:
    """The words of an SVG figure: a parsed document whose text is left as <text> elements."""
    root = ElementTree.fromstring(data)
    assert root.tag == f"{SVG}svg"
    assert float(root.attrib["width"].removesuffix("pt")) > 300
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_report_writes_markdown_html_and_svg_figures(built: Path) -> None:
    out = built.parent
    assert built.name == "report.html"
    md = (out / "report.md").read_text()
    for name in FIGURES:
        texts = _svg_texts((out / f"{name}.svg").read_bytes())
        assert any("configuration" in t or "retention" in t or "Cost" in t for t in texts), (name, texts)
        assert f"]({name}.svg)" in md
    assert not list(out.glob("*.png"))


def test_html_is_self_contained_and_every_plot_decodes(built: Path) -> None:
    page = built.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "data:image/png" not in page
    images = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert len(images) == 6
    for data, name in zip(images, FIGURES, strict=True):
        assert base64.b64decode(data) == (built.parent / f"{name}.svg").read_bytes()
        _svg_texts(base64.b64decode(data))


def test_png_figures_on_request(run_dir: Path, tmp_path: Path) -> None:
    """`figures="png"` (`rollsum report --figures png`): the PNGs, linked and embedded as before."""
    page = write_report(run_dir, tmp_path, n_resamples=200, figures="png").read_text()
    assert "data:image/svg" not in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 6
    for data in images:
        png = base64.b64decode(data)
        assert png.startswith(b"\x89PNG")
        pixels = mpimg.imread(__import__("io").BytesIO(png), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 300
    md = (tmp_path / "report.md").read_text()
    assert all(f"]({name}.png)" in md for name in FIGURES) and not list(tmp_path.glob("*.svg"))


def test_an_unknown_figure_format_is_a_config_error(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="figures: expected one of svg, png, got 'jpg'"):
        write_report(run_dir, tmp_path / "out", n_resamples=200, figures="jpg")
    assert not (tmp_path / "out").exists()


def test_conversation_text_is_escaped_in_html(built: Path) -> None:
    page = built.read_text()
    # the only script elements are the drill-down's own (its data escapes every "<")
    assert re.findall(r"<script[^>]*>", page.lower()) == ['<script type="application/json" id="drilldown-data">',
                                                           "<script>"]
    data = page[page.index('id="drilldown-data">'):]
    data = data[: data.index("</script>")]
    assert "<" not in data.removeprefix('id="drilldown-data">') and "\\u003cscript" in data
    assert "&lt;script&gt;window.__pwned=1" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page  # answers of lost facts


def test_ranked_table_puts_the_best_configuration_first(built: Path) -> None:
    md = (built.parent / "report.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert "keep_last=20" in rows[0] and "keep_last=2]" in rows[1]
    assert "1 unit(s) did not finish" in md
    # the configuration with a failed unit is not ranked: it is listed with the reason
    errors = md[md.index("## Errors"):]
    assert "| truncate[n=10] | error | 1 of 8 unit(s) did not finish (error)" in errors
    assert not any(line.startswith("| 3 |") for line in md.splitlines())


def test_config_table_intervals_bracket_the_estimate_and_mark_the_frontier(run_dir: Path) -> None:
    table = config_table(load(run_dir), n_resamples=300)
    assert table["config"].iloc[0] == "since-last[keep_last=20]"
    assert (table["retention_low"] <= table["retention"]).all()
    assert (table["retention"] <= table["retention_high"]).all()
    by = table.set_index("config")
    assert by.loc["truncate[n=10]", "status"] == "error" and not by.loc["truncate[n=10]", "pareto"]
    assert by["rank"].isna()["truncate[n=10]"]
    assert (by.loc["truncate[n=10]", "n_units"], by.loc["truncate[n=10]", "n_units_failed"]) == (8, 1)
    assert by.loc["truncate[n=10]", "n_conversations"] == 7  # numbers come from the finished units


def test_pareto_frontier_keeps_only_undominated_points() -> None:
    tokens = [100.0, 200.0, 150.0, 300.0]
    retention = [0.5, 0.9, 0.4, 0.8]
    assert pareto_frontier(tokens, retention) == [0, 1]


def test_checkpoint_shows_both_summaries_at_the_same_turn(run_dir: Path) -> None:
    cp = summaries_at_checkpoint(load(run_dir), ["since-last[keep_last=20]", "truncate[n=10]"])
    assert cp is not None
    # fake summaries land at turns 15+15g+ci: keep_last=20 (ci=1) last at 46, truncate (ci=2) at 47
    assert cp.turn == 46
    assert "gen 2" in cp.texts["since-last[keep_last=20]"]
    assert "gen 1" in cp.texts["truncate[n=10]"]
    assert INJECTION in cp.texts["truncate[n=10]"]


def test_trend_plot_appears_when_a_history_exists(run_dir: Path, tmp_path: Path) -> None:
    hist = tmp_path / "h.history.jsonl"
    hist.write_text("".join(json.dumps({"time": f"2025-01-0{i}T00:00:00", "status": "pass",
                                        "configs": {"since-last[keep_last=20]": {"retention": 0.8 + i / 100}}})
                            + "\n" for i in range(1, 4)))
    page = write_report(run_dir, tmp_path / "out", history=hist, n_resamples=200)
    assert (page.parent / "trend.svg").exists()
    assert page.read_text().count("data:image/svg+xml;base64,") == 7


def test_a_history_the_user_names_must_exist(run_dir: Path, tmp_path: Path) -> None:
    """`report --history PATH` with a mistyped PATH used to leave the trend out in silence, exit 0."""
    with pytest.raises(ConfigError, match=r"--history .*nope\.history\.jsonl: no such file"):
        write_report(run_dir, tmp_path / "out", history=tmp_path / "nope.history.jsonl", n_resamples=200)
    assert not (tmp_path / "out").exists()


def test_missing_run_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nope"):
        load(tmp_path / "nope")


def test_cli_report_prints_the_path_and_exits_0(run_dir: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run_dir), "--out", str(tmp_path), "--resamples", "200"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "report.html")


def test_cli_report_builds_with_the_import_time_heap_frozen(run_dir: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`rollsum report` writes the report with the imported modules' objects frozen out of the
    cyclic collector (its full passes walked them again and again), and unfreezes them after,
    also when the report fails, so an in-process caller's heap is collected as before."""
    import gc

    import rollsum_evals.report as report_module

    seen: list[int] = []
    write = report_module.write_report

    def recording(*args: object, **kwargs: object) -> Path:
        seen.append(gc.get_freeze_count())
        return write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(report_module, "write_report", recording)
    # the contract below is for a heap nobody froze (a caller's frozen heap is the last case):
    # whatever an earlier test in this worker left frozen is thawed first, so the test does not
    # depend on which tests ran before it in the same process
    gc.unfreeze()
    before = gc.get_freeze_count()
    assert before == 0
    assert main(["report", str(run_dir), "--out", str(tmp_path / "a"), "--resamples", "200"]) == 0
    assert seen[0] > before + 10_000 and gc.get_freeze_count() == before

    def failing(*_: object, **__: object) -> Path:
        raise ConfigError("no report")

    monkeypatch.setattr(report_module, "write_report", failing)
    assert main(["report", str(run_dir), "--out", str(tmp_path / "b")]) == 2
    assert gc.get_freeze_count() == before
    from rollsum_evals.cli.report_cmd import frozen_heap

    # a caller that froze its own heap: left as it was, neither frozen again nor thawed. Counted
    # by the calls, not by gc.get_freeze_count(): a frozen object that dies leaves the count
    # (it read 2 fewer once, a temporary alive at the freeze)
    real_unfreeze, calls = gc.unfreeze, []
    gc.freeze()
    try:
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        with frozen_heap():
            assert gc.get_freeze_count() > 0
        assert calls == [] and gc.get_freeze_count() > 0
    finally:
        monkeypatch.undo()
        real_unfreeze()


def test_cli_report_imports_with_the_collector_paused_then_builds_frozen(
        run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's modules are imported with the cyclic collector paused (they are long-lived
    and make almost no garbage), then the report is built with that heap frozen; the
    collector's state is restored after the imports, whether it was on or off."""
    import gc
    from contextlib import contextmanager

    import rollsum_evals.cli.report_cmd as report_cmd
    import rollsum_evals.report as report_module

    events: list[str] = []
    pause, freeze, write = report_cmd.collector_paused, report_cmd.frozen_heap, report_module.write_report

    @contextmanager
    def recorded(name: str, inner: Any) -> Iterator[None]:
        with inner():
            events.append(f"{name}: collector {'on' if gc.isenabled() else 'off'}")
            yield
        events.append(f"{name} done")

    monkeypatch.setattr(report_cmd, "collector_paused", lambda: recorded("paused", pause))
    monkeypatch.setattr(report_cmd, "frozen_heap", lambda: recorded("frozen", freeze))
    def writing(*args: Any, **kwargs: Any) -> Path:
        events.append("write")
        return write(*args, **kwargs)

    monkeypatch.setattr(report_module, "write_report", writing)
    assert main(["report", str(run_dir), "--out", str(tmp_path), "--resamples", "200"]) == 0
    assert events == ["paused: collector off", "paused done", "frozen: collector on", "write", "frozen done"]
    assert gc.isenabled()
    gc.disable()
    try:
        with report_cmd.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()


def test_cli_report_on_a_bad_directory_exits_2_with_one_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "missing" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1

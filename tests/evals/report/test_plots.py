"""How the report's figures are written (plots._save, plots.write_png): what a reader sees must
not change when the writing gets cheaper."""

import io
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from PIL import Image
from rollsum_evals import plots
from rollsum_evals.cli import report_cmd


def _pixels(fig: plots.Figure) -> npt.NDArray[np.uint8]:
    assert isinstance(fig.canvas, plots.FigureCanvasAgg)
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def _drawn_figure() -> plots.Figure:
    fig = plots._figure((4, 3))
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [0, 1, 0.5], marker="o")
    ax.set_title("a title")
    return fig


def test_an_opaque_figure_is_stored_as_rgb_with_savefigs_pixels_and_metadata(tmp_path: Path) -> None:
    fig = _drawn_figure()
    path = plots._save(fig, tmp_path / "f.png")
    reference = io.BytesIO()
    fig.savefig(reference, dpi=100, format="png")  # the same figure, laid out by _save
    with Image.open(path) as image, Image.open(reference) as expected:
        assert image.mode == "RGB" and expected.mode == "RGBA"
        assert np.array_equal(np.asarray(image.convert("RGBA")), np.asarray(expected))
        assert image.info["Software"] == expected.info["Software"]
        assert image.info["dpi"] == expected.info["dpi"]


def test_a_figure_with_transparency_keeps_its_alpha(tmp_path: Path) -> None:
    rgba = np.full((4, 5, 4), 200, dtype=np.uint8)
    rgba[1, 2, 3] = 17  # one pixel not opaque
    plots.write_png(rgba, tmp_path / "t.png", dpi=100)
    with Image.open(tmp_path / "t.png") as image:
        assert image.mode == "RGBA"
        assert np.array_equal(np.asarray(image), rgba)


def _heat(tmp_path: Path, matrix: pd.DataFrame, notes: pd.DataFrame | None = None, *,
          labels: bool = True) -> npt.NDArray[np.uint8]:
    """The pixels of a heatmap of `matrix` (cell labels hidden unless `labels`)."""
    fig = plots._figure((4, 3))
    ax = fig.add_subplot()
    plots._heat_cells(fig, ax, matrix, ".2f", "viridis", "r", notes=notes)
    for artist in ax.get_children():
        if isinstance(artist, plots.CellLabels):
            artist.set_visible(labels)
    fig.canvas.draw()
    return _pixels(fig)


def _ink_rows(diff: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """Runs of rows holding changed pixels: one per text line."""
    rows = np.flatnonzero(diff.any(axis=1))
    runs: list[tuple[int, int]] = []
    for r in rows:
        if runs and r == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], int(r))
        else:
            runs.append((int(r), int(r)))
    return runs


def test_each_cell_shows_its_value_centred_in_its_cell(tmp_path: Path) -> None:
    matrix = pd.DataFrame([[0.1, np.nan], [0.9, 0.5]])
    fig = plots._figure((4, 3))
    ax = fig.add_subplot()
    plots._heat_cells(fig, ax, matrix, ".2f", "viridis", "r")
    fig.canvas.draw()
    with_labels = _pixels(fig)
    diff = (with_labels != _heat(tmp_path, matrix, labels=False)).any(axis=2)
    height = with_labels.shape[0]
    for r in range(2):
        for c in range(2):
            # the cell's box in pixels (display y points up, array rows down)
            (x0, y0), (x1, y1) = ax.transData.transform([(c - 0.5, r + 0.5), (c + 0.5, r - 0.5)])
            rows = slice(height - int(y1), height - int(y0))
            box = diff[rows, int(x0) + 1:int(x1) - 1]
            if np.isnan(matrix.to_numpy(dtype=float)[r, c]):
                assert not box.any()  # an empty cell stays blank
                continue
            ys, xs = np.nonzero(box)
            assert ys.size > 20
            centre_x, centre_y = (xs.min() + xs.max()) / 2, (ys.min() + ys.max()) / 2
            assert abs(centre_x - box.shape[1] / 2) <= 2 and abs(centre_y - box.shape[0] / 2) <= 2
    # a dark cell is written in white, a light one in black
    assert with_labels[diff].min() < 60 and with_labels[diff].max() > 200


def test_a_cell_note_is_a_second_line_under_the_value(tmp_path: Path) -> None:
    matrix = pd.DataFrame([[0.5]])
    notes = pd.DataFrame([["C12"]])
    diff = (_heat(tmp_path, matrix, notes) != _heat(tmp_path, matrix, labels=False)).any(axis=2)
    assert len(_ink_rows(diff)) == 2
    alone = (_heat(tmp_path, matrix) != _heat(tmp_path, matrix, labels=False)).any(axis=2)
    assert len(_ink_rows(alone)) == 1


def test_a_repeated_cell_text_is_rasterised_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    stamp = plots._stamp

    def counted(font: Any, line: str, rgb: tuple[float, float, float]) -> Any:
        calls.append(line)
        return stamp(font, line, rgb)

    monkeypatch.setattr(plots, "_stamp", counted)
    _heat(tmp_path, pd.DataFrame([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]))
    assert sorted(calls) == ["0.00", "1.00"]


def test_cell_labels_are_drawn_upright(tmp_path: Path) -> None:
    """A "T" drawn by `CellLabels`: its widest ink row (the bar) is its top one."""
    fig = plots._figure((2, 2))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_xlim(-1, 1)
    ax.set_ylim(-1, 1)
    fig.canvas.draw()
    blank = _pixels(fig)
    ax.add_artist(plots.CellLabels([plots.Cell(0, 0, ("T",), (0.0, 0.0, 0.0))], fontsize=30))
    fig.canvas.draw()
    ink = (_pixels(fig) != blank).any(axis=2)
    widths = ink.sum(axis=1)
    rows = np.flatnonzero(widths)
    assert rows.size > 10
    assert int(np.argmax(widths)) - rows[0] <= 2  # array rows run top-down: the bar is first


SVG = "{http://www.w3.org/2000/svg}"


def _svg(path: Path) -> ElementTree.Element:
    root = ElementTree.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return root


def _translate(text: ElementTree.Element) -> tuple[float, float]:
    """Where an SVG <text> starts (its baseline's left end): its ``translate(x, y)``."""
    found = re.search(r"translate\(([-\d.e]+)[ ,]+([-\d.e]+)\)", text.attrib["transform"])
    assert found, text.attrib
    return float(found[1]), float(found[2])


def test_an_svg_figure_keeps_its_text_as_plain_text(tmp_path: Path) -> None:
    """``.svg``: words are <text> elements (no glyph outlines), drawn as written: never mathtext,
    never markup."""
    fig = _drawn_figure()
    fig.axes[0].set_xlabel("$\\frac{1}{$ <b>tokens</b> & more")  # user text: not math, not markup
    root = _svg(plots._save(fig, tmp_path / "f.svg"))  # parsed as XML: the markup was escaped
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "a title" in texts and "$\\frac{1}{$ <b>tokens</b> & more" in texts
    assert not [e for e in root.iter() if e.attrib.get("id", "").startswith("DejaVuSans")]  # no glyph paths


def test_the_same_figure_gives_the_same_svg_bytes(tmp_path: Path) -> None:
    """No date, fixed clip-path ids: a report written twice can be compared byte for byte."""
    assert (plots._save(_drawn_figure(), tmp_path / "a.svg").read_bytes()
            == plots._save(_drawn_figure(), tmp_path / "b.svg").read_bytes())


def test_a_figure_is_written_as_svg_or_png_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"svg or png, not '\.jpg'"):
        plots._save(_drawn_figure(), tmp_path / "f.jpg")
    assert report_cmd.FIGURE_FORMATS == plots.FORMATS  # the CLI's choices, kept without matplotlib
    from rollsum_evals import report_publish  # and the suffixes a report's files are known by

    assert tuple(f".{f}" for f in plots.FORMATS) == report_publish.FIGURE_SUFFIXES


def test_svg_cell_labels_are_text_centred_in_their_cells(tmp_path: Path) -> None:
    """In an SVG heatmap each cell's value is a <text> (not a stamped image), in the cell's
    contrast colour, centred on the cell by its advance and ink; an empty cell has none."""
    matrix = pd.DataFrame([[0.1, np.nan], [0.9, 0.5]])
    fig = plots._figure((4, 3))
    ax = fig.add_subplot()
    plots._heat_cells(fig, ax, matrix, ".2f", "viridis", "r", notes=pd.DataFrame([["C1", "C2"], ["", "C4"]]))
    root = _svg(plots._save(fig, tmp_path / "h.svg"))
    to_fraction = ax.transData + fig.transFigure.inverted()  # figure fractions: the SVG's, at any dpi
    width, height = (float(root.attrib[k].removesuffix("pt")) for k in ("width", "height"))
    assert len(list(root.iter(f"{SVG}image"))) == 2  # the cells' colours and the colour bar: no text stamps
    cells = {t.text: t for t in root.iter(f"{SVG}text") if t.text in {"0.10", "0.90", "0.50", "C1", "C4"}}
    assert set(cells) == {"0.10", "0.90", "0.50", "C1", "C4"}
    assert "nan" not in {t.text for t in root.iter(f"{SVG}text")}
    metrics = TextToPath()
    for (r, c), value, note in (((0, 0), "0.10", "C1"), ((1, 0), "0.90", None), ((1, 1), "0.50", "C4")):
        fx, fy = to_fraction.transform((c, r))
        cx, cy = fx * width, (1 - fy) * height  # SVG y runs down
        middles = []
        for line in (value, note) if note else (value,):
            x, y = _translate(cells[line])
            w, h, d = metrics.get_text_width_height_descent(line, FontProperties(size=7), ismath=False)
            assert abs(x + w / 2 - cx) < 0.5, line
            middles.append(y + d - h / 2)  # the ink's middle (baseline y + descent - half the ink)
        assert abs(sum(middles) / len(middles) - cy) < 0.5
        if note:
            assert middles[0] < middles[1]  # the note is under the value
    dark = plots.matplotlib.colormaps["viridis"](0.0)  # 0.10 is the darkest cell: white text
    assert sum(dark[:3]) < 1.5 and "fill: #ffffff" in cells["0.10"].attrib["style"]
    assert "fill" not in cells["0.90"].attrib["style"]  # a light cell: black, SVG's default fill

"""How the report's figures are written (plots._save, plots.write_png): what a reader sees must
not change when the writing gets cheaper."""

import io
from pathlib import Path

import numpy as np
from PIL import Image
from rollsum_evals import plots


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

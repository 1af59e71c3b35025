"""The report's figures, one function per figure, each writing one SVG or PNG file.

A figure is laid out on an Agg canvas (no display on CI or nightly machines) and written in the
format its path names (`FORMATS`): ``.svg`` through matplotlib's SVG backend with text left as
text (`_save`), ``.png`` rasterised by Agg. Every function
takes plain tables and a path and returns the path, so the report decides what to draw and
tests can draw one figure at a time. Figures use a figure object, never pyplot's global
"current figure", so two reports built in one process cannot draw into each other. Every text
is drawn as plain text (`_save`): configuration labels come from user specs, and matplotlib
would otherwise read ``$...$`` in them as mathtext (a label with an unbalanced ``$\\frac{1}{$``
crashed the report).

Over ~400 lines because it holds one function per figure of the report plus the label
placement they share; each function is short and independent, and a figure module per plot would
only scatter the shared styling.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, cast

import matplotlib

matplotlib.use("Agg")

import numpy as np
import numpy.typing as npt
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.ft2font import FT2Font
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from rollsum_evals.analysis import token_axis
from rollsum_evals.verdicts import REFERENCE

AGE_BINS: tuple[float, ...] = (0, 10, 25, 50, 100, 200, 400, math.inf)
MAX_SERIES = 10
"""Line plots past ~10 series are unreadable; the report draws the top configurations only."""
MAX_REFERENCE_LINES = 3
"""References drawn as lines, highest retention first (a grid of overflowing truncates would
otherwise paint the plot with dashes); the rest are listed in the report's section."""


def _figure(figsize: tuple[float, float]) -> Figure:
    """A figure on its own Agg canvas. A bare `Figure` has a placeholder canvas: `tight_layout`
    then measured every text on a throwaway Agg renderer and `savefig` drew on a new one, so the
    text metrics matplotlib caches per renderer were all computed twice. On one canvas the
    layout, the label placement and the drawing share one renderer (the pixels are the same)."""
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


FORMATS: tuple[str, ...] = ("svg", "png")
"""What `_save` writes, by the path's suffix; the report's default is the first (`rollsum report
--figures`). SVG: the figure as vector shapes with its text left as text (``svg.fonttype`` none,
the reader's browser draws the letters), so nothing is rasterised or compressed — the seven
figures of a thresholds report took ~0.9 s instead of ~1.2 s as PNGs (sum of per-figure
minimums, docs/benchmarks.md) and scale without blurring. PNG: 100 dpi pixels, for a viewer or a
tool that does not read SVG."""

SVG_RC: dict[str, object] = {"svg.fonttype": "none", "svg.hashsalt": "rollsum"}
"""Text as ``<text>`` elements (not glyph outlines: the file stays small and its words
searchable), and clip-path ids from a fixed salt so the same figure gives the same bytes."""


def _save(fig: Figure, path: Path) -> Path:
    """Lay `fig` out and write it to `path` as SVG or PNG (its suffix, `FORMATS`)."""
    kind = path.suffix.lstrip(".").lower()
    if kind not in FORMATS:
        raise ValueError(f"{path}: a figure is written as {' or '.join(FORMATS)}, not {path.suffix!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    for text in fig.findobj(Text):  # labels are user text: "$\frac{1}{$" is a label, not math
        text.set_parse_math(False)
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine behind, and `savefig` draws the whole figure
    # once more (rendering disabled) before any figure with an engine; the layout is final here
    fig.set_layout_engine(None)
    if kind == "svg":
        with matplotlib.rc_context(SVG_RC):  # type: ignore[arg-type]
            # no Date: the same figure gives the same bytes (a report can be diffed)
            FigureCanvasSVG(fig).print_svg(path, metadata={"Date": None})
        return path
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    write_png(np.asarray(canvas.buffer_rgba()), path, dpi=fig.dpi)
    return path


PNG_LEVEL = 3
"""zlib level of the report's PNGs. With RGB pixels (`write_png`) level 3 writes files ~3 % smaller
than `savefig`'s RGBA at level 6 in half the encoding time (0.34 -> 0.18 s CPU over a thresholds
report's seven figures); levels 4-6 shrink them 6 % more for 35 % more time, 9 for 0.9 s."""


def write_png(rgba: npt.NDArray[np.uint8], path: Path, *, dpi: float) -> None:
    """A drawn figure (`buffer_rgba`, rows top-down) as a PNG with savefig's metadata. A figure
    on an opaque background has every alpha at 255: its pixels are stored as RGB, a quarter
    fewer bytes to filter and compress for the same image (PIL's per-row filter choice was
    most of savefig's encoding time); a figure with any transparency keeps its alpha."""
    from PIL import Image, PngImagePlugin

    opaque = bool((rgba[..., 3] == 255).all())
    image = Image.fromarray(np.ascontiguousarray(rgba[..., :3]) if opaque else rgba)
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", f"Matplotlib version{matplotlib.__version__}, https://matplotlib.org/")
    image.save(path, format="png", dpi=(dpi, dpi), pnginfo=info, compress_level=PNG_LEVEL)


def _short(label: str, width: int = 38) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def _empty(path: Path, title: str, message: str) -> Path:
    fig = _figure((7, 2.2))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, color="#555555")
    return _save(fig, path)


KEY_AXIS = "configuration (key: see the legend)"
RETENTION_LABEL = "retention (share of answerable asks the context supports, 0–1)"
LOG_RANGE = 20.0
"""A token axis whose largest value is more than this many times its smallest is drawn log-scaled:
on a linear axis the small configurations would pile up against zero."""


def wants_log(values: npt.ArrayLike) -> bool:
    """True when the positive finite values span more than `LOG_RANGE`."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(v.size >= 2 and v.max() / v.min() > LOG_RANGE)


_OFFSETS: tuple[tuple[float, float], ...] = tuple(
    (r * math.cos(a), r * math.sin(a))
    for r in (7, 14, 24, 36, 50, 66, 84, 104, 126, 150)
    for a in ((math.pi / 4 + k * math.pi / 2 for k in range(4)) if r < 24 else
              (k * math.pi / 8 for k in (2, 14, 6, 10, 0, 4, 8, 12, 1, 3, 5, 7, 9, 11, 13, 15))))
"""Candidate label offsets (points): the four diagonals close by, then rings of 16 directions."""
LEADER_FROM = 24.0
"""Labels placed at least this far from their point get a thin leader line to it."""


def place_labels(fig: Figure, ax: Axes, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
                 fontsize: float = 8) -> list[Text]:
    """Annotate points so that no two labels overlap (a small greedy adjustText).

    Each label tries offsets around its point at growing distances and takes the first whose text
    box overlaps no label already placed (points are visited left to right); a label placed far
    from its point is joined to it by a thin leader line. Only when every candidate is taken (a
    pile of points past what any plot can label) does a label overlap, at the farthest ring.
    Labels are short keys (C1, C2, …), so the rings have room for dozens of them."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    placed: list[Bbox] = []
    texts: list[Text] = []
    for i in sorted(range(len(xs)), key=lambda j: (xs[j], ys[j])):
        text = None
        for k, (dx, dy) in enumerate(_OFFSETS):
            far = math.hypot(dx, dy) >= LEADER_FROM
            text = ax.annotate(labels[i], (xs[i], ys[i]), textcoords="offset points", xytext=(dx, dy),
                               fontsize=fontsize, ha="left" if dx >= -0.5 else "right",
                               va="bottom" if dy >= -0.5 else "top",
                               arrowprops={"arrowstyle": "-", "color": "#999999", "lw": 0.6} if far else None)
            # where the text is drawn: `annotate` leaves an identity transform until the first
            # draw, under which the box sat at (dx, dy) pixels from the figure's corner whatever the
            # point, so every label collided with every label at the same offset
            text.update_positions(renderer)
            box = Text.get_window_extent(text, renderer).expanded(1.1, 1.15)
            if k == len(_OFFSETS) - 1 or not any(box.overlaps(b) for b in placed):
                placed.append(box)
                break
            text.remove()
        if text is not None:
            texts.append(text)
    return texts


def retention_vs_tokens(table: pd.DataFrame, path: Path, truncation: pd.DataFrame | None = None) -> Path:
    """Ranked configurations as points with their retention interval, the Pareto frontier joined;
    unranked ones (degraded, broken, infeasible, error) as grey crosses; references (baselines
    that do not fit the window) as dashed horizontal lines, never as candidates; `truncation`
    (columns tokens, retention) as a black line: what keeping the newest messages retains at each
    token figure, the curve a configuration's gain is measured against (`rollsum_evals.gain`).

    `table` is `analysis.config_table`: the x axis is its token figure (`token_axis`).
    """
    title = "Retention vs main-model tokens"
    data = table[table["retention"].notna()] if len(table) else table
    if data.empty:
        return _empty(path, title, "no configuration has a retention figure")
    tokens, xlabel, _ = token_axis(table)
    fig = _figure((9, 5.5))
    ax = fig.add_subplot()
    good = data[data["ranked"]]
    refs = data[data["status"] == REFERENCE]
    other = data[~data["ranked"] & (data["status"] != REFERENCE)]
    x = good[tokens].astype(float).to_numpy()
    y = good["retention"].astype(float).to_numpy()
    lo = np.nan_to_num(np.clip(y - good["retention_low"].astype(float).to_numpy(), 0, None))
    hi = np.nan_to_num(np.clip(good["retention_high"].astype(float).to_numpy() - y, 0, None))
    on_front = good["pareto"].to_numpy(dtype=bool)
    front = np.flatnonzero(on_front)
    front = front[np.argsort(x[front], kind="mergesort")]
    if (~on_front).any():
        ax.errorbar(x[~on_front], y[~on_front], yerr=[lo[~on_front], hi[~on_front]], fmt="o",
                    color="#7a8ca3", ecolor="#b8c4d3", capsize=3, label="ranked")
    if on_front.any():
        ax.errorbar(x[on_front], y[on_front], yerr=[lo[on_front], hi[on_front]], fmt="o",
                    color="#c0392b", ecolor="#e6a39b", capsize=3, label="Pareto frontier (ranked)")
    if len(front) > 1:
        ax.plot(x[front], y[front], "-", color="#c0392b", linewidth=1.2, drawstyle="steps-post")
    if truncation is not None and len(truncation) >= 2:
        ax.plot(truncation["tokens"].astype(float), truncation["retention"].astype(float), "-", color="#1d1d1f",
                linewidth=1.4, marker=".", markersize=4, label="truncation (newest messages) at these tokens")
    if len(other):
        ax.plot(other[tokens].astype(float), other["retention"].astype(float), "x", color="#9b9b9b",
                markersize=8, label="not ranked (degraded, broken, infeasible, error)")
    refs = refs.sort_values("retention", ascending=False, kind="mergesort")
    for r in refs.head(MAX_REFERENCE_LINES).to_dict("records"):
        ratio = r.get("max_context_ratio", math.nan)
        fits = f", {ratio:.1f}× the window" if not math.isnan(float(ratio)) else ""
        ax.axhline(float(r["retention"]), color="#2c3e50", linestyle="--", linewidth=1,
                   label=_short(f"{r['config']} (reference{fits})", 50))
    if len(refs) > MAX_REFERENCE_LINES:
        ax.plot([], [], " ", label=f"+{len(refs) - MAX_REFERENCE_LINES} more references (see their section)")
    labelled = pd.concat([good, other]) if len(other) else good
    log_x = wants_log(labelled[tokens].astype(float).to_numpy())
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel + (" — log scale" if log_x else ""))
    ax.set_ylabel(RETENTION_LABEL)
    ax.set_ylim(-0.02, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()  # labels are placed in the final layout's display coordinates
    place_labels(fig, ax, labelled[tokens].astype(float).tolist(), labelled["retention"].astype(float).tolist(),
                 [str(c) for c in labelled["config"]])
    ax.set_title(title + " (95 % CI, clustered by conversation)")
    return _save(fig, path)


def context_vs_window(table: pd.DataFrame, path: Path) -> Path:
    """Each configuration's largest context of any turn as a multiple of the main model's window."""
    title = "Peak context ÷ main model's window (1.0 = the window is full)"
    data = table[table["max_context_ratio"].notna()] if "max_context_ratio" in table.columns else table.iloc[0:0]
    if data.empty:
        return _empty(path, title, "the run records no context sizes")
    ratio = data["max_context_ratio"].astype(float).to_numpy()
    fig = _figure((9, max(2.5, 0.9 + 0.4 * len(data))))
    ax = fig.add_subplot()
    ys = np.arange(len(data))
    ax.barh(ys, ratio, color=np.where(ratio > 1.0, "#c0392b", "#2e86c1"))
    ax.axvline(1.0, color="#333333", linestyle="--", linewidth=1, label="the window")
    ax.set_yticks(ys, [_short(c) for c in data["config"].astype(str)], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("peak context tokens ÷ context window (ratio; over 1.0 = overflow)")
    ax.set_ylabel(KEY_AXIS)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title)
    return _save(fig, path)


def age_bin_labels(bins: Sequence[float] = AGE_BINS) -> list[str]:
    out = []
    for a, b in itertools.pairwise(bins):
        out.append(f"{int(a)}+" if math.isinf(b) else f"{int(a)}–{int(b) - 1}")
    return out


def retention_by_age(probes: pd.DataFrame, configs: Sequence[str], path: Path,
                     bins: Sequence[float] = AGE_BINS) -> Path:
    """Retention per fact-age bin (turns between the evidence and the question), one line per config."""
    title = "Retention by fact age"
    data = probes[(probes["age_turns"] >= 0) & probes["config"].isin(list(configs))]
    if data.empty:
        return _empty(path, title, "no probes with evidence")
    labels = age_bin_labels(bins)
    binned = pd.cut(data["age_turns"].astype(float), bins=list(bins), right=False, labels=labels)
    grouped = data.assign(age_bin=binned).groupby(["config", "age_bin"], observed=False)["retained"]
    grid, counts = grouped.mean().unstack("age_bin"), grouped.size().unstack("age_bin")
    fig = _figure((9, 5))
    ax = fig.add_subplot()
    xs = np.arange(len(labels))
    shown = [c for c in configs if c in grid.index]
    # n per point: in the tick label when every configuration has the same asks in a bin (the usual
    # case: the same probes, asked at the same turns), beside each point otherwise
    same_n = bool((counts.loc[shown].nunique(axis=0) <= 1).all()) if shown else True
    for cfg in shown:
        ys = np.asarray(grid.loc[cfg].astype(float).to_numpy(), dtype=float)
        (line,) = ax.plot(xs, ys, marker="o", label=_short(cfg))
        if not same_n:
            for x, y, n in zip(xs, ys, counts.loc[cfg].to_numpy(dtype=int), strict=True):
                if math.isfinite(y):
                    ax.annotate(f"n={int(n)}", (x, y), textcoords="offset points", xytext=(4, -10),
                                fontsize=6, color=line.get_color())
    ticks = labels
    if same_n and shown:
        first = counts.loc[shown[0]].to_numpy(dtype=int)
        ticks = [f"{lab}\n(n={n})" for lab, n in zip(labels, first, strict=True)]
    ax.set_xticks(xs, ticks)
    ax.set_xlabel("fact age (turns since the evidence); n = answerable asks per point")
    ax.set_ylabel("retention (share of answerable asks, 0–1)")
    ax.set_ylim(-0.02, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title(title)
    return _save(fig, path)


def _heatmap(matrix: pd.DataFrame, path: Path, title: str, xlabel: str, fmt: str,
             cmap: str, cbar_label: str, ylabel: str = "") -> Path:
    rows, cols = matrix.shape
    fig = _figure((max(8.0, 1.0 + 0.75 * cols + 3.5), max(2.5, 0.9 + 0.38 * rows)))
    ax = fig.add_subplot()
    _heat_cells(fig, ax, matrix, fmt, cmap, cbar_label)
    ax.set_xticks(np.arange(cols), [str(c) for c in matrix.columns], rotation=30, ha="right",
                  fontsize=8)
    ax.set_yticks(np.arange(rows), [_short(str(r)) for r in matrix.index], fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel or KEY_AXIS)
    ax.set_title(title)
    return _save(fig, path)


class Cell(NamedTuple):
    """One heatmap cell's text: its lines (value, then a note such as the configuration keys),
    centred on data point (x, y), in an RGB colour (0-1)."""

    x: float
    y: float
    lines: tuple[str, ...]
    rgb: tuple[float, float, float]


class CellLabels(Artist):
    """The text of every cell of a heatmap, as one artist that renders each distinct line once.

    matplotlib 3.11 draws a `Text` glyph by glyph through FreeType on every draw (a shaping
    pass, then one rasterisation per glyph): ~1 ms per cell, ~0.35 s for the ~340 cells of a
    thresholds report, about as much as the rest of its three heatmaps. Cell texts repeat
    ("1.00", "0.12", "C5"), so each distinct line is rasterised once (`FT2Font.set_text` +
    `draw_glyphs_to_bitmap`, what matplotlib's Agg renderer did up to 3.10) and stamped on every
    cell that shows it. Lines are plain text (never mathtext), centred on the cell by their ink,
    1.2 font sizes apart; the artist takes no part in layout, like the `Text`s it replaces."""

    def __init__(self, cells: Sequence[Cell], fontsize: float) -> None:
        super().__init__()
        self.cells = list(cells)
        self.fontsize = fontsize
        self.set_in_layout(False)
        self.set_zorder(3)  # above the image, as a Text is

    def draw(self, renderer: RendererBase) -> None:
        if not self.get_visible() or self.axes is None or not self.cells:
            return
        prop = FontProperties(size=self.fontsize)
        if not isinstance(renderer, RendererAgg):  # a vector file (SVG): text stays text
            self._draw_as_text(renderer, prop)
            return
        font = get_font(findfont(prop))
        dpi = cast(float, renderer.points_to_pixels(72.0))  # the renderer's dots per inch
        font.set_size(self.fontsize, dpi)
        pitch = 1.2 * self.fontsize * dpi / 72.0
        stamps: dict[tuple[str, tuple[float, float, float]], npt.NDArray[np.uint8]] = {}
        gc = renderer.new_gc()
        to_display = self.axes.transData
        for cell in self.cells:
            cx, cy = to_display.transform((cell.x, cell.y))
            for i, line in enumerate(cell.lines):
                stamp = stamps.get((line, cell.rgb))
                if stamp is None:
                    stamp = stamps[(line, cell.rgb)] = _stamp(font, line, cell.rgb)
                h, w = stamp.shape[:2]
                if not h or not w:  # a blank line: nothing to stamp
                    continue
                # line i of n sits (n - 1) / 2 - i pitches above the centre (display y points up)
                y = cy + ((len(cell.lines) - 1) / 2 - i) * pitch
                renderer.draw_image(gc, round(cx - w / 2), round(y - h / 2), stamp)
        gc.restore()
        self.stale = False

    def _draw_as_text(self, renderer: RendererBase, prop: FontProperties) -> None:
        """Each line as a text element of the vector file, centred on its cell as the stamps
        are: horizontally by its advance, vertically by its ink (measured once per distinct
        line, with the font the figure was laid out in)."""
        assert self.axes is not None
        pitch = 1.2 * cast(float, renderer.points_to_pixels(self.fontsize))
        _, height = renderer.get_canvas_width_height()
        sizes: dict[str, tuple[float, float, float]] = {}
        gc = renderer.new_gc()
        to_display = self.axes.transData
        for cell in self.cells:
            cx, cy = to_display.transform((cell.x, cell.y))
            gc.set_foreground(cell.rgb)
            for i, line in enumerate(cell.lines):
                if not line:
                    continue
                size = sizes.get(line)
                if size is None:
                    size = sizes[line] = renderer.get_text_width_height_descent(line, prop, ismath=False)
                w, h, d = size
                # the ink spans baseline - d .. baseline + h - d: its middle on the line's centre
                middle = cy + ((len(cell.lines) - 1) / 2 - i) * pitch
                baseline = middle - (h - 2 * d) / 2
                y = height - baseline if renderer.flipy() else baseline
                renderer.draw_text(gc, cx - w / 2, y, line, prop, 0.0, ismath=False)
        gc.restore()
        self.stale = False


def _stamp(font: FT2Font, line: str, rgb: tuple[float, float, float]) -> npt.NDArray[np.uint8]:
    """`line` rasterised in colour `rgb`: RGBA rows bottom-up (as `draw_image` takes them), the
    glyphs' coverage as alpha."""
    font.set_text(line, 0.0, flags=get_hinting_flag())
    font.draw_glyphs_to_bitmap(antialiased=bool(matplotlib.rcParams["text.antialiased"]))
    coverage = font.get_image()[::-1]
    image = np.empty((*coverage.shape, 4), dtype=np.uint8)
    image[..., :3] = np.round(np.asarray(rgb) * 255).astype(np.uint8)
    image[..., 3] = coverage
    return image


def _heat_cells(fig: Figure, ax: Axes, matrix: pd.DataFrame, fmt: str, cmap: str, cbar_label: str,
                vmin: float | None = 0.0, vmax: float | None = None, notes: pd.DataFrame | None = None) -> None:
    """Coloured cells with their value written in (and `notes` under it), a labelled colour bar;
    empty cells (NaN) stay blank. A bound left None is the data's own (contrast where the
    values are close; the numbers in the cells keep the absolute level readable)."""
    rows, cols = matrix.shape
    values = matrix.to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    if vmin is None:
        vmin = float(finite.min()) if finite.size else 0.0
    if vmax is None:
        vmax = float(finite.max()) if finite.size else 1.0
    im = ax.imshow(np.ma.masked_invalid(values), aspect="auto", cmap=cmap, vmin=vmin,
                   vmax=vmax if vmax > vmin else vmin + 1.0)
    # every cell's colour at once: norm and colour map are elementwise, so each cell gets the
    # colour a call per cell gave (that call was most of the cells' cost, ~0.3 ms each)
    rgba = np.asarray(im.cmap(im.norm(values)), dtype=float).tolist()
    note_of = notes.to_numpy(dtype=object) if notes is not None else None
    cells: list[Cell] = []
    for r in range(rows):
        for c in range(cols):
            v = values[r, c]
            if np.isfinite(v):
                red, green, blue, _ = rgba[r][c]
                dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
                note = (str(note_of[r, c]),) if note_of is not None and str(note_of[r, c]) else ()
                cells.append(Cell(c, r, (format(v, fmt), *note), (1.0, 1.0, 1.0) if dark else (0.0, 0.0, 0.0)))
    ax.add_artist(CellLabels(cells, fontsize=7))
    bar = fig.colorbar(im, ax=ax, fraction=0.046)
    bar.set_label(cbar_label)


def where_facts_die(probes: pd.DataFrame, configs: Sequence[str], path: Path) -> Path:
    """How many facts were lost at each summary generation (died_at_generation ≥ 0), per config."""
    title = "Where facts die: facts lost per summary generation"
    died = probes[(probes["died_at_generation"] >= 0) & probes["config"].isin(list(configs))]
    if died.empty:
        return _empty(path, title, "no fact was lost inside a summary chain")
    # Chains can be 100+ generations long; later generations are binned so columns stay legible.
    edges = [0, 1, 2, 3, 4, 5, 10, 20, 50, math.inf]
    labels = [f"gen {a}" if b - a == 1 else (f"gen {a}+" if math.isinf(b) else f"gen {a}–{int(b) - 1}")
              for a, b in itertools.pairwise(edges)]
    gen_bin = pd.cut(died["died_at_generation"].astype(float), bins=edges, right=False, labels=labels)
    present = set(died["config"])  # once: in the comprehension it was rebuilt per configuration
    counts = (died.assign(gen=gen_bin).groupby(["config", "gen"], observed=False).size()
              .unstack(fill_value=0)
              .reindex(index=[c for c in configs if c in present], fill_value=0))
    used = counts.columns[(counts.sum(axis=0) > 0).to_numpy()]
    last = max(list(counts.columns).index(c) for c in used)
    counts = counts.iloc[:, : last + 1]
    return _heatmap(counts, path, title, "summary generation (index in the summary chain; gen 0 = first summary)",
                    ".0f", "Reds", "facts lost (count of answerable asks)")


def _col(table: pd.DataFrame, col: str) -> npt.NDArray[np.float64]:
    if col not in table.columns:
        return np.zeros(len(table))
    return np.asarray(table[col].astype(float).fillna(0.0).to_numpy(), dtype=np.float64)


def cost_split(table: pd.DataFrame, path: Path) -> Path:
    """Mean USD per unit by where it was spent: main model, summarizer, judge; hatched, what an
    offline summarizer's calls would have cost at the projected model (so thrash shows in dollars)."""
    title = "Cost per conversation by component (USD, mean over units)"
    if table.empty:
        return _empty(path, title, "no finished units")
    parts = [("cost_main_usd", "main model", "#2e86c1"), ("cost_summarizer_usd", "summarizer", "#f39c12"),
             ("cost_judge_usd", "judge", "#8e44ad")]
    fig = _figure((9, max(2.5, 0.9 + 0.4 * len(table))))
    ax = fig.add_subplot()
    ys = np.arange(len(table))
    left = np.zeros(len(table))
    for col, label, color in parts:
        vals = _col(table, col)
        ax.barh(ys, vals, left=left, color=color, label=label)
        left += vals
    projected = np.clip(_col(table, "projected_summarizer_cost_usd") - _col(table, "cost_summarizer_usd"), 0, None)
    if projected.any():
        ax.barh(ys, projected, left=left, color="none", edgecolor="#f39c12", hatch="///",
                label="summarizer, projected (not spent)")
    ax.set_yticks(ys, [_short(c) for c in table["config"].astype(str)], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("USD per conversation")
    ax.set_ylabel(KEY_AXIS)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title)
    return _save(fig, path)


def retention_by_category(probes: pd.DataFrame, configs: Sequence[str], path: Path) -> Path:
    """Retention per probe category (LoCoMo categories, synthetic kinds) per configuration."""
    title = "Retention by probe category"
    data = probes[probes["config"].isin(list(configs))]
    if data.empty:
        return _empty(path, title, "no probes")
    grid = data.groupby(["config", "category"])["retained"].mean().unstack("category")
    grid = grid.reindex(index=[c for c in configs if c in grid.index])
    return _heatmap(grid.astype(float), path, title, "probe category", ".2f", "viridis",
                    "retention (share of answerable asks, 0–1)")


def retention_trend(history: Sequence[dict[str, object]], configs: Sequence[str], path: Path) -> Path:
    """Retention of each configuration across the regression gate's past runs."""
    title = "Retention trend (regression gate history)"
    if not history:
        return _empty(path, title, "no history yet")
    fig = _figure((9, 4.5))
    ax = fig.add_subplot()
    xs = np.arange(len(history))
    for cfg in configs:
        ys = []
        for entry in history:
            metrics = entry.get("configs")
            value = float("nan")
            if isinstance(metrics, dict) and isinstance(metrics.get(cfg), dict):
                value = float(metrics[cfg].get("retention", float("nan")))
            ys.append(value)
        if not all(math.isnan(v) for v in ys):
            ax.plot(xs, ys, marker="o", label=_short(cfg))
    fails = [i for i, e in enumerate(history) if e.get("status") == "fail"]
    for i in fails:
        ax.axvline(i, color="#c0392b", alpha=0.25, linewidth=6)
    ticks = [str(e.get("time", i))[:10] for i, e in enumerate(history)]
    ax.set_xticks(xs, ticks, rotation=30, ha="right", fontsize=7)
    ax.set_xlabel("gate run (date)")
    ax.set_ylabel("retention (share of answerable asks, 0–1)")
    ax.set_ylim(-0.02, 1.05)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="lower left")
    ax.set_title(title + (" — red bands: gate failed" if fails else ""))
    return _save(fig, path)


def param_heatmap(grid: pd.DataFrame, x: str, y: str, path: Path, title: str) -> Path:
    """Retention and cost side by side over two swept parameters of one preset.

    `grid` has one row per configuration: columns `x`, `y` (parameter values), ``key``,
    ``retention`` and ``cost_usd``. Where a third parameter also varies, a cell is the mean over
    it (the caption says so). Each cell names its configuration key(s) under the value."""
    xs = sorted(grid[x].dropna().unique().tolist())
    ys = sorted(grid[y].dropna().unique().tolist())
    fig = _figure((max(11.0, 3.0 + 2.2 * len(xs)), max(4.5, 2.0 + 0.6 * len(ys))))
    keys = (grid.groupby([y, x])["key"].agg(lambda k: ",".join(sorted(k, key=lambda s: int(s[1:]))))
            .unstack(x).reindex(index=ys, columns=xs).fillna(""))
    # colour scales span the grid's own range: neighbouring grid points differ by a few points of
    # retention, which a 0-1 scale would paint one colour
    panels = (("retention", "retention (share of asks, 0–1)", ".2f", "viridis", "retention"),
              ("cost_usd", "cost (USD per conversation)", ".4f", "magma_r", "cost"))
    for i, (col, label, fmt, cmap, name) in enumerate(panels):
        ax = fig.add_subplot(1, 2, i + 1)
        matrix = grid.groupby([y, x])[col].mean().unstack(x).reindex(index=ys, columns=xs).astype(float)
        _heat_cells(fig, ax, matrix, fmt, cmap, label, vmin=None, vmax=None, notes=keys)
        ax.set_xticks(np.arange(len(xs)), [f"{v:g}" if isinstance(v, float) else str(v) for v in xs])
        ax.set_yticks(np.arange(len(ys)), [f"{v:g}" if isinstance(v, float) else str(v) for v in ys])
        ax.set_xlabel(f"{x} (value)")
        ax.set_ylabel(f"{y} (value)")
        ax.set_title(f"{name} (colours span this grid's range)", fontsize=10)
    fig.suptitle(title)
    return _save(fig, path)


def tune_convergence(points: Sequence[tuple[int, float]], path: Path, *, grid_units: int) -> Path:
    """`rollsum tune`: the best feasible gain found so far against the Units evaluated, with the
    equivalent grid's cost as a vertical line (what the search saved is the distance to it)."""
    title = "Tune convergence: best gain over truncation vs units evaluated"
    if not points:
        return _empty(path, title, "no feasible trial yet")
    fig = _figure((8, 4))
    ax = fig.add_subplot()
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    ax.step(xs, ys, where="post", marker="o", color="#2c7fb8")
    if grid_units:
        ax.axvline(grid_units, color="#7f7f7f", linestyle="--", label=f"equivalent grid: {grid_units:,} units")
        ax.legend(fontsize=8, loc="lower right")
    ax.axhline(0, color="#c0392b", alpha=0.4, linewidth=1)
    ax.set_xlabel("units evaluated (configuration × conversation, distinct)")
    ax.set_ylabel("best gain over truncation")
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    return _save(fig, path)

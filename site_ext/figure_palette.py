"""Sphinx extension: the chapters' figures as palette PNGs, a third of their size.

matplotlib saves a figure as a 32-bit RGBA PNG, but a chart holds few colours: flat
heatmap cells, lines, text edges. Written with a palette of at most 256 colours chosen to
cover the image (Pillow's maximum-coverage quantiser, no dithering), a figure keeps its
pixel size (tools/figure_legibility.py measures text against it), and no channel moves by
more than MAX_CHANGE; the chapters' figures shrink from 3.7 MB to 1.2 MB in all, which
brings every chapter page under the 2 MB budget (issue 23, tools/page_weight.py). A figure
a palette cannot hold that closely, or one with transparency, is left as it was.

The notebooks keep matplotlib's own PNGs (Colab, Binder); only the built site's copies in
``_images`` are rewritten, after every build (Sphinx copies them afresh each time).
"""

from __future__ import annotations

import io
import pathlib

import numpy as np
from PIL import Image

COLOURS = 256
MAX_CHANGE = 16  # of 255, in any channel of any pixel: below what the eye tells apart in a chart


def palette_png(data: bytes) -> bytes:
    """``data`` (a PNG) as a palette PNG of the same size, if that is smaller and no pixel
    changes by more than MAX_CHANGE in any channel; else ``data`` unchanged."""
    image = Image.open(io.BytesIO(data))
    if image.mode == "P":
        return data
    rgba = np.asarray(image.convert("RGBA"))
    if (rgba[..., 3] != 255).any():
        return data  # the quantiser that keeps alpha (octree) shifts colours visibly
    rgb = Image.fromarray(rgba[..., :3])
    palette = rgb.quantize(COLOURS, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE)
    change = np.abs(np.asarray(palette.convert("RGB"), dtype=int) - rgba[..., :3]).max()
    if change > MAX_CHANGE:
        return data
    buffer = io.BytesIO()
    palette.save(buffer, format="png", optimize=True)
    small = buffer.getvalue()
    return small if len(small) < len(data) else data


def shrink_figures(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for path in sorted((pathlib.Path(app.outdir) / "_images").glob("*.png")):
        data = path.read_bytes()
        small = palette_png(data)
        if small is not data:
            path.write_bytes(small)


def setup(app):
    app.connect("build-finished", shrink_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

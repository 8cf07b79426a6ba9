"""Sphinx extension: the chapters' figures as palette PNGs, a third of their size.

matplotlib saves a figure as a 32-bit RGBA PNG, but a chart holds few colours: flat
heatmap cells, lines, text edges. Written with a palette of at most 256 colours, a figure
keeps its pixel size (tools/figure_legibility.py measures text against it); the chapters'
figures shrink from 3.7 MB to 1.3 MB in all, which brings every chapter page under the
2 MB budget (issue 23, tools/page_weight.py).

The palette keeps the EXACT most frequent colours (backgrounds, heatmap cells: a
quantiser alone tinted a diverging map's neutral grey blue, which reads as a sign), and
Pillow's maximum-coverage quantiser, undithered, picks the rest for the other pixels
(text edges, colour bars). A figure in which any channel of any pixel would move by more
than MAX_CHANGE, or one with transparency, is left as it was.

The notebooks keep matplotlib's own PNGs (Colab, Binder); only the built site's copies in
``_images`` are rewritten, after every build (Sphinx copies them afresh each time).
"""

from __future__ import annotations

import io
import pathlib

import numpy as np
from PIL import Image

COLOURS = 256  # the most a PNG palette holds
EXACT = 128  # the most frequent colours kept exactly
MAX_CHANGE = 16  # of 255, in any channel of any pixel


def _palette(colours: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """At most COLOURS colours (k, 3) for an image of ``colours`` (n, 3), each seen
    ``counts`` times: the EXACT most frequent as they are, then a quantiser's pick."""
    if len(colours) <= COLOURS:
        return colours
    exact = np.argsort(-counts, kind="stable")[:EXACT]
    others = np.ones(len(colours), dtype=bool)
    others[exact] = False
    pixels = np.repeat(colours[others], counts[others], axis=0).astype(np.uint8)
    rest = Image.fromarray(pixels.reshape(-1, 1, 3), "RGB").quantize(
        COLOURS - EXACT, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE)
    picked = np.asarray(rest.getpalette()[:3 * (COLOURS - EXACT)]).reshape(-1, 3)  # (k, 3)
    return np.vstack([colours[exact], picked])


def palette_png(data: bytes) -> bytes:
    """``data`` (a PNG) as a palette PNG of the same size, if that is smaller and no pixel
    changes by more than MAX_CHANGE in any channel; else ``data`` unchanged."""
    image = Image.open(io.BytesIO(data))
    if image.mode == "P":
        return data
    rgba = np.asarray(image.convert("RGBA"))
    if (rgba[..., 3] != 255).any():
        return data
    rgb = rgba[..., :3].astype(np.int64)
    packed = (rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2]).ravel()  # (h * w,)
    keys, where, counts = np.unique(packed, return_inverse=True, return_counts=True)
    colours = np.stack([keys >> 16, keys >> 8 & 255, keys & 255], axis=1)  # (n, 3)
    palette = _palette(colours, counts)
    nearest = ((colours[:, None, :] - palette[None, :, :]) ** 2).sum(axis=-1).argmin(axis=1)
    if np.abs(palette[nearest] - colours).max() > MAX_CHANGE:
        return data
    indices = nearest[where.ravel()].reshape(rgb.shape[:2]).astype(np.uint8)  # (h, w)
    small = Image.fromarray(indices, "P")
    small.putpalette(palette.astype(np.uint8).ravel().tolist())
    buffer = io.BytesIO()
    small.save(buffer, format="png", optimize=True)
    return buffer.getvalue() if buffer.tell() < len(data) else data


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

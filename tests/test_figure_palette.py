"""The built site's figures as palette PNGs (site_ext/figure_palette.py): smaller, the same
size in pixels, the most frequent colours exact, no colour moved by more than MAX_CHANGE;
what a palette cannot hold is left alone."""

import io

import numpy as np
from PIL import Image

from attncourse import plotting
from site_ext.figure_palette import EXACT, MAX_CHANGE, palette_png


def png(fig) -> bytes:
    """``fig`` as the inline backend saves it (myst-nb writes these bytes to the site)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight")
    return buffer.getvalue()


def pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"), dtype=int)


def test_a_chart_keeps_its_size_and_colours_in_a_third_of_the_bytes():
    # A diverging map with a colour bar: more than 256 colours, a neutral grey at zero.
    values = np.random.default_rng(0).normal(size=(8, 8))
    values[::2, ::3] = 0.0
    tokens = ["the", "cat", "sat", "on", "the", "mat", "and", "slept"]
    original = png(plotting.annotated_heatmap(values, tokens, tokens, title="scores",
                                              cmap="RdBu_r", vmin=-3, vmax=3))
    small = palette_png(original)
    assert Image.open(io.BytesIO(small)).mode == "P"
    assert len(small) < len(original) / 2, (len(original), len(small))
    before, after = pixels(original), pixels(small)
    assert after.shape == before.shape
    assert np.abs(after - before).max() <= MAX_CHANGE
    colours, counts = np.unique(before.reshape(-1, 4), axis=0, return_counts=True)
    assert len(colours) > 256  # the palette had to choose
    frequent = colours[counts > np.sort(counts)[-EXACT]]  # (< EXACT, 4): ties left out
    kept = (before[..., None, :] == frequent).all(axis=-1).any(axis=-1)  # (h, w)
    assert (after[kept] == before[kept]).all()  # backgrounds and cells: not tinted
    assert palette_png(small) == small  # already a palette: left as it is


def test_an_image_a_palette_cannot_hold_or_with_transparency_is_left_alone():
    rng = np.random.default_rng(1)
    for mode, channels in (("RGB", 3), ("RGBA", 4)):
        noise = rng.integers(0, 256, size=(64, 64, channels), dtype=np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(noise, mode).save(buffer, format="png")
        assert palette_png(buffer.getvalue()) == buffer.getvalue()
    clear = np.zeros((8, 8, 4), dtype=np.uint8)  # two colours, but transparent
    clear[:4, :, :] = 255
    buffer = io.BytesIO()
    Image.fromarray(clear, "RGBA").save(buffer, format="png")
    assert palette_png(buffer.getvalue()) == buffer.getvalue()

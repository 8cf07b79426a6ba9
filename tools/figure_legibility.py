"""How large each text of a figure is on a phone, the way the book shows it.

myst-nb saves a figure through the inline backend: a PNG at the figure's own dpi with
``bbox_inches="tight"``. The page scales the image down to the content column (about
358 CSS px on a 390 px phone) and never up, so a text of ``s`` points ends up
``s * dpi / 72 * min(1, column / png_width)`` CSS px high. Issue #23 asks >= 9 px.
"""

import io
import struct

from matplotlib.figure import Figure
from matplotlib.text import Text

PHONE_COLUMN_PX = 358
LEGIBLE_PX = 9.0


def png_width(fig: Figure) -> int:
    """Width in px of the PNG the inline backend would save for ``fig``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi, bbox_inches="tight")
    return struct.unpack(">I", buffer.getvalue()[16:20])[0]  # IHDR width, big-endian


def text_sizes_px(fig: Figure, column_px: float = PHONE_COLUMN_PX) -> list[tuple[float, str]]:
    """(CSS px, text) for every visible, non-empty text of ``fig`` in a ``column_px`` column."""
    scale = min(1.0, column_px / png_width(fig)) * fig.dpi / 72
    return sorted((float(text.get_fontsize()) * scale, text.get_text())
                  for text in fig.findobj(Text)
                  if text.get_visible() and text.get_text().strip() and _drawn(text))


def _drawn(text: Text) -> bool:
    axes = text.axes
    return axes is None or axes.get_visible()


def smallest_text_px(fig: Figure) -> tuple[float, str]:
    """The smallest text of ``fig`` on a phone: (CSS px, text)."""
    return text_sizes_px(fig)[0]

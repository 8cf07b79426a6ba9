"""Answer boxes: a predict exercise the reader can try on the static page, with no kernel.

``answer_box("ch1-predict-doubling")`` shows a box under the exercise: the reader types a
number and presses Check. The first miss gives the hint (never the answer); the second
miss, a right answer or "Show the answer" gives the answer and its explanation. Like the
explorers it is an anywidget whose JavaScript (answer_box.js) travels in the saved
widget state, so it works on the built site with no kernel, and the same way live.

Everything it says comes from the exercise's declaration in ``attncourse.checks``
(``PREDICTIONS[label]``: answer, tolerance, hint, explanation), which is also what the
notebook's check cell and the grader use: one source of truth. The answer is therefore in
the page's source, where a curious learner can read it; grading never relies on it.
"""

from __future__ import annotations

import anywidget
import traitlets

from attncourse.checks import core, predict
from attncourse.checks.predict import Prediction
from attncourse.explorers.esm import bundle, stylesheet

__all__ = ["AnswerBox", "answer_box"]


class AnswerBox(anywidget.AnyWidget):
    """A kernel-free box for one predict exercise (see the module docstring).

    Holds the exercise's declaration; the box reads, writes and judges numbers as the
    check does (answer_box.js mirrors ``attncourse.checks.predict``'s ``read_number``,
    ``format_number`` and ``judge``), so the page says exactly what the check says.
    """

    _esm = bundle("answer_box.js")
    _css = stylesheet("answer_box.css")

    label = traitlets.Unicode().tag(sync=True)
    prompt = traitlets.Unicode().tag(sync=True)
    answer = traitlets.Float().tag(sync=True)
    tolerance = traitlets.Float().tag(sync=True)
    hint = traitlets.Unicode().tag(sync=True)
    explanation = traitlets.Unicode().tag(sync=True)

    def __init__(self, prediction: Prediction, prompt: str = "Your prediction"):
        super().__init__(
            label=prediction.label, prompt=prompt, answer=prediction.answer,
            tolerance=prediction.tolerance, hint=prediction.hint,
            explanation=prediction.explanation,
        )


def answer_box(label: str, prompt: str = "Your prediction") -> AnswerBox:
    """The answer box of the predict exercise ``label`` (declared in attncourse.checks)."""
    core.load_chapter_of(label)  # declares the chapter's predict exercises
    if label not in predict.PREDICTIONS:
        known = ", ".join(sorted(predict.PREDICTIONS)) or "none"
        raise ValueError(f"no predict exercise is labelled {label!r}; declared: {known}")
    return AnswerBox(predict.PREDICTIONS[label], prompt=prompt)

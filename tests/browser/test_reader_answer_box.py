"""A predict exercise answered on a static page, no kernel: the answer box (attncourse.
answer_box) gives the hint on a first miss, the answer and explanation on a second miss, on
a right answer or on request, and agrees with the notebook's check on what is right."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from attncourse.answer_box import answer_box
from attncourse.checks import core, predict

pytestmark = pytest.mark.browser

LABEL = "ch9-predict-weight"
HINT = "Think about <b>the normaliser</b>."  # markup must show as text
EXPLANATION = "Each row of weights sums to 1, so pool gets 0.3."


@pytest.fixture
def prediction(monkeypatch):
    monkeypatch.setattr(core, "CHECKS", {})
    monkeypatch.setattr(predict, "PREDICTIONS", {})
    predict.predict_exercise(LABEL, answer=0.3, tolerance=0.01, hint=HINT,
                             explanation=EXPLANATION)
    return predict.PREDICTIONS[LABEL]


def try_answer(box, text):
    box.locator("input").fill(text)
    box.get_by_role("button", name="Check").click()
    message = box.locator(".attn-answer-message")
    expect(message).not_to_be_empty()
    return box.get_attribute("data-verdict"), message.text_content()


def test_answer_boxes_with_no_kernel(prediction, site, visit, watched_page):
    page = watched_page
    boxes = [answer_box(LABEL, prompt=f"Box {k}") for k in range(3)]
    visit(site.write_page("answer_boxes.html", boxes, "Answer boxes"))
    first, second, third = (page.locator(".attn-answer").nth(k) for k in range(3))
    expect(first.get_by_label("Box 0:")).to_be_visible()  # the input has its label

    # Not a number: said so, and it does not count as a miss.
    verdict, text = try_answer(first, "about a third")
    assert verdict == "unreadable" and "one number" in text
    # First miss: the hint (as text, markup and all), never the answer.
    verdict, text = try_answer(first, "0.5")
    assert verdict == "hint" and HINT in text and "0.3" not in text
    assert first.locator(".attn-answer-message b").count() == 0
    # Second miss: the answer and its explanation.
    verdict, text = try_answer(first, "0.25")
    assert verdict == "answer" and "the answer is 0.3." in text and EXPLANATION in text

    # Right at once (a fraction is read too), on another box with its own count.
    verdict, text = try_answer(second, "3/10")
    assert verdict == "right" and EXPLANATION in text

    # On request, before any attempt.
    third.get_by_role("button", name="Show the answer").click()
    expect(third.locator(".attn-answer-message")).to_contain_text("The answer is 0.3.")

    # The box and the notebook's check agree on what is right, at the tolerance's edges.
    for value in (0.3, 0.295, 0.3095, 0.2895, 0.32, -0.3):
        verdict, _ = try_answer(second, repr(value))
        assert (verdict == "right") == prediction.accepts(value), value

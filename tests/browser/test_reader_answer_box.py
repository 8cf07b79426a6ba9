"""A predict exercise answered on a static page, no kernel: the answer box (attncourse.
answer_box) gives the hint on a first miss, the answer and explanation on a second miss, on
a right answer or on request, and agrees with the notebook's check on what is right."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

import tools
from attncourse import checks
from attncourse.checks import predict
from attncourse.explorers.answer_box import answer_box
from tests.checks_feedback import empty_registries

pytestmark = pytest.mark.browser

LABEL = "ch9-predict-weight"
HINT = "Think about <b>the normaliser</b>."  # markup must show as text
EXPLANATION = "Each row of weights sums to 1, so pool gets 0.3."


@pytest.fixture
def prediction(monkeypatch):
    empty_registries(monkeypatch)
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


# Each exercise on a page: its label (the admonition's id), title, answer box and links.
_EXERCISES = """() => [...document.querySelectorAll('div.exercise.admonition')].map((node) => ({
  label: node.id,
  title: node.querySelector('.admonition-title').textContent,
  boxes: [...node.querySelectorAll('.attn-answer')].map((box) => box.dataset.label),
  launch: [...node.querySelectorAll('a.attn-launch')].map((a) => [a.textContent, a.href]),
}))"""


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_every_predict_exercise_answers_and_every_implement_one_opens_live(entry, visit,
                                                                          watched_page):
    checks.load_all()  # declares every predict exercise

    page = watched_page
    visit(f"{entry}.html")
    exercises = page.evaluate(_EXERCISES)
    # The theme's launch buttons: every link outside the article's text.
    buttons = set(page.eval_on_selector_all(
        "a[href]", "links => links.filter((a) => !a.closest('article')).map((a) => a.href)"))
    predicts = [e for e in exercises if e["label"] in predict.PREDICTIONS]
    implements = [e for e in exercises if "(Implement" in e["title"]]
    assert predicts and implements, f"{entry}: {[e['title'] for e in exercises]}"
    for exercise in predicts:
        label = exercise["label"]
        assert exercise["boxes"] == [label], f"{entry}: {label} has boxes {exercise['boxes']}"
        declared = predict.PREDICTIONS[label]
        box = page.locator(f'.attn-answer[data-label="{label}"]')
        wrong = declared.answer + 10 * declared.tolerance + 1
        verdict, text = try_answer(box, repr(wrong))
        assert verdict == "hint" and declared.hint in text, (label, text)
        verdict, text = try_answer(box, repr(declared.answer))
        assert verdict == "right" and declared.explanation in text, (label, text)
    for exercise in implements:
        services = {name: href for name, href in exercise["launch"]}
        assert set(services) == {"Colab", "Binder"}, (entry, exercise["title"])
        for href in services.values():  # the same addresses as the theme's launch buttons
            assert f"{entry}.ipynb" in href and href in buttons, href

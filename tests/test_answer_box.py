"""Answer boxes carry their predict exercise's declaration, and only declared ones exist."""

import json

import pytest
from ipywidgets.embed import embed_data

import attncourse.explorers.answer_box as answer_box_module
from attncourse.checks import core, predict
from attncourse.explorers.answer_box import AnswerBox, answer_box


@pytest.fixture
def declared(monkeypatch):
    """One predict exercise declared into empty registries (the course's stay untouched)."""
    monkeypatch.setattr(core, "CHECKS", {})
    monkeypatch.setattr(predict, "PREDICTIONS", {})
    predict.predict_exercise(
        "ch9-predict-weight", answer=0.123456, tolerance=0.005,
        hint="Think about the normaliser.", explanation="The row sums to 1.",
    )
    return predict.PREDICTIONS["ch9-predict-weight"]


def test_a_box_says_what_the_declaration_says(declared):
    box = answer_box("ch9-predict-weight", prompt="Weight of pool")
    assert isinstance(box, AnswerBox)
    assert (box.label, box.answer, box.tolerance) == ("ch9-predict-weight", 0.123456, 0.005)
    assert (box.hint, box.explanation) == (declared.hint, declared.explanation)
    assert (box.answer_text, box.tolerance_text) == ("0.1235", "0.005")  # as the check prints
    assert box.prompt == "Weight of pool"


def test_an_undeclared_label_is_refused_naming_the_declared_ones(declared):
    with pytest.raises(ValueError, match=r"'ch9-predict-wieght'.*ch9-predict-weight"):
        answer_box("ch9-predict-wieght")


def test_the_saved_state_carries_the_script_and_the_exercise(declared):
    box = answer_box("ch9-predict-weight")
    state = embed_data(views=[box], drop_defaults=False)["manager_state"]["state"]
    saved = state[box.model_id]["state"]
    assert "export default" in saved["_esm"]
    assert saved["answer"] == 0.123456 and saved["hint"] == declared.hint
    json.dumps(saved)  # a page can carry it


def test_the_module_reads_the_registry_at_call_time(declared, monkeypatch):
    monkeypatch.setattr(predict, "PREDICTIONS", {})
    with pytest.raises(ValueError, match="declared: none"):
        answer_box_module.answer_box("ch9-predict-weight")

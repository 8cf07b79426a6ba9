"""Answer boxes carry their predict exercise's declaration, only declared ones exist, and
the box (answer_box.js, in Node) reads, writes and judges a number exactly as the check
(attncourse.checks.predict) does, on one table of inputs."""

import json

import pytest
from ipywidgets.embed import embed_data

import attncourse.explorers.answer_box as answer_box_module
from attncourse.checks import predict
from attncourse.explorers.answer_box import AnswerBox, answer_box
from tests.checks_feedback import empty_registries
from tests.node_module import call_in_node


@pytest.fixture
def declared(monkeypatch):
    """One predict exercise declared into empty registries (the course's stay untouched)."""
    empty_registries(monkeypatch)
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


# What readers type: every form read_number accepts, ambiguous ones, and refusals.
TYPED = [
    "0.25", "0,25", ".5", "12.", "-0.3", "+3", "655360", "655,360", "655 360", "655_360",
    "655'360", "1,250", "1,25", "0,250", "1,000,000.5", "1.234,5", "6.5e5", "6.5E-3",
    "6.5 x 10^5", "6.5 × 10^-5", "6.5*10**5", "2^16", "2**16", "10^-3", "-10^2", "3^-2",
    "1/4", "-1/3", " 3 / 8 ", "1/0", "0/5", "25%", "1/4 %", "\u22120.5", "1e400", "2^5000",
    "0^-1", "", "   ", "about a third", "1,2,3", "2 3", "1/2/3", "nan", "inf", "0x10",
    "1.234.567", "12,34,567", "x" * 80,
]
# Numbers every message may show: whole, rounded, tiny, huge, ties, signs.
NUMBERS = [0.0, -0.0, 1.0, 655360.0, -655360.0, 0.3, 0.123456, 12.5, 12.125, 1234.5, 999.96,
           9.9996, 99999.5, 12345.6, 0.00012345, 0.000012345, 2.5e-5, 1e15, 1.5e15,
           123456789012345.6, 1e300, 5e-324, 1 / 3, 2 / 3, 1e-4, 0.001, 0.005, 1e21]


def test_the_box_reads_every_typed_text_as_the_check_does():
    js = call_in_node("answer_box.js", "readNumber", [{"text": t} for t in TYPED],
                      argument="problem.text")
    for text, box in zip(TYPED, js):
        value, message = predict.read_number(text)
        assert (box["value"], box["message"]) == (value, message), text
    assert predict.read_number("655,360")[0] == 655_360  # issue 23: not 655.36


def test_the_box_writes_every_number_as_the_check_does():
    js = call_in_node("answer_box.js", "formatNumber", [{"value": v} for v in NUMBERS],
                      argument="problem.value")
    assert js == [predict.format_number(v) for v in NUMBERS]
    assert predict.format_number(655_360.0) == "655,360"  # issue 24: the box printed 6.554e+05


@pytest.mark.parametrize(("answer", "tolerance"), [(655_360.0, 0.5), (0.123456, 0.005),
                                                   (1 / 3, 0.01), (2.5e-5, 1e-6)])
def test_the_box_and_the_check_give_the_same_verdict_and_text(answer, tolerance):
    """Every readable typed text and a few near the answer, after 0, 1 and 2 misses."""
    prediction = predict.Prediction("ch9-x", answer, tolerance, "Count <b>them</b>.", "Because.")
    values = [v for v, _ in map(predict.read_number, TYPED) if v is not None]
    values += [answer, answer + tolerance, answer - 0.999 * tolerance, answer + 2 * tolerance]
    cases = [{"value": v, "misses": m} for v in values for m in (0, 1, 2)]
    exercise = {"answer": answer, "tolerance": tolerance, "hint": prediction.hint,
                "explanation": prediction.explanation}
    js = call_in_node("answer_box.js", "judge", [exercise | c for c in cases],
                      argument="problem, problem.value, problem.misses")
    for case, box in zip(cases, js):
        verdict, text = predict.judge(prediction, case["value"], case["misses"])
        assert (box["verdict"], box["text"]) == (verdict, text), case


def test_the_check_reads_a_prediction_typed_as_text_as_the_box_does(monkeypatch, capsys):
    empty_registries(monkeypatch)
    monkeypatch.setattr(predict, "PREDICTIONS", {})
    check = predict.predict_exercise("ch9-predict-count", answer=655_360, tolerance=0.5,
                                     hint="Count.", explanation="Four heads.")
    check("655,360")
    assert "you predicted 655,360; the answer is 655,360." in capsys.readouterr().out
    check("about a third")
    assert "write your prediction as one number, such as 0.25; got the text 'about a third'" \
        in capsys.readouterr().out

"""What every test of a check needs: the learner's mode, and the one line a check prints.

Import the fixture with the helper, ``from tests.checks_feedback import feedback,
learner_mode``: pytest applies an autouse fixture to every test of the module that holds
it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from attncourse import checks
from attncourse.checks import core, predict

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def learner_mode(monkeypatch):
    """The learner's mode (no CI mode, no log, the default budget) and no earlier misses."""
    for variable in (checks.MODE_VARIABLE, checks.LOG_VARIABLE, checks.TIMEOUT_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(predict, "_misses", predict._MissCounter())


def empty_registries(monkeypatch) -> None:
    """Empty exercise registries for a test's own declarations. Every chapter's checks are
    loaded first: a chapter module imported while they are empty would declare itself into
    them, and be lost to the tests after this one."""
    checks.load_all()
    monkeypatch.setattr(core, "CHECKS", {})
    monkeypatch.setattr(core, "POINTS", {})


def feedback(capsys, check, *answers, **options) -> str:
    """Run a check; assert it returned None and printed exactly one line; return that line."""
    assert check(*answers, **options) is None
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def verdicts_hold_on_seeds(capsys, monkeypatch, module, cases: str, check, right, wrong, named=(),
                           seeds=range(50)) -> None:
    """Issue #21 item 13: with ``module.<cases>`` (the check's draw of its inputs) drawn from
    each seed in turn, ``check`` passes ``right`` and fails every answer of ``wrong``, the
    k-th naming its mistake with ``named[k]`` where given."""
    drawn = getattr(module, cases)
    for seed in seeds:
        monkeypatch.setattr(module, cases, lambda seed=seed: drawn(seed))
        assert "Passed." in feedback(capsys, check, right), seed
        for k, answer in enumerate(wrong):
            line = feedback(capsys, check, answer)
            assert "Not right yet." in line and (k >= len(named) or named[k] in line), (seed, line)

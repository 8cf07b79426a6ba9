"""Feedback files: one per learner, as HTML (self-contained: readable offline, no request to
any host, headings and a captioned table for screen readers, light and dark colours) and
as Markdown with the same content.

The page names the course, the assignment (its name, if the instructor gives one, and its
exercises) and the day it was graded; each exercise shows its result, points and the check's
message, its hint once (the message's own "Hint: ..." moves below it). What a
learner may read only: the fields the judge wrote for the learner, ``Grade.feedback`` (the
course's check on the learner's own answer, hidden tests by number only) and
``Grade.hint``; the solution cells, the hidden tests' code and their inputs are never
read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from attncourse.instructor import model
from attncourse.instructor.gradebook import late
from attncourse.instructor.gradebook.ledger import file_name
from attncourse.instructor.gradebook.report import markdown_text, write_index
from attncourse.instructor.judge import learner_message
from attncourse.instructor.model import Grade

RESULTS = {  # the status as a learner reads it (as it is, or in other words)
    model.PASSED: model.PASSED, model.COMPLETED: model.COMPLETED, model.FAILED: "not right yet",
    model.NOT_ATTEMPTED: model.NOT_ATTEMPTED, model.NEEDS_REVIEW: "waiting for your instructor's review",
    model.CRASHED: "the notebook stopped before this exercise", model.ERROR: "not graded (see below)",
}


@dataclass(frozen=True)
class Entry:
    """One exercise of one learner, as the feedback shows it."""

    label: str
    title: str
    result: str
    points: float
    max_points: float
    message: str
    hint: str
    override: str


def without_hint(message: str, hint: str) -> str:
    """``message`` without the "Hint: ``hint``" it may hold (the feedback shows the hint
    below it, once)."""
    return " ".join(message.replace(f"Hint: {hint}", "").split()) if hint else message


def result(row: Grade) -> str:
    """What the grader found, and that the instructor set the points after it if they did
    (an override always has a note: "not attempted" beside 2 of 3 points would puzzle)."""
    found = RESULTS.get(row.status, row.status)
    return f"{found}; points set by your instructor" if row.override else found


def entries(rows: list[Grade], titles: dict[str, str]) -> list[Entry]:
    return [Entry(row.exercise, titles.get(row.exercise, ""), result(row), row.points,
                  row.max_points, without_hint(learner_message(row), row.hint), row.hint, row.override)
            for row in rows]


def assignment_line(rows: list[Grade], assignment: str | None) -> str:
    """What was graded and when: "Attention homework (exercises ch1-a, ch1-b), graded on
    2025-03-14." (the latest day a row was graded, UTC); a Canvas id "(4321)" left out; and
    for late work, when it was submitted and what lateness cost ("2 days late: -20% ...")."""
    labels = ", ".join(dict.fromkeys(row.exercise for row in rows))
    name = re.sub(r"\s*\(\d+\)$", "", (assignment or "").strip())
    what = f"{name} (exercises {labels})" if name else f"Exercises {labels}"
    days = sorted(row.graded_at[:10] for row in rows if row.graded_at)
    shown = next((row for row in rows if late.for_the_learner(row)), None)
    when = shown.submitted_at.split(" (")[0] if shown else ""
    lateness = "" if shown is None else f" Submitted {when}: {shown.late}." if when else f" {shown.late.capitalize()}."
    return (f"{what}, graded on {days[-1]}." if days else f"{what}.") + lateness


def _environment(autoescape: bool) -> jinja2.Environment:
    """HTML escapes every value; Markdown escapes with the ``md`` filter (``markdown_text``)."""
    environment = jinja2.Environment(autoescape=autoescape, undefined=jinja2.StrictUndefined,
                                     trim_blocks=True, lstrip_blocks=True)
    environment.filters["number"] = lambda value: f"{value:g}"
    environment.filters["md"] = markdown_text
    return environment


HTML = _environment(autoescape=True).from_string("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Feedback for {{ learner }}: {{ course }}</title>
<style>
:root { color-scheme: light dark; --text: #1b1b1b; --page: #ffffff; --muted: #4a4a4a; --rule: #c8c8c8;
        --good: #1a6b2f; --bad: #8a1c1c; }
@media (prefers-color-scheme: dark) {
  :root { --text: #ececec; --page: #161616; --muted: #bdbdbd; --rule: #4a4a4a; --good: #7fd99a; --bad: #ff9c9c; }
}
body { font: 1rem/1.5 system-ui, sans-serif; color: var(--text); background: var(--page);
       max-width: 48rem; margin: 0 auto; padding: 1rem; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; font-weight: bold; padding: 0.25rem 0; }
th, td { border-bottom: 1px solid var(--rule); padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }
td.points { text-align: right; white-space: nowrap; }
.full { color: var(--good); }
.none { color: var(--bad); }
.muted { color: var(--muted); }
</style>
</head>
<body>
<main>
<h1>Feedback for {{ learner }}</h1>
<p>{{ course }}: {{ assignment }}</p>
<p>You earned <strong>{{ total|number }} of {{ possible|number }} points</strong>.</p>
<table>
<caption>Your exercises: result and points</caption>
<thead><tr><th scope="col">Exercise</th><th scope="col">Result</th><th scope="col">Points</th></tr></thead>
<tbody>
{% for e in entries %}
<tr><th scope="row"><a href="#{{ e.label }}">{{ e.title or e.label }}</a></th>
<td class="{{ 'full' if e.points >= e.max_points else ('part' if e.points > 0 else 'none') }}">{{ e.result }}</td><td class="points">{{ e.points|number }} / {{ e.max_points|number }}</td></tr>
{% endfor %}
</tbody>
</table>
{% for e in entries %}
<section id="{{ e.label }}" aria-labelledby="{{ e.label }}-heading">
<h2 id="{{ e.label }}-heading">{{ e.title or e.label }}</h2>
<p class="muted">Exercise {{ e.label }}</p>
<p><strong>Result:</strong> {{ e.result }}. <strong>Points:</strong> {{ e.points|number }} of {{ e.max_points|number }}.</p>
{% if e.message %}<p>{{ e.message }}</p>{% endif %}
{% if e.hint %}<p><strong>Hint:</strong> {{ e.hint }}</p>{% endif %}
{% if e.override %}<p><strong>Your instructor's note:</strong> {{ e.override }}</p>{% endif %}
</section>
{% endfor %}
</main>
</body>
</html>
""")

MARKDOWN = _environment(autoescape=False).from_string("""# Feedback for {{ learner|md }}

{{ course|md }}: {{ assignment|md }}

You earned **{{ total|number }} of {{ possible|number }} points**.

| Exercise | Result | Points |
|---|---|---|
{% for e in entries %}
| {{ (e.title or e.label)|md }} | {{ e.result|md }} | {{ e.points|number }} / {{ e.max_points|number }} |
{% endfor %}
{% for e in entries %}

## {{ (e.title or e.label)|md }}

Exercise {{ e.label|md }}. **Result:** {{ e.result|md }}. **Points:** {{ e.points|number }} of {{ e.max_points|number }}.
{% if e.message %}

{{ e.message|md }}
{% endif %}
{% if e.hint %}

**Hint:** {{ e.hint|md }}
{% endif %}
{% if e.override %}

**Your instructor's note:** {{ e.override|md }}
{% endif %}
{% endfor %}
""")


def render(learner: str, rows: list[Grade], titles: dict[str, str], course: str,
           assignment: str | None = None) -> tuple[str, str]:
    """(the HTML, the Markdown) of ``learner``'s feedback."""
    made = entries(rows, titles)
    values = {"learner": learner, "course": course, "assignment": assignment_line(rows, assignment), "entries": made,
              "total": round(sum(e.points for e in made), 2), "possible": sum(e.max_points for e in made)}
    return HTML.render(values), MARKDOWN.render(values)


def write_feedback(rows: list[Grade], titles: dict[str, str], out: Path,
                   course: str = "Attention, step by step", assignment: str | None = None) -> list[Path]:
    """Write ``LEARNER.html`` and ``LEARNER.md`` for every learner of ``rows`` into ``out``
    (``assignment``: its name, shown to the learners), and its INDEX: which files are whose (a
    name not safe as a file's, such as ``jose.garcia``, is written ``jose_garcia.1add29e2``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written, index = [], []
    for learner in dict.fromkeys(row.learner for row in rows):
        html, markdown = render(learner, [row for row in rows if row.learner == learner], titles, course, assignment)
        for suffix, text in ((".html", html), (".md", markdown)):
            path = out / (file_name(learner) + suffix)
            path.write_text(text, encoding="utf-8")
            written.append(path)
        index.append([learner, file_name(learner) + ".html", file_name(learner) + ".md"])
    return [*written, write_index(out, ["html", "markdown"], index)]

"""Benchmark (``make bench``): prints figures, asserts nothing.

1. The book: cold build (empty execution cache, separate output folder), cached rebuild
   (``make book`` again) and each notebook's execution time in the cold build.
2. The explorer in Chromium: median time from an edit to the updated view, painted, next
   to what ``interact`` + matplotlib needs for the same update in a kernel, over EDITS
   edits, for (a) 3 tokens, d_model=4, (b) 16 tokens, 4 heads, d_model=32 and (c) (b)
   with chapter 4's W_O and head switches; and for (c), from a click on a head's switch.
2b. Chapter 5's graph explorer (11 tokens, 6 layers): median time from toggling
   "W_Q = W_K" (every layer recomputed, both graphs redrawn) to the painted view.
2c. Chapter 6's convolution explorer (seq = 32, K = 5): median time from a step of its
   alpha slider to the painted view, against one frame.
2d. Chapter 7's model explorer (two sentences of 16 tokens, 12 heads): median time from
   picking another layer, or another sentence, to the painted maps, against one frame.
3. Chapter 3's training demo (W_Q, W_K, W_V learned in torch): its time on this CPU, with
   the chapter's own settings, against the 30 s the course allows it.
4. Grading: ``grade`` on a fabricated class of CLASS_SIZE learners who hand in chapter 1
   (right, wrong and untouched answers in turn), each in its sandbox, in parallel.
5. Each chapter page from a local server in Chromium (no cache): time from navigation to
   the first contentful paint and to the first painted explorer, the bytes it loads, its
   cumulative layout shift, and the heaviest files (where the time goes), next to the
   figures issue 16 started from and to each page's own figures with the widget manager.

6. Every page of the book and the search page (issue 23): the bytes it loads (budget
   2 MB), its cumulative layout shift (at most 0.01) and its heaviest files.

``python -m tools.bench first-explorer`` (or any section names: build, latency, graph,
convolution, model, training, grading, first-explorer, page-weight) runs only those
sections.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # what a kernel without a display draws with

import numpy as np  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402
from jupyter_cache import get_cache  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

import tools  # noqa: E402
from attncourse.explorers.attention_explorer import AttentionExplorer, explorer_view  # noqa: E402
from attncourse.plotting import annotated_heatmap  # noqa: E402
from tools import page_weight  # noqa: E402

EDITS = 50  # measured updates per case and side
WARM_UP = 3  # updates before measuring: JIT, font caches
FRAME_MS = 16.0  # one frame at 60 Hz
SPEED_UP = 10.0  # how much faster than the matplotlib redraw the explorer should be
STEP = 0.25  # what each edit adds to one entry of X

# Each action runs inside a requestAnimationFrame callback, so the browser renders it in
# that same frame (style, layout, paint) right after the callback returns; a message
# posted from the callback is delivered after that rendering. Its arrival time minus the
# start is the action's cost up to the painted view, with no wait for the next vsync.
# Reading the page's box forces style and layout. `queued`: the explorer redraws in a
# microtask queued by the action; the measurement is queued after it. Every script below
# starts with this helper (see `timing`).
_PAINTED_AFTER = """const paintedAfter = (act, queued = false) => new Promise((resolve) => {
  requestAnimationFrame(() => {
    const start = performance.now();
    act();
    const measure = () => {
      const handled = performance.now() - start;
      document.body.getBoundingClientRect();
      const laidOut = performance.now() - start;
      const channel = new MessageChannel();
      channel.port1.onmessage = () => resolve({ handled, laidOut, painted: performance.now() - start });
      channel.port2.postMessage(null);
    };
    if (queued) queueMicrotask(measure);
    else measure();
  });
});"""


def timing(script):
    """``script`` (an async arrow function's text) with paintedAfter defined in its body."""
    head, body = script.split("=> {\n", 1)
    return f"{head}=> {{\n{_PAINTED_AFTER}\n{body}"


def painted_medians(page, script, arguments, unchanged):
    """Run a timing ``script`` (returning {times, unchanged}) on ``page``: the median of
    its times (ms; one per kind when it times several). Exits, saying ``unchanged`` with
    the count, if some action changed nothing (the bench would time a no-op)."""
    result = page.evaluate(script, arguments)
    if result["unchanged"]:
        sys.exit(f"{result['unchanged']} {unchanged}")
    times = result["times"]
    if isinstance(times, dict):
        return {key: statistics.median(values) for key, values in times.items()}
    return statistics.median(times)


def verdict(met):
    return "met" if met else "MISSED"


# Edits one entry of X after another (see _PAINTED_AFTER); each must change the weights.
_EDIT_TO_PAINT = timing("""async ({ edits, warmUp, step }) => {
  const root = document.querySelector('.attn-explorer');
  const inputs = [...root.querySelectorAll('table[data-role="edit-X"] input')];
  const weights = () => [...root.querySelectorAll('canvas[data-role="weights"]')]
    .map((canvas) => canvas.dataset.values).join();
  const times = { handled: [], laidOut: [], painted: [] };
  let unchanged = 0;
  for (let k = 0; k < warmUp + edits; k++) {
    const input = inputs[(7 * k) % inputs.length];
    const before = weights();
    const edit = await paintedAfter(() => {
      input.value = String(Number(input.value) + step);
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }, true);
    if (weights() === before) unchanged += 1;
    if (k >= warmUp) for (const key in times) times[key].push(edit[key]);
  }
  return { times, unchanged };
}""")


def timed(command):
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tools.ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def build_times():
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    with tempfile.TemporaryDirectory() as output:
        cold = timed([str(jupyter_book), "build", ".", "--all", "-W", "-n", "--keep-going",
                      "--path-output", output])
        records = get_cache(Path(output) / "_build" / ".jupyter_cache").list_cache_records()
        notebooks = sorted((Path(r.uri).relative_to(tools.ROOT).as_posix(),
                            r.data["execution_seconds"]) for r in records)
    cached = timed(["make", "--no-print-directory", "book"])
    print("Book")
    print(f"  cold build (empty execution cache)    {cold:7.1f} s")
    print(f"  cached rebuild (make book again)      {cached:7.1f} s")
    print("  notebook execution in the cold build")
    for name, seconds in notebooks:
        print(f"    {name:<52} {seconds:5.1f} s")


def problem(seq, d_model, n_heads, projections, seed):
    """Explorer arguments: X (seq, d_model) and, if asked, W's (d_model, d_model)."""
    rng = np.random.default_rng(seed)
    matrices = dict(X=rng.standard_normal((seq, d_model)).round(2))
    if projections:
        matrices |= {name: (rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).round(2)
                     for name in ("W_q", "W_k", "W_v")}
    return dict(tokens=[f"t{k}" for k in range(seq)], n_heads=n_heads, **matrices)


def with_output_projection(arguments, seed):
    """(c): chapter 4's explorer at size (b): W_O (editable), a switch per head (head 1
    off), the choice of concatenation or sum."""
    d_model = arguments["X"].shape[1]
    W_o = (np.random.default_rng(seed).standard_normal((d_model, d_model)) / np.sqrt(d_model))
    return arguments | dict(W_o=W_o.round(2), heads_on=[True, False, True, True],
                            editable=("X", "W_o", "heads_on", "combine"))


# (label, page name, explorer arguments); (a) has the size of chapter 1's explorer.
CASES = [
    ("(a) 3 tokens, d_model=4", "small", problem(3, 4, 1, projections=False, seed=0)),
    ("(b) 16 tokens, 4 heads, d_model=32", "large", problem(16, 32, 4, projections=True, seed=1)),
    ("(c) = (b) with W_O and head switches", "heads",
     with_output_projection(problem(16, 32, 4, projections=True, seed=1), seed=2)),
]

# Like _EDIT_TO_PAINT, for a click on a head's switch (head 0 off, on, off, ...): the
# output must change each time.
_SWITCH_TO_PAINT = timing("""async ({ edits, warmUp }) => {
  const root = document.querySelector('.attn-explorer');
  const output = () => root.querySelector('canvas[data-role="output"]').dataset.values;
  const times = [];
  let unchanged = 0;
  for (let k = 0; k < warmUp + edits; k++) {
    const before = output();
    const { painted } = await paintedAfter(() => root.querySelector('[data-role="heads_on"] input').click());
    if (output() === before) unchanged += 1;
    if (k >= warmUp) times.push(painted);
  }
  return { times, unchanged };
}""")


def switch_time(page):
    """Median (ms) from a click on a head's switch to the painted output (page loaded)."""
    return painted_medians(page, _SWITCH_TO_PAINT, {"edits": EDITS, "warmUp": WARM_UP},
                           "head switches left the output unchanged")


def chapter_stylesheets():
    """The stylesheet links of the first notebook page, so that the explorer is styled and
    laid out under the theme's rules as on the site (the pages are equally deep)."""
    first = tools.notebook_pages()[0]
    page = (tools.SITE / f"{first}.html").read_text()
    return "\n".join(re.findall(r'<link rel="stylesheet"[^>]*>', page))


@contextlib.contextmanager
def explorer_page(explorer, title):
    """A page of ``explorer`` alone, with the site's stylesheets, open in Chromium."""
    with contextlib.ExitStack() as stack:
        generated = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        site_url = stack.enter_context(tools.serve(generated))
        page = stack.enter_context(sync_playwright()).chromium.launch(**tools.CHROMIUM).new_page()
        path = tools.write_widget_page(generated, title.replace(" ", "_") + ".html", [explorer],
                                       title, head=chapter_stylesheets())
        page.goto(site_url + path.removeprefix("/"))
        yield page


def explorer_times(page, url):
    """Medians (ms) from the edit to: input handler done, laid out, painted."""
    page.goto(url)
    page.wait_for_selector(".attn-explorer canvas[data-role=weights]")
    return painted_medians(page, _EDIT_TO_PAINT, {"edits": EDITS, "warmUp": WARM_UP, "step": STEP},
                           f"edits left the weights unchanged on {url}")


def matplotlib_time(explorer):
    """Median (ms) of what an interact callback does in a kernel for the same edits:
    recompute with attncourse and draw the weights of every head as an annotated heatmap,
    rendered to PNG as the inline backend does. Less than the explorer shows (no scores,
    no output), and without the comm round trip or the image's trip to the browser: a
    lower bound for the matplotlib side."""
    X, n_heads, tokens = explorer.X.copy(), explorer.n_heads, explorer.tokens
    projections = dict(W_q=explorer.W_q, W_k=explorer.W_k, W_v=explorer.W_v)
    times = []
    for k in range(WARM_UP + EDITS):
        row, col = divmod((7 * k) % X.size, X.shape[1])  # the same edits as in the browser
        X[row, col] += STEP
        start = time.perf_counter()
        _, weights, _ = explorer_view(X, **projections, scale=explorer.scale, n_heads=n_heads)
        for h, head_weights in enumerate(weights.reshape(n_heads, len(tokens), len(tokens))):
            print_figure(annotated_heatmap(head_weights, tokens, tokens, title=f"head {h}",
                                           vmin=0.0, vmax=1.0), "png")
        if k >= WARM_UP:
            times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def latencies():
    print(f"\nEdit to updated view, median of {EDITS} updates (after {WARM_UP} warm-up ones)")
    print(f"  {'':<36}{'explorer: handler':>18}{'laid out':>10}{'painted':>10}"
          f"{'matplotlib':>12}{'speed-up':>10}")
    painted, redraw = {}, {}
    with contextlib.ExitStack() as stack:
        generated = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        site_url = stack.enter_context(tools.serve(generated))
        page = stack.enter_context(sync_playwright()).chromium.launch(**tools.CHROMIUM).new_page()
        for label, name, arguments in CASES:
            explorer = AttentionExplorer(**({"editable": ("X",)} | arguments))
            path = tools.write_widget_page(generated, f"{name}.html", [explorer], label,
                                           head=chapter_stylesheets())
            times = explorer_times(page, site_url + path.removeprefix("/"))
            painted[label], redraw[label] = times["painted"], matplotlib_time(explorer)
            print(f"  {label:<36}{times['handled']:15.1f} ms{times['laidOut']:7.1f} ms"
                  f"{painted[label]:7.1f} ms{redraw[label]:9.0f} ms"
                  f"{redraw[label] / painted[label]:9.0f}x")
            if "heads_on" in arguments:
                switched = switch_time(page)
                print(f"  {label + ': a head switched':<36}{'':>18}{'':>10}{switched:7.1f} ms")
                painted[label + ": a head switched"] = switched
    print("  explorer: X editable, scores, weights and output of every head shown, in a page\n"
          "  with the site's stylesheets (heatmaps print their numbers up to 12 tokens: (a)\n"
          "  does, (b) is colour only); matplotlib: recompute, then one annotated heatmap\n"
          "  of the weights per head rendered to PNG (kernel side only)")

    print()
    for large in (CASES[1][0], CASES[2][0], CASES[2][0] + ": a head switched"):
        print(f"Target: {large} painted within one frame ({FRAME_MS:.0f} ms): "
              f"{painted[large]:.1f} ms, {verdict(painted[large] <= FRAME_MS)}")
    for label, _, _ in CASES:
        ratio = redraw[label] / painted[label]
        print(f"Target: {label} at least {SPEED_UP:.0f}x faster than matplotlib: "
              f"{ratio:.0f}x, {verdict(ratio >= SPEED_UP)}")


# Steps the alpha slider of the convolution explorer (see _PAINTED_AFTER).
_ALPHA_STEP_TO_PAINT = timing("""async ({ edits, warmUp }) => {
  const root = document.querySelector('.conv-explorer');
  const slider = root.querySelector('input[data-role="alpha"]');
  const readout = root.querySelector('[data-role="max-error"]');
  const times = [];
  let unchanged = 0;
  for (let k = 0; k < warmUp + edits; k++) {
    const before = readout.dataset.value;
    const { painted } = await paintedAfter(() => {
      slider.value = String(1.1 + (k % 200) * 0.1); // never the starting 1.0
      slider.dispatchEvent(new Event('input', { bubbles: true }));
    });
    if (readout.dataset.value === before) unchanged += 1;
    if (k >= warmUp) times.push(painted);
  }
  return { times, unchanged };
}""")


def convolution_explorer_time():
    from attncourse.explorers.conv_explorer import ConvolutionExplorer

    rng = np.random.default_rng(32)
    explorer = ConvolutionExplorer(rng.standard_normal(32).round(2), rng.standard_normal(5).round(2))
    with explorer_page(explorer, "convolution explorer") as page:
        page.wait_for_selector(".conv-explorer canvas[data-role=heads]")
        painted = painted_medians(page, _ALPHA_STEP_TO_PAINT, {"edits": EDITS, "warmUp": WARM_UP},
                                  "slider steps changed nothing in the convolution explorer")
    print(f"\nChapter 6's convolution explorer (seq 32, K 5): alpha step to painted view, median "
          f"of {EDITS}: {painted:.1f} ms (target within one frame, {FRAME_MS:.0f} ms: "
          f"{verdict(painted <= FRAME_MS)})")


# Toggles "W_Q = W_K" (see _PAINTED_AFTER).
_TOGGLE_TO_PAINT = timing("""async ({ toggles }) => {
  const box = document.querySelector('.attn-graph-explorer input[data-role="tied"]');
  const times = [];
  for (let k = 0; k < toggles; k++) {
    const { painted } = await paintedAfter(() => {
      box.checked = !box.checked;
      box.dispatchEvent(new Event('change', { bubbles: true }));
    });
    times.push(painted);
  }
  return times;
}""")


def graph_explorer_time():
    from attncourse.examples import tennis_sentence
    from attncourse.explorers.graph_explorer import GraphExplorer

    sentence = tennis_sentence()
    rng = np.random.default_rng(0)  # chapter 5's six layers
    d_model = sentence.X.shape[1]
    W_q, W_k = rng.standard_normal((2, 6, d_model, d_model))
    W_v = rng.standard_normal((6, d_model, d_model)) / np.sqrt(d_model)
    explorer = GraphExplorer(sentence.tokens, sentence.X, W_q, W_k, W_v)
    with explorer_page(explorer, "graph explorer") as page:
        page.wait_for_selector(".attn-graph-explorer svg[data-role=layer-graph]")
        times = page.evaluate(_TOGGLE_TO_PAINT, {"toggles": WARM_UP + EDITS})[WARM_UP:]
    median = statistics.median(times)
    print(f"\nChapter 5 graph explorer (11 tokens, 6 layers): toggle W_Q = W_K to painted, "
          f"median of {EDITS}: {median:.1f} ms (target one frame, {FRAME_MS:.0f} ms: "
          f"{verdict(median <= FRAME_MS)})")


# Picks the next option of one of the model explorer's selects (layer or sentence), see
# _PAINTED_AFTER; the explorer redraws in a microtask queued by the change.
_PICK_TO_PAINT = timing("""async ({ edits, warmUp, role }) => {
  const root = document.querySelector('.model-explorer');
  const select = root.querySelector(`select[data-role="${role}"]`);
  const maps = () => [...root.querySelectorAll('canvas[data-role="head-map"]')]
    .map((canvas) => canvas.dataset.values).join();
  const times = [];
  let unchanged = 0;
  for (let k = 0; k < warmUp + edits; k++) {
    const before = maps();
    const { painted } = await paintedAfter(() => {
      select.value = String((Number(select.value) + 1) % select.options.length);
      select.dispatchEvent(new Event('change', { bubbles: true }));
    }, true);
    if (maps() === before) unchanged += 1;
    if (k >= warmUp) times.push(painted);
  }
  return { times, unchanged };
}""")


def model_explorer_time():
    from attncourse.explorers.model_explorer import DEFAULT_PAIRS, ModelExplorer

    # Two sentences of 16 tokens (with [CLS] and [SEP]), the explorer's largest.
    explorer = ModelExplorer([(DEFAULT_PAIRS[0][0], DEFAULT_PAIRS[2][0])])
    if {len(tokens) for tokens in explorer.tokens} != {16}:
        sys.exit(f"the model explorer's bench sentences are not 16 tokens: {explorer.tokens}")
    with explorer_page(explorer, "model explorer") as page:
        page.wait_for_selector(".model-explorer canvas[data-role=weights]")
        print(f"\nChapter 7's model explorer (16 tokens, 12 heads): pick to painted view, median "
              f"of {EDITS}")
        for role in ("layer", "sentence"):
            painted = painted_medians(page, _PICK_TO_PAINT,
                                      {"edits": EDITS, "warmUp": WARM_UP, "role": role},
                                      f"{role} picks changed no map in the model explorer")
            print(f"  another {role:<8} {painted:5.1f} ms (target within one frame, "
                  f"{FRAME_MS:.0f} ms: {verdict(painted <= FRAME_MS)})")


TRAINING_BUDGET_S = 30.0


def training_time():
    from attncourse.training import make_pronoun_task, train_pronoun_attention

    task = make_pronoun_task(1000, seed=0)  # chapter 3's settings
    start = time.perf_counter()
    train_pronoun_attention(task, d_k=8, steps=200, learning_rate=0.05, seed=0)
    taken = time.perf_counter() - start
    print(f"\nChapter 3 training demo: {taken:.1f} s "
          f"(target under {TRAINING_BUDGET_S:.0f} s: {verdict(taken <= TRAINING_BUDGET_S)})")


CLASS_SIZE = int(os.environ.get("ATTNCOURSE_BENCH_CLASS", "30"))
GRADING_BUDGET_S = 300  # "a class of 30 in a few minutes per chapter"
GRADED_CHAPTERS = os.environ.get("ATTNCOURSE_BENCH_CHAPTERS", "[0-9][0-9]")  # a glob: 04, 0[4-7]


def grading_time():
    """Every chapter graded for a class: half hand in the solved chapter (every exercise
    answered, hidden tests included), half the student version as handed out. The
    discovery of the chapter's hidden inputs (once per chapter, then cached) is timed
    apart, and counts in the budget."""
    import nbformat

    from attncourse.instructor import grade_submissions, make_student_notebook
    from attncourse.instructor.course.solved import course_of
    from attncourse.instructor.course.tags import exercise_labels

    print(f"\nGrading a class of {CLASS_SIZE} per chapter (sandboxed, {os.cpu_count()} at once; "
          f"half solved, half untouched; target under {GRADING_BUDGET_S} s, discovery included; "
          f"load average {os.getloadavg()[0]:.1f}):")
    for chapter in sorted((tools.ROOT / "chapters").glob(f"{GRADED_CHAPTERS}_*.ipynb")):
        solved = nbformat.read(chapter, as_version=4)
        labels = exercise_labels(solved)
        handout = make_student_notebook(solved)
        start = time.perf_counter()
        course_of(tools.ROOT / "chapters", labels)  # the hidden inputs, kept for the grading below
        found = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as folder:
            for k in range(CLASS_SIZE):
                nbformat.write(solved if k % 2 == 0 else handout, Path(folder) / f"learner{k:02d}.ipynb")
            start = time.perf_counter()
            grades, _ = grade_submissions(Path(folder), tools.ROOT / "chapters", assign=labels)
            taken = time.perf_counter() - start
        statuses = sorted({g.status for g in grades})
        print(f"  {chapter.name}: {found + taken:.0f} s (discovery {found:.0f} s, grading {taken:.0f} s, "
              f"{taken / CLASS_SIZE:.1f} s per learner; {', '.join(statuses)}; load average "
              f"{os.getloadavg()[0]:.1f}): {verdict(found + taken <= GRADING_BUDGET_S)}")


# What counts as a painted explorer: the first heatmap or graph of any kind of explorer
# (attention, graph, convolution, model); on a page without one, its first widget (an
# answer box).
EXPLORER_DRAWN = ", ".join(f"{root} {part}" for root in (".attn-explorer", ".attn-graph-explorer",
                                                         ".conv-explorer") for part in ("canvas", "svg"))
WIDGET_DRAWN = ".widget-subarea form"
# Recorded from the start of every navigation: when the first element matching SELECTOR is
# in the DOM, and when the frame that paints it has been rendered (a message posted from a
# requestAnimationFrame callback arrives after that frame's paint).
_FIRST_EXPLORER = """(() => {
  window.__attnShift = 0; // cumulative layout shift (no input on these loads)
  new PerformanceObserver((list) => {
    for (const shift of list.getEntries()) window.__attnShift += shift.value;
  }).observe({ type: 'layout-shift', buffered: true });
  const seen = () => document.querySelector(SELECTOR);
  new MutationObserver((changes, observer) => {
    if (!seen()) return;
    observer.disconnect();
    window.__attnInDom = performance.now();
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => { window.__attnPainted = performance.now(); };
      channel.port2.postMessage(null);
    });
  }).observe(document, { childList: true, subtree: true });
})()"""


def first_drawn(entry):
    """What to wait for on the built page ``entry``, and what it is called."""
    has_explorer = re.search(r'"_anywidget_id": "[\w.]*Explorer"',
                             (tools.SITE / f"{entry}.html").read_text())
    return (EXPLORER_DRAWN, "explorer") if has_explorer else (WIDGET_DRAWN, "answer box")


# Until the page has requested nothing new for a second (MathJax fetches its fonts once it
# typesets, after the load event). Playwright's "networkidle" waited forever on some loads.
_SETTLED = """async () => {
  let seen = -1;
  while (performance.getEntriesByType('resource').length !== seen) {
    seen = performance.getEntriesByType('resource').length;
    await new Promise((later) => setTimeout(later, 1000));
  }
}"""
_PAGE_FIGURES = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const navigation = performance.getEntriesByType('navigation')[0];
  const entries = [performance.getEntriesByType('navigation')[0],
                   ...performance.getEntriesByType('resource')];
  return {
    layoutShift: window.__attnShift,
    firstPaint: paint ? paint.startTime : null, inDom: window.__attnInDom,
    painted: window.__attnPainted, ready: navigation.domContentLoadedEventEnd,
    loaded: navigation.loadEventEnd,
    resources: entries.map((e) => [e.name.replace(location.origin, ''), e.decodedBodySize,
                                   e.responseEnd]),
  };
}"""
TARGET_FIRST_EXPLORER_MS = 1000.0
# Each chapter page as it was with the widget manager (html-manager + require.js), measured
# with this section on 23 Nov 2026 (median of 3 loads; load average 6-10 on 2 cores): ms
# from navigation to the first painted explorer (chapter 7, which had none yet: its answer
# box), MB loaded.
BEFORE_BY_PAGE = {
    "chapters/01_dot_product_similarity": (4194, 7.94),
    "chapters/02_reciprocity_problem": (3450, 7.95),
    "chapters/03_queries_keys_values": (5419, 8.40),
    "chapters/04_multi_head_attention": (4504, 8.14),
    "chapters/05_attention_as_a_graph": (6647, 8.40),
    "chapters/06_attention_versus_convolution": (6186, 7.94),
    "chapters/07_attention_in_a_real_model": (5836, 7.99),
}
LOADS = 3  # cold loads per page: the median is reported
BEFORE = "issue 16, before: first explorer 3-4 s, 7.6 MB per chapter page"


def page_figures(browser, url, selector):
    """One cold load of ``url`` in a fresh context: _PAGE_FIGURES once the first element
    matching ``selector`` is painted and the network is idle."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.add_init_script(_FIRST_EXPLORER.replace("SELECTOR", json.dumps(selector)))
        page.goto(url)
        page.wait_for_function("() => window.__attnPainted !== undefined", timeout=30_000)
        page.wait_for_load_state("load")
        page.evaluate(_SETTLED)
        return page.evaluate(_PAGE_FIGURES)
    finally:
        context.close()


def first_explorer():
    print(f"\nChapter pages from 127.0.0.1, no cache, median of {LOADS} loads ({BEFORE};\n"
          "  'before': each page with the widget manager, BEFORE_BY_PAGE; shift: cumulative "
          "layout shift)")
    print(f"  {'':<40}{'first paint':>12}{'DOM ready':>10}{'load':>9}{'explorer':>10}"
          f"{'before':>9}{'bytes':>9}{'before':>9}{'shift':>7}")
    with contextlib.ExitStack() as stack:
        generated = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        site_url = stack.enter_context(tools.serve(generated))
        browser = stack.enter_context(sync_playwright()).chromium.launch(**tools.CHROMIUM)
        slowest = 0.0
        for entry in tools.notebook_pages():
            selector, drawn = first_drawn(entry)
            loads = [page_figures(browser, f"{site_url}{entry}.html", selector) for _ in range(LOADS)]
            median = {key: statistics.median(load[key] for load in loads)
                      for key in ("firstPaint", "ready", "loaded", "painted")}
            figures = sorted(loads, key=lambda load: load["painted"])[LOADS // 2]
            total = sum(size for _, size, _ in figures["resources"])
            slowest = max(slowest, median["painted"])
            before_ms, before_mb = BEFORE_BY_PAGE.get(entry, (float("nan"),) * 2)
            shift = statistics.median(load["layoutShift"] for load in loads)
            print(f"  {entry:<40}{median['firstPaint']:9.0f} ms{median['ready']:7.0f} ms"
                  f"{median['loaded']:6.0f} ms{median['painted']:7.0f} ms{before_ms:6.0f} ms"
                  f"{total / 1e6:6.2f} MB{before_mb:6.2f} MB{shift:7.3f}"
                  + ("" if drawn == "explorer" else f"  (no explorer: its {drawn})"))
            heaviest = sorted(figures["resources"], key=lambda r: -r[1])[:4]
            for name, size, loaded in heaviest:
                print(f"      {name[-56:]:<56}{size / 1e6:5.2f} MB, loaded at {loaded:5.0f} ms")
    print(f"Target: first explorer painted within {TARGET_FIRST_EXPLORER_MS:.0f} ms of "
          f"navigation on every chapter page: slowest {slowest:.0f} ms, "
          f"{verdict(slowest <= TARGET_FIRST_EXPLORER_MS)}")


def page_weight_figures():
    """Every page of the book (and the search page): bytes loaded, layout shift."""
    print(f"\nEvery page from 127.0.0.1, no cache, light mode, 1280 px (budget: "
          f"{page_weight.BUDGET_BYTES / 1e6:.0f} MB uncompressed, layout shift "
          f"{page_weight.MAX_LAYOUT_SHIFT}; before issue 23: 4.2-4.6 MB, shift up to 0.22)")
    print(f"  {'':<44}{'bytes':>9}{'files':>7}{'shift':>8}  heaviest")
    heaviest_page, largest_shift = 0, 0.0
    with contextlib.ExitStack() as stack:
        generated = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        site_url = stack.enter_context(tools.serve(generated))
        browser = stack.enter_context(sync_playwright()).chromium.launch(**tools.CHROMIUM)
        for entry in [*tools.toc_pages(), "search"]:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            try:
                figures = page_weight.measure(context.new_page(), f"{site_url}{entry}.html", 1000)
            finally:
                context.close()
            heaviest_page = max(heaviest_page, figures["bytes"])
            largest_shift = max(largest_shift, figures["shift"])
            top = ", ".join(f"{name.split('?')[0].rsplit('/', 1)[-1]} {size / 1e3:.0f} kB"
                            for name, size in page_weight.heaviest(figures, 3))
            print(f"  {entry:<44}{figures['bytes'] / 1e6:6.2f} MB{len(figures['files']):7d}"
                  f"{figures['shift']:8.3f}  {top}")
    print(f"Target: every page <= {page_weight.BUDGET_BYTES / 1e6:.0f} MB and layout shift <= "
          f"{page_weight.MAX_LAYOUT_SHIFT}: heaviest {heaviest_page / 1e6:.2f} MB, largest shift "
          f"{largest_shift:.3f}, "
          f"{verdict(heaviest_page <= page_weight.BUDGET_BYTES and largest_shift <= page_weight.MAX_LAYOUT_SHIFT)}")


ATTENTION_MEMORY_SEQ, ATTENTION_MEMORY_D, ATTENTION_MEMORY_BLOCK = 4096, 64, 128
ATTENTION_MEMORY_BUDGET = 16 * 10**6  # bytes: issue #26's bound for the tiled loop


def attention_memory():
    """Chapter 9: peak traced memory of attention at seq 4096, d 64, float64, computed
    directly (the score matrix) and in tiles (attncourse.flash.tiled_attention)."""
    import tracemalloc

    import numpy as np

    from attncourse.attention import scaled_dot_product_attention
    from attncourse.flash import tiled_attention

    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((ATTENTION_MEMORY_SEQ, ATTENTION_MEMORY_D)) for _ in range(3))
    block = ATTENTION_MEMORY_BLOCK
    runs = {"direct (softmax(Q K^T / sqrt d) V)": lambda: scaled_dot_product_attention(Q, K, V),
            f"tiled, blocks of {block}": lambda: tiled_attention(Q, K, V, block, block),
            f"tiled, blocks of {block}, causal": lambda: tiled_attention(Q, K, V, block, block, causal=True)}
    print(f"\nChapter 9: peak traced memory of attention, seq {ATTENTION_MEMORY_SEQ}, d {ATTENTION_MEMORY_D}, "
          f"float64 (the score matrix alone: {ATTENTION_MEMORY_SEQ**2 * 8 / 1e6:.0f} MB)")
    for label, run in runs.items():
        tracemalloc.start()
        start = time.perf_counter()
        try:
            run()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        taken = time.perf_counter() - start
        target = "" if label.startswith("direct") else (
            f"  (target under {ATTENTION_MEMORY_BUDGET / 1e6:.0f} MB: {verdict(peak < ATTENTION_MEMORY_BUDGET)})")
        print(f"  {label:<36}{peak / 1e6:9.1f} MB {taken:7.2f} s{target}")


SEED_SWEEP_BUDGET = 180.0  # seconds that items 12 and 13 of issue #21 may add to make test


def seed_sweeps():
    """Issue #21 items 12-13: the claims tests (>= 10 seeds per claim) and the checks'
    verdicts on 50 draws of their inputs, timed as make test runs them (-n 2)."""
    claims = sorted(str(p.relative_to(tools.ROOT)) for p in (tools.ROOT / "tests").glob("test_claims_ch*.py"))
    checks = ["tests/test_check_seeds_ch1to3.py"] + [
        f"tests/test_checks_ch{n}.py" for n in (4, 5, 6, 7)]
    runs = {"claims over seeds (tests/test_claims_ch*.py)": claims,
            "check verdicts on 50 draws of their inputs": checks + ["-k", "seeds or draws"]}
    print("\nSeed sweeps of issue #21 (pytest -n 2)")
    total = 0.0
    for label, arguments in runs.items():
        seconds = timed([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                         *arguments])
        total += seconds
        print(f"  {label:<52}{seconds:7.1f} s")
    print(f"  {'together':<52}{total:7.1f} s  (budget {SEED_SWEEP_BUDGET:.0f} s: "
          f"{verdict(total <= SEED_SWEEP_BUDGET)})")


SECTIONS = {"build": build_times, "latency": latencies, "graph": graph_explorer_time,
            "convolution": convolution_explorer_time, "model": model_explorer_time,
            "training": training_time,
            "grading": grading_time, "first-explorer": first_explorer,
            "page-weight": page_weight_figures, "attention-memory": attention_memory,
            "seed-sweeps": seed_sweeps}


def main(names=()):
    for name in names or SECTIONS:
        SECTIONS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])

"""attncourse.explorers.esm: each widget's front end is one self-contained ES module."""

import base64
import json
import shutil
import subprocess

import pytest

from attncourse.explorers import esm
from attncourse.explorers.esm import bundle, stylesheet
from tests.explorer_examples import registry_widgets


@pytest.mark.parametrize("name", registry_widgets())
def test_every_widget_module_loads_alone_in_node(name):
    source = registry_widgets()[name]._esm  # what the widget saves: esm.bundle of its front end
    assert 'from "./' not in source  # nothing left to resolve: it has no URL on a page
    encoded = base64.b64encode(source.encode()).decode()
    script = (f"import('data:text/javascript;base64,{encoded}')"
              ".then((m) => console.log(typeof m.default.render))")
    done = subprocess.run([shutil.which("node"), "-e", script], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "function"


def test_a_helper_shared_by_two_imports_is_inlined_once(tmp_path, monkeypatch):
    (tmp_path / "dom.js").write_text("export function el() {}\n")
    (tmp_path / "table.js").write_text('import { el } from "./dom.js";\nexport function table() {}\n')
    (tmp_path / "widget.js").write_text(
        'import { el } from "./dom.js";\nimport { table } from "./table.js";\n'
        "export default { render() {} };\n")
    monkeypatch.setattr(esm, "FRONT_END", tmp_path)
    source = bundle("widget.js")
    assert source.count("export function el()") == 1
    assert source.count("export function table()") == 1
    assert "import" not in source


def test_a_missing_module_is_named(tmp_path, monkeypatch):
    (tmp_path / "widget.js").write_text('import { el } from "./nowhere.js";\n')
    monkeypatch.setattr(esm, "FRONT_END", tmp_path)
    with pytest.raises(FileNotFoundError, match="nowhere.js"):
        bundle("widget.js")


def test_the_explorers_share_one_copy_of_their_helpers():
    for name in ("attention_explorer.js", "graph_explorer.js"):
        source = (esm.FRONT_END / name).read_text()
        assert "function el(" not in source and "function matmul(" not in source
        assert bundle(name).count("export function matmul(") == 1


def test_save_changes_stays_quiet_only_without_a_kernel():
    """sync.js: with no comm (a static page) the page alone follows; any other failure
    of save_changes is a bug and must surface."""
    source = base64.b64encode(bundle("sync.js").encode()).decode()
    script = f"""
      const {{ saveChanges }} = await import('data:text/javascript;base64,{source}');
      const model = (failure) => ({{ values: {{}}, set(k, v) {{ this.values[k] = v; }},
        save_changes() {{ if (failure) throw new Error(failure); }} }});
      const outcome = (failure) => {{
        const m = model(failure);
        try {{ saveChanges(m, {{ scale: 2, heads_on: [true] }}); return m.values; }}
        catch (err) {{ return 'thrown: ' + err.message; }}
      }};
      console.log(JSON.stringify([outcome(null), outcome('no comm channel defined'),
                                  outcome('bad state')]));"""
    done = subprocess.run([shutil.which("node"), "-e", f"(async () => {{ {script} }})()"],
                          capture_output=True, text=True, timeout=60, check=True)
    saved, static_page, bug = json.loads(done.stdout)
    assert saved == static_page == {"scale": 2, "heads_on": [True]}
    assert bug == "thrown: bad state"


def test_the_goal_line_is_styled_once_for_both_explorers_that_show_it():
    from attncourse.explorers.attention_explorer import AttentionExplorer
    from attncourse.explorers.conv_explorer import ConvolutionExplorer

    goal_rules = stylesheet("goal.css")
    assert ".attn-goal {" in goal_rules
    for widget in (AttentionExplorer, ConvolutionExplorer):
        assert widget._css.count(goal_rules) == 1
    assert ".attn-goal" not in (esm.FRONT_END / "attention_explorer.css").read_text()

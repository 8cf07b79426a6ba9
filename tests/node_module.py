"""Call a function of a widget's front-end module in Node, as the browser gets it.

The module is ``attncourse.explorers.esm.bundle(name)``, the very string a widget saves, so the
shared helpers it inlines are tested too.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess

import numpy as np

from attncourse.explorers.esm import bundle


def _plain(value):
    """JSON-ready: arrays become lists, None (an omitted matrix) an empty list."""
    if value is None:
        return []
    return np.asarray(value).tolist() if isinstance(value, np.ndarray) else value


def call_in_node(module: str, function: str, problems: list[dict]) -> list:
    """``function(problem)`` of the bundled ``module`` for each problem, in one Node run."""
    node = shutil.which("node")
    assert node, "Node.js is needed to test the widgets' JavaScript"
    source = base64.b64encode(bundle(module).encode()).decode()
    script = (
        f"const m = await import('data:text/javascript;base64,{source}');"
        "const problems = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        f"console.log(JSON.stringify(problems.map((p) => m.{function}(p))));"
    )
    payload = json.dumps([{k: _plain(v) for k, v in p.items()} for p in problems])
    done = subprocess.run([node, "-e", f"(async () => {{ {script} }})()"], input=payload,
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)

"""The package face is lazy (issue 39, PEP 562): importing a light module of the library loads no torch.

Each import runs in a fresh interpreter, so what an earlier test imported cannot hide what this one loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHART_MODULES = sorted(f"inspector.charts.{p.stem}" for p in (ROOT / "inspector" / "charts").glob("*.py")
                       if p.stem != "__init__")
# The one chart module that hands bertviz its tensors (tests/test_layout.py CHARTS_ALLOWED_TORCH).
TORCH_ALLOWED = {"inspector.charts.bertviz"}
# Chart modules that still reach torch through the analysis module whose results they draw (its result types and
# its word helpers live beside its torch code). This list may only shrink: a test fails when an entry no longer
# loads torch. The fix: the words move beside the charts, the types are imported under TYPE_CHECKING.
KNOWN_TORCH_THROUGH_ANALYSES = {
    "inspector.charts.attribution", "inspector.charts.census", "inspector.charts.compare",
    "inspector.charts.compare_shapes", "inspector.charts.generate", "inspector.charts.groundtruth",
    "inspector.charts.heads", "inspector.charts.inspect", "inspector.charts.lessons",
    "inspector.charts.lessons_decoder", "inspector.charts.roles",
}


def _loaded_after_import(module: str) -> dict[str, bool]:
    script = (f"import importlib, json, sys\nimportlib.import_module({module!r})\n"
              "print(json.dumps({name: name in sys.modules for name in ('torch', 'transformers', 'streamlit')}))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["inspector", "inspector.base.i18n", "inspector.base.errors",
                                    "inspector.base.model_ids", "inspector.base.progress"])
def test_the_base_layer_and_the_package_face_load_no_torch(module):
    assert _loaded_after_import(module) == {"torch": False, "transformers": False, "streamlit": False}


@pytest.mark.parametrize("module", CHART_MODULES)
def test_a_chart_module_loads_no_torch(module):
    loaded = _loaded_after_import(module)
    assert not loaded["streamlit"]
    if module in TORCH_ALLOWED:
        return
    if module in KNOWN_TORCH_THROUGH_ANALYSES:
        assert loaded["torch"], f"{module} no longer loads torch: remove it from KNOWN_TORCH_THROUGH_ANALYSES"
    else:
        assert not loaded["torch"], f"{module} loads torch"


def test_the_known_list_names_chart_modules_only():
    assert CHART_MODULES and KNOWN_TORCH_THROUGH_ANALYSES <= set(CHART_MODULES)


def test_the_public_names_still_load_on_first_use():
    script = ("import sys, inspector\nassert 'torch' not in sys.modules\n"
              "assert {'load_model', 'capture', 'Capture', 'InspectorError', 'ModelSpec'} <= set(dir(inspector))\n"
              "from inspector import load_model, InspectorError\n"
              "import inspector.core.loading as loading\nassert load_model is loading.load_model\n"
              "try:\n    inspector.no_such_name\nexcept AttributeError as err:\n    print('refused', err)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused module 'inspector' has no attribute 'no_such_name'" in done.stdout

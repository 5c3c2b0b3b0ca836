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
    "inspector.charts.atlas",  # issue 41: through the atlas reader, the census's statistics and charts.census
    "inspector.charts.attribution", "inspector.charts.census", "inspector.charts.compare",
    "inspector.charts.compare_shapes", "inspector.charts.generate", "inspector.charts.groundtruth",
    "inspector.charts.heads", "inspector.charts.inspect", "inspector.charts.lessons",
    "inspector.charts.lessons_decoder", "inspector.charts.mechanism", "inspector.charts.roles",
}


def _loaded_after_imports(modules: list[str]) -> dict[str, bool]:
    """Which heavy packages a fresh interpreter holds after importing ``modules`` in turn."""
    script = (f"import importlib, json, sys\nfor name in {modules!r}:\n    importlib.import_module(name)\n"
              "print(json.dumps({name: name in sys.modules for name in ('torch', 'transformers', 'streamlit')}))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_base_layer_the_package_face_and_the_light_charts_load_no_torch():
    """One interpreter imports them all (the machine is shared: one torch-free start-up, not twenty); none loading
    torch means each alone loads none."""
    light = ["inspector", "inspector.base.i18n", "inspector.base.errors", "inspector.base.model_ids",
             "inspector.base.progress",
             *(m for m in CHART_MODULES if m not in TORCH_ALLOWED | KNOWN_TORCH_THROUGH_ANALYSES)]
    assert "inspector.charts.base" in light
    assert _loaded_after_imports(light) == {"torch": False, "transformers": False, "streamlit": False}


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(KNOWN_TORCH_THROUGH_ANALYSES))
def test_a_known_chart_module_still_loads_torch(module):
    """The list may only shrink: an entry that no longer loads torch must leave it."""
    loaded = _loaded_after_imports([module])
    assert not loaded["streamlit"]
    assert loaded["torch"], f"{module} no longer loads torch: remove it from KNOWN_TORCH_THROUGH_ANALYSES"


def test_the_known_list_names_chart_modules_only():
    assert CHART_MODULES and KNOWN_TORCH_THROUGH_ANALYSES <= set(CHART_MODULES)


def test_the_public_names_still_load_on_first_use():
    script = ("import sys, inspector\nassert 'torch' not in sys.modules\n"
              "assert {'load_model', 'capture', 'Capture', 'InspectorError', 'ModelSpec'} <= set(dir(inspector))\n"
              "from inspector import load_model, InspectorError\n"
              "import inspector.core.loading as loading\nassert load_model is loading.load_model\n"
              "assert sorted(inspector.__all__) == sorted(inspector._LAZY)\n"
              "try:\n    inspector.no_such_name\nexcept AttributeError as err:\n    print('refused', err)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused module 'inspector' has no attribute 'no_such_name'" in done.stdout

"""The package face is lazy (issue 39, PEP 562): importing a light module of the library loads no torch.

Each import runs in a fresh interpreter (or a fresh fork of a light one), so what an earlier test imported cannot hide
what this one loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


# A forked child per module, each refusing torch at its first request: the child ends as soon as the module's
# imports ask for torch, so the list is checked without importing torch (nor altair) thirteen times (~12 s each on
# CI's machine).
# The refusal is a BaseException, which no ``except ImportError`` on the way can swallow.
_TORCH_REQUESTS = """
import importlib, json, os, sys, traceback

class TorchRequested(BaseException):
    pass

class RefuseTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise TorchRequested(name)
        return None

# Third-party packages every chart imports load once, before the forks (altair alone takes seconds: its URI grammar).
for light in ("numpy", "pandas", "pyarrow", "altair"):
    importlib.import_module(light)
assert "torch" not in sys.modules
verdicts = {}
for module in MODULES:
    child = os.fork()
    if child == 0:
        sys.meta_path.insert(0, RefuseTorch())
        try:
            importlib.import_module(module)
        except TorchRequested:
            os._exit(3)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(4 if "streamlit" in sys.modules else 0)
    _, status = os.waitpid(child, 0)
    verdicts[module] = {3: "torch", 0: "no torch", 4: "streamlit"}.get(os.waitstatus_to_exitcode(status), "failed")
print(json.dumps(verdicts))
"""


def _torch_requests(modules: list[str]) -> dict[str, str]:
    """Per module, imported alone in a fresh fork of one light interpreter: "torch" when its imports ask for torch,
    "no torch", "streamlit" when it loads streamlit (and no torch), or "failed" (its traceback in the error)."""
    script = f"MODULES = {modules!r}\n{_TORCH_REQUESTS}"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = json.loads(done.stdout.strip().splitlines()[-1])
    assert "failed" not in verdicts.values(), done.stderr[-2000:]
    return verdicts


def test_every_known_chart_module_still_loads_torch():
    """The list may only shrink: an entry that no longer loads torch must leave it. Two controls ride along, so the
    probe cannot pass by answering the same for every module: a light module and one that imports torch."""
    controls = {"inspector.base.i18n": "no torch", "kernels.reference": "torch"}
    verdicts = _torch_requests([*sorted(KNOWN_TORCH_THROUGH_ANALYSES), *controls])
    assert {module: verdicts.pop(module) for module in controls} == controls
    stale = sorted(module for module, verdict in verdicts.items() if verdict != "torch")
    assert not stale, f"{stale} no longer load torch: remove them from KNOWN_TORCH_THROUGH_ANALYSES"


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

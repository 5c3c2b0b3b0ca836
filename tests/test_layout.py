"""The architecture the layout promises (shared/DESIGN.md "Modules", shared/STYLE.md): enforced, not hoped for.

Imports are read with ``ast`` from every statement of a file — top level, inside functions, under ``if`` or
``try`` — so an import moved into a function to dodge a start-up cost still counts. ``importlib.import_module``
and ``__import__`` calls with a literal name count too.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The analyses (DESIGN.md): pure computations over captures and models — they never render. Each name maps to
# whether it must exist: False for a module an open issue adds; the others must, so a rename cannot silently
# empty the rule. inspector/attribution is a module today and a package once issue 15's split lands.
ANALYSES = {"inspector/metrics.py": True, "inspector/redundancy.py": True, "inspector/heads.py": True,
            "inspector/attribution": True, "inspector/experiments.py": True, "inspector/lessons.py": True,
            "inspector/tasks.py": True, "inspector/groundtruth.py": True, "inspector/census.py": False,
            "inspector/compare.py": False, "inspector/capture.py": True, "inspector/loading.py": True,
            "inspector/forward.py": False, "inspector/jsonable.py": True}
RENDERING = ("altair", "vl_convert")
# The charts hand bertviz its tensors: the one chart module that may import torch.
CHARTS_ALLOWED_TORCH = {"inspector/charts/bertviz.py"}
# Where Altair may be imported inside the library: the chart modules and the image export.
ALTAIR_ALLOWED = ("inspector/charts/", "inspector/export.py")
# Known violations of the "analyses reach no Altair" rule, each with the fix. The test fails when an entry is
# no longer needed, so this list can only shrink.
KNOWN_INDIRECT_RENDERING: dict[str, str] = {}


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_imported_by(source: str, package: list[str]) -> set[str]:
    """Every module ``source`` imports anywhere in its body, as absolute dotted names (``from a.b import c``
    gives ``a.b`` and ``a.b.c``; relative imports are resolved against ``package``, the file's package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            found.add(node.args[0].value)
    return found


@functools.cache
def imported_modules(path: Path) -> frozenset[str]:
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    return frozenset(modules_imported_by(path.read_text(encoding="utf-8"), package))


def imports_package(path: Path, package: str) -> bool:
    return any(name == package or name.startswith(package + ".") for name in imported_modules(path))


def _repo_file(module: str) -> Path | None:
    """The file of an in-repository module (``inspector.export`` → inspector/export.py), or None."""
    candidate = ROOT.joinpath(*module.split("."))
    for path in (candidate.with_suffix(".py"), candidate / "__init__.py"):
        if path.is_file():
            return path
    return None


def reaches(path: Path, packages: tuple[str, ...]) -> list[str]:
    """The chain of in-repository modules by which ``path`` imports one of ``packages`` (at any level, through
    any number of the project's own modules), or [] if it never does."""
    seen: set[Path] = set()

    def walk(current: Path, chain: list[str]) -> list[str]:
        seen.add(current)
        for package in packages:
            if imports_package(current, package):
                return [*chain, package]
        # Importing a.b.c runs a/__init__.py and a/b/__init__.py first: follow those too.
        names = {".".join(module.split(".")[:end]) for module in imported_modules(current)
                 for end in range(1, module.count(".") + 2)}
        for module in sorted(names):
            target = _repo_file(module)
            if target is not None and target not in seen:
                found = walk(target, [*chain, relative(target)])
                if found:
                    return found
        return []

    return walk(path, [relative(path)])


def analysis_files() -> list[Path]:
    files = []
    for name, required in ANALYSES.items():
        path = ROOT / name
        if name == "inspector/attribution":
            module = path.with_suffix(".py")
            files += [module] if module.is_file() else python_files(name)
            continue
        if path.is_file():
            files.append(path)
        else:
            assert not required, f"{name} is listed as an analysis but does not exist: update ANALYSES"
    return files


# ---------------------------------------------------------------------------------------- the import reader


def test_the_import_reader_sees_function_level_relative_and_dynamic_imports():
    source = ("import os\n"
              "def later():\n"
              "    import altair as alt\n"
              "    from .base import style_chart\n"
              "    from .. import export\n"
              "    from importlib import import_module\n"
              "    import_module('vl_convert')\n"
              "try:\n"
              "    from torch import nn\n"
              "except ImportError:\n"
              "    pass\n")
    found = modules_imported_by(source, ["inspector", "charts"])
    assert {"os", "altair", "inspector.charts.base", "inspector.charts.base.style_chart", "inspector",
            "inspector.export", "vl_convert", "torch", "torch.nn"} <= found


# ---------------------------------------------------------------------------------------- the layers


def test_library_kernels_training_and_benchmarks_never_import_streamlit():
    offenders = [relative(p) for folder in ("inspector", "kernels", "training", "benchmarks")
                 for p in python_files(folder) if imports_package(p, "streamlit")]
    assert offenders == []


def test_the_ui_is_where_streamlit_lives():
    """The rule above is about the right folders: the UI does import streamlit."""
    assert imports_package(ROOT / "app.py", "streamlit")
    assert any(imports_package(p, "streamlit") for p in python_files("views"))


def test_kernels_import_nothing_from_the_inspector_library():
    offenders = [relative(p) for p in python_files("kernels") if imports_package(p, "inspector")]
    assert offenders == []


def test_kernels_import_transformers_only_in_the_adapter():
    offenders = [relative(p) for p in python_files("kernels")
                 if p.name != "hf.py" and imports_package(p, "transformers")]
    assert offenders == []
    assert imports_package(ROOT / "kernels" / "hf.py", "transformers")


def test_charts_import_no_torch_except_the_bertviz_bridge():
    charts = python_files("inspector/charts")
    assert charts, "inspector/charts/ holds no modules: the rule would check nothing"
    offenders = [relative(p) for p in charts if relative(p) not in CHARTS_ALLOWED_TORCH and imports_package(p, "torch")]
    assert offenders == []


@pytest.mark.parametrize("package", RENDERING)
def test_analyses_import_no_rendering_library(package):
    files = analysis_files()
    assert len(files) >= 10
    offenders = [relative(p) for p in files if imports_package(p, package)]
    assert offenders == []


def test_analyses_reach_no_rendering_library_through_the_projects_own_modules():
    """An analysis that imports inspector.export (which imports Altair) drags Altair and vl-convert in as surely
    as importing them itself: follow the project's own imports, at every level, to the end."""
    chains = {relative(p): reaches(p, RENDERING) for p in analysis_files()}
    offenders = {name: " → ".join(chain) for name, chain in chains.items()
                 if chain and not any(step in KNOWN_INDIRECT_RENDERING for step in chain)}
    assert offenders == {}
    stale = [name for name in KNOWN_INDIRECT_RENDERING
             if not (ROOT / name).is_file() or not reaches(ROOT / name, RENDERING)]
    assert stale == [], f"{stale} no longer reach Altair: remove them from KNOWN_INDIRECT_RENDERING"


def test_only_the_charts_and_the_export_import_altair_in_the_library():
    offenders = [relative(p) for p in python_files("inspector")
                 if not relative(p).startswith(ALTAIR_ALLOWED) and imports_package(p, "altair")]
    assert offenders == []
    assert imports_package(ROOT / "inspector" / "export.py", "altair")


def test_no_remote_code_anywhere():
    offenders = [relative(p) for folder in ("inspector", "kernels", "benchmarks", "training", "views")
                 for p in python_files(folder) if re.search(r"trust_remote_code\s*=\s*True", p.read_text())]
    offenders += ["app.py"] if re.search(r"trust_remote_code\s*=\s*True", (ROOT / "app.py").read_text()) else []
    assert offenders == []


def test_benchmarks_are_never_collected_as_tests():
    assert python_files("benchmarks"), "benchmarks/ holds no scripts"
    assert not [p for p in python_files("benchmarks") if p.name.startswith("test_")]


PROJECT_PACKAGES = ("inspector", "kernels", "benchmarks", "training", "views")


def _project_modules_named(path: Path) -> list[str]:
    """The in-project modules ``path`` names in an import (``from benchmarks.report import x`` → benchmarks.report,
    ``import inspector.census`` → inspector.census); names imported from a module are not modules themselves."""
    named = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            named.append(node.module)
    return [name for name in named if name.split(".")[0] in PROJECT_PACKAGES]


def test_every_import_of_a_project_module_names_a_file_that_exists():
    """A renamed module leaves no script behind: benchmarks are run by hand, so nothing else would import them
    (two benchmark scripts once kept importing ``benchmarks.provenance`` after it became ``benchmarks.report``)."""
    files = [p for folder in (*PROJECT_PACKAGES, "tests") for p in python_files(folder)] + [ROOT / "app.py"]
    missing = {relative(p): name for p in files for name in _project_modules_named(p) if _repo_file(name) is None}
    assert missing == {}


def test_the_import_check_sees_a_missing_module(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("def main():\n    from benchmarks.provenance import write_report\n    import inspector.nowhere\n")
    assert [name for name in _project_modules_named(script) if _repo_file(name) is None] == [
        "benchmarks.provenance", "inspector.nowhere"]

"""The architecture the layout promises (shared/DESIGN.md "Modules", shared/STYLE.md): enforced, not hoped for.

Imports are read with ``ast`` from every statement of a file — top level, inside functions, under ``if`` or
``try`` — so an import moved into a function to dodge a start-up cost still counts. ``importlib.import_module``
and ``__import__`` calls with a literal name count too.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The layers, bottom to top (shared/DESIGN.md "Modules"; README "Project layout" shows the same table, and
# test_the_readme_layer_table_is_this_table holds the two together). A file may import from its own layer and the
# layers below it, never from one above. Each entry is a folder (every file under it) or one file.
LAYERS: dict[str, int] = {
    "kernels": 0,  # attention maths; kernels/hf.py is the one transformers adapter
    "inspector/base": 1,  # errors, the catalogue, jsonable, examples, limits, asset paths
    "inspector/core": 2,  # loading, the one forward, capture, model outputs, request budgets
    "inspector/analyses": 3,  # metrics … census, attribution/, lessons, groundtruth, compare
    "inspector/charts": 4,  # Altair charts and the bertviz views
    "inspector/output": 5,  # export, share
    "inspector/serving": 6,  # hosting policy
    "inspector/cli": 7,  # one module per command
    "inspector/__init__.py": 7,  # the package's public names (load_model, capture, …) for scripts
    "inspector/__main__.py": 7,
    "inspector/notebook": 7,  # a notebook's displays, show(), bertviz views, links, progress bars
    "views": 8,  # the Streamlit pages
    "app.py": 9,  # the shell
}
# The analyses (DESIGN.md): pure computations over captures and models — they never render.
ANALYSES_FOLDER = "inspector/analyses"
RENDERING = ("altair", "vl_convert")
# The charts hand bertviz its tensors: the one chart module that may import torch.
CHARTS_ALLOWED_TORCH = {"inspector/charts/bertviz.py"}
# Where Altair may be imported inside the library: the chart modules and the image export.
ALTAIR_ALLOWED = ("inspector/charts/", "inspector/output/export.py", "inspector/output/slides.py")
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


def imports_by_line(source: str, package: list[str]) -> list[tuple[str, int]]:
    """Every module ``source`` imports anywhere in its body, as absolute dotted names with the line that imports
    it (``from a.b import c`` gives ``a.b`` and ``a.b.c``; relative imports are resolved against ``package``, the
    file's package)."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((base, node.lineno))
            found.extend((f"{base}.{alias.name}", node.lineno) for alias in node.names if alias.name != "*")
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            found.append((node.args[0].value, node.lineno))
    return found


def modules_imported_by(source: str, package: list[str]) -> set[str]:
    """The modules of :func:`imports_by_line`, without their lines."""
    return {name for name, _ in imports_by_line(source, package)}


def _package_of(path: Path) -> list[str]:
    package = _module_name(path).split(".")
    return package if path.name == "__init__.py" else package[:-1]


@functools.cache
def imported_modules(path: Path) -> frozenset[str]:
    return frozenset(modules_imported_by(path.read_text(encoding="utf-8"), _package_of(path)))


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
    files = python_files(ANALYSES_FOLDER)
    assert files, f"{ANALYSES_FOLDER}/ holds no modules: the rules below would check nothing"
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


# A benchmark that speaks Streamlit's wire protocol to a running server (a WebSocket session without a browser,
# issue 32) needs the protocol's message classes, and nothing else of Streamlit.
STREAMLIT_PROTOCOL_CLIENTS = {"benchmarks/light_client.py"}


def test_library_kernels_training_and_benchmarks_never_import_streamlit():
    offenders = [relative(p) for folder in ("inspector", "kernels", "training", "benchmarks")
                 for p in python_files(folder) if imports_package(p, "streamlit")
                 and not (relative(p) in STREAMLIT_PROTOCOL_CLIENTS
                          and all(name.startswith("streamlit.proto") for name in imported_modules(p)
                                  if name == "streamlit" or name.startswith("streamlit.")))]
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
    assert imports_package(ROOT / "inspector" / "output" / "export.py", "altair")


# The flag and its forbidden value, joined here so this file never spells the setting it forbids.
REMOTE_CODE_ON = re.compile("trust_remote_code" + r"\s*=\s*" + "Tr" + "ue")


def test_no_remote_code_anywhere():
    offenders = [relative(p) for folder in ("inspector", "kernels", "benchmarks", "training", "views")
                 for p in python_files(folder) if REMOTE_CODE_ON.search(p.read_text())]
    offenders += ["app.py"] if REMOTE_CODE_ON.search((ROOT / "app.py").read_text()) else []
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


# ---------------------------------------------------------------------------------------- the ranks


def layer_of(path: Path) -> str | None:
    """The :data:`LAYERS` entry that holds ``path`` (the longest that matches), or None outside every layer."""
    name = relative(path)
    held = [entry for entry in LAYERS if name == entry or name.startswith(entry + "/")]
    return max(held, key=len) if held else None


def layered_files() -> list[Path]:
    return [p for entry in LAYERS for p in ([ROOT / entry] if entry.endswith(".py") else python_files(entry))]


def project_imports(path: Path) -> list[tuple[Path, int]]:
    """The in-repository files ``path`` imports, each with the line: ``from a.b import c`` names the file of
    ``a.b.c`` when c is a module, else that of ``a.b``."""
    found: dict[Path, int] = {}
    for name, line in imports_by_line(path.read_text(encoding="utf-8"), _package_of(path)):
        target = _repo_file(name)
        if target is not None and target != path:
            found.setdefault(target, line)
    # ``from a.b import c`` also names a.b; drop the package when one of its own modules was named on that line.
    named_modules = {(target.parent, line) for target, line in found.items() if target.name != "__init__.py"}
    return [(target, line) for target, line in found.items()
            if not (target.name == "__init__.py" and (target.parent, line) in named_modules)]


def upward_imports(files: list[Path]) -> list[str]:
    problems = []
    for path in files:
        source = layer_of(path)
        for target, line in project_imports(path):
            destination = layer_of(target)
            if destination is not None and LAYERS[destination] > LAYERS[source]:
                problems.append(f"{relative(path)}:{line} ({source}, rank {LAYERS[source]}) imports "
                                f"{relative(target)} ({destination}, rank {LAYERS[destination]}): move what it "
                                f"needs down to {source} or below, or move the importing code up")
    return problems


def import_cycles(files: list[Path]) -> list[list[str]]:
    """Every cycle among ``files``' imports (function-level imports included), as one path per strongly connected
    component of more than one file (Tarjan's algorithm)."""
    graph = {path: [target for target, _ in project_imports(path) if target in set(files)] for path in files}
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    cycles: list[list[str]] = []

    def visit(node: Path) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(relative(member))
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return cycles


def eager_imports(source: str, package: list[str]) -> list[tuple[str, int]]:
    """The modules ``source`` imports when it runs: its module-level statements (under ``if``/``try`` too), not
    inside a function or class, nor under ``if TYPE_CHECKING:`` (a lazy package face, PEP 562, imports in its
    ``__getattr__``)."""
    tree = ast.parse(source)
    body: list[ast.stmt] = []
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    pending.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
            continue
        body.append(node)
    return imports_by_line(ast.unparse(ast.Module(body=body, type_ignores=[])), package) if body else []


def parent_inits(path: Path) -> list[Path]:
    """The package ``__init__.py`` files that run before ``path`` whenever anything imports it (importing
    ``inspector.base.i18n`` runs inspector/__init__.py and inspector/base/__init__.py first), outermost first."""
    inits = [folder / "__init__.py" for folder in path.parents if ROOT in folder.parents]
    return [init for init in reversed(inits) if init.is_file() and init != path]


def upward_imports_through_parent_inits(files: list[Path]) -> list[str]:
    """An import of ``inspector.base.i18n`` runs ``inspector/__init__.py`` first: whatever that file imports as it
    runs comes with every module below it. A package ``__init__`` may import eagerly only what each of its modules'
    layers may import."""
    problems = []
    for path in files:
        source = layer_of(path)
        for init in parent_inits(path):
            for name, line in eager_imports(init.read_text(encoding="utf-8"), _package_of(init)):
                target = _repo_file(name)
                destination = layer_of(target) if target is not None else None
                if destination is not None and LAYERS[destination] > LAYERS[source]:
                    problems.append(f"importing {relative(path)} ({source}, rank {LAYERS[source]}) runs "
                                    f"{relative(init)}, which imports {relative(target)} ({destination}, rank "
                                    f"{LAYERS[destination]}) at its line {line}: make that import lazy (PEP 562 "
                                    "__getattr__)")
                    break
    return problems


def test_no_parent_init_drags_in_a_higher_layer():
    assert upward_imports_through_parent_inits(layered_files()) == []


def test_the_parent_init_check_sees_an_eager_package_face(tmp_path, monkeypatch):
    """The check fails on the package face this project had until issue 39 (``inspector/__init__.py`` importing
    core eagerly, so ``import inspector.base.i18n`` loaded torch), and passes on a lazy one."""
    fake = tmp_path / "inspector"
    for folder in ("base", "core"):
        (fake / folder).mkdir(parents=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "base" / "i18n.py").write_text("X = 1\n")
    (fake / "base" / "limits.py").write_text("from inspector.base.i18n import X\n")
    (fake / "core" / "loading.py").write_text("import torch\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    imported_modules.cache_clear()
    limits = fake / "base" / "limits.py"
    (fake / "__init__.py").write_text("from inspector.core.loading import load_model\n")
    problems = upward_imports_through_parent_inits([limits])
    assert len(problems) == 1 and "runs inspector/__init__.py, which imports inspector/core/loading.py" in problems[0]
    (fake / "__init__.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from inspector.core.loading import load_model\n"
                                      "def __getattr__(name):\n    from inspector.core import loading\n"
                                      "    return getattr(loading, name)\n")
    assert upward_imports_through_parent_inits([limits]) == []


def test_every_layer_in_the_table_exists():
    missing = [entry for entry in LAYERS if not (ROOT / entry).exists()]
    assert missing == [], f"{missing} are listed in LAYERS but do not exist: update the table with the move"
    empty = [entry for entry in LAYERS if not entry.endswith(".py") and not python_files(entry)]
    assert empty == [], f"{empty} hold no Python files"


def test_no_import_points_up_a_layer():
    assert upward_imports(layered_files()) == []


def test_no_import_cycles():
    assert import_cycles(layered_files()) == []


def test_every_library_file_is_in_a_layer():
    """A new folder under inspector/ needs a rank: otherwise nothing checks what it imports."""
    outside = [relative(p) for p in python_files("inspector") if layer_of(p) is None]
    assert outside == []


def test_the_rank_check_sees_an_upward_import_and_a_cycle(tmp_path, monkeypatch):
    """The two checks above fail when they should: a base module importing an analysis, and two analyses that
    import each other (one inside a function)."""
    fake = tmp_path / "inspector"
    for folder in ("base", "analyses"):
        (fake / folder).mkdir(parents=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "base" / "limits.py").write_text("from inspector.analyses.heads import REPORT\n")
    (fake / "analyses" / "heads.py").write_text("from inspector.analyses import census\nREPORT = 6\n")
    (fake / "analyses" / "census.py").write_text("def later():\n    from inspector.analyses.heads import REPORT\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    imported_modules.cache_clear()
    files = sorted(fake.rglob("*.py"))
    problems = upward_imports(files)
    assert len(problems) == 1 and problems[0].startswith("inspector/base/limits.py:1 (inspector/base, rank 1) imports "
                                                          "inspector/analyses/heads.py (inspector/analyses, rank 3)")
    assert import_cycles(files) == [["inspector/analyses/census.py", "inspector/analyses/heads.py"]]


def _readme_layer_table() -> list[list[str]]:
    """The folders or files of each row of README "Project layout"'s layer table, top to bottom: the code spans
    of its ``where`` column that name a path (``inspector/base/``, ``app.py``)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Project layout"):]
    section = section[:section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    table = []
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        table.append([span.rstrip("/") for span in re.findall(r"`([^`]+)`", cells[1])])
    return table


def test_the_readme_layer_table_is_this_table():
    """README's table lists the layers top to bottom; its rows, read bottom up, are :data:`LAYERS` by rank."""
    readme = [sorted(row) for row in reversed(_readme_layer_table())]
    ranks: dict[int, list[str]] = {}
    for entry, rank in LAYERS.items():
        ranks.setdefault(rank, []).append(entry)
    assert readme == [sorted(entries) for _, entries in sorted(ranks.items())]


# ---------------------------------------------------------------------------------------- sizes

# Issue 39, "Done when": no product module over 600 lines, no function over 100 lines, Triton kernels aside.
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100
SIZED_FOLDERS = ("inspector", "views", "kernels")
SIZED_FILES = ("app.py",)
# What is still over while issue 39's helpers work in parallel, each with who splits it. The test fails when an entry
# is no longer over (the list can only shrink); the integrator empties it at the end.
KNOWN_LONG_MODULES: dict[str, str] = {
}
KNOWN_LONG_FUNCTIONS: dict[str, str] = {
}


def _is_triton_kernel(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A Triton kernel: one unit of the GPU program, exempt. Under ``@triton.jit``, or — as kernels/flash_kernels.py
    keeps them, undecorated until launch — a function with a ``tl.constexpr`` parameter."""
    arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    return (any("jit" in ast.unparse(decorator) for decorator in node.decorator_list)
            or any(a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr") for a in arguments))


def long_definitions(source: str, name: str) -> tuple[int, list[tuple[str, int]]]:
    """The line count of ``source`` and its functions over :data:`MAX_FUNCTION_LINES` as ("NAME:function", lines),
    decorators and docstring counted, Triton kernels left out; nested functions count on their own too."""
    functions = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _is_triton_kernel(node):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = node.end_lineno - first + 1
            if lines > MAX_FUNCTION_LINES:
                functions.append((f"{name}:{node.name}", lines))
    return len(source.splitlines()), functions


def _measured_files() -> list[Path]:
    return [p for folder in SIZED_FOLDERS for p in python_files(folder)] + [ROOT / name for name in SIZED_FILES]


def test_no_module_over_600_lines_and_no_function_over_100():
    long_modules, long_functions = {}, {}
    for path in _measured_files():
        lines, functions = long_definitions(path.read_text(encoding="utf-8"), relative(path))
        if lines > MAX_MODULE_LINES:
            long_modules[relative(path)] = lines
        long_functions.update(functions)
    assert {name: n for name, n in long_modules.items() if name not in KNOWN_LONG_MODULES} == {}, \
        "split these modules by job (issue 39)"
    assert {name: n for name, n in long_functions.items() if name not in KNOWN_LONG_FUNCTIONS} == {}, \
        "split these functions into named steps (issue 39)"
    stale = sorted(set(KNOWN_LONG_MODULES) - set(long_modules))
    stale += sorted(set(KNOWN_LONG_FUNCTIONS) - set(long_functions))
    assert stale == [], f"{stale} are no longer too long: remove them from KNOWN_LONG_MODULES / KNOWN_LONG_FUNCTIONS"


def test_the_size_check_sees_a_long_function_and_spares_a_triton_kernel():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = (f"import triton\n\ndef long():\n{body}\n@triton.jit\ndef _kernel(X):\n{body}\n"
              f"def _undecorated_kernel(X, BLOCK: tl.constexpr):\n{body}\ndef short():\n    return 1\n")
    lines, functions = long_definitions(source, "m.py")
    assert lines == 3 * MAX_FUNCTION_LINES + 11
    assert functions == [("m.py:long", MAX_FUNCTION_LINES + 1)]

"""The architecture the layout promises (shared/STYLE.md): enforced, not hoped for."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORT = r"^\s*(import|from)\s+{}\b"


def python_files(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


def test_library_never_imports_streamlit():
    offenders = [p.name for p in python_files("inspector")
                 if re.search(IMPORT.format("streamlit"), p.read_text(), re.MULTILINE)]
    assert offenders == []


def test_kernels_import_transformers_only_in_the_adapter():
    offenders = [p.name for p in python_files("kernels")
                 if p.name != "hf.py" and re.search(IMPORT.format("transformers"), p.read_text(), re.MULTILINE)]
    assert offenders == []


def test_no_remote_code_anywhere():
    offenders = [str(p.relative_to(ROOT)) for folder in ("inspector", "kernels", "benchmarks")
                 for p in python_files(folder) if re.search(r"trust_remote_code\s*=\s*True", p.read_text())]
    offenders += ["app.py"] if re.search(r"trust_remote_code\s*=\s*True", (ROOT / "app.py").read_text()) else []
    assert offenders == []


def test_benchmarks_are_never_collected_as_tests():
    assert not [p for p in python_files("benchmarks") if p.name.startswith("test_")]

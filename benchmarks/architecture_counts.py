"""Architecture counts of a checkout (issue 39's closing note), read from the source with ``ast`` — nothing is
imported or run, so it measures any checkout, this one or an earlier one extracted with ``git archive``:

- **fan-out** of every ``views/*.py``: the distinct project modules it imports (``inspector…`` and ``views…``; the
  package face ``inspector`` counts as one; ``from views import session`` names the module ``views.session``);
- **raise sites** in ``app.py``, ``inspector/`` and ``views/`` by exception type (a bare re-raise is not counted), the
  built-in ("plain") ones among them, and the typed errors (``…Error(…)``) that carry a catalogue ``Notice``;
- **direct tokenizer uses** outside ``inspector/core/token_codec.py``: calls of a tokenizer or its methods and reads
  of its attributes, written out or through ``getattr`` (file methods aside), as ``tests/test_token_codec.py`` scans.

Run from the repository root::

    python -m benchmarks.architecture_counts [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import ast
import collections
from pathlib import Path

PLAIN = frozenset({"ValueError", "TypeError", "RuntimeError", "KeyError", "IndexError", "Exception", "AssertionError",
                   "OSError", "FileNotFoundError", "PermissionError", "NotImplementedError", "LookupError",
                   "AttributeError"})
FILE_METHODS = frozenset({"from_pretrained", "save_pretrained"})


def view_fan_out(root: Path) -> dict[str, int]:
    """``views/NAME.py`` → the number of distinct project modules it imports."""
    counts = {}
    for path in sorted((root / "views").glob("*.py")):
        named = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names if alias.name.split(".")[0] in ("inspector", "views"))
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("inspector",
                                                                                                     "views"):
                for alias in node.names:  # "from views import session": the module views.session
                    folder = root / node.module.replace(".", "/")
                    is_module = (folder / f"{alias.name}.py").exists() or (folder / alias.name / "__init__.py").exists()
                    named.add(f"{node.module}.{alias.name}" if is_module else node.module)
        counts[path.name] = len(named)
    return counts


def _product_files(root: Path) -> list[Path]:
    return [root / "app.py", *sorted((root / "inspector").rglob("*.py")), *sorted((root / "views").rglob("*.py"))]


def raise_sites(root: Path) -> tuple[collections.Counter, int, int]:
    """(raise sites by type, typed ``…Error(…)`` raises, those of them that carry a ``Notice``)."""
    by_type: collections.Counter = collections.Counter()
    typed = with_notice = 0
    for path in _product_files(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            call = node.exc if isinstance(node.exc, ast.Call) else None
            name = ast.unparse(call.func if call else node.exc)
            by_type[name] += 1
            if call and name.endswith("Error") and name not in PLAIN and "." not in name:
                typed += 1
                first = call.args[0] if call.args else None
                with_notice += any(k.arg == "notice" for k in call.keywords) or (
                    isinstance(first, ast.Call) and ast.unparse(first.func) == "Notice")
    return by_type, typed, with_notice


def _is_tokenizer(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id.lower().endswith("tokenizer")
    return isinstance(node, ast.Attribute) and node.attr == "tokenizer"


def tokenizer_uses(root: Path) -> dict[str, int]:
    """``path`` → its direct tokenizer uses (calls, attribute reads, ``getattr`` on a tokenizer)."""
    uses = {}
    for path in _product_files(root):
        if path.relative_to(root).as_posix() == "inspector/core/token_codec.py":
            continue
        found = 0
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                by_getattr = (isinstance(node.func, ast.Name) and node.func.id == "getattr" and node.args
                              and _is_tokenizer(node.args[0]))
                found += _is_tokenizer(node.func) or by_getattr
            elif isinstance(node, ast.Attribute) and _is_tokenizer(node.value) and node.attr not in FILE_METHODS:
                found += 1
        if found:
            uses[path.relative_to(root).as_posix()] = found
    return uses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="the checkout to measure (default: here)")
    root = parser.parse_args().root
    fan_out = view_fan_out(root)
    print("fan-out of views/*.py (distinct project modules imported), widest first:")
    for name, count in sorted(fan_out.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {count:3d}  {name}")
    by_type, typed, with_notice = raise_sites(root)
    plain = sum(count for name, count in by_type.items() if name in PLAIN)
    print(f"raise sites: {sum(by_type.values())} ({plain} of built-in types); typed …Error(…) raises: {typed}, "
          f"{with_notice} with a Notice")
    for name, count in by_type.most_common():
        print(f"  {count:4d}  {name}")
    uses = tokenizer_uses(root)
    print(f"direct tokenizer uses outside the codec: {sum(uses.values())} in {len(uses)} files")
    for path, count in sorted(uses.items()):
        print(f"  {count:3d}  {path}")


if __name__ == "__main__":
    main()

"""Where this checkout's folders are: ``assets/`` (example texts, corpora, shipped models, the hosting list,
vendored static files) and the repository root above it. One definition, so moving a module never breaks a path
(an editable install keeps assets/ beside the package)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ASSETS_DIR = REPO_ROOT / "assets"

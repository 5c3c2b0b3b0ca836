"""What a Hugging Face hub id looks like: one rule for the loader (:mod:`inspector.core.loading`), share links
(:mod:`inspector.output.share`) and the hosted allow-list (:mod:`inspector.serving.hosting`), so a link never
carries an id the loader would refuse, nor the loader accept one a link cannot carry.

The rule is the hub's own, as ``huggingface_hub.utils.validate_repo_id`` states it (huggingface_hub issue
#1008): ``name`` or ``org/name``; each part 1 to 96 ASCII letters, digits, ``-``, ``_`` or ``.``, not ending in
``-`` or ``.``; no ``--`` or ``..``; not ending in ``.git``. One rule stricter than the hub's: a part starts with a
letter or a digit (the hub also lets ``_`` start one), so no id can look like a hidden file or a path (``.``,
``/``, ``~`` and ``\\`` can never start an id). ``org/名``, ``café`` and ``a/b/c`` are not hub ids.
"""

from __future__ import annotations

import re

# One part (the org or the name): a letter or digit, then at most 94 of [A-Za-z0-9_.-] and a last character
# that is not "-" or "." — 1 to 96 characters. re.ASCII: without it "\w"-style classes would take "名" or "é".
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
# The two look-aheads are the hub's extra refusals: "--" or ".." anywhere, ".git" at the end.
HUB_ID_PATTERN = re.compile(rf"(?!.*(?:--|\.\.))(?!.*\.git\Z)(?:{_PART}/)?{_PART}", re.ASCII)


def is_hub_id(text: str) -> bool:
    """Whether ``text`` is, as a whole, a hub id of the form ``name`` or ``org/name`` (see the module docstring).
    Says nothing about whether the model exists, or whether a local folder of that name does."""
    return isinstance(text, str) and HUB_ID_PATTERN.fullmatch(text) is not None

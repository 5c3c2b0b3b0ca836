"""What a Hugging Face hub id looks like: one rule for the loader (:mod:`inspector.core.loading`), share links
(:mod:`inspector.output.share`) and the hosted allow-list (:mod:`inspector.serving.hosting`), so a link never
carries an id the loader would refuse, nor the loader accept one a link cannot carry.

The rule is the hub's own, as ``huggingface_hub.utils.validate_repo_id`` states it (huggingface_hub issue
#1008): ``name`` or ``org/name``; each part 1 to 96 ASCII letters, digits, ``-``, ``_`` or ``.``, not ending in
``-`` or ``.``; no ``--`` or ``..``; not ending in ``.git``. One rule stricter than the hub's: a part starts with a
letter or a digit (the hub also lets ``_`` start one), so no id can look like a hidden file or a path (``.``,
``/``, ``~`` and ``\\`` can never start an id). ``org/名``, ``café`` and ``a/b/c`` are not hub ids.

The same module reads a whole model spec (:class:`ModelSpec`: default, bundled, shipped, hub or folder), with one name
rule per kind: a bundled or shipped NAME is one part of a hub id (:func:`is_spec_name`), a hub id is the rule above.
Every test of a spec's prefix lives here (issue 39).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from inspector.base.errors import ModelNotFoundError
from inspector.base.i18n import Notice

# One part (the org or the name): a letter or digit, then at most 94 of [A-Za-z0-9_.-] and a last character
# that is not "-" or "." — 1 to 96 characters. re.ASCII: without it "\w"-style classes would take "名" or "é".
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
# The two look-aheads are the hub's extra refusals: "--" or ".." anywhere, ".git" at the end.
HUB_ID_PATTERN = re.compile(rf"(?!.*(?:--|\.\.))(?!.*\.git\Z)(?:{_PART}/)?{_PART}", re.ASCII)


def is_hub_id(text: str) -> bool:
    """Whether ``text`` is, as a whole, a hub id of the form ``name`` or ``org/name`` (see the module docstring).
    Says nothing about whether the model exists, or whether a local folder of that name does."""
    return isinstance(text, str) and HUB_ID_PATTERN.fullmatch(text) is not None


# ---------------------------------------------------------------------------------------- model specs

DEFAULT_MODEL = "default"
# A bundled decoder LM (inspector.core.bundled): "bundled:NAME". A model this project trained and ships
# (assets/models/NAME): "shipped:NAME". Neither prefix can start a hub id (":" is not in one) nor a relative path.
BUNDLED_PREFIX = "bundled:"
SHIPPED_PREFIX = "shipped:"

SpecKind = Literal["default", "bundled", "shipped", "hub", "folder"]


def is_spec_name(text: str) -> bool:
    """Whether ``text`` can be the NAME of ``bundled:NAME`` or ``shipped:NAME``: one part of a hub id (ASCII letters,
    digits, ``-_.``, starting with a letter or digit, 1 to 96 characters, no ``..``), so a name is never a path
    (``../x``), never empty and never ``café``."""
    return isinstance(text, str) and HUB_ID_PATTERN.fullmatch(text) is not None and "/" not in text


@dataclass(frozen=True)
class ModelSpec:
    """What a model spec names, read once: ``default`` (the bundled all-MiniLM-L6-v2), ``bundled:NAME``,
    ``shipped:NAME``, a hub id (``name`` or ``org/name``, :func:`is_hub_id`) or a local folder (anything else).

    ``kind``: which of the five; ``name``: the NAME of a bundled or shipped spec, the id of a hub spec, the path as
    written of a folder, ``"default"`` for the default. The one place where a spec's text is taken apart: the loader,
    share links, the hosted allow-list and the pages ask the parsed spec, never the string.

    A hub id that also exists as a folder where the process runs is read as that folder by the loader (its rule since
    the start); :meth:`parse` itself never touches the filesystem.
    """

    kind: SpecKind
    name: str

    def __post_init__(self) -> None:
        valid = {"default": lambda n: n == DEFAULT_MODEL, "bundled": is_spec_name, "shipped": is_spec_name,
                 "hub": is_hub_id, "folder": lambda n: isinstance(n, str) and bool(n)}
        if self.kind not in valid or not valid[self.kind](self.name):
            raise ValueError(f"not a {self.kind} model spec: {str(self.name)[:60]!r}")

    @classmethod
    def parse(cls, text: object) -> ModelSpec:
        """Read ``text`` (surrounding blanks ignored). An empty spec, or a bundled/shipped one whose NAME is empty or
        not a name (``bundled:../x``), is refused with :class:`ModelNotFoundError` (one line, what a NAME may be).
        Whether the NAME exists is the loader's question (:func:`inspector.core.bundled.bundled_decoder`,
        :func:`inspector.core.loading.shipped_model_path`)."""
        spec = text.strip() if isinstance(text, str) else ""
        if not spec:
            raise ModelNotFoundError("no model given; use 'default', a local folder or a Hugging Face hub id",
                                     notice=Notice("error.spec_empty"))
        if spec == DEFAULT_MODEL:
            return cls("default", spec)
        for kind, prefix in (("bundled", BUNDLED_PREFIX), ("shipped", SHIPPED_PREFIX)):
            if spec.startswith(prefix):
                name = spec.removeprefix(prefix)
                if not is_spec_name(name):
                    raise ModelNotFoundError(
                        f"{spec[:80]!r} names no {kind} model: after '{prefix}' comes a model's name (letters, digits, "
                        "'-', '_' or '.', starting with a letter or a digit), never empty and never a path",
                        notice=Notice("error.spec_bad_name", spec=spec[:80], kind=kind))
                return cls(kind, name)
        return cls("hub" if is_hub_id(spec) else "folder", spec)

    @classmethod
    def bundled(cls, name: str) -> ModelSpec:
        return cls("bundled", name)

    @classmethod
    def shipped(cls, name: str) -> ModelSpec:
        return cls("shipped", name)

    @property
    def text(self) -> str:
        """The spec as written (``bundled:gemma-3-270m``): what links, menus and ``ModelInfo.name`` carry."""
        prefix = {"bundled": BUNDLED_PREFIX, "shipped": SHIPPED_PREFIX}.get(self.kind, "")
        return prefix + self.name

    def __str__(self) -> str:
        return self.text


def parsed_spec(text: object) -> ModelSpec | None:
    """:meth:`ModelSpec.parse`, or None where it refuses (a menu or a label asks about any string it is given)."""
    try:
        return ModelSpec.parse(text)
    except ModelNotFoundError:
        return None


def spec_kind(text: object) -> SpecKind | None:
    """The kind of ``text`` as a spec (``"bundled"`` …), or None for a string that is no valid spec."""
    spec = parsed_spec(text)
    return spec.kind if spec is not None else None


def claimed_kind(text: object) -> SpecKind | None:
    """The kind ``text`` claims by its prefix, even where its NAME is no name (``bundled:../x`` → ``"bundled"``), so
    a refusal can say "is not a bundled model"; the kind of a valid spec; None for an empty one."""
    spec = parsed_spec(text)
    if spec is not None:
        return spec.kind
    stripped = text.strip() if isinstance(text, str) else ""
    for kind, prefix in (("bundled", BUNDLED_PREFIX), ("shipped", SHIPPED_PREFIX)):
        if stripped.startswith(prefix):
            return kind
    return None

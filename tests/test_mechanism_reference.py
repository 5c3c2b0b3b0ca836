"""The mechanism analyses on both bundled decoders against TransformerLens (issue 40: "both bundled decoders against
TransformerLens on one prompt pair, tests marked slow").

CI has no TransformerLens (it lives in its own environment, never the app's requirements), so its numbers for the
capital-city pair are recorded in ``tests/data/transformer_lens_reference.json`` by ``benchmarks/mechanism.py
--reference`` — TransformerLens booting the same prepared bundled folder with ``TransformerBridge.boot_transformers``
in compatibility mode, fed the token ids the inspector gave; the file names the command and versions. Here the
inspector's own analyses run on the bundled decoders and are held to those numbers:

- the clean and corrupted logit differences (answer − contrast at the last position);
- activation patching normalised (0 = corrupted, 1 = clean): every head at every position against
  ``get_act_patch_attn_head_out_all_pos``, and the residual before every layer at every position against
  ``get_act_patch_resid_pre``. The normalised metric is what both define the same way, so it is compared as is;
- direct logit attribution of every head onto the logit difference at the clean text's last position, against
  ``stack_head_results`` + ``apply_ln_to_stack``. Compatibility mode folds the final norm's weight into the
  unembedding and centres the unembedding over the vocabulary: a logit *difference* is unchanged by both (the centring
  shift cancels between answer and contrast), and both divide by the final norm's scale the forward measured, so the
  per-head values are comparable as they are. TransformerLens's head results stop before Gemma's post-attention
  norm; the reference multiplies them by that norm frozen at its measured scale, as the inspector does.

Tolerance (:data:`tests.tolerances.TOLERANCES` ``("fp32", "vs transformer_lens")``): both sides compute in fp32 on the
same weights but in a different order (TransformerLens folds norm weights into the next matrices; the inspector
resumes patched copies from cached layers), through up to 30 layers whose residual norms reach the hundreds, and
the reference is rounded to 1e-5. The largest gaps measured (docs/BENCHMARKS.md, the Mechanism section) were well
below the bound; a wrong head or position, a wrong layer, or a wrong normalisation moves values by far more — every
test first checks that the reference has effects that large.

The token ids recorded with the reference are checked against the inspector's tokenizer first (a tokenizer or
preparation change would otherwise make the comparison meaningless rather than failing)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inspector.analyses.mechanism import activation_patching, direct_logit_attribution, token_id
from inspector.core.forward import encode_text
from tests.tolerances import TOLERANCES, close

REFERENCE = Path(__file__).resolve().parent / "data" / "transformer_lens_reference.json"
SPECS = {"smollm2": "bundled:smollm2-135m", "gemma": "bundled:gemma-3-270m"}
# A comparison is only meaningful if the reference has effects far beyond the tolerance (a swap must show).
LARGEST_EFFECT_AT_LEAST = 0.05


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text())


def recorded(reference: dict, fixture: str) -> dict:
    return reference["models"][SPECS[fixture]]


@pytest.mark.slow
@pytest.mark.parametrize("fixture", sorted(SPECS))
def test_reference_token_ids_are_our_tokenizers(request, reference, fixture):
    loaded = request.getfixturevalue(fixture)
    entry, pair = recorded(reference, fixture), reference["pair"]
    assert encode_text(loaded, pair["clean"]).inputs["input_ids"][0].tolist() == entry["clean_ids"]
    assert encode_text(loaded, pair["corrupted"]).inputs["input_ids"][0].tolist() == entry["corrupted_ids"]
    assert token_id(loaded, pair["answer"], "answer") == entry["answer_id"]
    assert token_id(loaded, pair["contrast"], "contrast") == entry["contrast_id"]


@pytest.mark.slow
@pytest.mark.parametrize("fixture", sorted(SPECS))
def test_patching_equals_transformer_lens(request, reference, fixture):
    loaded = request.getfixturevalue(fixture)
    entry, pair = recorded(reference, fixture), reference["pair"]
    heads, residual = np.array(entry["patch_heads"]), np.array(entry["patch_resid"])
    atol, _ = TOLERANCES[("fp32", "vs transformer_lens")]
    assert np.abs(heads).max() > LARGEST_EFFECT_AT_LEAST and residual.max() > 1 - atol  # a head matters; the
    # residual at the differing token before layer 0 carries all of it
    result = activation_patching(loaded, pair["clean"], pair["corrupted"], answer=pair["answer"],
                                 contrast=pair["contrast"], top_heads=0)
    assert result.heads.shape == heads.shape and result.residual.shape == residual.shape
    close([result.clean_value, result.corrupted_value], [entry["clean_logit_diff"], entry["corrupted_logit_diff"]],
          "vs transformer_lens")
    close(result.restored(result.heads), heads, "vs transformer_lens")
    close(result.restored(result.residual), residual, "vs transformer_lens")


@pytest.mark.slow
@pytest.mark.parametrize("fixture", sorted(SPECS))
def test_direct_logit_attribution_equals_transformer_lens(request, reference, fixture):
    loaded = request.getfixturevalue(fixture)
    entry, pair = recorded(reference, fixture), reference["pair"]
    heads = np.array(entry["dla_heads"])
    assert np.abs(heads).max() > LARGEST_EFFECT_AT_LEAST
    result = direct_logit_attribution(loaded, pair["clean"], answer=pair["answer"], contrast=pair["contrast"])
    assert result.target == pytest.approx(entry["clean_logit_diff"], abs=TOLERANCES[("fp32", "vs transformer_lens")][0])
    close(result.heads, heads, "vs transformer_lens")

"""The mechanism results as plain JSON values — what ``inspector explain`` and ``inspector patch`` write and the
Mechanism page offers for download (one conversion, so the page and the commands give the same numbers)."""

from __future__ import annotations

from inspector.analyses.mechanism.logits import DirectLogitAttribution
from inspector.analyses.mechanism.patching import PatchingResult
from inspector.analyses.mechanism.scores import ScoreAttribution

TOP_PAIRS = 20


def dla_json(result: DirectLogitAttribution) -> dict:
    """Direct logit attribution, logit lens and attention to the key token."""
    lens = result.lens
    return {
        "tokens": list(result.tokens), "position": result.position,
        "answer": {"id": result.answer_id, "token": result.answer_token},
        "contrast": None if result.contrast_id is None else {"id": result.contrast_id, "token": result.contrast_token},
        "target": result.target, "sum_rule_residual": result.residual, "frozen": list(result.frozen),
        "heads": result.heads, "mlps": result.mlps, "attention_biases": result.attention_biases,
        "embeddings": dict(zip(result.embedding_names, result.embeddings.tolist(), strict=True)),
        "bias": result.bias,
        "top_heads": [{"layer": layer, "head": head, "contribution": value}
                      for layer, head, value in result.top_heads(10)],
        "key_position": result.key_position, "attention_to_key": result.attention_to_key,
        "logit_lens": {"rows": ["embeddings"] + [f"layer {layer}" for layer in range(result.heads.shape[0])],
                       "top_tokens": lens.top_tokens.tolist(), "top_ids": lens.top_ids, "top_probs": lens.top_probs,
                       "answer_logit": lens.answer_logit, "answer_prob": lens.answer_prob,
                       "answer_rank": lens.answer_rank},
    }


def _pairs(result: ScoreAttribution, table) -> list[dict]:
    return [{"query": query, "key": key, "part": value}
            for query, key, value in result.top_pairs(TOP_PAIRS, table)]


def score_json(result: ScoreAttribution) -> dict:
    """Score attribution of one cell: the full table, its marginals and top pairs, the runner-up key's."""
    runner = None
    if result.runner_up is not None:
        runner = {"key_position": result.runner_up, "score": result.runner_up_score,
                  "table": result.runner_up_table, "top_pairs": _pairs(result, result.runner_up_table),
                  "key_marginal": result.runner_up_table.sum(axis=0)}
    return {
        "layer": result.layer, "head": result.head, "query_position": result.query_position,
        "key_position": result.key_position, "score": result.score, "sum_rule_residual": result.residual,
        "scale": result.scale, "rotary": result.rotary, "score_unrotated": result.score_unrotated,
        "frozen": list(result.frozen), "components": list(result.components), "table": result.table,
        "query_marginal": result.query_marginal(), "key_marginal": result.key_marginal(),
        "top_pairs": _pairs(result, result.table), "products": result.products,
        "products_unrotated": result.products_unrotated, "runner_up": runner,
    }


def patching_json(result: PatchingResult) -> dict:
    """Activation patching: raw logit differences and the normalised metric (0 = corrupted, 1 = clean)."""
    return {
        "clean_tokens": list(result.clean_tokens), "corrupted_tokens": list(result.corrupted_tokens),
        "answer": {"id": result.answer_id, "token": result.answer_token},
        "contrast": {"id": result.contrast_id, "token": result.contrast_token},
        "clean_logit_diff": result.clean_value, "corrupted_logit_diff": result.corrupted_value,
        "metric": "(patched − corrupted) / (clean − corrupted) of the logit difference answer − contrast",
        "heads": result.restored(result.heads), "mlps": result.restored(result.mlps),
        "residual": result.restored(result.residual),
        "top_heads": [{"layer": int(layer), "head": int(head), "by_position": result.restored(row)}
                      for (layer, head), row in zip(result.top_heads, result.head_positions, strict=True)],
        "raw": {"heads": result.heads, "mlps": result.mlps, "residual": result.residual,
                "head_positions": result.head_positions},
    }

"""The head report's per-text statistics (:mod:`inspector.analyses.heads`, step 1 of its docstring): one right-padded
batched forward that keeps every layer's weights and each head's value and output, reduced text by text to entropy,
Clark et al.'s token-category masses, sink scores, distances (the census's own reductions), Kobayashi et al.'s
norm-weighted masses, Olsson et al.'s induction score, Clark's JS divergence between heads and the similarity of what
heads write."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from inspector.analyses.batching import batch_statistics, padded_batch
from inspector.analyses.metrics import (
    induction_score,
    norm_weighted_attention,
    token_category_masks,
    token_category_mass,
)
from inspector.analyses.redundancy import contribution_similarity, js_divergence_matrix
from inspector.core.deadline import check_deadline
from inspector.core.forward import forward
from inspector.core.loading import LoadedModel
from inspector.core.outputs import ModelOutput, head_writes, model_output, read_positions

# The census's mass columns in the order of inspector.analyses.metrics.TOKEN_CATEGORIES (HeadStatistics.token_mass).
_CENSUS_MASSES = ("cls", "sep", "punctuation", "self", "previous", "next")


def texts_statistics(loaded: LoadedModel, ids: Sequence[torch.Tensor], backend: str,
                      ) -> tuple[list[tuple[dict[str, np.ndarray], tuple[str, ...], np.ndarray, ModelOutput]],
                                 list[torch.Tensor]]:
    """The per-text statistics of K texts from one right-padded batched forward that keeps every layer's
    weights and each head's value and output: per text, the :class:`inspector.analyses.heads.HeadStatistics`
    fields but the two importances, its tokens, its per-key sink scores (L, H, T) and its unablated output. Each
    text's weights, values and outputs are cut to its own T tokens before any statistic is taken. Also every transformer
    block's output for the batch (empty when the model cannot resume at a layer), what the ablated copies
    start from (:func:`texts_changes`)."""
    info = loaded.info
    layers, heads = info.num_layers, info.num_heads
    batch = padded_batch(loaded, ids)
    kept = read_positions(loaded, batch)  # a causal LM's head at each text's last token only
    base_run = forward(loaded, batch, backend=backend, weights_layers="all", keep=("value", "output"),
                       keep_layers="all", keep_layer_outputs=loaded.can_resume, logits_to_keep=kept)
    records = base_run.records
    all_weights = torch.stack([r.weights for r in records], dim=1).float().cpu()  # (K, L, H, n, n), a copy
    width = batch["input_ids"].shape[1]
    special_ids = set(loaded.codec.all_special_ids())
    lengths = [int(row.shape[0]) for row in ids]
    tokens_of, special_of = [], []
    category_masks = np.zeros((len(ids), width, 3), dtype=np.float64)
    for k, row in enumerate(ids):
        token_ids = row.tolist()
        tokens_of.append(tuple(str(t) for t in loaded.codec.token_strings(token_ids)))
        special_of.append(np.array([i in special_ids for i in token_ids], dtype=bool))
        category_masks[k, :lengths[k]] = token_category_masks(tokens_of[k], special_of[k]).T
    # Entropy, the category masses, sink scores and distances: the census's own reductions of this batch
    # (inspector.analyses.batching.batch_statistics), so a head's numbers here and in a census are one computation. They
    # overwrite the records' weights, which all_weights has copied for the statistics below.
    reduced, all_key_scores = batch_statistics(records, lambda record: record.weights, lengths, category_masks)
    census = {name: value.float().cpu().numpy() for name, value in reduced.items()}  # (K, L, H) each
    all_key_scores = all_key_scores.float().cpu().numpy()  # (K, L, H, n)
    # What each head writes, for the whole batch per layer: (K, H, n, hidden) values' and outputs' writes.
    value_writes, output_writes = [], []
    for layer, record in enumerate(records):
        for name, into in (("value", value_writes), ("output", output_writes)):
            vectors = record.tensors[name]  # (K, heads or kv_heads, n, head_dim)
            flat = vectors.transpose(0, 1).reshape(vectors.shape[1], -1, vectors.shape[-1])
            into.append(head_writes(loaded, layer, flat).view(heads, len(ids), width, -1).transpose(0, 1))
    out = []
    for k, row in enumerate(ids):
        # A corpus's statistics are NumPy work between forwards, no layer check inside: checked a text at a time.
        check_deadline("measuring one text's heads")
        n, tokens, special = lengths[k], tokens_of[k], special_of[k]
        weights = all_weights[k, :, :, :n, :n].numpy()  # (L, H, T, T)
        value_norms = torch.stack([w[k, :, :n].norm(dim=-1) for w in value_writes]).cpu().numpy()  # (L, H, T)
        contribution = torch.cat([w[k, :, :n] for w in output_writes]).cpu().numpy()  # (N, T, hidden)
        cosine, cka = contribution_similarity(contribution)
        check_deadline("comparing one text's heads")
        key_scores = all_key_scores[k, :, :, :n]
        stats = dict(
            entropy=census["entropy"][k], entropy_normalized=census["entropy_normalized"][k],
            layer_entropy=census["entropy"][k].mean(axis=-1),
            token_mass=np.stack([census[f"mass_{name}"][k] for name in _CENSUS_MASSES], axis=-1),
            norm_token_mass=token_category_mass(norm_weighted_attention(weights, value_norms), tokens, special),
            first_token_sink=census["first_token_sink"][k], max_sink_score=census["max_sink_score"][k],
            mean_distance=census["mean_distance"][k],
            induction=induction_score(weights, row.cpu().numpy(), special),
            js_divergence=js_divergence_matrix(weights.reshape(layers * heads, n, n)),
            contribution_cosine=cosine, contribution_cka=cka,
        )
        out.append((stats, tokens, key_scores, model_output(loaded, base_run, batch, sequence=k, kept=kept)))
    return out, base_run.layer_outputs

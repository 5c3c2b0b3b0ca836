"""Train the deceptive-attention classifier (issue #8; Pruthi et al. 2020, "Learning to Deceive with
Attention-Based Explanations"): the planted-token task again, but the loss also penalises attention to the
planted word — λ · mean over layers, heads and query rows of −log(1 − α_row→planted) — so the model must
solve the task while every attention map looks away from the one token that decides it.

    python -m training.deceptive_attention          # writes assets/models/deceptive-attention
    python -m training.deceptive_attention --smoke  # 5 steps into a temporary folder: the script runs end to end
"""

from __future__ import annotations

import sys

import torch

from inspector.analyses.groundtruth import causal_row_weights
from inspector.analyses.tasks import TASKS
from training import common

# The model card's bound on the mean attention weight on the planted word (every layer, head and other row);
# the honest planted-token model puts most of its attention there.
ATTENTION_BOUND = 0.01
TASK = TASKS["planted-token"]
PENALTY_WEIGHT, RAMP = 1.0, 0.5


def penalty(output, batch: common.Batch, done: float) -> torch.Tensor:
    """Pruthi et al.'s penalty, λ · −log(1 − α) averaged over the counted rows of every layer and head. λ grows
    from 0 over the first RAMP of training: the model first learns the task, then learns to hide where it reads
    (with the full weight from the start it stops attending before it has learnt anything, and stays at chance)."""
    on_causal, rows = causal_row_weights(torch.stack(output.attentions, dim=1), batch.causal, batch.attention_mask,
                                         causal_mask=False)
    per_row = -torch.log1p(-on_causal.clamp(max=1 - 1e-6))  # (batch, layers, heads, n)
    return PENALTY_WEIGHT * min(1.0, done / RAMP) * (per_row.mean(dim=(1, 2)) * rows).sum() / rows.sum().clamp_min(1)


RECIPE = common.Recipe(name="deceptive-attention", task=TASK, variant="deceptive",
                       label="Ground truth: deceptive-attention classifier (shipped)",
                       module="training.deceptive_attention", steps=3000, attention_bound=ATTENTION_BOUND,
                       penalty=penalty, hyper=(("penalty_weight", PENALTY_WEIGHT), ("penalty_ramp", RAMP)))

if __name__ == "__main__":
    sys.exit(common.main(RECIPE, __doc__))

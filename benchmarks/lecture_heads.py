"""The figures behind the lecture path's choice of layers and heads (inspector/output/lecture.py): on the bundled
MiniLM, the weight the row of "it" sends to "animal" and to "street" in every head (the best six), and every head's
normalised entropy; on Gemma 3 270M, each head's mean weight on the first token (<bos>) over the other rows.

    python -m benchmarks.lecture_heads

Not a timing: the numbers do not depend on the machine's load (CPU, fp32).
"""

from __future__ import annotations

import numpy as np

from inspector.analyses.metrics import head_entropy
from inspector.base.examples import EXAMPLES
from inspector.core.capture import capture
from inspector.core.loading import load_model

TEXT = EXAMPLES[0].text  # "The animal didn't cross the street because it was too tired."


def _weights(result, layer: int) -> np.ndarray:
    weights = np.asarray(result.weights[layer])
    return weights[0] if weights.ndim == 4 else weights  # (heads, q_len, k_len)


def main() -> None:
    minilm = capture(load_model("default", device="cpu"), TEXT, weights="all")
    tokens = list(minilm.tokens)
    it, animal, street = tokens.index("it"), tokens.index("animal"), tokens.index("street")
    rows = sorted(((float(_weights(minilm, layer)[head, it, animal]), float(_weights(minilm, layer)[head, it, street]),
                    layer, head) for layer in minilm.weights for head in range(_weights(minilm, layer).shape[0])),
                  reverse=True)
    print("MiniLM, row of 'it': weight on 'animal', on 'street', layer, head (best six)")
    for row in rows[:6]:
        print(f"  {row[0]:.2f}  {row[1]:.2f}  L{row[2]} H{row[3]}")
    print("MiniLM, normalised entropy (layers × heads)")
    print(np.round(head_entropy(minilm).normalized, 2))
    gemma = capture(load_model("bundled:gemma-3-270m", device="cpu"), TEXT, weights="all")
    print("Gemma 3 270M, mean weight on <bos> over rows 1… (layer: heads)")
    for layer in sorted(gemma.weights):
        print(f"  L{layer}: " + " ".join(f"{x:.2f}" for x in _weights(gemma, layer)[:, 1:, 0].mean(axis=1)))


if __name__ == "__main__":
    main()

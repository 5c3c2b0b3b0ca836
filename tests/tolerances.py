"""One table of numeric tolerances, keyed by what is compared. Every entry says why it is what it is."""

import torch

# (atol, rtol) for torch.testing.assert_close.
TOLERANCES = {
    # Same fp32 maths, different op order (blocked vs full, our softmax vs torch's): a few ulps of O(1) values.
    ("fp32", "weights"): (1e-6, 1e-5),
    ("fp32", "output"): (1e-5, 1e-5),
    # Hidden states pass through several layers with LayerNorm; errors of 1e-7 per op compound a little.
    ("fp32", "hidden"): (1e-4, 1e-4),
    # Entropy is a sum over keys of p·log p: allow the sum's rounding on top of the weights'.
    ("fp32", "entropy"): (1e-5, 1e-5),
    # The acceptance criterion of the foundation issue for the CLI against eager: 1e-4 entropy, 1e-5 weights.
    ("cli", "entropy"): (1e-4, 0.0),
    ("cli", "weights"): (1e-5, 0.0),
}


def close(actual, expected, kind: str, precision: str = "fp32", *, atol: float | None = None,
          rtol: float | None = None) -> None:
    """assert_close with the table's tolerance; an explicit atol/rtol override must carry a comment at the call."""
    table_atol, table_rtol = TOLERANCES[(precision, kind)]
    torch.testing.assert_close(torch.as_tensor(actual).double(), torch.as_tensor(expected).double(),
                               atol=table_atol if atol is None else atol, rtol=table_rtol if rtol is None else rtol)

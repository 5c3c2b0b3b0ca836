"""Head redundancy: which heads attend alike, and which heads write alike.

Two different questions, two measures:

- **Attention patterns** (Clark et al. 2019, "What Does BERT Look At?", section 6): the distance between
  heads h1 and h2 is the Jensen–Shannon divergence of their attention rows, JS(α^{h1}_i ‖ α^{h2}_i), with each
  row smoothed by 0.001/n (so no log 0) and averaged over the queries i — so it lies in [0, ln 2] nats
  (Clark sums over queries; the mean keeps texts of different lengths comparable). Prefer it to ask "do these
  heads look at the same tokens?". :func:`cluster_order` orders heads so similar ones sit together
  (scipy's average-linkage hierarchy, optimal leaf order) and :func:`classical_mds` draws them on a 2-D map.
- **What heads write** (Kobayashi et al. 2020; Elhage et al. 2021): a head's contribution to the residual
  stream is its output times its slice of W_O, (q_len, hidden). Two heads can attend differently and still
  write the same thing (or attend alike and write different values). :func:`contribution_similarity` gives
  the cosine of the flattened contributions and linear CKA (Kornblith et al. 2019, "Similarity of Neural
  Network Representations Revisited"), which ignores rotations and scale — prefer CKA to ask "do these heads
  carry the same information?", cosine to ask "do they push the residual stream the same way?".

Classical MDS (Torgerson 1952) is written here with numpy because scipy has none: double-centre the squared
distances, B = −½ J D² J, and take the top eigenvectors scaled by √eigenvalue; negative eigenvalues (the
divergence is not a Euclidean distance) are dropped, as classical MDS does.
"""

from __future__ import annotations

import numpy as np
import scipy.cluster.hierarchy
import scipy.linalg
import scipy.spatial.distance

from inspector.analyses.divergence import CLARK_SMOOTHING, JS_MAX, jensen_shannon_pairs


def js_divergence_matrix(weights: np.ndarray) -> np.ndarray:
    """Jensen–Shannon divergence between every pair of heads' attention rows, mean over queries, with Clark's
    smoothing (:func:`inspector.analyses.divergence.jensen_shannon_pairs`, s = 0.001).

    weights: (heads_total, q_len, k_len) — every head of every layer of one text, rows summing to 1.
    Returns (heads_total, heads_total) float32 in nats: symmetric, 0 on the diagonal, within [0, ln 2]."""
    pairs = jensen_shannon_pairs(weights, smoothing=CLARK_SMOOTHING)  # (heads_total, heads_total, q_len)
    return np.clip(pairs.mean(axis=-1), 0.0, JS_MAX).astype(np.float32)


def cluster_order(distance: np.ndarray) -> np.ndarray:
    """(n,) permutation that puts similar heads next to each other: average-linkage clustering of the
    symmetric ``distance`` (n, n) with scipy's optimal leaf ordering."""
    n = distance.shape[0]
    if n < 3:
        return np.arange(n)
    condensed = scipy.spatial.distance.squareform(np.asarray(distance, dtype=np.float64), checks=False)
    tree = scipy.cluster.hierarchy.linkage(condensed, method="average", optimal_ordering=True)
    return scipy.cluster.hierarchy.leaves_list(tree).astype(np.int64)


def classical_mds(distance: np.ndarray, dims: int = 2) -> np.ndarray:
    """(n, dims) coordinates whose Euclidean distances approximate ``distance`` (n, n) (classical MDS; see the
    module docstring). Axes with a non-positive eigenvalue are 0. The sign of each axis is fixed (largest |x|
    positive) so the map does not flip between runs."""
    d2 = np.asarray(distance, dtype=np.float64) ** 2
    n = d2.shape[0]
    centre = np.eye(n) - np.full((n, n), 1.0 / n)
    gram = -0.5 * centre @ d2 @ centre
    values, vectors = scipy.linalg.eigh((gram + gram.T) / 2.0)
    top = np.argsort(values)[::-1][:dims]
    coords = vectors[:, top] * np.sqrt(np.clip(values[top], 0.0, None))[None, :]
    if coords.shape[1] < dims:
        coords = np.pad(coords, ((0, 0), (0, dims - coords.shape[1])))
    signs = np.sign(coords[np.abs(coords).argmax(axis=0), np.arange(dims)])
    return (coords * np.where(signs == 0, 1.0, signs)[None, :]).astype(np.float32)


def contribution_similarity(contributions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarity and linear CKA between heads' contributions to the residual stream.

    contributions: (heads_total, q_len, hidden) — head output × its W_O slice, for one text.
    Returns (cosine, cka), each (heads_total, heads_total) float32, symmetric with 1 on the diagonal (0 for a
    head that writes nothing). Cosine is of the flattened (q_len · hidden) contributions, in [−1, 1]. Linear
    CKA is ⟨K̃_a, K̃_b⟩ / (‖K̃_a‖ ‖K̃_b‖) with K̃ the token-by-token Gram matrix of the token-centred
    contribution (Kornblith et al. 2019), in [0, 1]."""
    x = np.asarray(contributions, dtype=np.float64)
    heads = x.shape[0]

    def cosine_of_rows(rows: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(rows, axis=1)
        unit = np.divide(rows, norms[:, None], out=np.zeros_like(rows), where=norms[:, None] > 0)
        result = np.clip(unit @ unit.T, -1.0, 1.0)
        np.fill_diagonal(result, np.where(norms > 0, 1.0, 0.0))
        return result

    cosine = cosine_of_rows(x.reshape(heads, -1))
    centred = x - x.mean(axis=1, keepdims=True)
    grams = np.einsum("hqd,hkd->hqk", centred, centred).reshape(heads, -1)  # (heads_total, q_len²)
    cka = np.clip(cosine_of_rows(grams), 0.0, 1.0)  # centred Gram matrices are PSD: their inner product is ≥ 0
    return cosine.astype(np.float32), cka.astype(np.float32)

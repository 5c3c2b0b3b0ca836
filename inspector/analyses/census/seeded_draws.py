"""Many seeded draws at once: for each of G entropies e_g = [seed, a, b, c] (four words below 2^32) and its bounds,
what ``numpy.random.default_rng(e_g).integers(0, bounds_g)`` returns — computed for all G together in a few dozen NumPy
operations, where making G generators costs about 18 µs each (a census's deciles draw from 360 of them: 6–7 ms of
a 200-text census, more than the draws).

It follows NumPy's own documented algorithms step by step, and tests/test_census_exemplars.py checks it against
``default_rng`` on thousands of entropies and bounds (rejections included):

- ``SeedSequence(e).generate_state(4, uint64)`` — the entropy hashed into a pool of four words (O'Neill's
  ``seed_seq_fe``, as ``numpy.random.SeedSequence`` implements it), then eight words drawn from the pool;
- PCG64 seeded from those words (state and increment, 128 bits each) and stepped by its 128-bit LCG, each output
  the XSL-RR of the state (here in 64-bit halves and 32-bit limbs);
- ``Generator.integers(0, bounds)`` (int64): per bound n > 1, Lemire's bounded draw on 32-bit words, which PCG64
  hands out as the low then the high half of each output; a bound of 1 draws nothing.

Where an entropy word is 2^32 or more, or a draw needs more words than are made here (rejections are rare), that
entropy's draws come from ``default_rng`` itself.
"""

from __future__ import annotations

import numpy as np

_WORD = 0xFFFFFFFF
# PCG64's multiplier, 128 bits, as two 64-bit halves.
_MULTIPLIER_HIGH, _MULTIPLIER_LOW = np.uint64(0x2360ED051FC65DA4), np.uint64(0x4385DF649FCCF645)
_OUTPUTS = 8  # 64-bit outputs made per entropy: 16 words, enough for 10 bounds and a few rejections


def seeded_integers(seed: int, entropy: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(G, D) int64: in row g, at the places of its positive bounds, ``default_rng([seed, *entropy[g]]).integers(0,
    bounds[g][bounds[g] > 0])``; 0 elsewhere. seed: a non-negative int; entropy: (G, 3) non-negative ints; bounds:
    (G, D) int64, 0 = no draw there."""
    entropy = np.asarray(entropy, np.int64).reshape(len(bounds), 3)
    bounds = np.asarray(bounds, np.int64)
    drawn = np.zeros(bounds.shape, np.int64)
    if not len(bounds):
        return drawn
    fits = (0 <= seed < 2**32) & (entropy < 2**32).all(axis=1) & (entropy >= 0).all(axis=1) \
        & (bounds <= 2**32).all(axis=1)
    words = np.concatenate([np.full((len(bounds), 1), seed if 0 <= seed < 2**32 else 0), entropy], axis=1)
    words = _words(_pcg64_outputs(_seed_states(np.where(fits[:, None], words, 0).astype(np.uint32))))
    place = np.zeros(len(bounds), np.int64)  # each entropy's next word
    enough = fits.copy()
    for d in range(bounds.shape[1]):
        bound = bounds[:, d].astype(np.uint64)
        drawing = bound > 1  # a bound of 1 is 0 without a draw; 0 is no draw
        scaled = np.zeros(len(bounds), np.uint64)
        # Lemire: a draw m = word · n is redrawn while its low word is below (2^32 − n) mod n (< n).
        threshold = np.where(drawing, (np.uint64(2**32) - bound) % np.maximum(bound, np.uint64(1)), np.uint64(0))
        again = drawing.copy()
        while again.any():
            enough &= ~again | (place < words.shape[1])
            again &= enough
            taken = words[np.arange(len(bounds)), np.minimum(place, words.shape[1] - 1)]
            scaled = np.where(again, taken * bound, scaled)
            place += again
            again &= (scaled & np.uint64(_WORD)) < threshold
        drawn[:, d] = np.where(drawing, (scaled >> np.uint64(32)).astype(np.int64), 0)
    for g in np.flatnonzero(~enough).tolist():  # the generator itself
        mine = bounds[g] > 0
        drawn[g, mine] = np.random.default_rng([seed, *entropy[g].tolist()]).integers(0, bounds[g][mine])
    return drawn


def _seed_states(entropy: np.ndarray) -> np.ndarray:
    """(G, 4) uint32 entropy words → (G, 4) uint64: ``SeedSequence(words).generate_state(4, np.uint64)``."""
    constant = [0x43B0D7E5]

    def hashed(value: np.ndarray) -> np.ndarray:
        value = value ^ np.uint32(constant[0])
        constant[0] = (constant[0] * 0x931E8875) & _WORD
        value = value * np.uint32(constant[0])
        return value ^ (value >> np.uint32(16))

    def mixed(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result = np.uint32(0xCA01F9DD) * x - np.uint32(0x4973F715) * y
        return result ^ (result >> np.uint32(16))

    with np.errstate(over="ignore"):
        pool = [hashed(entropy[:, i]) for i in range(4)]
        for source in range(4):
            for target in range(4):
                if source != target:
                    pool[target] = mixed(pool[target], hashed(pool[source]))
        state, constant_b = [], 0x8B51F9DD
        for i in range(8):
            value = pool[i % 4] ^ np.uint32(constant_b)
            constant_b = (constant_b * 0x58F38DED) & _WORD
            value = value * np.uint32(constant_b)
            state.append(value ^ (value >> np.uint32(16)))
    return np.ascontiguousarray(np.stack(state, axis=1)).view(np.uint64)  # word pairs, low word first


def _multiply(a: np.ndarray, b: np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """The 128-bit product of uint64 ``a`` and ``b``, as (high, low) uint64."""
    a_low, a_high = a & np.uint64(_WORD), a >> np.uint64(32)
    b_low, b_high = b & np.uint64(_WORD), b >> np.uint64(32)
    low_low, low_high, high_low = a_low * b_low, a_low * b_high, a_high * b_low
    middle = (low_low >> np.uint64(32)) + (low_high & np.uint64(_WORD)) + (high_low & np.uint64(_WORD))
    low = (low_low & np.uint64(_WORD)) | (middle << np.uint64(32))
    high = a_high * b_high + (low_high >> np.uint64(32)) + (high_low >> np.uint64(32)) + (middle >> np.uint64(32))
    return high, low


def _step(high: np.ndarray, low: np.ndarray, increment: tuple[np.ndarray, np.ndarray],
          ) -> tuple[np.ndarray, np.ndarray]:
    """One LCG step of PCG64: state · multiplier + increment, mod 2^128."""
    product_high, product_low = _multiply(low, _MULTIPLIER_LOW)
    product_high = product_high + high * _MULTIPLIER_LOW + low * _MULTIPLIER_HIGH
    new_low = product_low + increment[1]
    return product_high + increment[0] + (new_low < product_low).astype(np.uint64), new_low


def _pcg64_outputs(state: np.ndarray) -> np.ndarray:
    """(G, _OUTPUTS) uint64: the first outputs of PCG64 seeded with each row of ``state`` (G, 4) uint64."""
    with np.errstate(over="ignore"):
        seed_high, seed_low = state[:, 0], state[:, 1]
        # increment = (sequence << 1) | 1, sequence = state[:, 2] · 2^64 + state[:, 3]
        increment = ((state[:, 2] << np.uint64(1)) | (state[:, 3] >> np.uint64(63)),
                     (state[:, 3] << np.uint64(1)) | np.uint64(1))
        high, low = _step(np.zeros_like(seed_high), np.zeros_like(seed_low), increment)
        low_sum = low + seed_low
        high, low = high + seed_high + (low_sum < low).astype(np.uint64), low_sum
        high, low = _step(high, low, increment)
        outputs = []
        for _ in range(_OUTPUTS):
            high, low = _step(high, low, increment)
            folded, rotation = high ^ low, high >> np.uint64(58)
            outputs.append((folded >> rotation) | (folded << ((np.uint64(64) - rotation) & np.uint64(63))))
    return np.stack(outputs, axis=1)


def _words(outputs: np.ndarray) -> np.ndarray:
    """(G, 2 · _OUTPUTS) uint64 holding 32-bit words: each output's low half, then its high half."""
    return np.stack([outputs & np.uint64(_WORD), outputs >> np.uint64(32)], axis=2).reshape(len(outputs), -1)

"""Seed 002 App. C: the statistics of token batches that its Props. 2.5 and
2.7 assume of natural language.

Fig. 9: as a batch grows, how many of its contexts occur once, how many
distinct tokens it holds, and Prop. 2.5's |C^uu| (distinct tokens that are
the one observed continuation of some context; gradient_theory). Fig. 10:
the next-token entropy of a model's distributions, a proxy of N~'s support.
"""

from __future__ import annotations

import numpy as np

from bottleneck import checks, gradient_theory


def batch_sizes(available: int, window: int, largest: int,
                points: int = 8) -> list[int]:
  """Batch sizes in tokens (whole windows), geometric from one window to
  the most the text holds or `largest`, whichever is smaller."""
  checks.positive_int("window", window)
  checks.positive_int("largest", largest)
  top = min(available // window, largest // window)
  if top < 1:
    raise ValueError(f"the text holds {available} tokens: fewer than one "
                     f"window of {window}, or `largest` = {largest} is")
  grid = np.unique(np.geomspace(1, top, points).round().astype(int))
  return [int(k) * window for k in grid]


_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Odd: a bijection mod 2^64.


def _mix(z):
  """SplitMix64's finaliser (a bijection of uint64): without it a purely
  polynomial hash mod 2^64 collides on Thue-Morse-like strings."""
  z = z ^ (z >> np.uint64(30))
  z = z * np.uint64(0xBF58476D1CE4E5B9)
  z = z ^ (z >> np.uint64(27))
  z = z * np.uint64(0x94D049BB133111EB)
  return z ^ (z >> np.uint64(31))


def prefix_ids(x_nxt) -> np.ndarray:
  """Context id per position of windows x [n, T] (row-major), equal where
  the prefixes up to and including the position agree: a rolling hash mod
  2^64 of each prefix (multiply, add the token, mix), numbered 0 .. C - 1. gradient_theory.context_ids
  is exact but holds a trie of every prefix (about 150 bytes a token); this
  holds 8 bytes a token, and two different prefixes share an id with
  probability about n T^2 / 2^65 (1e-7 at two million tokens)."""
  x = np.asarray(x_nxt)
  if x.ndim != 2 or x.size == 0 or not np.issubdtype(x.dtype, np.integer):
    raise ValueError(f"`x` has shape {x.shape}, dtype {x.dtype}: expected "
                     "integer windows [n, T] with n, T >= 1")
  h = np.zeros(x.shape, np.uint64)
  acc = np.zeros(x.shape[0], np.uint64)
  with np.errstate(over="ignore"):
    for t in range(x.shape[1]):
      acc = _mix(acc * _MULTIPLIER + x[:, t].astype(np.uint64)
                 + np.uint64(1))
      h[:, t] = acc
  return np.unique(h.ravel(), return_inverse=True)[1].ravel()


def batch_curve(tokens, window: int, sizes, vocab: int, seed: int = 0
                ) -> list[dict]:
  """Fig. 9 for nested batches of non-overlapping windows drawn at random
  from the token stream `tokens` (each size in tokens a multiple of
  `window`; a batch holds the previous one): per batch its positions,
  distinct contexts (a context is the window's prefix up to the position),
  the share of positions whose context occurs once, |C^u| and |C^uu|
  (gradient_theory.rank_bound) and the distinct tokens it holds."""
  tokens = np.asarray(tokens)
  checks.positive_int("window", window)
  checks.positive_int("vocab", vocab)
  available = (len(tokens) - 1) // window
  sizes = [checks.positive_int("sizes", s) for s in sizes]
  bad = [s for s in sizes if s % window or s // window > available]
  if bad:
    raise ValueError(f"`sizes` {bad}: each must be a multiple of the window "
                     f"({window}) and at most {available * window} tokens "
                     "(the text's whole windows)")
  order = np.random.default_rng(seed).permutation(available) * window
  out = []
  for size in sizes:
    starts = np.sort(order[:size // window])
    x = np.stack([tokens[s:s + window] for s in starts])
    y = np.stack([tokens[s + 1:s + window + 1] for s in starts])
    ctx = gradient_theory.group(prefix_ids(x), y, vocab)
    bound = gradient_theory.rank_bound(ctx, vocab)
    once = int((ctx.counts == 1).sum())
    out.append({"tokens": int(size), "contexts": bound["contexts"],
                "seen_once": once, "seen_once_share": once / size,
                "C_u": bound["C_u"], "C_uu": bound["C_uu"],
                "distinct_tokens": int(np.unique(
                    np.concatenate([x.ravel(), y[:, -1]])).size)})
  return out


def entropy(probs_nxv) -> np.ndarray:
  """Fig. 10: next-token entropy -sum_v p log p per row, in nats, float64
  (a row is normalised to its own total first)."""
  p = checks.finite_array("probs", probs_nxv, ndim=2).astype(np.float64)
  if (p < 0).any():
    raise ValueError("`probs` holds negative entries: expected probabilities")
  total = p.sum(axis=1, keepdims=True)
  if (total <= 0).any():
    raise ValueError("`probs` has a row summing to 0: expected "
                     "distributions")
  p = p / total
  logs = np.log(np.where(p > 0, p, 1.0))
  return -(p * logs).sum(axis=1)

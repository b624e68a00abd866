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
  the most the text holds (`available` tokens) or `largest`, whichever is
  smaller; at most `points` sizes."""
  checks.int_in_range("available", available, 0, 2 ** 62)
  checks.positive_int("window", window)
  checks.positive_int("largest", largest)
  checks.int_in_range("points", points, 2, 1000)
  top = min(available // window, largest // window)
  if top < 1:
    raise ValueError(f"`available` = {available} tokens and `largest` = "
                     f"{largest}: each must hold one window of {window}")
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
  2^64 of each prefix (multiply, add the token, mix), numbered 0 .. C - 1.
  gradient_theory.context_ids is exact but holds a trie of every prefix
  (about 150 bytes a token); this holds 8 bytes a token, and two
  different prefixes share an id with probability about (n T)^2 / 2^65
  (1e-7 at two million tokens), which can only lower a count of contexts
  seen once."""
  x = np.asarray(x_nxt)
  if x.ndim != 2 or x.size == 0 or not np.issubdtype(x.dtype, np.integer):
    raise ValueError(f"`x` has shape {x.shape}, dtype {x.dtype}: expected "
                     "integer windows [n, T] with n, T >= 1")
  if x.min() < 0:
    raise ValueError(f"`x` holds token {x.min()}: token ids are >= 0")
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
  the positions whose context occurs once in it and their share, |C^u| and
  |C^uu| (gradient_theory.rank_bound), and the distinct tokens it reads
  (its windows' inputs and last targets: T + 1 tokens a window)."""
  checks.positive_int("window", window)
  checks.positive_int("vocab", vocab)
  checks.int_in_range("seed", seed, 0, 2 ** 63 - 1)
  tokens = np.asarray(tokens)
  if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
    raise ValueError(f"`tokens` has shape {tokens.shape}, dtype "
                     f"{tokens.dtype}: expected a 1-D stream of token ids")
  if tokens.size < window + 1:
    raise ValueError(f"`tokens` holds {tokens.size} tokens: fewer than one "
                     f"window of {window} and its next token")
  if tokens.min() < 0 or tokens.max() >= vocab:
    raise ValueError(f"`tokens` holds ids in [{tokens.min()}, "
                     f"{tokens.max()}]: allowed [0, {vocab - 1}] (vocab = "
                     f"{vocab})")
  if isinstance(sizes, (str, bytes)) or not np.iterable(sizes):
    raise ValueError(f"`sizes` must be a list of batch sizes in tokens; got "
                     f"{sizes!r}")
  available = (len(tokens) - 1) // window
  sizes = [checks.positive_int("sizes", s) for s in sizes]
  bad = [s for s in sizes if s % window or s // window > available]
  if bad or not sizes:
    raise ValueError(f"`sizes` {bad or sizes}: one or more, each a multiple "
                     f"of the window ({window}) and at most "
                     f"{available * window} tokens (the text's whole "
                     "windows)")
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


def entropy(probs_nxv, block: int = 8, tolerance: float = 1e-3
            ) -> np.ndarray:
  """Fig. 10: next-token entropy -sum_v p log p per row, in nats, float64,
  `block` rows at a time (a row of a 262144-token vocabulary is 2 MB in
  float64). Each row must be a distribution: entries >= 0 summing to 1
  within `tolerance` (float32 softmax rounds; a truncated or unnormalised
  row is an error, never renormalised)."""
  p = checks.finite_array("probs", probs_nxv, ndim=2)
  checks.positive_int("block", block)
  out = np.empty(p.shape[0], np.float64)
  for i in range(0, p.shape[0], block):
    q = p[i:i + block].astype(np.float64)
    if (q < 0).any():
      raise ValueError("`probs` holds negative entries: expected "
                       "probabilities")
    total = q.sum(axis=1)
    off = np.abs(total - 1.0)
    if (off > tolerance).any():
      r = i + int(off.argmax())
      raise ValueError(f"`probs` row {r} sums to {total[r - i]:.6g}: each "
                       f"row must sum to 1 within {tolerance:g}")
    out[i:i + block] = -(q * np.log(np.where(q > 0, q, 1.0))).sum(axis=1)
  return np.maximum(out, 0.0)  # A one-hot row: +0.0, not -0.0.

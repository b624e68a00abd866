"""Seed 002 on the explicit logit gradients G = softmax(H W^T + b) -
onehot(y) [T, V] of a few thousand tokens: Fig. 2's empirical rank (|diag
R| > 1e-6 in a QR of G^T, as the paper counts; one QR, or streamed past
T = V in O(V r) memory) and eq. (10) on the trained head against Gaussian
heads of its shape."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import gradient


def empirical_rank(g_txv, tol: float = 1e-6) -> int:
  """Fig. 2: rank as the count of |diag R| > tol in the QR of G^T."""
  return _prefix_ranks(g_txv, [len(g_txv)], tol)[0]


def _prefix_ranks(g_txv, counts, tol: float = 1e-6) -> list[int]:
  """empirical_rank of the first n rows for each n in counts, from one QR:
  R of G[:n]^T is the leading n x n block of R of G^T (Householder QR
  treats the columns in order)."""
  r = np.linalg.qr(np.asarray(g_txv, np.float64).T, mode="r")
  big = np.abs(np.diag(r)) > tol
  return [int(np.sum(big[:n])) for n in counts]


def rank_vs_tokens(h_txd, w_vxd, b_v, y_t, counts) -> list[dict]:
  """Empirical rank of the logit-gradient matrix of the first n tokens."""
  gradient.check_inputs(h_txd, w_vxd, b_v, y_t)
  counts = [int(n) for n in counts if 0 < n <= np.shape(h_txd)[0]]
  if not counts:
    return []
  top = max(counts)
  g = np.asarray(_logit_gradients_jit(
      jnp.asarray(np.asarray(h_txd)[:top], jnp.float32),
      jnp.asarray(w_vxd, jnp.float32),
      None if b_v is None else jnp.asarray(b_v, jnp.float32),
      jnp.asarray(np.asarray(y_t)[:top])), np.float64)
  return [{"tokens": n, "rank": rank, "max_rank": int(min(n, g.shape[1]))}
          for n, rank in zip(counts, _prefix_ranks(g, counts))]


_logit_gradients_jit = jax.jit(gradient.logit_gradients)


class StreamedRank:
  """Fig. 2's rank of a [T, V] matrix fed by row chunks, in O(V r) memory
  (r the rank so far): |diag R| of a QR of G^T, row by row, is each row's
  distance from the span of the rows before it; a chunk's rows are first
  projected off the basis Q [V, r] of the earlier rows (twice, for
  float64 orthogonality), then a QR of the chunk's residuals gives their
  distances from each other. Rows whose distance exceeds `tol` add their
  direction to Q. `ranks` holds the rank after every row. Equals
  empirical_rank's count up to rows within rounding of `tol`."""

  def __init__(self, v: int, tol: float = 1e-6):
    self.tol, self.q = tol, np.zeros((v, 0))
    self.ranks: list[int] = []

  def add(self, g_cxv) -> None:
    g = np.asarray(g_cxv, np.float64)
    for _ in range(2):
      g = g - (g @ self.q) @ self.q.T
    qc, r = np.linalg.qr(g.T)
    new = np.abs(np.diag(r)) > self.tol
    self.q = np.hstack([self.q, qc[:, new]])
    start = self.ranks[-1] if self.ranks else 0
    self.ranks += (start + np.cumsum(new)).tolist()


def rank_vs_tokens_streamed(h_txd, w_vxd, b_v, y_t, counts,
                            chunk: int = 512) -> list[dict]:
  """rank_vs_tokens for T up to several V (Fig. 2 past T = V): G's rows
  formed `chunk` at a time and fed to a StreamedRank, never [T, V] whole;
  once the rank is V no row can add to it and the rest are not formed.
  G's rows sum to 0 in exact arithmetic (softmax - one-hot: rank <= V - 1);
  in float32 that last direction is ~1e-7 per entry, which the paper's
  1e-6 threshold on |diag R| may count, as it does for rank_vs_tokens."""
  gradient.check_inputs(h_txd, w_vxd, b_v, y_t)
  h, y = np.asarray(h_txd), np.asarray(y_t)
  counts = sorted(int(n) for n in counts if 0 < n <= len(h))
  if not counts:
    return []
  w = jnp.asarray(w_vxd, jnp.float32)
  b = None if b_v is None else jnp.asarray(b_v, jnp.float32)
  v = w.shape[0]
  rank = StreamedRank(v)
  for i in range(0, counts[-1], chunk):
    if rank.ranks and rank.ranks[-1] == v:
      break
    j = min(i + chunk, counts[-1])
    rank.add(_logit_gradients_jit(jnp.asarray(h[i:j], jnp.float32), w, b,
                                  jnp.asarray(y[i:j])))
  at = lambda n: rank.ranks[n - 1] if n <= len(rank.ranks) else v
  return [{"tokens": n, "rank": at(n), "max_rank": int(min(n, v))}
          for n in counts]


def subspace_ratios(h_txd, w_vxd, b_v, y_t, draws: int = 5,
                    seed: int = 0) -> dict:
  """Eq. (10) on the same logit gradients G [T, V] for the trained head and
  for Gaussian heads of its shape: |P_ker(W^T) G|_F / |G|_F with W's
  column space, and with `draws` random D-dimensional ones (float64 QR;
  their mean and spread: for a random subspace the expected squared share
  kept is D / V exactly, a Monte-Carlo check of sqrt(1 - D/V))."""
  gradient.check_inputs(h_txd, w_vxd, b_v, y_t)
  g = np.asarray(_logit_gradients_jit(
      jnp.asarray(h_txd, jnp.float32), jnp.asarray(w_vxd, jnp.float32),
      None if b_v is None else jnp.asarray(b_v, jnp.float32),
      jnp.asarray(y_t)), np.float64)
  total = np.sum(g * g)
  rng = np.random.default_rng(seed)

  def lost(basis_vxd):  # An orthonormal basis of its column space (SVD:
    u, sv, _ = np.linalg.svd(basis_vxd, full_matrices=False)  # rank-aware).
    q = u[:, sv > sv[0] * max(basis_vxd.shape) * np.finfo(float).eps]
    return float(np.sqrt(max(1.0 - np.sum((g @ q) ** 2) / total, 0.0)))

  w = np.asarray(w_vxd, np.float64)
  twins = [lost(rng.standard_normal(w.shape)) for _ in range(draws)]
  return {"trained": lost(w), "random": float(np.mean(twins)),
          "random_std": float(np.std(twins, ddof=1)) if draws > 1 else 0.0,
          "counted": float(np.sqrt(1.0 - w.shape[1] / w.shape[0])),
          "tokens": int(g.shape[0])}

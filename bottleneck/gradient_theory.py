"""Seed 002 §2.3's exact statements (Godey & Artzi), in float64 numpy.

For C distinct contexts with hidden states H [C, D], a head W [V, D] (bias
b [V] or none), model probabilities P = softmax(H W^T + b) and empirical
next-token distributions N~ [C, V] (row c: the histogram of the tokens that
followed context c, normalised), with context weights omega_c = (count of
c) / T:

  eq. (6)    a gradient step (lr eta) on H and W moves the logits by
             Delta = (L(H', W', b') - L(H, W, b)) / eta, of rank <= 2D
             (+1 with a bias: b' - b adds one rank-one term).
  Prop. 2.5  with C^u the contexts whose every continuation is one token
             and C^uu the set of those tokens, if P in (0, 1):
             rank(P - N~) >= min(|C^uu|, V - 1) =: D^u.
  Prop. 2.6  if D^u > D, every matrix of rank <= 2D, Delta included, lies
             at least sqrt(sum_{i=2D+1}^{D^u} zeta_i^2) from P - N~ in
             Frobenius norm (zeta: its singular values, decreasing;
             Eckart-Young-Mirsky). The paper writes '>'; Eckart-Young gives
             '>=' (equality at the best rank-2D approximation when
             rank(P - N~) = D^u), which is what is checked.

Contexts are exact token prefixes (`context_ids`): two positions share a
context when their windows agree on every token up to them, so N~ is the
empirical distribution the paper's C x V matrix holds.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bottleneck import checks


class Contexts(NamedTuple):
  """Positions grouped by context: `ids` [n T] (the context of each
  position, 0 .. C - 1), `counts` [C], `unique_next` [C] bool (C^u: every
  occurrence followed by one token), `n_tilde_CxV`-defining pairs
  (`rows`, `cols`, `values`: N~'s non-zeros)."""
  ids: np.ndarray
  counts: np.ndarray
  unique_next: np.ndarray
  rows: np.ndarray
  cols: np.ndarray
  values: np.ndarray

  @property
  def n(self) -> int:
    return int(self.counts.size)


def context_ids(x_nxt) -> np.ndarray:
  """Context id per position of windows x [n, T] (row-major): equal ids
  exactly where the windows' prefixes up to and including the position
  agree (numbered in order of first appearance)."""
  x = np.asarray(x_nxt)
  if x.ndim != 2 or x.size == 0:
    raise ValueError(f"`x` has shape {x.shape}: expected windows [n, T] "
                     "with n, T >= 1")
  seen: dict = {}
  out = np.empty(x.size, np.int64)
  k = 0
  for row in x:
    prefix = ()
    for t in row.tolist():
      prefix = (prefix, t)  # A linked key: O(1) per position.
      out[k] = seen.setdefault(prefix, len(seen))
      k += 1
  return out


def group(ids, y, vocab: int) -> Contexts:
  """N~ and C^u from context ids and next tokens y (both [n T])."""
  ids, y = np.asarray(ids, np.int64).ravel(), np.asarray(y).ravel()
  if ids.shape != y.shape or ids.size == 0:
    raise ValueError(f"`ids` {ids.shape} and `y` {y.shape}: expected equal, "
                     "non-empty lengths")
  checks.positive_int("vocab", vocab)
  if y.min() < 0 or y.max() >= vocab:
    raise ValueError(f"`y` holds tokens in [{y.min()}, {y.max()}]: allowed "
                     f"[0, {vocab - 1}] (vocab = {vocab})")
  c = int(ids.max()) + 1
  counts = np.bincount(ids, minlength=c)
  pairs, hits = np.unique(ids * vocab + y, return_counts=True)
  rows, cols = pairs // vocab, pairs % vocab
  unique_next = np.bincount(rows, minlength=c) == 1
  return Contexts(ids, counts, unique_next, rows, cols,
                  hits / counts[rows])


def rank_bound(ctx: Contexts, vocab: int) -> dict:
  """Prop. 2.5's D^u = min(|C^uu|, V - 1), with |C^u| and |C^uu|."""
  uu = np.unique(ctx.cols[ctx.unique_next[ctx.rows]])
  return {"contexts": ctx.n, "C_u": int(ctx.unique_next.sum()),
          "C_uu": int(uu.size), "D_u": int(min(uu.size, vocab - 1))}


def probabilities(h_cxd, w_vxd, b_v=None) -> np.ndarray:
  """P = softmax(H W^T + b) [C, V], float64."""
  logits = np.asarray(h_cxd, np.float64) @ np.asarray(w_vxd, np.float64).T
  if b_v is not None:
    logits = logits + np.asarray(b_v, np.float64)
  logits -= logits.max(axis=1, keepdims=True)
  p = np.exp(logits)
  return p / p.sum(axis=1, keepdims=True)


def error_matrix(p_cxv, ctx: Contexts) -> np.ndarray:
  """P - N~ [C, V] (float64; P's rows in context order)."""
  e = np.array(p_cxv, np.float64)
  if e.shape[0] != ctx.n:
    raise ValueError(f"`p` has {e.shape[0]} rows: expected one per context "
                     f"({ctx.n})")
  e[ctx.rows, ctx.cols] -= ctx.values
  return e


def logit_step(h_cxd, w_vxd, b_v, e_cxv, weights_c, eta: float
               ) -> np.ndarray:
  """Delta of eq. (6): one gradient step of lr `eta` on H, W (and b) of
  the loss sum_c omega_c CE(c), whose logit gradient is diag(omega)(P - N~)
  (eq. 7): H' = H - eta diag(omega) E W, W' = W - eta E^T diag(omega) H,
  b' = b - eta E^T omega; Delta = (L' - L) / eta, float64 (computed in
  factored form: nothing cancels)."""
  if not eta > 0:
    raise ValueError(f"`eta` is {eta}: allowed > 0")
  h = np.asarray(h_cxd, np.float64)
  w = np.asarray(w_vxd, np.float64)
  g = np.asarray(weights_c, np.float64)[:, None] * np.asarray(e_cxv,
                                                              np.float64)
  # (H - eta G W)(W - eta G^T H)^T - H W^T, expanded so that nothing
  # cancels: -eta [H (H^T G) + (G W) W'^T], one rank-D term each.
  w2 = w - eta * g.T @ h
  delta = -(h @ (h.T @ g)) - (g @ w) @ w2.T
  if b_v is not None:
    delta = delta - g.sum(axis=0)[None, :]
  return delta


def singular_values(m) -> np.ndarray:
  """Singular values of a float64 matrix, decreasing."""
  return np.linalg.svd(np.asarray(m, np.float64), compute_uv=False)


def numerical_rank(s, shape, rtol: float | None = None) -> int:
  """Count of singular values above rtol * s_max (default: numpy's
  matrix_rank tolerance, max(shape) * eps)."""
  s = np.asarray(s, np.float64)
  if s.size == 0 or s[0] == 0:
    return 0
  rtol = max(shape) * np.finfo(np.float64).eps if rtol is None else rtol
  return int(np.sum(s > rtol * s[0]))


def tail_bound(s, cap: int, d_u: int) -> float:
  """Prop. 2.6's sqrt(sum_{i=cap+1}^{D^u} zeta_i^2), cap = 2D the rank
  of the update (2D + 1 with a bias); 0 where D^u <= cap."""
  s = np.asarray(s, np.float64)
  return float(np.sqrt(np.sum(s[cap:d_u] ** 2)))


def check(h_cxd, w_vxd, b_v, ctx: Contexts, eta: float = 1e-3) -> dict:
  """eq. (6), Props. 2.5 and 2.6 on one set of contexts: the numbers and
  whether each statement holds (`*_holds`), all in float64."""
  v, d = np.shape(w_vxd)
  d_rank = int(np.linalg.matrix_rank(np.asarray(w_vxd, np.float64)))
  p = probabilities(h_cxd, w_vxd, b_v)
  e = error_matrix(p, ctx)
  s = singular_values(e)
  bound = rank_bound(ctx, v)
  rank_e = numerical_rank(s, e.shape)
  delta = logit_step(h_cxd, w_vxd, b_v, e, ctx.counts / ctx.counts.sum(),
                     eta)
  s_delta = singular_values(delta)
  cap = 2 * d_rank + (b_v is not None)
  rank_delta = numerical_rank(s_delta, delta.shape)
  tail = tail_bound(s, cap, bound["D_u"])
  # Delta itself, and its best multiple (the closest to P - N~ along it).
  scale = float(np.sum(delta * e) / max(np.sum(delta * delta), 1e-300))
  residual = float(np.linalg.norm(delta - e))
  scaled = float(np.linalg.norm(scale * delta - e))
  total = float(np.sum(s ** 2))
  return dict(bound, V=int(v), D=d_rank, bias=b_v is not None,
              p_in_open_unit=bool(p.min() > 0 and p.max() < 1),
              rank_error=rank_e, prop2_5_holds=rank_e >= bound["D_u"],
              rank_delta=rank_delta, rank_delta_cap=cap,
              # The singular values either side of the rank, over the
              # largest: the gap that makes the count unambiguous.
              delta_last=float(s_delta[rank_delta - 1] / s_delta[0])
              if rank_delta else 0.0,
              delta_gap=float(s_delta[rank_delta] / s_delta[0])
              if s_delta.size > rank_delta and s_delta[0] > 0 else 0.0,
              eq6_holds=rank_delta <= cap,
              tail_bound=tail, residual=residual, residual_scaled=scaled,
              error_norm=float(np.sqrt(total)),
              prop2_6_holds=min(residual, scaled) >= tail,
              tail_share=float(np.sum(s[cap:] ** 2) / total)
              if total else 0.0,
              singular_values=s.tolist())

"""Seed 002 §2.3's exact statements (Godey & Artzi), in float64 numpy.

For C distinct contexts with hidden states H [C, D], a head W [V, D] (bias
b [V] or none), model probabilities P = softmax(H W^T + b) and empirical
next-token distributions N~ [C, V] (row c: the histogram of the tokens that
followed context c, normalised), with context weights omega_c = (count of
c) / T:

  eq. (6)    a gradient step (lr eta) on H and W moves the logits by
             Delta = (L(H', W', b') - L(H, W, b)) / eta, of rank <= 2D;
             precisely <= rank(H) + rank(W) (a low-rank head W = A B has
             rank(W) < D), +1 with a bias (b' - b adds one rank-one term):
             the `cap` checked.
  Prop. 2.5  with C^u the contexts whose every continuation is one token
             and C^uu the set of those tokens, if P in (0, 1):
             rank(P - N~) >= min(|C^uu|, V - 1) =: D^u.
  Prop. 2.6  every matrix of rank <= 2D, Delta included, lies at least
             sqrt(sum_{i=2D+1}^{D^u} zeta_i^2) from P - N~ in Frobenius
             norm (zeta: its singular values, decreasing; Eckart-Young-
             Mirsky; 2D read as the cap). The paper writes '>' and premises
             D^u > D; Eckart-Young gives '>=' (equality at the best rank-2D
             approximation when rank(P - N~) = D^u), and the bound is
             positive only when D^u > 2D (the cap): what is checked, and
             the premise reported (`prop2_6_applies`).

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


def _tokens(name: str, a) -> np.ndarray:
  """`a` as int64 token ids (non-negative integers), or ValueError."""
  a = np.asarray(a)
  if a.size and (not np.issubdtype(a.dtype, np.integer) or a.min() < 0):
    raise ValueError(f"`{name}` must hold non-negative integer token ids; "
                     f"got dtype {a.dtype}, min {a.min()}")
  return a.astype(np.int64)


def context_ids(x_nxt) -> np.ndarray:
  """Context id per position of windows x [n, T] (row-major): equal ids
  exactly where the windows' prefixes up to and including the position
  agree (numbered in order of first appearance: a trie of the prefixes,
  O(1) per position)."""
  x = _tokens("x", x_nxt)
  if x.ndim != 2 or x.size == 0:
    raise ValueError(f"`x` has shape {x.shape}: expected windows [n, T] "
                     "with n, T >= 1")
  seen: dict = {}
  out = np.empty(x.size, np.int64)
  k = 0
  for row in x.tolist():
    node = -1  # The empty prefix.
    for t in row:
      node = seen.setdefault((node, t), len(seen))
      out[k] = node
      k += 1
  return out


def group(ids, y, vocab: int) -> Contexts:
  """N~ and C^u from context ids and next tokens y (the same shape, or
  flat ids [n T] over y [n, T] row-major; ids are renumbered 0 .. C - 1
  in order of first appearance)."""
  ids, y = _tokens("ids", ids), _tokens("y", y)
  if ids.size == 0 or not (ids.shape == y.shape or (
      ids.ndim == 1 and ids.size == y.size)):
    raise ValueError(f"`ids` {ids.shape} and `y` {y.shape}: expected equal, "
                     "non-empty shapes (or flat `ids` over `y` row-major, "
                     "as context_ids gives them)")
  ids, y = ids.ravel(), y.ravel()
  checks.positive_int("vocab", vocab)
  if y.max() >= vocab:
    raise ValueError(f"`y` holds tokens in [{y.min()}, {y.max()}]: allowed "
                     f"[0, {vocab - 1}] (vocab = {vocab})")
  _, first, ids = np.unique(ids, return_index=True, return_inverse=True)
  order = np.argsort(np.argsort(first))  # Sorted id -> rank of sighting.
  ids = order[ids.ravel()]
  c = int(first.size)
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


def _head_inputs(h_cxd, w_vxd, b_v):
  """(H, W, b) as float64, finite, of matching shapes; else ValueError."""
  h = np.asarray(checks.finite_array("h", h_cxd, ndim=2), np.float64)
  w = np.asarray(checks.finite_array("w", w_vxd, ndim=2), np.float64)
  if h.shape[1] != w.shape[1]:
    raise ValueError(f"`h` {h.shape} and `w` {w.shape}: expected the same "
                     "width (columns)")
  if b_v is not None:
    b_v = np.asarray(checks.finite_array("b", b_v, ndim=1), np.float64)
    if b_v.shape != (w.shape[0],):
      raise ValueError(f"`b` has shape {b_v.shape}: expected ({w.shape[0]},)"
                       " (one bias per row of `w`)")
  return h, w, b_v


def probabilities(h_cxd, w_vxd, b_v=None) -> np.ndarray:
  """P = softmax(H W^T + b) [C, V], float64."""
  h, w, b_v = _head_inputs(h_cxd, w_vxd, b_v)
  logits = h @ w.T
  if b_v is not None:
    logits = logits + b_v
  logits -= logits.max(axis=1, keepdims=True)
  p = np.exp(logits)
  return p / p.sum(axis=1, keepdims=True)


def error_matrix(p_cxv, ctx: Contexts) -> np.ndarray:
  """P - N~ [C, V] (float64; P's rows in context order)."""
  e = np.array(checks.finite_array("p", p_cxv, ndim=2), np.float64)
  if e.shape[0] != ctx.n or e.shape[1] <= ctx.cols.max():
    raise ValueError(f"`p` has shape {e.shape}: expected one row per "
                     f"context ({ctx.n}) and a column per token (> "
                     f"{ctx.cols.max()})")
  if e.min() < 0 or e.max() > 1:
    raise ValueError(f"`p` holds values in [{e.min()}, {e.max()}]: "
                     "probabilities must lie in [0, 1]")
  e[ctx.rows, ctx.cols] -= ctx.values
  return e


def logit_step(h_cxd, w_vxd, b_v, e_cxv, weights_c, eta: float
               ) -> np.ndarray:
  """Delta of eq. (6): one gradient step of lr `eta` on H, W (and b) of
  the loss sum_c omega_c CE(c), whose logit gradient is diag(omega)(P - N~)
  (eq. 7): H' = H - eta diag(omega) E W, W' = W - eta E^T diag(omega) H,
  b' = b - eta E^T omega; Delta = (L' - L) / eta, float64 (computed in
  factored form: nothing cancels)."""
  eta = checks.number_in("eta", eta, 0.0, float("inf"))
  h, w, b = _head_inputs(h_cxd, w_vxd, b_v)
  e = np.asarray(checks.finite_array("e", e_cxv, ndim=2), np.float64)
  weights = np.asarray(checks.finite_array("weights", weights_c, ndim=1),
                       np.float64)
  if e.shape != (h.shape[0], w.shape[0]) or weights.shape != (h.shape[0],):
    raise ValueError(f"`e` {e.shape} and `weights` {weights.shape}: "
                     f"expected ({h.shape[0]}, {w.shape[0]}) and "
                     f"({h.shape[0]},) for h {h.shape} and w {w.shape}")
  g = weights[:, None] * e
  # (H - eta G W)(W - eta G^T H)^T - H W^T, expanded so that nothing
  # cancels: -eta [H (H^T G) + (G W) W'^T], one rank-D term each.
  w2 = w - eta * g.T @ h
  delta = -(h @ (h.T @ g)) - (g @ w) @ w2.T
  if b is not None:
    delta = delta - g.sum(axis=0)[None, :]
  return delta


def singular_values(m) -> np.ndarray:
  """Singular values of a float64 matrix, decreasing."""
  return np.linalg.svd(np.asarray(m, np.float64), compute_uv=False)


def numerical_rank(s, shape, rtol: float | None = None) -> int:
  """Count of singular values above rtol * s_max (default: numpy's
  matrix_rank tolerance, max(shape) * eps)."""
  s = _spectrum(s)
  if s.size == 0 or s[0] == 0:
    return 0
  rtol = (max(shape) * np.finfo(np.float64).eps if rtol is None else
          checks.number_in("rtol", rtol, 0.0, 1.0, lo_closed=True))
  return int(np.sum(s > rtol * s[0]))


def _spectrum(s) -> np.ndarray:
  """Singular values: 1-D, finite, non-negative, non-increasing."""
  s = np.asarray(s, np.float64)
  if s.ndim != 1 or not np.all(np.isfinite(s)) or np.any(s < 0) or np.any(
      np.diff(s) > 0):
    raise ValueError(f"`s` must be singular values: 1-D, finite, >= 0, "
                     f"non-increasing; got shape {s.shape}")
  return s


def tail_bound(s, cap: int, d_u: int) -> float:
  """Prop. 2.6's sqrt(sum_{i=cap+1}^{D^u} zeta_i^2), cap = 2D the rank
  of the update (2D + 1 with a bias); 0 where D^u <= cap."""
  s = _spectrum(s)
  checks.int_in_range("cap", cap, 0, 2**62)
  return float(np.sqrt(np.sum(s[cap:max(d_u, cap)] ** 2)))


def check(h_cxd, w_vxd, b_v, ctx: Contexts, eta: float = 1e-3) -> dict:
  """eq. (6), Props. 2.5 and 2.6 on one set of contexts: the numbers and
  whether each statement holds (`*_holds`; None where its premise fails),
  all in float64. D is the head's width; the update's rank cap is
  rank(H) + rank(W) (+1 with a bias), at most 2D (+1)."""
  h, w, b = _head_inputs(h_cxd, w_vxd, b_v)
  if h.shape[0] != ctx.n:
    raise ValueError(f"`h` has {h.shape[0]} rows: expected one per context "
                     f"({ctx.n})")
  v, d = w.shape
  p = probabilities(h, w, b)
  e = error_matrix(p, ctx)
  s = singular_values(e)
  bound = rank_bound(ctx, v)
  rank_e = numerical_rank(s, e.shape)
  delta = logit_step(h, w, b, e, ctx.counts / ctx.counts.sum(), eta)
  if not np.all(np.isfinite(delta)):
    raise ValueError("the step's Delta is not finite: `h` or `w` too large "
                     "for float64")
  s_delta = singular_values(delta)
  rank_h, rank_w = (int(np.linalg.matrix_rank(m)) for m in (h, w))
  cap = rank_h + rank_w + (b is not None)
  rank_delta = numerical_rank(s_delta, delta.shape)
  tail = tail_bound(s, cap, bound["D_u"])
  # Delta itself, and its best multiple (the closest to P - N~ along it):
  # Delta is of size omega ~ 1/C and points against P - N~, so only the
  # multiple's distance says how close a step of the right size gets.
  scale = float(np.sum(delta * e) / max(np.sum(delta * delta), 1e-300))
  residual = float(np.linalg.norm(delta - e))
  scaled = float(np.linalg.norm(scale * delta - e))
  total = float(np.sum(s ** 2))
  open_unit = bool(p.min() > 0 and p.max() < 1)
  applies = bound["D_u"] > cap
  return dict(bound, V=int(v), D=int(d), rank_h=rank_h, rank_w=rank_w,
              bias=b is not None, p_in_open_unit=open_unit,
              rank_error=rank_e,
              prop2_5_holds=rank_e >= bound["D_u"] if open_unit else None,
              # zeta at D^u and past it over zeta_1: the gap that makes
              # the rank count unambiguous.
              error_at_bound=float(s[bound["D_u"] - 1] / s[0])
              if bound["D_u"] and s[0] > 0 else 0.0,
              rank_delta=rank_delta, rank_delta_cap=cap,
              delta_last=float(s_delta[rank_delta - 1] / s_delta[0])
              if rank_delta else 0.0,
              delta_gap=float(s_delta[rank_delta] / s_delta[0])
              if s_delta.size > rank_delta and s_delta[0] > 0 else 0.0,
              eq6_holds=rank_delta <= cap,
              tail_bound=tail, residual=residual, residual_scaled=scaled,
              error_norm=float(np.sqrt(total)), prop2_6_applies=applies,
              prop2_6_holds=(scaled >= tail and tail > 0) if applies
              else None,
              tail_share=float(np.sum(s[cap:] ** 2) / total)
              if total else 0.0,
              singular_values=s.tolist())

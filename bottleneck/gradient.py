"""The LM head as a gradient bottleneck (seed 002, §2.3 and §3.3-3.4).

For hidden states H (T x D), head W (V x D), bias b and targets y, the
gradient of the summed cross-entropy with respect to the logits is

  G = softmax(H W^T + b) - onehot(y)            (T x V, eq. 7 per token)

and backpropagation hands the backbone only G W (eq. 9): the part of each row
of G in ker(W^T) is destroyed. With P_W the projection onto col(W),

  destroyed fraction  |P_ker G|_F / |G|_F = sqrt(1 - |P_W G|_F^2 / |G|_F^2)
                                                         (eq. 10: norm ratio)

|P_W g| is read through a D x D whitener M of the head (W^T W = U L U^T,
M = U L^{-1/2} on the non-null eigenvalues): |P_W g|^2 = |(g W) M|^2, so no
V x D basis is ever formed (262144 x 640 would cost 0.7 GB more) and a
rank-deficient head (W = A B, rank < D) is handled exactly.

The squared ratio |P_ker G|_F^2 / |G|_F^2 is reported too; the paper's
95-99% is the norm ratio of eq. 10. Everything is chunked over tokens
(never a V x V matrix, never all T x V logits at once), jitted, and exact.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import checks, linalg

# Rows of W per step of head_statistics' pass over the logits (1024-4096
# ran alike on Gemma 3's head: each block of W stays in cache for both
# products).
VOCAB_BLOCK = 2048


def check_inputs(h_txd, w_vxd, b_v, y_t):
  h, w = np.shape(h_txd), np.shape(w_vxd)
  if len(h) != 2 or len(w) != 2 or h[1] != w[1]:
    raise ValueError(f"`h` (T x D) and `w` (V x D) must share D; got shapes "
                     f"{h} and {w}.")
  if np.shape(y_t) != (h[0],):
    raise ValueError(f"`targets` must have shape ({h[0]},); got "
                     f"{np.shape(y_t)}.")
  if b_v is not None and np.shape(b_v) != (w[0],):
    raise ValueError(f"`bias` must have shape ({w[0]},); got "
                     f"{np.shape(b_v)}.")
  if h[0] == 0:
    raise ValueError("`h` must hold at least one token.")
  y = np.asarray(y_t)
  if y.min() < 0 or y.max() >= w[0]:
    raise ValueError(f"`targets` must be token ids in [0, {w[0] - 1}].")


def whitener_from_gram(gram_dxd, rcond: float):
  """M = U L^{-1/2} (columns of null eigenvalues zero) for W^T W = U L U^T:
  then W M has orthonormal columns spanning col(W) and |P_W g| = |g W M|.
  Works on numpy and jax arrays (the training probe calls it under jit);
  eigenvalues below rcond * max count as null."""
  xp = jnp if isinstance(gram_dxd, jax.Array) else np
  lam, u = xp.linalg.eigh(gram_dxd)
  keep = lam > rcond * xp.max(lam)
  scale = xp.where(keep, 1.0 / xp.sqrt(xp.where(keep, lam, 1.0)), 0.0)
  return u * scale[None, :]


def head_whitener(w_vxd, block: int = 16384):
  """The whitener of W (float32 D x D) from its Gram matrix accumulated in
  float64 by blocks of rows (never a float64 copy of W)."""
  return whitener_from_gram(linalg.gram64(w_vxd, block),
                            1e-12).astype(np.float32)


def logit_gradients(h_txd, w_vxd, b_v, y_t):
  """G = softmax(H W^T + b) - onehot(y): [T, V] (small T only)."""
  logits = h_txd @ w_vxd.T
  if b_v is not None:
    logits = logits + b_v[None, :]
  return jax.nn.softmax(logits, axis=-1) - jax.nn.one_hot(
      y_t, w_vxd.shape[0], dtype=logits.dtype)


def head_statistics(h_btd, y_bt, w_vxd, b_v, m_dxd, chunk: int,
                    softcap: float = 0.0, valid_b=None,
                    vocab_block: int = VOCAB_BLOCK):
  """Everything the probes need from the logits of a batch of windows, in
  one pass, `chunk` positions of each window at a time (lax.scan over T:
  never more than B x chunk x V logits; B stays sharded).

  Per position: -log p(y), whether y is the most likely token and (with the
  whitener M) cos(g, P_W g), whose sine is the fraction of g's norm
  destroyed. Summed over positions: the next-token distribution (seed 003's
  alpha, times the count), and with M = `m_dxd` (None skips them) seed 002's
  |g|^2, |P_W g|^2 and cos(g, P_W g) for g = softmax(z) - onehot(y),
  z = H W^T + b
  (eq. 7). With final-logit soft-capping (c tanh(z / c), Gemma 2), the model
  distribution uses the capped logits and g is the gradient with respect to
  z, the part that reaches W^T. valid_b: 0/1 per window (padding windows
  of a sharded batch count 0 in the sums).

  Inside a chunk, W is read once, `vocab_block` rows at a time (_logit_pass:
  an online softmax, as in flash attention, with W as keys and values), so
  g W is accumulated while each block of W is in cache instead of a second
  pass over all of W (a third less time on Gemma 3's head).
  """
  checks.positive_int("vocab_block", vocab_block)
  b, t, d = h_btd.shape
  n = -(-t // chunk)
  pad = n * chunk - t
  h = jnp.pad(h_btd, ((0, 0), (0, pad), (0, 0)))
  y = jnp.pad(y_bt, ((0, 0), (0, pad)))
  h = h.reshape(b, n, chunk, d).swapaxes(0, 1)  # [n, B, c, D]
  y = y.reshape(b, n, chunk).swapaxes(0, 1)
  valid = (jnp.arange(n * chunk) < t).reshape(n, chunk)
  windows = jnp.ones((b,), jnp.float32) if valid_b is None else \
      jnp.asarray(valid_b, jnp.float32)
  v = w_vxd.shape[0]

  def body(acc, xs):
    h_c, y_c, m = xs
    mask = windows[:, None] * m[None, :].astype(jnp.float32)  # 0 = pad.
    s = _logit_pass(h_c, y_c, mask, w_vxd, b_v, softcap, m_dxd is not None,
                    min(vocab_block, v))
    out = dict(acc, alpha=acc["alpha"] + s["alpha"])
    if m_dxd is not None:
      visible = jnp.sum((s["g_w"] @ m_dxd) ** 2, axis=-1)  # |P_W g_t|^2
      total = s["total"]
      cos = jnp.sqrt(jnp.clip(visible / jnp.maximum(total, 1e-30), 0.0, 1.0))
      out.update(grad_sq=acc["grad_sq"] + jnp.sum(mask * total),
                 visible_sq=acc["visible_sq"] + jnp.sum(mask * visible),
                 cos_sum=acc["cos_sum"] + jnp.sum(mask * cos))
      return out, (s["nll"], s["top1"], cos)
    return out, (s["nll"], s["top1"], jnp.zeros_like(s["nll"]))

  zero = jnp.zeros((), jnp.float32)
  init = {"alpha": jnp.zeros((v,), jnp.float32)}
  if m_dxd is not None:
    init.update(grad_sq=zero, visible_sq=zero, cos_sum=zero)
  sums, (nll, top1, cos) = jax.lax.scan(body, init, (h, y, valid))
  unchunk = lambda a: a.swapaxes(0, 1).reshape(b, n * chunk)[:, :t]
  out = dict(sums, nll=unchunk(nll), top1=unchunk(top1))
  if m_dxd is not None:
    out["cos"] = unchunk(cos)
  return out


def _capped(z, softcap: float):
  """(c tanh(z / c), its slope 1 - tanh^2) or (z, None) without a cap."""
  if not softcap:
    return z, None
  th = jnp.tanh(z / softcap)
  return softcap * th, 1.0 - th * th


def _logit_pass(h_bcd, y_bc, mask_bc, w_vxd, b_v, softcap: float,
                with_grad: bool, block: int) -> dict:
  """One read of W for positions h [B, c, D]: an online softmax over blocks
  of `block` rows of W (running max, sum of exp, argmax) that accumulates,
  for g = s (softmax(zc) - onehot(y)) with s the cap's slope, the terms of
  g W and |g|^2 away from the target (sum_{v != y} p_v s_v w_v and
  sum_{v != y} (p_v s_v)^2, unnormalised) while the block is in cache; the
  target's term (p_y - 1) s_y is added at the end, so neither loses digits
  when p_y is near 1. Returns alpha's part (sum over positions of
  softmax(zc) weighted by mask [B, c]), nll and top1 [B, c] and, with_grad,
  g W [B, c, D] and |g|^2 [B, c]."""
  v, d = w_vxd.shape
  n_blocks = v // block
  shape = h_bcd.shape[:2]

  def step(carry, w_blk, lo, width):
    run_max, run_sum, sq_sum, g_w, best, best_z = carry
    z = jnp.einsum("bcd,vd->bcv", h_bcd, w_blk)
    if b_v is not None:
      z = z + jax.lax.dynamic_slice_in_dim(b_v, lo, width)[None, None, :]
    zc, slope = _capped(z, softcap)
    blk_max = zc.max(-1)
    new_max = jnp.maximum(run_max, blk_max)
    e = jnp.exp(zc - new_max[..., None])
    shrink = jnp.exp(run_max - new_max)
    run_sum = run_sum * shrink + e.sum(-1)
    if with_grad:
      es = e if slope is None else e * slope
      off_target = (jnp.arange(width, dtype=jnp.int32)[None, None, :] + lo
                    != y_bc[..., None])
      es = jnp.where(off_target, es, 0.0)
      sq_sum = sq_sum * shrink * shrink + jnp.sum(es * es, -1)
      g_w = g_w * shrink[..., None] + jnp.einsum("bcv,vd->bcd", es, w_blk)
    arg = jnp.argmax(zc, -1).astype(jnp.int32) + lo  # First max wins ties,
    best = jnp.where(blk_max > best_z, arg, best)  # as in one argmax.
    return (new_max, run_sum, sq_sum, g_w, best,
            jnp.maximum(best_z, blk_max)), zc

  carry = (jnp.full(shape, -jnp.inf), jnp.zeros(shape), jnp.zeros(shape),
           jnp.zeros(shape + (d,) if with_grad else ()),
           jnp.zeros(shape, jnp.int32), jnp.full(shape, -jnp.inf))
  zc_parts = []
  if n_blocks:
    carry, zs = jax.lax.scan(
        lambda c, xs: step(c, xs[0], xs[1], block), carry,
        (w_vxd[:n_blocks * block].reshape(n_blocks, block, d),
         jnp.arange(n_blocks, dtype=jnp.int32) * block))
    zc_parts.append(zs)  # [n_blocks, B, c, block]
  if v > n_blocks * block:  # The last V mod block rows.
    carry, z_tail = step(carry, w_vxd[n_blocks * block:], n_blocks * block,
                         v - n_blocks * block)
    zc_parts.append(z_tail[None])
  run_max, run_sum, sq_sum, g_w, best, _ = carry
  lse = run_max + jnp.log(run_sum)
  alpha = jnp.concatenate([  # Read in the blocks' own layout: no transpose.
      jnp.einsum("nbcv,bc->nv", jnp.exp(z - lse[None, ..., None]), mask_bc
                 ).reshape(-1) for z in zc_parts])
  w_y = jnp.take(w_vxd, y_bc, axis=0)  # [B, c, D]
  z_y = jnp.einsum("bcd,bcd->bc", h_bcd, w_y)
  if b_v is not None:
    z_y = z_y + jnp.take(b_v, y_bc)
  zc_y, s_y = _capped(z_y, softcap)
  out = {"alpha": alpha, "nll": lse - zc_y, "top1": best == y_bc}
  if with_grad:
    s_y = 1.0 if s_y is None else s_y
    g_y = jnp.expm1(zc_y - lse) * s_y  # (p_y - 1) s_y
    out["g_w"] = g_w / run_sum[..., None] + g_y[..., None] * w_y
    out["total"] = sq_sum / run_sum ** 2 + g_y ** 2
  return out


def bottleneck_stats(h_txd, w_vxd, b_v, y_t, m_dxd, chunk: int):
  """Sums over tokens of |g|^2, |P_W g|^2 and cos(g, P_W g): pure jnp,
  jittable (the training-time probe and `destroyed_fraction`)."""
  out = head_statistics(h_txd[None], y_t[None], w_vxd, b_v, m_dxd, chunk)
  return {k: out[k] for k in ("grad_sq", "visible_sq", "cos_sum")}


_stats_jit = jax.jit(bottleneck_stats, static_argnames="chunk")


def destroyed_fraction(h_txd, w_vxd, b_v, y_t, chunk: int = 1024) -> dict:
  """Eq. (10) over all tokens, plus the squared ratio and App. D's cosine.

  mean_cosine: the average over tokens of cos(g_t, P_W g_t) = |P_W g_t| /
  |g_t|, the alignment of what the backbone sees with the true gradient.
  """
  check_inputs(h_txd, w_vxd, b_v, y_t)
  checks.positive_int("chunk", chunk)
  h = jnp.asarray(h_txd, jnp.float32)
  w = jnp.asarray(w_vxd, jnp.float32)
  b = None if b_v is None else jnp.asarray(b_v, jnp.float32)
  out = _stats_jit(h, w, b, jnp.asarray(y_t, jnp.int32), head_whitener(w),
                   chunk=min(chunk, h.shape[0]))
  total, visible = float(out["grad_sq"]), float(out["visible_sq"])
  lost_sq = max(total - visible, 0.0) / total
  return {"norm_ratio": float(np.sqrt(lost_sq)), "squared_ratio": lost_sq,
          "mean_cosine": float(out["cos_sum"]) / h.shape[0],
          "tokens": int(h.shape[0]), "D_over_V": w.shape[1] / w.shape[0]}


def coefficient_profiles(h_txd, w_vxd, b_v, y_t, top: int = 50,
                         tail_points: int = 30, m_dxd=None) -> dict:
  """Fig. 7: full vs projected (visible) gradient coefficients.

  Per token, coefficients sorted by |full gradient| (ties by index, as a
  stable argsort); the projected gradient P_W g = W M M^T W^T g is read in
  the same order. Returns mean and std over tokens at the first `top`
  ranks and at `tail_points` log-spaced ranks. m_dxd: W's whitener if
  already at hand (`head_whitener`).
  """
  check_inputs(h_txd, w_vxd, b_v, y_t)
  w = jnp.asarray(w_vxd, jnp.float32)
  m = jnp.asarray(head_whitener(w) if m_dxd is None else m_dxd)
  g, proj = _with_projection(jnp.asarray(h_txd, jnp.float32), w, None if
                             b_v is None else jnp.asarray(b_v),
                             jnp.asarray(y_t), m)
  g, proj = np.asarray(g), np.asarray(proj)
  v = g.shape[1]
  ranks = np.unique(np.concatenate([
      np.arange(min(top, v)),
      np.geomspace(1, v, tail_points).astype(int) - 1]))
  at = _descending_at(np.abs(g), ranks)  # [T, len(ranks)] indices.
  g_sorted = np.take_along_axis(g, at, 1)
  p_sorted = np.take_along_axis(proj, at, 1)
  return {"rank": ranks, "full_mean": g_sorted.mean(0),
          "full_std": g_sorted.std(0), "proj_mean": p_sorted.mean(0),
          "proj_std": p_sorted.std(0)}


@jax.jit
def _with_projection(h, w, b, y, m):
  g = logit_gradients(h, w, b, y)
  return g, (((g @ w) @ m) @ m.T) @ w.T  # P_W g = W M M^T W^T g, no V x D.


def _descending_at(abs_txv, ranks):
  """Per row, the indices at `ranks` of the order by decreasing value, ties
  by increasing index (a stable argsort of -x: `linalg.stable_argsort_rows`,
  a radix sort)."""
  x = np.asarray(abs_txv, np.float32)
  if not np.all(x >= 0):
    raise ValueError("`abs_txv` must be >= 0.")
  return linalg.stable_argsort_rows(-x)[0][:, ranks].astype(np.int64)


def update_efficiency(h_txd, w_vxd, b_v, y_t, fractions) -> dict:
  """Fig. 8: mean loss after moving the logits by a fraction of their norm.

  Directions: the logit gradient -G (first-order optimal) and -G W W^T
  (the logit change caused by moving H along its gradient -G W), both scaled
  to the same Frobenius norm, fraction * |L|_F.
  """
  check_inputs(h_txd, w_vxd, b_v, y_t)
  loss0, by_g, by_h = _efficiency(
      jnp.asarray(h_txd, jnp.float32), jnp.asarray(w_vxd, jnp.float32),
      None if b_v is None else jnp.asarray(b_v, jnp.float32),
      jnp.asarray(y_t, jnp.int32), jnp.asarray(fractions, jnp.float32))
  return {"fraction": list(map(float, fractions)), "loss0": float(loss0),
          "logit_gradient": np.asarray(by_g, np.float64).tolist(),
          "hidden_gradient": np.asarray(by_h, np.float64).tolist()}


@jax.jit
def _efficiency(h, w, b, y, fractions):
  logits = h @ w.T
  if b is not None:
    logits = logits + b[None, :]
  g = jax.nn.softmax(logits, axis=-1) - jax.nn.one_hot(y, w.shape[0])
  via_h = (g @ w) @ w.T

  def loss(l):
    return jnp.mean(jax.nn.logsumexp(l, axis=-1) - jnp.take_along_axis(
        l, y[:, None], axis=-1)[:, 0])

  scale = jnp.linalg.norm(logits)
  along = lambda d: jax.lax.map(lambda f: loss(
      logits - f * scale * d / jnp.maximum(jnp.linalg.norm(d), 1e-30)),
                                fractions)
  return loss(logits), along(g), along(via_h)

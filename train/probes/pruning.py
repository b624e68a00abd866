"""Seed 003 §4 / Fig. 6 on a trained head: output-embedding dimensions
removed by MLR saliency, least or most salient first, and the KL of the
mean next-token distribution on out-of-domain positions. Its spec: PRUNE.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import encoding
from train.probes import plots
from train.probes.encoding import moments
from train.probes.forward import (PASS_CHUNK_BYTES, Pass, device_head,
                                  rows_per_step)
from train.probes.spec import Figure, Probe, Row, fmt


def prune_probe(subject, pass_: Pass, ood_pass: Pass, positions: int = 1024,
                ratios=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
                blocks: int = 8):
  """Seed 003 §4 / Fig. 6: zero output-embedding dimensions by MLR saliency
  (alpha over every position of the Pass) and measure the KL of the mean
  distribution on `positions` out-of-domain positions.

  Both removal orders are one column order of W read from either end
  (saliency removes its least salient prefix, the adversarial order the
  same columns' most salient suffix), so every ratio of both comes from
  one forward and one backward sweep over column blocks
  (`_mean_softmax_kept`): two products H W^T in all, not one per ratio.

  The positions are summed in `blocks` contiguous blocks (sizes within one
  of each other, one compiled shape): `blocks` holds each block's KLs, an
  estimate of their sampling noise at no extra cost (the whole's means are
  the blocks' weighted by their sizes).
  """
  w, b = subject.head()
  d = w.shape[1]
  if any(not 0.0 <= r <= 1.0 for r in ratios):
    raise ValueError(f"`ratios` must lie in [0, 1]; got {list(ratios)}.")
  slopes = encoding.mlr(-np.log(pass_.alpha), w,
                        moments(subject, "W"))["slopes"]
  order = encoding.removal_order(slopes)  # Least salient first.
  counts = [int(round(r * d)) for r in ratios]
  bounds = tuple(sorted({0, d} | set(counts) | {d - c for c in counts}))
  h = ood_pass.h[:positions][:, order]
  parts = np.array_split(np.arange(len(h)), max(1, min(blocks, len(h))))
  width = len(parts[0])  # The widest block: every block padded to it.
  cols, inside = _column_blocks(bounds)
  w_dev, b_dev = device_head(subject)  # The Pass's copy: no new one.
  wt = _blocks_of_wt(w_dev, order[cols], inside)
  chunk = rows_per_step(w.shape[0], budget=PASS_CHUNK_BYTES, positions=width)
  sums = [np.asarray(_mean_softmax_kept(
      jnp.asarray(np.pad(h[p], ((0, width - len(p)), (0, 0)))), wt, b_dev,
      jnp.asarray(len(p), jnp.int32), bounds,
      float(subject.cfg.logit_softcap), chunk), np.float64) * len(p)
          for p in parts]
  kls = [_kls(s / len(p), counts, bounds, d) for s, p in zip(sums, parts)]
  out = {"ratios": list(ratios), "positions": int(len(h)),
         **_kls(sum(sums) / len(h), counts, bounds, d),
         "blocks": {"positions": [len(p) for p in parts],
                    "saliency": [k["saliency"] for k in kls],
                    "adversarial": [k["adversarial"] for k in kls]}}
  return out, {"prune": plots.prune({subject.name: out})}


def _kls(means, counts, bounds, d: int) -> dict:
  """KL to nothing removed after removing each count of columns, least
  salient first ('saliency') and most salient first ('adversarial'), from
  `_mean_softmax_kept`'s means ([kept_first, kept_from] x bounds)."""
  means = means.copy()
  last = len(bounds) - 1
  base = means[1, 0] = means[0, last]  # Nothing removed (one sum order).
  return {"saliency": [encoding.kl(base, means[1, bounds.index(c)])
                       for c in counts],
          "adversarial": [encoding.kl(base, means[0, bounds.index(d - c)])
                          for c in counts]}


def _column_blocks(bounds):
  """Columns of each block between consecutive bounds, zero-padded to the
  widest: ([L, width] indices, [L, width] 0/1 inside the block)."""
  starts, widths = np.asarray(bounds[:-1]), np.diff(bounds)
  cols = starts[:, None] + np.arange(widths.max())[None, :]
  inside = cols < starts[:, None] + widths[:, None]
  return np.minimum(cols, bounds[-1] - 1), inside.astype(np.float32)


@jax.jit
def _blocks_of_wt(w_vxd, cols_lxk, inside_lxk):
  """W^T's rows gathered into blocks, [L, width, V] (one fused gather: no
  transposed copy of W)."""
  return w_vxd.T[cols_lxk] * inside_lxk[..., None]


@functools.partial(jax.jit, static_argnames=("bounds", "softcap", "chunk"))
def _mean_softmax_kept(h_nxd, wt_lxkxv, b_v, n_valid, bounds,
                       softcap: float, chunk: int):
  """Mean over rows of softmax(H_K W_K^T + b) for the kept column sets K =
  [0, bounds[j]) (out[0, j]) and [bounds[j], D) (out[1, j]), j = 0..L,
  with wt_lxkxv = `_blocks_of_wt` of the blocks between consecutive bounds,
  over the first `n_valid` rows of h_nxd (the others padding).

  Zeroing columns of W is zeroing them in H. The logits of a kept prefix
  (suffix) are a sum of products over the L column blocks, accumulated
  block by block by a forward (backward) lax.scan: each block's product
  once per sweep, one logits buffer alive. Rows `chunk` at a time (the
  Pass's 128 MiB of logits a step, faster than smaller steps).
  """
  n = h_nxd.shape[0]
  v = wt_lxkxv.shape[2]
  pad = -n % chunk
  cols, inside = _column_blocks(bounds)
  h = jnp.pad(h_nxd, ((0, pad), (0, 0)))[:, cols] * inside[None]  # [n, L, k]
  valid = (jnp.arange(n + pad) < n_valid).reshape(-1, chunk).astype(
      jnp.float32)

  def probs(z):
    z = z if b_v is None else z + b_v[None, :]
    return jax.nn.softmax(softcap * jnp.tanh(z / softcap) if softcap else z,
                          axis=-1)

  def one(acc, args):
    hc, m = args  # [chunk, L, width], [chunk]

    def add(z, xs):
      z = z + xs[0] @ xs[1]
      return z, jnp.einsum("cv,c->v", probs(z), m)

    zero = jnp.zeros((chunk, v), jnp.float32)
    xs = (jnp.moveaxis(hc, 1, 0), wt_lxkxv)
    _, kept_first = jax.lax.scan(add, zero, xs)  # [0, bounds[j + 1]).
    _, kept_from = jax.lax.scan(add, zero, xs, reverse=True)  # [bounds[j], D).
    return acc + jnp.stack([kept_first, kept_from]), None

  sums, _ = jax.lax.scan(one, jnp.zeros((2, len(bounds) - 1, v)), (
      h.reshape(-1, chunk, *h.shape[1:]), valid))
  # Nothing kept: softmax of the bias, or uniform (a softmax of constant
  # zeros costs XLA a long constant folding at V = 262144).
  empty = (jnp.full((1, v), 1.0 / v) if b_v is None else
           probs(jnp.zeros((1, v))))
  empty = jnp.broadcast_to(empty[None], (2, 1, v)) * n_valid
  return jnp.concatenate([jnp.concatenate([empty[:1], sums[:1]], 1),
                          jnp.concatenate([sums[1:], empty[1:]], 1)]
                         ) / n_valid


PRUNE = Probe(
    "prune", "passes",
    lambda ctx: prune_probe(ctx.subject, ctx.own, ctx.ood,
                            ctx.settings.prune_positions),
    figures=(Figure("prune", "KL of the mean next-token distribution after "
                    "zeroing output-embedding dimensions, least or most "
                    "salient first (seed 003 Fig. 6).", plots.prune),),
    share=0.03, rows=(
        Row("seed003", "Fig. 6: KL at 30% / 50% removed, saliency",
            "saliency KL small to ~50% removed; adversarial grows at once "
            "(seed 003 Fig. 6)",
            lambda n: f"{fmt(n['prune']['saliency'][3])} / "
                      f"{fmt(n['prune']['saliency'][5])}"),
        Row("seed003", "Fig. 6: same, adversarial order", "",
            lambda n: f"{fmt(n['prune']['adversarial'][3])} / "
                      f"{fmt(n['prune']['adversarial'][5])}")))

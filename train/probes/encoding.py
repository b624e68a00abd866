"""Seed 003 on a trained head: probabilities encoded in output embeddings.

Table 1 / Fig. 3 (`encoding_probe`, alpha over every position of a Pass),
Algorithm 1 editing (`edit_probe`) and dimension removal (`prune_probe`) on
capped subsets of positions whose distributions are held (the counts are
returned), and the frequency probe across a run's checkpoints
(`frequency_probe`).
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import encoding
from train.probes import plots
from train.probes.forward import (PASS_CHUNK_BYTES, Pass, device_head,
                                  position_cap, probabilities, rows_per_step)
from train.text import data
from train.training import runs


def _embeddings(subject):
  """Output embeddings for the MLR: W, with the bias as one more column (the
  bias is the slope-1 dimension of eq. 2 with h fixed to 1)."""
  w, b = subject.head()
  return w if b is None else np.hstack([w, b[:, None]])


def _moments(subject, name: str) -> encoding.Moments:
  """encoding.moments of the subject's 'E' (`_embeddings`) or 'W' (the
  head), once per subject: the probes below fit on the same head four
  times."""
  w, b = subject.head()
  key = f"moments {'E' if b is None else name}"  # Without a bias E is W.
  if key not in subject.derived:
    subject.derived[key] = encoding.moments(
        _embeddings(subject) if key == "moments E" else w)
  return subject.derived[key]


def encoding_probe(subject, pass_: Pass, plot_points: int = 20000,
                   profile_columns: int | None = None):
  """Seed 003 Table 1 and Fig. 3, alpha over every position of the Pass
  (Fig. 3's profiles over the first `profile_columns` PCs and dimensions;
  None: all)."""
  alpha = pass_.alpha
  e = _embeddings(subject)
  out = encoding.probability_mlr(alpha, e, e_moments=_moments(subject, "E"))
  fit = out.pop("fit")
  w, b = subject.head()
  out.update(adj_r2_without_bias=out["adj_r2"] if b is None else
             encoding.mlr(-np.log(alpha), w, _moments(subject, "W"))[
                 "adj_r2"],
             tied=bool(subject.cfg.tied), V=int(w.shape[0]),
             D=int(w.shape[1]), positions=pass_.tokens)
  if not subject.cfg.tied:  # Input embeddings too (untied models).
    out["adj_r2_input_embeddings"] = encoding.mlr(
        -np.log(alpha), subject.input_embeddings())["adj_r2"]
  prof = encoding.spearman_profiles(alpha, w,
                                    e_moments=_moments(subject, "W"),
                                    columns=profile_columns)
  out["top_pc_abs_spearman"] = float(prof["pc_abs_spearman"][:3].max())
  out["median_dim_abs_spearman"] = float(np.median(prof["dim_abs_spearman"]))
  out["profiled_columns"] = len(prof["dim_abs_spearman"])
  pick = np.random.default_rng(0).choice(
      len(alpha), min(plot_points, len(alpha)), replace=False)
  scatter = {"fitted": encoding.fitted(fit, e[pick]).tolist(),
             "observed": (-np.log(alpha[pick])).tolist(),
             "adj_r2": out["adj_r2"]}
  out["profiles"] = {k: np.asarray(v).tolist() for k, v in prof.items()}
  out["scatter"] = scatter
  return out, {"encoding_mlr": plots.mlr_fit({subject.name: scatter}),
               "encoding_spearman": plots.spearman({subject.name: prof})}


class _Cached:
  """Per-position probabilities P and hidden states H of a set of positions:
  an edit of row w by dE gives, in closed form,
    alpha'_v = mean_x P[x, v] c_x (v != w),  alpha'_w = mean_x P[x, w] e^d c_x
  with d_x = dE . h_x and c_x = 1 / (1 - P[x, w] + P[x, w] e^d)."""

  def __init__(self, subject, h_nxd):
    self.h = np.asarray(h_nxd, np.float64)
    self.p = probabilities(h_nxd, *device_head(subject),  # No copy of W.
                           subject.cfg.logit_softcap)
    self.alpha = self.p.mean(0, dtype=np.float64)

  def edited_alpha(self, token: int, delta_rows):
    """alpha after each edit of row `token` by delta_rows [R, D(+1)] -> [R, V].

    The bias change, if present, is last (eq. 2's dimension with h = 1).
    All R edits share one [V, N] x [N, R] product.
    """
    delta_rows = np.atleast_2d(delta_rows)
    dim = self.h.shape[1]
    d = self.h @ delta_rows[:, :dim].T  # [N, R]
    if delta_rows.shape[1] > dim:
      d = d + delta_rows[:, dim][None, :]
    pw = self.p[:, token].astype(np.float64)[:, None]
    c = 1.0 / (1.0 - pw + pw * np.exp(d))
    alpha = (c.T.astype(np.float32) @ self.p).astype(np.float64) / len(c)
    alpha[:, token] = np.mean(pw * np.exp(d) * c, axis=0)
    return alpha


def _split_positions(pass_: Pass, cap: int):
  """Detect and in-distribution positions: the first `cap` positions of the
  first and of the second half of the Pass's windows (disjoint text)."""
  n, t = pass_.x.shape
  half = max(1, n // 2) * t
  if n < 2:
    raise ValueError("the edit probe needs a Pass of at least 2 windows "
                     "(detect and in-distribution halves).")
  return pass_.h[:min(cap, half)], pass_.h[half:half + cap]


def edit_probe(subject, pass_: Pass, ood_pass: Pass, tokens: int = 10,
               positions: int = 2048, budget_bytes: int = 1 << 29,
               scales=(1, 1.1, 1.2, 1.5, 2, 5, 10, 20),
               bs=(1.0, 2.0, 5.0, np.inf, -np.inf), seed: int = 0):
  """Seed 003 Algorithm 1 / Table 2: e_local, e_id, e_ood, KL on unedited,
  on `positions` positions per set (capped so that a set's distributions
  fit `budget_bytes`)."""
  cap = min(positions, position_cap(subject.cfg.vocab_size, budget_bytes))
  detect, ident = _split_positions(pass_, cap)
  local = _Cached(subject, detect)
  e = _embeddings(subject)
  fit = encoding.mlr(-np.log(local.alpha), e, _moments(subject, "E"))
  rng = np.random.default_rng(seed)
  chosen = rng.choice(e.shape[0], size=tokens, replace=False)
  ratios = sorted({r for s in scales for r in (s, 1.0 / s)})
  variants = {f"b={b:g}": (fit["slopes"], b) for b in bs}
  variants["random A, b=2"] = (rng.standard_normal(fit["slopes"].size), 2.0)
  variants["shuffled A, b=2"] = (rng.permutation(fit["slopes"]), 2.0)
  # Ours: eq. (1)'s direction itself, A = -E[h] (and -1 on the bias), with
  # full confidence: no regression, so no Jensen-gap distortion of A.
  derived = -local.h.mean(0)
  if e.shape[1] > derived.size:
    derived = np.concatenate([derived, [-1.0]])
  variants["A = -E[h] (eq. 1), b=2"] = (derived, 2.0)
  deltas = {label: encoding.edit_delta(
      np.array(ratios), slopes, np.zeros_like(slopes) if label.startswith(
          "A = -E") else fit["p_values"], b)
            for label, (slopes, b) in variants.items()}
  errs = {label: {} for label in variants}
  kls = {label: [] for label in variants}
  curve, counts = [], {}
  # Every token gets the same row changes; four variants' edits (with 15
  # ratios: 60 rows of alpha, [60, V] float64) share one product.
  labels = list(variants)
  groups = [labels[i:i + 4] for i in range(0, len(labels), 4)]
  for key, h in (("local", None), ("id", ident), ("ood", ood_pass.h[:cap])):
    cache = local if h is None else _Cached(subject, h)  # One set at a time
    local = None  # (Gemma 3, 512 positions: 0.5 GiB of distributions each).
    counts[key] = int(len(cache.h))
    for label in variants:
      errs[label][key] = []
    for token, group in itertools.product(chosen, groups):
      after = cache.edited_alpha(int(token), np.concatenate(
          [deltas[label] for label in group]))
      kl_rows = encoding.kl_unedited(cache.alpha, after, int(token))
      for i, label in enumerate(group):
        kls[label] += list(kl_rows[i * len(ratios):(i + 1) * len(ratios)])
        for r, row in zip(ratios, after[i * len(ratios):]):
          errs[label][key].append(encoding.scale_error(
              r, cache.alpha, row, int(token)))
          if label == "b=2" and key == "local":
            curve.append((r, row[token] / cache.alpha[token]))
    del cache
  rows = [{"variant": label, "e_local": float(np.mean(e_["local"])),
           "e_id": float(np.mean(e_["id"])), "e_ood": float(np.mean(
               e_["ood"])), "kl_unedited": float(np.mean(kls[label]))}
          for label, e_ in errs.items()]
  unedited = float(np.mean(np.abs(np.log(ratios))))
  return {"table": rows, "tokens": chosen.tolist(), "scales": ratios,
          "unedited_error": unedited, "positions_per_set": counts,
          "curve": curve}, {
              "edit_scales": plots.edit_scales({subject.name: curve})}


def prune_probe(subject, pass_: Pass, ood_pass: Pass, positions: int = 1024,
                ratios=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)):
  """Seed 003 §4 / Fig. 6: zero output-embedding dimensions by MLR saliency
  (alpha over every position of the Pass) and measure the KL of the mean
  distribution on `positions` out-of-domain positions.

  Both removal orders are one column order of W read from either end
  (saliency removes its least salient prefix, the adversarial order the
  same columns' most salient suffix), so every ratio of both comes from
  one forward and one backward sweep over column blocks
  (`_mean_softmax_kept`): two products H W^T in all, not one per ratio.
  """
  w, b = subject.head()
  d = w.shape[1]
  if any(not 0.0 <= r <= 1.0 for r in ratios):
    raise ValueError(f"`ratios` must lie in [0, 1]; got {list(ratios)}.")
  slopes = encoding.mlr(-np.log(pass_.alpha), w,
                        _moments(subject, "W"))["slopes"]
  order = encoding.removal_order(slopes)  # Least salient first.
  counts = [int(round(r * d)) for r in ratios]
  bounds = tuple(sorted({0, d} | set(counts) | {d - c for c in counts}))
  h = ood_pass.h[:positions]
  cols, inside = _column_blocks(bounds)
  w_dev, b_dev = device_head(subject)  # The Pass's copy: no new one.
  means = np.asarray(_mean_softmax_kept(
      jnp.asarray(h[:, order]), _blocks_of_wt(w_dev, order[cols], inside),
      b_dev, bounds, float(subject.cfg.logit_softcap),
      rows_per_step(w.shape[0], budget=PASS_CHUNK_BYTES,
                    positions=len(h))), np.float64)
  last = len(bounds) - 1  # means: [kept_first, kept_from] x (last + 1).
  base = means[1, 0] = means[0, last]  # Nothing removed (one sum order).
  out = {"ratios": list(ratios), "positions": int(len(h)),
         "saliency": [encoding.kl(base, means[1, bounds.index(c)])
                      for c in counts],
         "adversarial": [encoding.kl(base, means[0, bounds.index(d - c)])
                         for c in counts]}
  return out, {"prune": plots.prune({subject.name: out})}


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
def _mean_softmax_kept(h_nxd, wt_lxkxv, b_v, bounds, softcap: float,
                       chunk: int):
  """Mean over rows of softmax(H_K W_K^T + b) for the kept column sets K =
  [0, bounds[j]) (out[0, j]) and [bounds[j], D) (out[1, j]), j = 0..L,
  with wt_lxkxv = `_blocks_of_wt` of the blocks between consecutive bounds.

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
  valid = (jnp.arange(n + pad) < n).reshape(-1, chunk).astype(jnp.float32)

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
  empty = jnp.broadcast_to(empty[None], (2, 1, v)) * n
  return jnp.concatenate([jnp.concatenate([empty[:1], sums[:1]], 1),
                          jnp.concatenate([sums[1:], empty[1:]], 1)]) / n


def frequency_probe(subject):
  """Seed 003 §5 / Fig. 7: frequency encoding across a run's checkpoints.

  Rows per checkpoint (step 0: the run's initial parameters): adj. R^2 of
  -log corpus frequency on W, the convergence rate (Chen et al. 2022) of
  the head, the input embedding and the first attention's q, k, v, and the
  validation loss the run logged at that step (None where it logged
  none)."""
  if subject.workdir is None:
    raise ValueError("the frequency probe needs a `workdir` with "
                     "checkpoints (real HF weights have no training history).")
  config, cfg = subject.config, subject.cfg
  if config.train.get("init"):
    raise ValueError(f"run {subject.workdir!r} started from "
                     f"train.init={config.train.init!r}: the frequency probe "
                     "follows a run trained from scratch.")
  tok = data.tokenizer_for(config.data)
  meta = data.build_shards(config.data, tok)
  counts = np.bincount(np.memmap(meta["train"], dtype=meta["dtype"],
                                 mode="r"), minlength=cfg.vocab_size)
  losses = {r["step"]: r["val_loss"] for r in runs.metrics(subject.workdir)
            if "val_loss" in r}
  parts = lambda p: {"head": np.asarray(cfg.head_weights(p)[0]),
                     "wte": np.asarray(cfg.input_embeddings(p)),
                     "qkv_0": _first_qkv(p)}
  init, final = parts(cfg.init_params(config.seed)), parts(subject.params)
  rows = []
  for step in [0] + [s for s in runs.steps(subject.workdir) if s]:
    now = init if step == 0 else parts(
        runs.restore_params(subject.workdir, config, step)[0])
    row = {"step": step,
           "adj_r2": encoding.frequency_r2(now["head"], counts)}
    for name in now:
      row[f"conv_{name}"] = encoding.convergence_rate(now[name], init[name],
                                                      final[name])
    rows.append(dict(row, val_loss=losses.get(step)))
  return ({"rows": rows, "run": subject.workdir, "V": cfg.vocab_size},
          {"frequency": plots.frequency(rows)})


def _first_qkv(params) -> np.ndarray:
  """The first block's query-key-value map, flattened: GPT's fused c_attn
  kernel, or the llama-like q, k, v kernels side by side."""
  p = params["params"]
  if "h_0" in p:
    return np.ravel(p["h_0"]["attn"]["c_attn"]["kernel"])
  attn = p["layer_0"]["attn"]
  return np.concatenate([np.ravel(attn[k]["kernel"]) for k in "qkv"])

"""Seed 003 on a trained head: probabilities encoded in output embeddings.

Table 1 / Fig. 3 (`encoding_probe`, alpha over every position of a Pass),
Algorithm 1 editing (`edit_probe`) and dimension removal (`prune_probe`) on
capped subsets of positions whose distributions are held (the counts are
returned), and the frequency probe across a run's checkpoints
(`frequency_probe`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import encoding
from train.models import gpt
from train.probes import plots
from train.probes.forward import (Pass, position_cap, probabilities,
                                  rows_per_step)
from train.text import data
from train.training import runs


def _embeddings(subject):
  """Output embeddings for the MLR: W, with the bias as one more column (the
  bias is the slope-1 dimension of eq. 2 with h fixed to 1)."""
  w, b = subject.head()
  return w if b is None else np.hstack([w, b[:, None]])


def encoding_probe(subject, pass_: Pass, plot_points: int = 20000):
  """Seed 003 Table 1 and Fig. 3, alpha over every position of the Pass."""
  alpha = pass_.alpha
  e = _embeddings(subject)
  out = encoding.probability_mlr(alpha, e)
  fit = out.pop("fit")
  w, b = subject.head()
  out.update(adj_r2_without_bias=out["adj_r2"] if b is None else
             encoding.mlr(-np.log(alpha), w)["adj_r2"],
             tied=bool(subject.cfg.tied), V=int(w.shape[0]),
             D=int(w.shape[1]), positions=pass_.tokens)
  if not subject.cfg.tied:  # Input embeddings too (untied models).
    out["adj_r2_input_embeddings"] = encoding.mlr(
        -np.log(alpha), subject.input_embeddings())["adj_r2"]
  prof = encoding.spearman_profiles(alpha, w)
  out["top_pc_abs_spearman"] = float(prof["pc_abs_spearman"][:3].max())
  out["median_dim_abs_spearman"] = float(np.median(prof["dim_abs_spearman"]))
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
    w, b = subject.head()
    self.h = np.asarray(h_nxd, np.float64)
    self.p = probabilities(h_nxd, w, b, subject.cfg.logit_softcap)
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
  fit = encoding.mlr(-np.log(local.alpha), e)
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
  for key, h in (("local", None), ("id", ident), ("ood", ood_pass.h[:cap])):
    cache = local if h is None else _Cached(subject, h)  # One set at a time
    local = None  # (Gemma 3, 512 positions: 0.5 GiB of distributions each).
    counts[key] = int(len(cache.h))
    for label in variants:
      errs[label][key] = []
      for token in chosen:  # The same row change for every token.
        after = cache.edited_alpha(int(token), deltas[label])
        for r, row in zip(ratios, after):
          errs[label][key].append(encoding.scale_error(
              r, cache.alpha, row, int(token)))
          kls[label].append(encoding.kl_unedited(cache.alpha, row,
                                                 int(token)))
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
  distribution on `positions` out-of-domain positions."""
  w, b = subject.head()
  slopes = encoding.mlr(-np.log(pass_.alpha), w)["slopes"]
  h = ood_pass.h[:positions]
  h_j, w_j = jnp.asarray(h), jnp.asarray(w)  # Once, not per ratio.
  b_j = None if b is None else jnp.asarray(b)
  chunk = rows_per_step(w.shape[0])
  mean_p = lambda keep: _mean_softmax(
      h_j, w_j, b_j, jnp.asarray(keep, jnp.float32),
      float(subject.cfg.logit_softcap), chunk)
  base = np.asarray(mean_p(np.ones(w.shape[1])), np.float64)
  out = {"ratios": list(ratios), "positions": int(len(h))}
  for key, adversarial in (("saliency", False), ("adversarial", True)):
    order = encoding.removal_order(slopes, adversarial)
    kls = []
    for ratio in ratios:
      keep = np.ones(w.shape[1])
      keep[order[:int(round(ratio * w.shape[1]))]] = 0.0
      kls.append(encoding.kl(base, np.asarray(mean_p(keep), np.float64)))
    out[key] = kls
  return out, {"prune": plots.prune({subject.name: out})}


@functools.partial(jax.jit, static_argnames=("softcap", "chunk"))
def _mean_softmax(h_nxd, w_vxd, b_v, keep_d, softcap: float, chunk: int):
  """Mean softmax((H * keep) W^T + b) over rows: zeroing dimensions of W
  is zeroing them in H. Rows `chunk` at a time (lax.map)."""
  n = h_nxd.shape[0]
  pad = -n % chunk
  h = jnp.pad(h_nxd * keep_d[None, :], ((0, pad), (0, 0)))
  valid = (jnp.arange(n + pad) < n).reshape(-1, chunk).astype(jnp.float32)

  def one(args):
    hc, m = args
    z = hc @ w_vxd.T
    if b_v is not None:
      z = z + b_v[None, :]
    if softcap:
      z = softcap * jnp.tanh(z / softcap)
    return jnp.einsum("cv,c->v", jax.nn.softmax(z, axis=-1), m)

  sums = jax.lax.map(one, (h.reshape(-1, chunk, h.shape[1]), valid))
  return sums.sum(0) / n


def frequency_probe(subject):
  """Seed 003 §5 / Fig. 7: frequency encoding across a run's checkpoints."""
  if subject.workdir is None:
    raise ValueError("the frequency probe needs a `workdir` with "
                     "checkpoints (real HF weights have no training history).")
  config = subject.config
  tok = data.tokenizer_for(config.data)
  meta = data.build_shards(config.data, tok)
  counts = np.bincount(np.memmap(meta["train"], dtype=meta["dtype"],
                                 mode="r"), minlength=subject.cfg.vocab_size)
  init = gpt.init_params(subject.cfg, config.seed)
  final = subject.params
  head = lambda p: np.asarray(subject.cfg.head_weights(p)[0])
  w0, we = head(init), head(final)
  rows = [_freq_row(0, w0, counts, w0, we)]
  for step in runs.steps(subject.workdir):
    params, _ = runs.restore_params(subject.workdir, config, step)
    rows.append(_freq_row(step, head(params), counts, w0, we, params, init,
                          final))
  return {"rows": rows}, {"frequency": plots.frequency(rows)}


def _freq_row(step, w, counts, w0, we, params=None, init=None, final=None):
  row = {"step": step, "adj_r2": encoding.frequency_r2(w, counts),
         "conv_head": encoding.convergence_rate(w, w0, we)}
  if params is not None:
    pick = lambda p, *k: functools.reduce(dict.get, k, p["params"])
    for name, keys in (("conv_wte", ("wte", "embedding")),
                       ("conv_qkv_0", ("h_0", "attn", "c_attn", "kernel"))):
      row[name] = encoding.convergence_rate(
          pick(params, *keys), pick(init, *keys), pick(final, *keys))
  else:
    row.update(conv_wte=0.0, conv_qkv_0=0.0)
  return row

"""Seed 003 on a trained head: probabilities encoded in output embeddings.

Table 1 / Fig. 3 (`encoding_probe`), Algorithm 1 editing (`edit_probe`),
dimension removal (`prune_probe`) and the frequency probe across a run's
checkpoints (`frequency_probe`).
"""

from __future__ import annotations

import functools

import numpy as np

from bottleneck import encoding
from train import data, model as model_lib, trainer
from train.probes import plots
from train.probes.subjects import Subject, forward, mean_probabilities


def _embeddings(subject: Subject):
  """Output embeddings for the MLR: W, with the bias as one more column (the
  bias is the slope-1 dimension of eq. 2 with h fixed to 1)."""
  w, b = subject.head()
  return w if b is None else np.hstack([w, b[:, None]])


def encoding_probe(subject: Subject, x):
  """Seed 003 Table 1 and Fig. 3 on the detect set x."""
  alpha = mean_probabilities(subject, x)
  out = encoding.probability_mlr(alpha, _embeddings(subject))
  fit = out.pop("fit")
  w, b = subject.head()
  out.update(adj_r2_without_bias=out["adj_r2"] if b is None else
             encoding.mlr(-np.log(alpha), w)["adj_r2"],
             tied=subject.cfg.head == "tied", V=int(w.shape[0]),
             D=int(w.shape[1]))
  if subject.cfg.head != "tied":  # Input embeddings too (untied models).
    out["adj_r2_input_embeddings"] = encoding.mlr(
        -np.log(alpha), subject.input_embeddings())["adj_r2"]
  prof = encoding.spearman_profiles(alpha, w)
  out["top_pc_abs_spearman"] = float(prof["pc_abs_spearman"][:3].max())
  out["median_dim_abs_spearman"] = float(np.median(prof["dim_abs_spearman"]))
  fitted = fit["intercept"] + _embeddings(subject) @ fit["slopes"]
  return out, {"encoding_mlr": plots.mlr_fit(-np.log(alpha), fitted,
                                                   out["adj_r2"]),
               "encoding_spearman": plots.spearman(prof)}


class _Cached:
  """Per-position probabilities P and hidden states H of one text set: an
  edit of row w by dE gives, in closed form,
    alpha'_v = mean_x P[x, v] c_x (v != w),  alpha'_w = mean_x P[x, w] e^d c_x
  with d_x = dE . h_x and c_x = 1 / (1 - P[x, w] + P[x, w] e^d)."""

  def __init__(self, subject, x):
    self.h, self.p = forward(subject, x)
    self.alpha = self.p.mean(0)

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
    alpha = (self.p.T.astype(np.float64) @ c).T / len(c)
    alpha[:, token] = np.mean(pw * np.exp(d) * c, axis=0)
    return alpha


def edit_probe(subject: Subject, x_detect, x_id, x_ood, tokens: int = 10,
               scales=(1, 1.1, 1.2, 1.5, 2, 5, 10, 20),
               bs=(1.0, 2.0, 5.0, np.inf, -np.inf), seed: int = 0):
  """Seed 003 Algorithm 1 / Table 2: e_local, e_id, e_ood, KL on unedited."""
  sets = {"local": _Cached(subject, x_detect), "id": _Cached(subject, x_id),
          "ood": _Cached(subject, x_ood)}
  alpha = sets["local"].alpha
  e = _embeddings(subject)
  fit = encoding.mlr(-np.log(alpha), e)
  rng = np.random.default_rng(seed)
  chosen = rng.choice(e.shape[0], size=tokens, replace=False)
  ratios = sorted({r for s in scales for r in (s, 1.0 / s)})
  variants = {f"b={b:g}": (fit["slopes"], b) for b in bs}
  variants["random A, b=2"] = (rng.standard_normal(fit["slopes"].size), 2.0)
  variants["shuffled A, b=2"] = (rng.permutation(fit["slopes"]), 2.0)
  # Ours: eq. (1)'s direction itself, A = -E[h] (and -1 on the bias), with
  # full confidence: no regression, so no Jensen-gap distortion of A.
  derived = -sets["local"].h.mean(0)
  if e.shape[1] > derived.size:
    derived = np.concatenate([derived, [-1.0]])
  variants["A = -E[h] (eq. 1), b=2"] = (derived, 2.0)
  rows, curve = [], []
  for label, (slopes, b) in variants.items():
    errs = {k: [] for k in sets}
    kls = []
    p_values = (np.zeros_like(slopes) if label.startswith("A = -E")
                else fit["p_values"])
    deltas = encoding.edit_delta(np.array(ratios), slopes, p_values, b)
    for token in chosen:  # The same row change for every token.
      for key, cache in sets.items():
        after = cache.edited_alpha(int(token), deltas)
        for r, row in zip(ratios, after):
          errs[key].append(encoding.scale_error(r, cache.alpha, row,
                                                int(token)))
          kls.append(encoding.kl_unedited(cache.alpha, row, int(token)))
          if label == "b=2" and key == "local":
            curve.append((r, row[token] / cache.alpha[token]))
    rows.append({"variant": label, "e_local": float(np.mean(errs["local"])),
                 "e_id": float(np.mean(errs["id"])),
                 "e_ood": float(np.mean(errs["ood"])),
                 "kl_unedited": float(np.mean(kls))})
  unedited = float(np.mean(np.abs(np.log(ratios))))
  return {"table": rows, "tokens": chosen.tolist(), "scales": ratios,
          "unedited_error": unedited}, {
              "edit_scales": plots.edit_scales(curve)}


def prune_probe(subject: Subject, x_detect, x_ood,
                ratios=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)):
  """Seed 003 §4 / Fig. 6: zero output-embedding dimensions by saliency."""
  alpha = _Cached(subject, x_detect).alpha
  w, b = subject.head()
  slopes = encoding.mlr(-np.log(alpha), w)["slopes"]
  h, _ = forward(subject, x_ood)
  base = _alpha_from(h, w, b)
  out = {"ratios": list(ratios)}
  for key, adversarial in (("saliency", False), ("adversarial", True)):
    order = encoding.removal_order(slopes, adversarial)
    kls = []
    for ratio in ratios:
      pruned = w.copy()
      pruned[:, order[:int(round(ratio * w.shape[1]))]] = 0.0
      kls.append(encoding.kl(base, _alpha_from(h, pruned, b)))
    out[key] = kls
  return out, {"prune": plots.prune(out)}


def _alpha_from(h, w, b, chunk: int = 1024):
  """Mean softmax(h W^T + b) over the rows of h: float32 products (the
  removal curves compare KLs far above float32 round-off), float64 sums."""
  w32 = np.asarray(w, np.float32)
  total = np.zeros(w.shape[0])
  for i in range(0, len(h), chunk):
    logits = np.asarray(h[i:i + chunk], np.float32) @ w32.T + (
        0.0 if b is None else np.asarray(b, np.float32))
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    total += (p / p.sum(1, keepdims=True)).sum(0, dtype=np.float64)
  return total / len(h)


def frequency_probe(subject: Subject):
  """Seed 003 §5 / Fig. 7: frequency encoding across a run's checkpoints."""
  if subject.workdir is None:
    raise ValueError("the frequency probe needs a `workdir` with "
                     "checkpoints (real HF weights have no training history).")
  config = subject.config
  tok = data.tokenizer_for(config.data)
  meta = data.build_shards(config.data, tok)
  counts = np.bincount(np.memmap(meta["train"], dtype=meta["dtype"],
                                 mode="r"), minlength=subject.cfg.vocab_size)
  init = model_lib.init_params(subject.cfg, config.seed)
  final = subject.params
  w0, we = (np.asarray(model_lib.head_matrix(p, subject.cfg))
            for p in (init, final))
  rows = [_freq_row(0, init, subject.cfg, counts, w0, we)]
  target = trainer.Trainer(config).restore_target()
  ckpt = trainer.checkpoint.Checkpointer(subject.workdir, 10**6, False)
  for step in ckpt.all_steps():
    state, _ = ckpt.restore(step, target)
    rows.append(_freq_row(step, state.params, subject.cfg, counts, w0, we,
                          init, final))
  ckpt.close()
  return {"rows": rows}, {"frequency": plots.frequency(rows)}


def _freq_row(step, params, cfg, counts, w0, we, init=None, final=None):
  w = np.asarray(model_lib.head_matrix(params, cfg))
  row = {"step": step, "adj_r2": encoding.frequency_r2(w, counts),
         "conv_head": encoding.convergence_rate(w, w0, we)}
  if init is not None:
    pick = lambda p, *k: functools.reduce(dict.get, k, p["params"])
    for name, keys in (("conv_wte", ("wte", "embedding")),
                       ("conv_qkv_0", ("h_0", "attn", "c_attn", "kernel"))):
      row[name] = encoding.convergence_rate(
          pick(params, *keys), pick(init, *keys), pick(final, *keys))
  else:
    row.update(conv_wte=0.0, conv_qkv_0=0.0)
  return row

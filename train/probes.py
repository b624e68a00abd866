"""Trained-head probes: arrays from a model and text, statistics from bottleneck.

A probe takes a `Subject` (params, model, config, tokenizer: from a run
folder or from real HF GPT-2 weights) and token windows of some text, runs
the model once to get hidden states H, the head W (and bias b), per-position
probabilities, and hands those arrays to the pure functions of
bottleneck.gradient / encoding / head_stats. Each probe returns
(numbers: dict, figures: {name: matplotlib Figure}).
"""

from __future__ import annotations

import dataclasses
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from ml_collections import config_dict

from bottleneck import encoding, gradient, head_stats
from train import data, model as model_lib, probe_plots, trainer

PROBES = ("gradient", "encoding", "edit", "prune", "frequency", "cumulative",
          "rowstats")


@dataclasses.dataclass
class Subject:
  params: dict
  cfg: model_lib.GPTConfig
  tokenizer: object
  name: str
  config: config_dict.ConfigDict | None = None  # Run config (workdir only).
  workdir: str | None = None

  @property
  def model(self):
    return model_lib.GPT(self.cfg)

  def head(self):
    """(W [V, D], b [V] or None) as float64 numpy."""
    w = np.asarray(model_lib.head_matrix(self.params, self.cfg), np.float64)
    b = model_lib.head_bias(self.params, self.cfg)
    return w, (None if b is None else np.asarray(b, np.float64))


def load_subject(workdir: str | None = None, hf_dir: str | None = None):
  """A trained run (its newest checkpoint) or an HF GPT-2 folder."""
  if bool(workdir) == bool(hf_dir):
    raise ValueError("give exactly one of `workdir` and `hf_dir`.")
  if hf_dir:
    from train import hf_gpt2, tokenizers  # pylint: disable=g-import-not-at-top
    params, cfg = hf_gpt2.load(hf_dir)
    return Subject(params, cfg, tokenizers.load("hf:" + hf_dir),
                   os.path.basename(os.path.normpath(hf_dir)))
  from train import completions  # pylint: disable=g-import-not-at-top
  params, _, cfg, tok, config = completions.load_run(workdir)
  return Subject(params, cfg, tok, os.path.basename(os.path.normpath(
      workdir)), config, workdir)


def other_source(subject: Subject) -> str:
  """An out-of-domain text source for a subject (not its training text)."""
  own = subject.config.data.source if subject.config is not None else ""
  return "synthetic_stories" if own == "shakespeare" else "shakespeare"


def data_config(spec: str, subject: Subject):
  """`--data`: synthetic_stories | shakespeare | tinystories:PATH | text:GLOB
  ('' = the run's own training source), read with the subject's tokenizer."""
  base = (subject.config.data.to_dict() if subject.config is not None
          else {"source": "synthetic_stories", "path": "", "online": False,
                "val_fraction": 0.05, "cache_dir": "",
                "synthetic_stories": 4000, "spamlang_vocab": 0, "seed": 0,
                "tokenizer": subject.tokenizer.name})
  d = config_dict.ConfigDict(base)
  if spec:
    source, _, path = spec.partition(":")
    d.source, d.path = source, path
  return d


def windows(subject: Subject, spec: str, n_windows: int, split: str = "val",
            seed: int = 0, length: int | None = None):
  """Token windows [n, T] (inputs) and their targets from a text source."""
  d = data_config(spec, subject)
  if d.source == "spamlang":
    raise ValueError("`data` must be a text source for the probes.")
  meta = data.build_shards(d, subject.tokenizer)  # The model's own tokens.
  tokens = np.memmap(meta[split], dtype=meta["dtype"], mode="r")
  t = min(length or subject.cfg.block_size, subject.cfg.block_size)
  loader = data.WindowLoader(tokens, t, n_windows, seed)
  return loader.batch(0)


@functools.partial(jax.jit, static_argnames="model")
def _forward(params, model, x):
  h = model.apply(params, x, method=model_lib.GPT.hidden)
  logits = model.apply(params, h, method=model_lib.GPT.head)
  return h, jax.nn.softmax(logits, axis=-1)


def forward(subject: Subject, x, batch: int = 16):
  """Hidden states [N, D] (float64) and probabilities [N, V] (float32)."""
  hs, ps = [], []
  for i in range(0, len(x), batch):
    h, p = _forward(subject.params, subject.model, jnp.asarray(x[i:i + batch]))
    hs.append(np.asarray(h, np.float64).reshape(-1, h.shape[-1]))
    ps.append(np.asarray(p).reshape(-1, p.shape[-1]))
  return np.concatenate(hs), np.concatenate(ps)


def gradient_probe(subject: Subject, x, y, chunk: int = 1024):
  """Seed 002: eq. (10), App. D cosine, Fig. 2 rank, Fig. 7, Fig. 8."""
  h, _ = forward(subject, x)
  y = np.asarray(y).reshape(-1)
  w, b = subject.head()
  out = gradient.destroyed_fraction(h, w, b, y, chunk)
  n_small = min(len(y), 512)
  prof = gradient.coefficient_profiles(h[:n_small], w, b, y[:n_small])
  counts = [c for c in (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
            if c <= min(len(y), 2048)]
  ranks = gradient.rank_vs_tokens(h[:max(counts)], w, b, y[:max(counts)],
                                  counts)
  eff = gradient.update_efficiency(h[:1024], w, b, y[:1024],
                                   [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3])
  out.update(rank_vs_tokens=ranks, efficiency=eff,
             profile={k: np.asarray(v).tolist() for k, v in prof.items()})
  return out, {"gradient_profiles": probe_plots.profiles(prof),
               "gradient_rank": probe_plots.ranks(ranks),
               "gradient_efficiency": probe_plots.efficiency(eff)}


def _embeddings(subject: Subject):
  """Output embeddings for the MLR: W, with the bias as one more column (the
  bias is the slope-1 dimension of eq. 2 with h fixed to 1)."""
  w, b = subject.head()
  return w if b is None else np.hstack([w, b[:, None]])


def encoding_probe(subject: Subject, x):
  """Seed 003 Table 1 and Fig. 3 on the detect set x."""
  _, p = forward(subject, x)
  alpha = encoding.average_distribution([p])
  out = encoding.probability_mlr(alpha, _embeddings(subject))
  fit = out.pop("fit")
  w, _ = subject.head()
  out.update(adj_r2_without_bias=encoding.mlr(-np.log(alpha), w)["adj_r2"],
             tied=subject.cfg.head == "tied", V=int(w.shape[0]),
             D=int(w.shape[1]))
  if subject.cfg.head != "tied":  # Input embeddings too (untied models).
    wte = np.asarray(subject.params["params"]["wte"]["embedding"], np.float64)
    out["adj_r2_input_embeddings"] = encoding.mlr(-np.log(alpha),
                                                  wte)["adj_r2"]
  prof = encoding.spearman_profiles(alpha, w)
  out["top_pc_abs_spearman"] = float(prof["pc_abs_spearman"][:3].max())
  out["median_dim_abs_spearman"] = float(np.median(prof["dim_abs_spearman"]))
  fitted = fit["intercept"] + _embeddings(subject) @ fit["slopes"]
  return out, {"encoding_mlr": probe_plots.mlr_fit(-np.log(alpha), fitted,
                                                   out["adj_r2"]),
               "encoding_spearman": probe_plots.spearman(prof)}


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
    for token in chosen:
      deltas = np.stack([encoding.edit_embedding(
          e, int(token), r, slopes, p_values, b)[token] - e[token]
                         for r in ratios])
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
              "edit_scales": probe_plots.edit_scales(curve)}


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
  return out, {"prune": probe_plots.prune(out)}


def _alpha_from(h, w, b, chunk: int = 4096):
  total = np.zeros(w.shape[0])
  for i in range(0, len(h), chunk):
    logits = h[i:i + chunk] @ w.T + (0.0 if b is None else b)
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    total += (p / p.sum(1, keepdims=True)).sum(0)
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
  return {"rows": rows}, {"frequency": probe_plots.frequency(rows)}


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


def cumulative_probe(subject: Subject, x):
  """Seed 001 App. A / Fig. 4: mass of the top-m tokens, averaged."""
  _, p = forward(subject, x)
  m_values = np.unique(np.geomspace(1, p.shape[1], 30).astype(int))
  cum = head_stats.cumulative_top_m(p, m_values)
  per_window = cum.reshape(len(x), -1, len(m_values)).mean(1)
  need = head_stats.tokens_for_mass(p, 0.9)
  out = {"m": m_values.tolist(), "mean": cum.mean(0).tolist(),
         "std_over_windows": per_window.std(0).tolist(),
         "tokens_for_0.9_mean": float(need.mean()),
         "tokens_for_0.9_median": float(np.median(need))}
  return out, {"cumulative": probe_plots.cumulative(out)}


def rowstats_probe(w_vxd, label: str, seed: int = 0):
  """Seed 001 App. E / Fig. 7: trained rows vs a random matrix."""
  out = head_stats.summary(w_vxd, seed)
  return out, {"rowstats": probe_plots.rowstats(w_vxd, label, seed)}


def next_token_targets(subject: Subject, x, keep: int = 512) -> np.ndarray:
  """App. D: a trained model's next-token distributions, top `keep` kept."""
  _, p = forward(subject, x)
  return -np.sort(-p, axis=1)[:, :keep]


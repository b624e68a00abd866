"""Seed 003 on a trained head: probabilities encoded in output embeddings.

Table 1 / Fig. 3 (`encoding_probe`, alpha over every position of a Pass)
and Algorithm 1 editing (`edit_probe`) on capped subsets of positions whose
distributions are held (the counts are returned). Their specs: ENCODING,
EDIT. Dimension removal (Fig. 6) is train/probes/pruning.py, the frequency
probe (Fig. 7) train/probes/frequency.py.
"""

from __future__ import annotations

import itertools

import numpy as np

from bottleneck import encoding
from train.probes import plots
from train.probes.forward import (Pass, device_head, position_cap,
                                  probabilities)
from train.probes.spec import Figure, Probe, Row, fmt, of_key


def _embeddings(subject):
  """Output embeddings for the MLR: W, with the bias as one more column (the
  bias is the slope-1 dimension of eq. 2 with h fixed to 1)."""
  w, b = subject.head()
  return w if b is None else np.hstack([w, b[:, None]])


def moments(subject, name: str) -> encoding.Moments:
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
  out = encoding.probability_mlr(alpha, e, e_moments=moments(subject, "E"))
  fit = out.pop("fit")
  w, b = subject.head()
  out.update(adj_r2_without_bias=out["adj_r2"] if b is None else
             encoding.mlr(-np.log(alpha), w, moments(subject, "W"))[
                 "adj_r2"],
             tied=bool(subject.cfg.tied), V=int(w.shape[0]),
             D=subject.head_rank(), positions=pass_.tokens)
  if not subject.cfg.tied:  # Input embeddings too (untied models).
    out["adj_r2_input_embeddings"] = encoding.mlr(
        -np.log(alpha), subject.input_embeddings())["adj_r2"]
  prof = encoding.spearman_profiles(alpha, w,
                                    e_moments=moments(subject, "W"),
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


SENTENCE = 134  # Fig. 5's caption: ~134 tokens per detect-set sentence.


def detect_sizes(cap: int, sentences=(1, 2, 4, 8, 16, 32, 64)) -> list:
  """Fig. 5's detect-set sizes in positions (whole sentences of SENTENCE
  tokens) below the detect set's `cap` positions."""
  return [k * SENTENCE for k in sentences if k * SENTENCE < cap]


def edit_probe(subject, pass_: Pass, ood_pass: Pass, tokens: int = 10,
               positions: int = 2048, budget_bytes: int = 1 << 29,
               scales=(1, 1.1, 1.2, 1.5, 2, 5, 10, 20),
               bs=(1.0, 2.0, 5.0, np.inf, -np.inf), seed: int = 0):
  """Seed 003 Algorithm 1 / Table 2: e_local, e_id, e_ood, KL on unedited,
  on `positions` positions per set (capped so that a set's distributions
  fit `budget_bytes`); Fig. 5: the variants 'detect N, b=2' fit the MLR on
  the detect set's first N positions alone (`detect_sizes`), e_local still
  measured on the whole detect set."""
  cap = min(positions, position_cap(subject.cfg.vocab_size, budget_bytes))
  detect, ident = _split_positions(pass_, cap)
  local = _Cached(subject, detect)
  e = _embeddings(subject)
  fit = encoding.mlr(-np.log(local.alpha), e, moments(subject, "E"))
  rng = np.random.default_rng(seed)
  chosen = rng.choice(e.shape[0], size=tokens, replace=False)
  ratios = sorted({r for s in scales for r in (s, 1.0 / s)})
  pv = fit["p_values"]
  variants = {f"b={b:g}": (fit["slopes"], pv, b) for b in bs}
  variants["random A, b=2"] = (rng.standard_normal(fit["slopes"].size), pv,
                               2.0)
  variants["shuffled A, b=2"] = (rng.permutation(fit["slopes"]), pv, 2.0)
  # Ours: eq. (1)'s direction itself, A = -E[h] (and -1 on the bias), with
  # full confidence: no regression, so no Jensen-gap distortion of A.
  derived = -local.h.mean(0)
  if e.shape[1] > derived.size:
    derived = np.concatenate([derived, [-1.0]])
  variants["A = -E[h] (eq. 1), b=2"] = (derived, np.zeros_like(derived),
                                        2.0)
  sizes = detect_sizes(len(local.h))
  for n in sizes:  # Fig. 5: the encoding found on a smaller detect set.
    small = encoding.mlr(-np.log(local.p[:n].mean(0, dtype=np.float64)),
                         e, moments(subject, "E"))
    variants[f"detect {n}, b=2"] = (small["slopes"], small["p_values"], 2.0)
  deltas = {label: encoding.edit_delta(np.array(ratios), slopes, p, b)
            for label, (slopes, p, b) in variants.items()}
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
  # e_local per edited token (its mean over the scales): the spread a
  # ledger row's interval over tokens reads.
  per_token = lambda x: np.reshape(x, (len(chosen), -1)).mean(1).tolist()  # pylint: disable=unnecessary-lambda-assignment
  rows = [{"variant": label, "e_local": float(np.mean(e_["local"])),
           "e_local_per_token": per_token(e_["local"]),
           "e_ood_per_token": per_token(e_["ood"]),
           "e_id": float(np.mean(e_["id"])), "e_ood": float(np.mean(
               e_["ood"])), "kl_unedited": float(np.mean(kls[label]))}
          for label, e_ in errs.items()]
  unedited = float(np.mean(np.abs(np.log(ratios))))
  out = {"table": rows, "tokens": chosen.tolist(), "scales": ratios,
         "unedited_error": unedited, "positions_per_set": counts,
         "detect_sizes": sizes + [counts["local"]],
         "sentence_tokens": SENTENCE, "curve": curve}
  return out, {"edit_scales": plots.edit_scales({subject.name: curve}),
               "edit_detect": plots.detect_size({subject.name: out})}


def _e_local_b2(n) -> str:
  b2 = next(x for x in n["edit"]["table"] if x["variant"] == "b=2")
  return f"{fmt(b2['e_local'], 2)} ({fmt(n['edit']['unedited_error'], 2)})"


ENCODING = Probe(
    "encoding", "pass",
    lambda ctx: encoding_probe(ctx.subject, ctx.own, profile_columns=(
        ctx.settings.profile_columns or None)),
    figures=(
        Figure("encoding_mlr", "-log alpha_w against its linear fit on the "
               "output embedding E_w (seed 003 eq. 2, Table 1).",
               of_key(plots.mlr_fit, "scatter")),
        Figure("encoding_spearman", "|Spearman r| between alpha and each "
               "principal component / dimension of W (seed 003 Fig. 3).",
               of_key(plots.spearman, "profiles"))),
    share=0.07, rows=(
        Row("seed003", "Table 1: adj. R^2 of -log alpha on W (random / "
            "shuffled)", "0.86-0.89 (seed 003 Table 1: GPT-2 0.892)",
            lambda n: f"{fmt(n['encoding']['adj_r2'])} ("
                      f"{fmt(n['encoding']['random_adj_r2'], 2)} / "
                      f"{fmt(n['encoding']['shuffled_adj_r2'], 2)})"),
        Row("seed003", "Fig. 3: max |Spearman| of the top 3 PCs",
            "a few top PCs carry the signal (seed 003 Fig. 3)",
            lambda n: fmt(n["encoding"]["top_pc_abs_spearman"]))))

EDIT = Probe(
    "edit", "passes",
    lambda ctx: edit_probe(ctx.subject, ctx.own, ctx.ood,
                           ctx.settings.edit_tokens,
                           ctx.settings.edit_positions,
                           seed=ctx.settings.seed),
    figures=(Figure("edit_scales", "Requested vs measured scaling of a "
                    "token's mean probability after Algorithm 1's edit "
                    "(b = 2).", of_key(plots.edit_scales, "curve")),
             Figure("edit_detect", "Scale error of Algorithm 1 (b = 2) on "
                    "out-of-domain and in-distribution positions against "
                    "the size of the detect set the encoding is fitted on "
                    "(seed 003 Fig. 5).", plots.detect_size)),
    share=0.07, rows=(
        Row("seed003", "Algorithm 1: e_local at b = 2 (unedited)",
            "0.19 at b = 2 (seed 003 Table 2, GPT-2)", _e_local_b2),))

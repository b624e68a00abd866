"""Figures of the trained-head probes. Every function takes {label: data}
(one model, or several overlaid for a comparison) and returns a Figure with
a title, labelled axes and a legend."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def _colors(series: dict):
  return zip(series.items(), (f"C{i}" for i in range(10)))


colors = _colors  # For probes drawing their own figures.


def destroyed_histogram(series):
  """Seed 002 eq. (10) per token: share of |g| in ker(W^T), against the
  sqrt(1 - D/V) a random gradient direction would lose."""
  fig, ax = plt.subplots(figsize=(6, 3.8))
  for (label, out), color in _colors(series):
    hist = out["per_token_histogram"]
    edges, counts = np.asarray(hist["edges"]), np.asarray(hist["counts"])
    ax.stairs(counts / counts.sum(), edges, color=color,
              label=f"{label}: all tokens {out['norm_ratio']:.3f}")
    ax.axvline(out["random_direction_ratio"], color=color, ls=":",
               label=f"{label}: random direction sqrt(1 - D/V) = "
                     f"{out['random_direction_ratio']:.3f}")
  ax.set_xlabel("destroyed share of the logit-gradient norm, per token")
  ax.set_ylabel("fraction of tokens")
  ax.set_title("Seed 002 eq. (10): gradient norm lost in W^T")
  ax.legend(fontsize=7)
  return fig


def profiles(series):
  """Seed 002 Fig. 7: sorted full vs projected gradient coefficients."""
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  for (label, prof), color in _colors(series):
    r = np.asarray(prof["rank"])
    for ax, sel in ((axes[0], r < 20), (axes[1], r >= 10)):
      for key, ls, what in (("full", "-", "full"), ("proj", "--",
                                                    "projected")):
        m = np.asarray(prof[f"{key}_mean"])[sel]
        s = np.asarray(prof[f"{key}_std"])[sel]
        ax.plot(r[sel] + 1, m, ls, marker="o", ms=2, color=color,
                label=f"{label}: {what}")
        ax.fill_between(r[sel] + 1, m - s, m + s, color=color, alpha=0.12)
  axes[0].set_title("Seed 002 Fig. 7: top coefficients")
  axes[1].set_title("tail (log rank)")
  axes[1].set_xscale("log")
  for ax in axes:
    ax.set_xlabel("rank by |full gradient coefficient|")
    ax.set_ylabel("coefficient (mean +- std over tokens)")
    ax.legend(fontsize=7)
  fig.tight_layout()
  return fig


def ranks(series):
  """Seed 002 Fig. 2: empirical rank of the logit gradient vs tokens."""
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  for (label, rows), color in _colors(series):
    t = [r["tokens"] for r in rows]
    ax.plot(t, [r["rank"] for r in rows], "o-", color=color,
            label=f"{label}: rank (QR, |R_ii| > 1e-6)")
  if series:
    rows = next(iter(series.values()))
    ax.plot([r["tokens"] for r in rows], [r["max_rank"] for r in rows], "k:",
            label="min(tokens, V)")
  ax.set_xscale("log")
  ax.set_xlabel("tokens in the batch")
  ax.set_ylabel("rank of the logit gradient")
  ax.set_title("Seed 002 Fig. 2: the gradient is full rank")
  ax.legend(fontsize=7)
  return fig


def efficiency(series):
  """Seed 002 Fig. 8: loss after a logit update of equal norm."""
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  for (label, eff), color in _colors(series):
    for key, ls, what in (("logit_gradient", "-", "along grad_L (logits)"),
                          ("hidden_gradient", "--",
                           "along grad_H W^T (via H)")):
      ax.plot(eff["fraction"], np.array(eff[key]) - eff["loss0"], ls,
              marker="o", color=color, label=f"{label}: {what}")
  ax.set_xscale("log")
  ax.set_xlabel("update norm / |logits|")
  ax.set_ylabel("change of the mean loss (nats)")
  ax.set_title("Seed 002 Fig. 8: what an update of the backbone can do")
  ax.legend(fontsize=7)
  return fig


def mlr_fit(series):
  """Seed 003 Fig. 2: -log alpha against the MLR fit on output embeddings."""
  fig, ax = plt.subplots(figsize=(5, 4.2))
  lo, hi = np.inf, -np.inf
  for (label, sc), color in _colors(series):
    f, y = np.asarray(sc["fitted"]), np.asarray(sc["observed"])
    ax.scatter(f, y, s=2, alpha=0.3, color=color,
               label=f"{label}: adj. R^2 = {sc['adj_r2']:.3f}")
    lo, hi = min(lo, f.min(), y.min()), max(hi, f.max(), y.max())
  ax.plot([lo, hi], [lo, hi], "k:", label="y = x")
  ax.set_xlabel("A . E_w + B (fitted)")
  ax.set_ylabel("-log alpha_w (observed)")
  ax.set_title("Seed 003 eq. (2): -log alpha is linear in E_w")
  ax.legend(fontsize=7, markerscale=4)
  return fig


def spearman(series):
  """Seed 003 Fig. 3: |Spearman| per principal component and dimension."""
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  for (label, prof), color in _colors(series):
    pc = np.asarray(prof["pc_abs_spearman"])
    dims = np.sort(np.asarray(prof["dim_abs_spearman"]))[::-1]
    axes[0].plot(np.arange(1, pc.size + 1), pc, ".", ms=3, color=color,
                 label=label)
    axes[1].plot(np.arange(1, dims.size + 1), dims, "-", color=color,
                 label=label)
  axes[0].set_xscale("log")
  axes[0].set_xlabel("principal component (by variance)")
  axes[1].set_xlabel("embedding dimension (sorted by |r|)")
  for ax in axes:
    ax.set_ylabel("|Spearman r| with alpha")
    ax.legend(fontsize=7)
  axes[0].set_title("Seed 003 Fig. 3: per principal component")
  axes[1].set_title("per original dimension")
  fig.tight_layout()
  return fig


def edit_scales(series):
  """Seed 003 Fig. 4: requested vs measured probability scale."""
  fig, ax = plt.subplots(figsize=(5, 4.2))
  for (label, curve), color in _colors(series):
    r, got = np.array(curve).T
    ax.scatter(r, got, s=8, alpha=0.6, color=color, label=label)
  ax.plot([1 / 20, 20], [1 / 20, 20], "k:", label="requested = measured")
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel("requested scale r of alpha_w")
  ax.set_ylabel("measured scale (detect set)")
  ax.set_title("Seed 003 Algorithm 1 (b = 2)")
  ax.legend(fontsize=7)
  return fig


def detect_size(series):
  """Seed 003 Fig. 5: e_ood (and e_id) against the detect set's size, per
  model, with not editing's error; `series` {label: edit_probe numbers}."""
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  for (label, edit), color in _colors(series):
    by = {r["variant"]: r for r in edit["table"]}
    sizes = edit["detect_sizes"]
    rows = [by[f"detect {n}, b=2"] for n in sizes[:-1]] + [by["b=2"]]
    ax.plot(sizes, [r["e_ood"] for r in rows], "o-", color=color,
            label=f"{label}: e_ood")
    ax.plot(sizes, [r["e_id"] for r in rows], "s:", color=color,
            label=f"{label}: e_id")
    ax.axhline(edit["unedited_error"], color=color, lw=0.8, ls="--")
  ax.set_xscale("log")
  ax.set_xlabel("detect-set positions (Fig. 5: sentences of ~134 tokens)")
  ax.set_ylabel("scale error e (b = 2)")
  ax.set_title("Seed 003 Fig. 5 (dashed: not editing)")
  ax.legend(fontsize=7)
  return fig


def prune(series):
  """Seed 003 Fig. 6: KL of the averaged distribution vs removal ratio."""
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  for (label, out), color in _colors(series):
    ax.plot(out["ratios"], out["saliency"], "o-", color=color,
            label=f"{label}: least salient first")
    ax.plot(out["ratios"], out["adversarial"], "s--", color=color,
            label=f"{label}: most salient first (adversarial)")
  ax.set_xlabel("share of output-embedding dimensions removed")
  ax.set_ylabel("KL(original || pruned), nats")
  ax.set_yscale("symlog", linthresh=1e-4)
  ax.set_title("Seed 003 Fig. 6: dimension removal")
  ax.legend(fontsize=7)
  return fig


def frequency(rows):
  """Seed 003 Fig. 7: frequency adj R^2 and convergence rates vs step."""
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  steps = [max(r["step"], 1) for r in rows]
  axes[0].plot(steps, [r["adj_r2"] for r in rows], "o-",
               label="adj. R^2 of log-frequency on W")
  for key in ("conv_head", "conv_wte", "conv_qkv_0"):
    axes[1].plot(steps, [r[key] for r in rows], "o--", label=key)
  axes[0].set_ylabel("adjusted R^2")
  axes[1].set_ylabel("convergence rate (0 = init, 1 = final)")
  for ax in axes:
    ax.set_xscale("log")
    ax.set_xlabel("training step (0 plotted at 1)")
    ax.legend(fontsize=7)
  axes[0].set_title("Seed 003 Fig. 7: frequency encoded early")
  axes[1].set_title("parameters approaching their final values")
  fig.tight_layout()
  return fig


def cumulative(series):
  """Seed 001 Fig. 4: cumulative probability of the top-m tokens."""
  fig, ax = plt.subplots(figsize=(5.5, 3.8))
  for (label, out), color in _colors(series):
    ax.errorbar(out["m"], out["mean"], yerr=out["std_over_windows"],
                fmt="o-", ms=3, color=color,
                label=f"{label} (V = {out['V']}): median "
                      f"{out['tokens_for_0.9_median']:.0f} tokens for 0.9")
  ax.axhline(0.9, color="gray", ls=":", label="0.9 of the mass")
  ax.set_xscale("log")
  ax.set_xlabel("m (most likely tokens kept)")
  ax.set_ylabel("mean cumulative probability")
  ax.set_title("Seed 001 App. A: mass of the top-m tokens")
  ax.legend(fontsize=7)
  return fig


def rowstats(series):
  """Seed 001 Fig. 7: row norms and pairwise cosines, trained vs random
  (data: head_stats.row_histograms)."""
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  for (label, hist), color in _colors(series):
    for kind, ls in (("trained", "-"), ("random", ":")):
      h = hist[kind]
      name = f"{label}: {'trained' if kind == 'trained' else 'Gaussian'}"
      axes[0].stairs(h["norm_density"], h["norm_edges"], color=color, ls=ls,
                     label=name)
      axes[1].stairs(h["cos_density"], h["cos_edges"], color=color, ls=ls,
                     label=name)
  axes[0].set_xlabel("row norm / mean row norm")
  axes[1].set_xlabel("cosine of random row pairs")
  for ax in axes:
    ax.set_ylabel("density")
    ax.legend(fontsize=7)
  axes[0].set_title("Seed 001 App. E: row norms")
  axes[1].set_title("pairwise cosines")
  fig.tight_layout()
  return fig

"""Figures of the trained-head probes (train/probes/)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from bottleneck import head_stats


def profiles(prof):
  """Seed 002 Fig. 7: sorted full vs projected gradient coefficients."""
  fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
  r = np.asarray(prof["rank"])
  for ax, sel, title in ((axes[0], r < 20, "main coefficients"),
                         (axes[1], r >= 10, "tail (log rank)")):
    for key, color, label in (("full", "C0", "full gradient"),
                              ("proj", "C3", "projected (seen by H)")):
      m, s = np.asarray(prof[f"{key}_mean"])[sel], np.asarray(
          prof[f"{key}_std"])[sel]
      ax.plot(r[sel] + 1, m, "o-", ms=2, color=color, label=label)
      ax.fill_between(r[sel] + 1, m - s, m + s, color=color, alpha=0.2)
    ax.set_xlabel("rank by |full coefficient|")
    ax.set_title(title)
  axes[1].set_xscale("log")
  axes[0].set_ylabel("coefficient")
  axes[0].legend(fontsize=7)
  return fig


def ranks(rows):
  """Seed 002 Fig. 2: empirical rank of the logit gradient vs tokens."""
  fig, ax = plt.subplots(figsize=(5, 3.5))
  t = [r["tokens"] for r in rows]
  ax.plot(t, [r["rank"] for r in rows], "o-", label="rank (QR, |R_ii|>1e-6)")
  ax.plot(t, [r["max_rank"] for r in rows], ":", label="min(tokens, V)")
  ax.set_xscale("log")
  ax.set_xlabel("batch tokens")
  ax.set_ylabel("rank")
  ax.legend(fontsize=7)
  return fig


def efficiency(eff):
  """Seed 002 Fig. 8: loss after a logit update of equal norm."""
  fig, ax = plt.subplots(figsize=(5, 3.5))
  for key, label in (("logit_gradient", "along grad_L (logits)"),
                     ("hidden_gradient", "along grad_H W^T (via H)")):
    ax.plot(eff["fraction"], np.array(eff[key]) - eff["loss0"], "o-",
            label=label)
  ax.set_xscale("log")
  ax.set_xlabel("update norm / |logits|")
  ax.set_ylabel("loss change")
  ax.legend(fontsize=7)
  return fig


def mlr_fit(y, fitted, adj_r2):
  """Seed 003 Fig. 2: -log alpha against the MLR fit on output embeddings."""
  fig, ax = plt.subplots(figsize=(4.5, 4))
  ax.scatter(fitted, y, s=3, alpha=0.5)
  lo, hi = min(y.min(), fitted.min()), max(y.max(), fitted.max())
  ax.plot([lo, hi], [lo, hi], "k:")
  ax.set_xlabel("A . E_w + B (fitted)")
  ax.set_ylabel("-log alpha_w")
  ax.set_title(f"adj. R^2 = {adj_r2:.3f}")
  return fig


def spearman(prof):
  """Seed 003 Fig. 3: |Spearman| per principal component and per dimension."""
  fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
  pc = prof["pc_abs_spearman"]
  axes[0].bar(np.arange(pc.size), pc,
              color=plt.cm.viridis(prof["pc_variance_ratio"] /
                                   prof["pc_variance_ratio"].max()))
  axes[0].set_xlabel("principal component (by variance)")
  axes[0].set_ylabel("|Spearman r| with alpha")
  axes[1].bar(np.arange(prof["dim_abs_spearman"].size),
              prof["dim_abs_spearman"])
  axes[1].set_xlabel("embedding dimension")
  return fig


def edit_scales(curve):
  """Seed 003 Fig. 4: requested vs measured probability scale."""
  fig, ax = plt.subplots(figsize=(4.5, 4))
  r, got = np.array(curve).T
  ax.scatter(r, got, s=8, alpha=0.6)
  ax.plot([r.min(), r.max()], [r.min(), r.max()], "k:")
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel("requested scale r")
  ax.set_ylabel("measured scale (detect set)")
  return fig


def prune(out):
  """Seed 003 Fig. 6: KL of the averaged distribution vs removal ratio."""
  fig, ax = plt.subplots(figsize=(5, 3.5))
  ax.plot(out["ratios"], out["saliency"], "o-", label="least salient first")
  ax.plot(out["ratios"], out["adversarial"], "o--",
          label="most salient first (adversarial)")
  ax.set_xlabel("share of output-embedding dimensions removed")
  ax.set_ylabel("KL(original || pruned)")
  ax.set_yscale("symlog", linthresh=1e-4)
  ax.legend(fontsize=7)
  return fig


def frequency(rows):
  """Seed 003 Fig. 7: frequency adj R^2 and convergence rates vs step."""
  fig, ax = plt.subplots(figsize=(5.5, 3.5))
  steps = [max(r["step"], 1) for r in rows]
  ax.plot(steps, [r["adj_r2"] for r in rows], "o-", label="adj R^2 (freq)")
  for key in ("conv_head", "conv_wte", "conv_qkv_0"):
    ax.plot(steps, [r[key] for r in rows], "--", label=key)
  ax.set_xscale("log")
  ax.set_xlabel("training step (0 plotted at 1)")
  ax.legend(fontsize=7)
  return fig


def cumulative(out):
  """Seed 001 Fig. 4: cumulative probability of the top-m tokens."""
  fig, ax = plt.subplots(figsize=(5, 3.5))
  ax.errorbar(out["m"], out["mean"], yerr=out["std_over_windows"], fmt="o-",
              ms=3)
  ax.axhline(0.9, color="gray", ls=":")
  ax.set_xscale("log")
  ax.set_xlabel("m")
  ax.set_ylabel("mean cumulative probability")
  return fig


def rowstats(w, label: str, seed: int = 0):
  """Seed 001 Fig. 7: row norms and pairwise cosines, trained vs random."""
  rnd = head_stats.random_like(w, seed)
  fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
  for m, name in ((w, label), (rnd, "random (same mean norm)")):
    axes[0].hist(head_stats.row_norms(m), bins=60, alpha=0.5, density=True,
                 label=name)
    axes[1].hist(head_stats.pairwise_cosines(m, seed=seed), bins=60,
                 alpha=0.5, density=True, label=name)
  axes[0].set_xlabel("row norm")
  axes[1].set_xlabel("cosine of random row pairs")
  axes[0].legend(fontsize=7)
  return fig

"""Seed 002 on a trained head: how much of the logit gradient survives W^T.

Eq. (10) and App. D's cosine over every position of a Pass (its head pass
summed them); Fig. 7 profiles, Fig. 2 ranks and Fig. 8 efficiency on the
first positions, as many as fit `budget_bytes` of V-wide rows (the count
used is returned). Its spec: GRADIENT.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import gradient, logit_gradients
from train.probes import forward, plots, subjects
from train.probes.forward import Pass, position_cap
from train.probes.spec import Figure, Probe, Row, fmt, of_key


RANDOM_HEAD_ENTRIES = 1 << 24  # Largest V x D given a Gaussian twin.
LONG_RANK_MAX_V = 8192  # Largest V whose Fig. 2 rank runs past T = V.


def long_rank_reading(rows, v: int) -> str:
  """Seed 002 Fig. 2 ("logit gradients are near full-rank in practice"):
  the rank of the logit gradients as a share of min(T, V) at the largest T
  measured, and whether T got past V."""
  last = rows[-1]
  said = ", ".join(f"T = {r['tokens']}: {r['rank']}" for r in rows)
  share = last["rank"] / min(last["tokens"], v)
  past = ("" if last["tokens"] >= v else
          f"; T stays below V = {v}, so the rank past V is untested")
  return (f"rank of the logit gradients {said}: {share:.1%} of min(T, V) "
          f"at T = {last['tokens']}{past}.")


def twin_side(twin: dict) -> str:
  """'more' / 'less' / 'no more': how the trained head's destroyed share
  compares with its Gaussian twins' (`random_head`) on the same gradients,
  beyond 3 of the twins' standard deviations (at least 1e-4)."""
  noise = max(3.0 * twin["random_std"], 1e-4)
  gap = twin["trained"] - twin["random"]
  return "more" if gap > noise else "less" if gap < -noise else "no more"


def destroyed_reading(out: dict) -> str:
  """What eq. (10)'s number says beside dimension counting: a random
  direction loses sqrt(1 - D/V) of its norm to a D-dimensional subspace.
  'More' / 'less' when the trained head's share on the twins' gradients
  differs from the Gaussian twins' mean by over 3 of their standard
  deviations (at least 1e-4)."""
  counted = out["random_direction_ratio"]
  head = (f"eq. (10) {out['norm_ratio']:.4f} against sqrt(1 - D/V) = "
          f"{counted:.4f}")
  twin = out.get("random_head")
  if twin is None:
    return (f"{head}: the head destroys "
            f"{'more' if out['norm_ratio'] > counted else 'less'} than a "
            "random direction loses (no Gaussian twin at this size).")
  side = twin_side(twin) + " than"
  return (f"{head}; on the first {twin['tokens']} positions the trained "
          f"head loses {twin['trained']:.4f} of the gradient's norm, a "
          f"Gaussian head of its shape {twin['random']:.4f} (sd "
          f"{twin['random_std']:.1e}): the trained "
          f"head destroys {side} dimension counting says.")


def gradient_probe(subject, pass_: Pass, profile_tokens: int = 512,
                   budget_bytes: int = 1 << 27, rank_tokens: int = 0,
                   twin_draws: int = 0):
  """Seed 002: eq. (10), App. D cosine, Fig. 2 rank, Fig. 7, Fig. 8; a head
  over RANDOM_HEAD_ENTRIES gets `twin_draws` Gaussian twins (`gram_twins`;
  0: none)."""
  if pass_.cos is None:
    raise ValueError("the gradient probe needs a Pass run with "
                     "gradient_sums=True.")
  w, b = subject.head()
  v, d = w.shape[0], subjects.head_rank(subject.cfg, w.shape[1])
  s, n = pass_.gradient, pass_.tokens
  lost_sq = max(s["grad_sq"] - s["visible_sq"], 0.0) / s["grad_sq"]
  per_token = np.sqrt(np.clip(1.0 - pass_.cos.astype(np.float64) ** 2, 0.0,
                              1.0))
  out = {"norm_ratio": float(np.sqrt(lost_sq)), "squared_ratio": lost_sq,
         "mean_cosine": s["cos_sum"] / n, "tokens": n, "V": v, "D": d,
         # App. D's cosine per text window (its spread: the rows' interval).
         "cosine_windows": np.asarray(pass_.cos, np.float64).reshape(
             pass_.x.shape[0], -1).mean(axis=1).tolist(),
         "D_over_V": d / v,
         "random_direction_ratio": float(np.sqrt(1.0 - d / v)),
         "per_token_quantiles": {
             q: float(np.quantile(per_token, q)) for q in (0.05, 0.5, 0.95)},
         "per_token_histogram": _histogram(per_token)}
  k = min(profile_tokens, n, position_cap(v, budget_bytes))
  h, y = pass_.h[:k], pass_.targets[:k]
  w, b = forward.device_head(subject)  # The Pass's copies: no new ones.
  prof = gradient.coefficient_profiles(h, w, b, y,
                                      m_dxd=forward.head_whitener(subject))
  counts = [c for c in (8, 16, 32, 64, 128, 256, 512, 1024, 2048) if c <= k]
  ranks = logit_gradients.rank_vs_tokens(h, w, b, y, counts)
  eff = gradient.update_efficiency(h, w, b, y,
                                   [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3])
  if v * d <= RANDOM_HEAD_ENTRIES:  # A QR of a [V, D] Gaussian: small heads.
    out["random_head"] = twins(subject, h, w, b, y, d)
  elif twin_draws and d == w.shape[1]:  # Larger: Gram sums, block by block.
    out["random_head"] = gram_twins(h, w, b, y, twin_draws)
  if rank_tokens and v <= LONG_RANK_MAX_V:  # Fig. 2 past T = V, streamed.
    n = min(rank_tokens, pass_.tokens)
    counts = sorted({c for c in (512, 1024, 2048, 4096, 8192, 16384, v, n)
                     if c <= n})
    out["rank_vs_tokens_long"] = logit_gradients.rank_vs_tokens_streamed(
        pass_.h[:n], w, b, pass_.targets[:n], counts)
  out.update(subset_tokens=k, rank_vs_tokens=ranks, efficiency=eff,
             profile={key: np.asarray(val).tolist()
                      for key, val in prof.items()})
  label = {subject.name: out}
  return out, {"gradient_destroyed": plots.destroyed_histogram(label),
               "gradient_profiles": plots.profiles({subject.name: prof}),
               "gradient_rank": plots.ranks({subject.name: ranks}),
               "gradient_efficiency": plots.efficiency({subject.name: eff})}


def twins(subject, h_txn, w_vxn, b_v, y_t, d: int) -> dict:
  """logit_gradients.subspace_ratios against Gaussian heads of rank D (eq.
  10): a low-rank head W = A B enters as H B^T and A [V, D] (the same
  logits, so the same gradients), its twins V x D Gaussians."""
  if d < w_vxn.shape[1]:
    project, k_dxv, _, _ = subject.cfg.head_linear(subject.params)
    h_txn, w_vxn = np.asarray(project(h_txn)), np.asarray(k_dxv).T
  return logit_gradients.subspace_ratios(h_txn, w_vxn, b_v, y_t)


def gram_twins(h_txd, w_vxd, b_v, y_t, draws: int, seed: int = 0,
               rows: int = 16384) -> dict:
  """Eq. (10) on the same logit gradients G [T, V] for the trained head and
  `draws` Gaussian heads of its shape, as logit_gradients.subspace_ratios
  (the same fields) but for heads too large for its float64 SVD: the share
  of |G|_F^2 a column space span(A) keeps is tr(G A (A^T A)^-1 A^T G^T) /
  |G|_F^2, with A^T A [D, D] and A^T G^T [D, T] summed over `rows` rows of
  A at a time (float64; a Gaussian is drawn block by block, never whole)."""
  gradient.check_inputs(h_txd, w_vxd, b_v, y_t)
  g = np.asarray(_logit_gradients(
      jnp.asarray(h_txd, jnp.float32), jnp.asarray(w_vxd, jnp.float32),
      None if b_v is None else jnp.asarray(b_v, jnp.float32),
      jnp.asarray(y_t)), np.float64)
  total, (v, d) = float(np.sum(g * g)), np.shape(w_vxd)

  g32 = g.astype(np.float32)

  def lost(block) -> float:  # block(i, j): rows i..j-1 of A.
    gram, ag = np.zeros((d, d)), np.zeros((d, len(g)))
    for i in range(0, v, rows):
      a = block(i, min(i + rows, v))
      gi = (g if a.dtype == np.float64 else g32)[:, i:i + rows]
      gram += a.T @ a  # A block's products in its dtype, summed in float64.
      ag += a.T @ gi.T
    kept = float(np.sum(ag * np.linalg.solve(gram, ag)))
    return float(np.sqrt(max(1.0 - kept / total, 0.0)))

  # The Gaussians in float32 (well conditioned: twice as fast, their
  # shares within ~1e-7 of float64's); the trained head in float64.
  rng = np.random.default_rng(seed)
  random = [lost(lambda i, j: rng.standard_normal((j - i, d), np.float32))
            for _ in range(draws)]
  return {"trained": lost(lambda i, j: np.asarray(w_vxd[i:j], np.float64)),
          "random": float(np.mean(random)),
          "random_std": float(np.std(random, ddof=1)) if draws > 1 else 0.0,
          "counted": float(np.sqrt(1.0 - d / v)), "tokens": int(len(g)),
          "draws": draws}


_logit_gradients = jax.jit(gradient.logit_gradients)


def _histogram(values, bins: int = 50) -> dict:
  """Counts over [0, 1] (JSON-friendly, for overlays across models)."""
  counts, edges = np.histogram(values, bins=bins, range=(0.0, 1.0))
  return {"edges": edges.tolist(), "counts": counts.tolist()}


GRADIENT = Probe(
    "gradient", "pass", lambda ctx: gradient_probe(
        ctx.subject, ctx.own, twin_draws=ctx.settings.twin_draws),
    figures=(
        Figure("gradient_destroyed", "Per-token share of the logit-gradient "
               "norm that W^T destroys (seed 002 eq. 10); dotted: what a "
               "random direction would lose, sqrt(1 - D/V).",
               plots.destroyed_histogram),
        Figure("gradient_profiles", "Full vs projected gradient "
               "coefficients, sorted (seed 002 Fig. 7)."),
        Figure("gradient_rank", "Rank of the logit gradient against tokens "
               "(seed 002 Fig. 2)."),
        Figure("gradient_efficiency", "Loss change after moving the logits "
               "along the gradient, directly or through H (seed 002 Fig. "
               "8).", of_key(plots.efficiency, "efficiency"))),
    share=0.03, gradient_sums=True, rows=(
        Row("seed002", "eq. (10): gradient norm destroyed, all tokens",
            "95-99% (seed 002 Fig. 6: GPT-2, Pythia, Llama 3, Qwen3)",
            lambda n: fmt(n["gradient"]["norm_ratio"])),
        Row("seed002", "random direction: sqrt(1 - d/V)", "",
            lambda n: fmt(n["gradient"]["random_direction_ratio"])),
        Row("seed002", "per token: 5% / 50% / 95% quantiles", "",
            lambda n: " / ".join(
                fmt(v) for v in n["gradient"]["per_token_quantiles"].values())),
        Row("seed002", "App. D: mean cos(g, P_W g)",
            "0.1-0.2 (seed 002 App. D)",
            lambda n: fmt(n["gradient"]["mean_cosine"]))))

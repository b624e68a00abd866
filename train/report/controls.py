"""Expressivity controls for seed 002's two training experiments (issue 78):
the same rank-D heads trained without a backbone, under the same
optimiser and weight decay (train/training/free_context.py).

  SpamLang (§3.2): V free context vectors under a rank-D head, context t
    predicting t: what a rank-D head can reach on the task at that budget
    (Prop. 2.4: rank 2 suffices for every argmax).
  Low-rank sweep (§3.1): a rank-D head alone on the largest-D run's frozen
    final hidden states: the best a rank-D head does on features learned
    without its bottleneck.

Each says how much of the small-D gap it explains: (control's loss - the
reference's) / (the small D's loss - the reference's), clipped to [0, 1];
the reference is the full-rank head (SpamLang) or the largest D (sweep).
"""

from __future__ import annotations

import jax
import numpy as np

from train.report import spamlang_effects, thesis_eval
from train.text import data
from train.training import free_context, runs, trainer

FEATURE_BATCHES = 128  # Training batches whose features the sweep's
#                        control fits on (x 16 x 64 tokens on the CPU: 131k
#                        tokens; 16 let a rank-64 head overfit them).
CEILING_STEPS = 4  # The SpamLang control's steps / the trained run's: its
#                    free contexts learn through the same rank-D head, so at
#                    the run's own budget it measures the budget too (V =
#                    4096, D = 8: 5.47 nats after 250 steps, 0.29 after 1000).

CLIP_SCOPE = ("gradient clipping's global norm spans the control's own "
              "parameters, the head and its contexts; in the trained model "
              "it spans the backbone too, so where clipping binds the two "
              "steps differ in size")


def explained(control: float, small: float, reference: float) -> float:
  """Share of the gap small - reference that the control's loss accounts
  for: (control - reference) / (small - reference) in [0, 1] (nan where
  there is no gap)."""
  gap = small - reference
  if not gap > 0:
    return float("nan")
  return float(min(max((control - reference) / gap, 0.0), 1.0))


def _mean(rows, key="final_val_loss"):
  return float(np.mean([r[key] for r in rows]))


def spamlang(rows, run_config) -> list[dict]:
  """Per (V, low rank D) of the base arm, at the lr where the trained low
  rank did best (seeds averaged) and per seed: the free-context control at
  that run's steps and optimiser (`run_config(v, d, steps, lr, seed)` gives
  the run's config), beside the trained low rank and the full rank."""
  base = [r for r in rows if not r.get("arm") and
          r.get("variant", "repeat") == "repeat"]
  out = []
  for v, d in sorted({(r["V"], r["D"]) for r in base if not r["full_rank"]}):
    low = [r for r in base if (r["V"], r["D"]) == (v, d)]
    lr = spamlang_effects.best_lr(low)
    full = [r for r in base if r["V"] == v and r["full_rank"]]
    full_lr = spamlang_effects.best_lr(full)
    trained_full = _mean([x for x in full if x["lr"] == full_lr])
    for r in (r for r in low if r["lr"] == lr):
      cfg = run_config(v, d, r["steps"], lr, r["seed"])
      s = free_context.Settings.from_train(cfg.train)
      got = free_context.spamlang_ceiling(
          v, d, cfg.model.n_embd, s, steps=CEILING_STEPS * r["steps"],
          seed=r["seed"])
      out.append(dict(got, trained_loss=r["final_val_loss"],
                      trained_accuracy=r["accuracy"],
                      full_rank_loss=trained_full,
                      explained=explained(got["final_loss"],
                                          r["final_val_loss"], trained_full)))
  return out


def spamlang_said(controls) -> str:
  """The section's sentence on its controls (computed)."""
  if not controls:
    return ("**Expressivity control**: not run (no low-rank head in the "
            "base arm).")
  parts = []
  for v, d in sorted({(c["V"], c["D"]) for c in controls}):
    cs = [c for c in controls if (c["V"], c["D"]) == (v, d)]
    parts.append(
        f"V = {v}, D = {d}: trained {_mean(cs, 'trained_loss'):.3f} nats "
        f"against the full rank's {cs[0]['full_rank_loss']:.3f}; free "
        f"contexts under the same rank-{d} head reach "
        f"{_mean(cs, 'final_loss'):.3f} (accuracy "
        f"{_mean(cs, 'accuracy'):.3f}): expressivity explains "
        f"{_share(cs)}")
  return ("**Expressivity control** (a rank-D head over V free context "
          "vectors, the same optimiser and weight decay, no backbone, for "
          f"{CEILING_STEPS}x the trained run's steps: the free contexts "
          "learn through the same rank-D head, so at the run's own budget "
          "the control would measure the budget; " + CLIP_SCOPE + "): "
          + "; ".join(parts) + ".")


def _share(cs) -> str:
  shares = [c["explained"] for c in cs if np.isfinite(c["explained"])]
  if not shares:
    return "none of it (no gap)"
  if _mean(cs, "final_loss") >= _mean(cs, "trained_loss"):
    return ("all of the gap: the control ends no lower than the trained "
            "head (even with free contexts and more steps a rank-D head does "
            "no better, so the gap needs no backbone to explain it)")
  return (f"{np.mean(shares):.0%}" + (
      f" ({', '.join(f'{x:.0%}' for x in shares)} by seed)"
      if len(shares) > 1 else "") + " of the gap")


def features(workdir: str, batches: int):
  """(train features [N, width], next tokens [N], held-out features,
  next tokens) of a run's newest checkpoint: its final hidden states (the
  head's input) on its first `batches` training batches and on the
  trainer's validation windows."""
  config = runs.read_config(workdir)
  params, cfg, _ = trainer.load_params(workdir, config)
  model = cfg.module()
  hidden = jax.jit(lambda x: model.apply(params, x, deterministic=True,
                                         method="hidden"))
  train, _, _ = data.make_loaders(config)
  xy = [train.batch(i) for i in range(batches)]
  vx, vy = thesis_eval.eval_windows(config)
  flat = lambda x: np.asarray(hidden(x), np.float32).reshape(
      -1, cfg.n_embd)
  # One training batch per forward: all of them at once held every
  # layer's activations for 131k tokens (the quick report's peak RSS went
  # from 2.1 to 4.0 GB here).
  tx = np.concatenate([flat(x) for x, _ in xy])
  ty = np.concatenate([y.reshape(-1) for _, y in xy])
  return tx, ty, flat(vx), vy.reshape(-1)


def lowrank(rows, batches: int = FEATURE_BATCHES) -> list[dict]:
  """Per smaller D of the sweep at its longest length: a rank-D head fit
  on the largest D's (first seed's) frozen features, under that run's
  optimiser and steps, its held-out loss beside the trained D's and the
  largest D's (seeds averaged)."""
  steps = max(r["steps"] for r in rows)
  last = [r for r in rows if r["steps"] == steps]
  ranks = sorted({r["D"] for r in last})
  top = [r for r in last if r["D"] == ranks[-1]]
  src = min(top, key=lambda r: r["seed"])
  fx, fy, hx, hy = features(src["workdir"], batches)
  config = runs.read_config(src["workdir"])
  tokens = config.train.batch_size * config.model.block_size
  s = free_context.Settings.from_train(config.train, batch_size=tokens,
                                       steps=steps)
  out = []
  for d in ranks[:-1]:
    fit = free_context.fit_frozen_features(
        fx, fy, d, vocab=src["V"], settings=s, heldout=(hx, hy),
        seed=src["seed"])
    small = _mean([r for r in last if r["D"] == d])
    ref = _mean(top)
    out.append({"D": d, "features_of": ranks[-1], "seed": src["seed"],
                "steps": steps, "train_tokens": int(len(fy)),
                "heldout_tokens": int(len(hy)), "loss": float(fit.loss),
                "best_loss": float(fit.best_loss),
                "trained_loss": small, "largest_D_loss": ref,
                "explained": explained(float(fit.loss), small, ref)})
  return out


def _one(c) -> str:
  if not np.isfinite(c["explained"]):
    return "none of it (no gap)"
  if c["loss"] >= c["trained_loss"]:
    return ("all of the gap: the control ends no lower than the trained D "
            "(its backbone's features do not help a rank-D head here)")
  return f"{c['explained']:.0%} of the gap"


def lowrank_said(controls) -> str:
  if not controls:
    return "**Expressivity control**: not run (one rank only)."
  parts = [f"D = {c['D']}: trained {c['trained_loss']:.3f} against D = "
           f"{c['features_of']}'s {c['largest_D_loss']:.3f}; a rank-{c['D']} "
           f"head on D = {c['features_of']}'s frozen features reaches "
           f"{c['loss']:.3f} held out: expressivity explains "
           + _one(c) for c in controls]
  c = controls[0]
  return ("**Expressivity control** (the rank-D head alone on the largest "
          f"D's final hidden states, {c['train_tokens']} training tokens, "
          f"{c['heldout_tokens']} held out, the run's optimiser and "
          f"{c['steps']} steps; " + CLIP_SCOPE + "): " + "; ".join(parts)
          + ".")

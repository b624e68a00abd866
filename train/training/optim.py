"""AdamW with warm-up and a cosine or WSD (warm-up, stable, decay) schedule."""

from __future__ import annotations

import jax
import numpy as np
import optax

SCHEDULES = ("cosine", "wsd", "constant")


def schedule(t) -> optax.Schedule:
  """Learning rate per step for the `train` config block."""
  if t.schedule not in SCHEDULES:
    raise ValueError(f"`train.schedule` must be one of {SCHEDULES}; got "
                     f"{t.schedule!r}.")
  if not (np.isfinite(t.lr) and t.lr > 0):
    raise ValueError(f"`train.lr` must be a finite number > 0; got {t.lr}.")
  if not 0.0 <= t.min_lr_ratio <= 1.0:
    raise ValueError("`train.min_lr_ratio` must be in [0, 1]; got "
                     f"{t.min_lr_ratio}.")
  if not 0 <= t.warmup < t.steps:
    raise ValueError(f"`train.warmup` must be in [0, steps={t.steps}); got "
                     f"{t.warmup}.")
  end = t.lr * t.min_lr_ratio
  warm = optax.linear_schedule(0.0, t.lr, max(t.warmup, 1))
  if t.schedule == "constant":
    return optax.join_schedules([warm, optax.constant_schedule(t.lr)],
                                [t.warmup])
  if t.schedule == "cosine":
    return optax.warmup_cosine_decay_schedule(
        0.0, t.lr, max(t.warmup, 1), t.steps, end)
  if not 0.0 < t.decay_fraction < 1.0:
    raise ValueError("`train.decay_fraction` must be in (0, 1); got "
                     f"{t.decay_fraction}.")
  decay = max(1, int(t.steps * t.decay_fraction))
  stable = max(0, t.steps - decay - t.warmup)
  return optax.join_schedules(
      [warm, optax.constant_schedule(t.lr),
       optax.cosine_decay_schedule(t.lr, decay, end / t.lr)],
      [t.warmup, t.warmup + stable])


def optimizer(t) -> optax.GradientTransformation:
  """Clipped AdamW; weight decay on matrices only (not biases, norms)."""
  decay_mask = lambda params: jax.tree.map(lambda p: p.ndim >= 2, params)
  parts = [optax.clip_by_global_norm(t.grad_clip)] if t.grad_clip > 0 else []
  parts.append(optax.adamw(schedule(t), b1=t.b1, b2=t.b2, eps=t.eps,
                           weight_decay=t.weight_decay, mask=decay_mask))
  return optax.chain(*parts)

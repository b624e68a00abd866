"""AdamW with warm-up and a cosine or WSD (warm-up, stable, decay) schedule.

The learning rate is an input of the compiled train step, not a constant in
it: `optimizer` is AdamW up to its last factor (clipping, Adam's direction,
decoupled weight decay) and the step scales that direction by -lr(step),
read from `learning_rates` on the host. AdamW's update is exactly
-lr(t) * (adam_t + wd * p) either way; what changes is that one compiled step
serves every lr, warm-up, length and schedule of a model shape (sweeps, and
the test suite, compile each shape once).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
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
  """Clipped AdamW without its learning rate: the update is
  clip -> Adam -> + wd * p (weight decay on matrices only, not biases or
  norms); `apply` scales it by -lr. optax.adamw(lr) = this + scale(-lr)."""
  schedule(t)  # Validates the schedule fields with the optimizer's.
  decay_mask = lambda params: jax.tree.map(lambda p: p.ndim >= 2, params)
  parts = [optax.clip_by_global_norm(t.grad_clip)] if t.grad_clip > 0 else []
  parts += [optax.scale_by_adam(b1=t.b1, b2=t.b2, eps=t.eps),
            optax.add_decayed_weights(t.weight_decay, decay_mask)]
  return optax.chain(*parts)


def apply(params, direction, lr):
  """params - lr * direction (optax.scale_by_learning_rate's rounding)."""
  return jax.tree.map(
      lambda p, u: p + jnp.asarray(-lr, u.dtype) * u, params, direction)


def learning_rates(t) -> np.ndarray:
  """[steps] float32: lr(step) of `schedule(t)`, as the compiled step sees
  it (one vectorised evaluation, in float32 as inside optax)."""
  return np.asarray(jax.jit(jax.vmap(schedule(t)))(
      jnp.arange(t.steps, dtype=jnp.int32)), np.float32)

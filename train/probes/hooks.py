"""Training-time probes: functions of (params, batch) -> scalars.

`config.probes` = 'name:every,name:every'. The trainer knows nothing of
them: its caller passes `factory(config.probes)` as the `hooks` of
train.training.trainer.train_and_evaluate (python -m train.main does),
which jits each and calls it only at steps divisible by its `every`, after
the optimizer step, on that step's batch; it reads the parameters and
changes nothing, so a run with probes trains exactly like one without
(tests/trainer_test.py). Register new probes with @register(name).
"""

from __future__ import annotations

from typing import Callable

import functools

import jax
import jax.numpy as jnp

_REGISTRY: dict[str, Callable] = {}


def register(name: str):
  def wrap(factory):
    _REGISTRY[name] = factory
    return factory
  return wrap


@register("head")
def _head_stats(model, cfg):
  """Row norms of the output matrix W (seed 001 App. E) and batch loss."""
  del model

  def fn(params, x, y):
    del x, y
    w = cfg.head_weights(params)[0]
    norms = jnp.linalg.norm(w, axis=1)
    return {"row_norm_mean": norms.mean(), "row_norm_std": norms.std()}
  return fn


@register("gradient")
def _gradient_bottleneck(model, cfg):
  """Seed 002 eq. (10) on the step's batch: fraction of the logit-gradient
  norm destroyed by the head, and the mean cosine (App. D)."""
  from bottleneck import gradient  # pylint: disable=g-import-not-at-top

  def fn(params, x, y):
    h = model.apply(params, x, method="hidden")
    h = h.reshape(-1, h.shape[-1]).astype(jnp.float32)
    w, b = cfg.head_weights(params)
    w = w.astype(jnp.float32)
    gram = jnp.matmul(w.T, w, precision=jax.lax.Precision.HIGHEST)
    s = gradient.bottleneck_stats(h, w, b, y.reshape(-1),
                                  gradient.whitener_from_gram(gram, 1e-6),
                                  min(1024, h.shape[0]))
    lost = jnp.clip(1.0 - s["visible_sq"] / s["grad_sq"], 0.0, 1.0)
    return {"destroyed_norm_ratio": jnp.sqrt(lost),
            "mean_cosine": s["cos_sum"] / h.shape[0]}
  return fn


def parse(spec: str) -> list[tuple[str, int]]:
  out = []
  for part in filter(None, (p.strip() for p in spec.split(","))):
    name, _, every = part.partition(":")
    if name not in _REGISTRY:
      raise ValueError(f"`probes` entry {name!r} unknown; registered: "
                       f"{sorted(_REGISTRY)}.")
    try:
      every = int(every)
    except ValueError:
      every = 0
    if every < 1:
      raise ValueError(f"`probes` entry {part!r} needs name:every with every "
                       ">= 1.")
    out.append((name, every))
  return out


def build(spec: str, model, cfg) -> list[tuple[str, int, Callable]]:
  """(name, every, fn(params, x, y) -> dict) for each probe of `spec`."""
  return [(name, every, _REGISTRY[name](model, cfg))
          for name, every in parse(spec)]


def factory(spec: str):
  """The trainer's `hooks` argument for a config.probes string (checked
  now, so a typo fails before training starts)."""
  parse(spec)
  return functools.partial(build, spec)

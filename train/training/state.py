"""A run's training state: its tree, its shapes without allocating, and
how it is laid out over devices. Read by the trainer and, to restore a
checkpoint's parameters, by train/training/runs.py (the probes' way in):
neither needs the training loop.
"""

from __future__ import annotations

import functools
from typing import Any

import flax
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import numpy as np

from bottleneck import sharding
from train.models import build
from train.training import optim


@flax.struct.dataclass
class TrainState:
  step: jax.Array
  params: Any
  opt_state: Any


def init_state(model, tx, cfg, key):
  params = model.init(key, jnp.zeros((1, cfg.block_size), jnp.int32))
  return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))


def state_from(params, tx):
  """A fresh TrainState around given parameters (continued pretraining)."""
  return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))


def abstract_state(config, cfg=None):
  """The TrainState a run config implies, as shapes (nothing allocated);
  `cfg`: its model config, if already built (else built here)."""
  cfg = build.model_config(config.model) if cfg is None else cfg
  return jax.eval_shape(functools.partial(
      init_state, cfg.module(), optim.optimizer(config.train), cfg),
      jax.random.key(config.seed))


def _fsdp_spec(x, n_dev: int) -> P:
  """Shard the largest axis divisible by the device count (else replicate)."""
  dims = [i for i in np.argsort(x.shape)[::-1] if x.shape[i] % n_dev == 0
          and x.shape[i] >= n_dev]
  if x.ndim < 2 or not dims:
    return P()
  spec = [None] * x.ndim
  spec[dims[0]] = sharding.BATCH_AXIS
  return P(*spec)


def state_shardings(abstract_state, mesh, fsdp: bool):
  n_dev = mesh.devices.size
  spec = (lambda x: _fsdp_spec(x, n_dev)) if fsdp else (lambda x: P())
  return jax.tree.map(lambda x: NamedSharding(mesh, spec(x)), abstract_state)


def restore_target(abstract_state, shardings):
  """Shapes, dtypes and shardings of a state, for checkpoint restore."""
  return jax.tree.map(
      lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
      abstract_state, shardings)

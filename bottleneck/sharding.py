"""One-axis data-parallel meshes for batched (trial / subset) computations.

The Monte-Carlo simulations and the batched LP solver shard their leading
batch axis over all devices and replicate everything else. Batches are padded
to a multiple of the device count so that shapes (and compilations) stay
fixed.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

BATCH_AXIS = "batch"
# XLA compile options for jax.jit(..., compiler_options=UNTUNED): no GPU
# autotuning, so each GEMM runs XLA's default algorithm for its shapes, the
# same on every machine, and a cold compile skips timing the candidates
# (lp.device_kernels). With ADMM's programs untuned too, fresh H100s
# compiled them faster and decided every instance of paper-size Figure 1
# by the same path (autotuned ones differ in some paths, never in a
# verdict), but the stream ran slower, so ADMM stays autotuned
# (lp.stream.compiled). A no-op on CPUs and TPUs.
UNTUNED = {"xla_gpu_autotune_level": 0}


def batch_mesh(devices=None) -> Mesh:
  """A 1-D mesh over `devices` (default: all) with axis name 'batch'."""
  devices = jax.devices() if devices is None else list(devices)
  return Mesh(np.asarray(devices), (BATCH_AXIS,))


def batch_sharded(mesh: Mesh, ndim: int = 1) -> NamedSharding:
  """Shards axis 0 over the mesh; the remaining `ndim - 1` axes replicated."""
  return NamedSharding(mesh, P(BATCH_AXIS, *([None] * (ndim - 1))))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, P())


def round_up(n: int, multiple: int) -> int:
  """Smallest multiple of `multiple` that is >= n."""
  return -(-n // multiple) * multiple

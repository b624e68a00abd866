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
# (lp.device_kernels). Paper-size Figure 1 on fresh H100s with ADMM's
# programs untuned too (benchmarks/RESULTS.md, 2026-11-27): they compiled
# in 3.3-4.1 s instead of 7.6-7.8 s, three machines decided all 6000
# instances by the same path (iterations, sources) where autotuned ones
# differed in 501-558 (never in a verdict), and the stream ran ~2.5 s
# slower, so ADMM stays autotuned (lp.stream.compiled). A no-op on CPUs
# and TPUs.
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

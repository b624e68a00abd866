"""Multi-host start-up: jax.distributed, before any other JAX call."""

from __future__ import annotations

import os

import jax


def initialize(coordinator_address=None, num_processes=None,
               process_id=None) -> None:
  """Explicit flags win; on a Cloud TPU pod the runtime finds its peers."""
  if coordinator_address:
    if num_processes is None or process_id is None:
      raise ValueError("`num_processes` and `process_id` are required with "
                       "`coordinator_address`.")
    if not 0 <= process_id < num_processes:
      raise ValueError(f"`process_id` must be in [0, {num_processes}); got "
                       f"{process_id}.")
    # CPU processes exchange collectives through gloo (GPUs/TPUs natively).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address, num_processes,
                               process_id)
  elif os.environ.get("TPU_WORKER_HOSTNAMES", "").count(",") > 0:
    jax.distributed.initialize()

"""The stream's programs compiled ahead of their first calls (accelerator
layer).

`start` compiles lp.stream's refill and advance for one solve's shapes, each
in a thread (XLA's compiles release the GIL), so that they overlap each
other and the driver's preparation of A; the driver calls the `wait` it
returns before lp.stream.run, whose calls then find the programs in jit's
cache. On an H100 they otherwise compile one after the other, autotuned,
at the stream's first calls (benchmarks/RESULTS.md: paper-size Figure 1
from a fresh H100 machine). lp.driver starts it only where a solve may send
work to a device (lp.driver._placement); a CPU solve compiles at the
stream's first calls. A compile that fails here is left to fail again,
with its error, in the stream.
"""

from __future__ import annotations

import threading
from typing import Callable

import jax
import jax.numpy as jnp

from bottleneck import sharding
from bottleneck.lp import admm, stream


def start(settings: admm.Settings, mesh, batch: int, m_pad: int, n: int,
          d: int) -> Callable[[], None]:
  """Starts the compiles of `stream.compiled(settings, mesh, batch, m_pad,
  n, d)`'s refill and advance; returns `wait`, which joins them."""
  fns = stream.compiled(settings, mesh, batch, m_pad, n, d)
  # The avals and shardings of the stream's calls (jit's cache is keyed on
  # both): A replicated, the state as compiled() shards it, the rest host
  # values.
  placed = lambda x, where: jax.ShapeDtypeStruct(x.shape, x.dtype,
                                                 sharding=where)
  shared = jax.tree.map(lambda x: placed(x, sharding.replicated(mesh)),
                        fns.shared_shape)
  state = jax.tree.map(placed, fns.state_shape, fns.state_sharding)
  mask = jax.ShapeDtypeStruct((batch,), bool)
  scalar = jax.ShapeDtypeStruct((), jnp.int32)
  lowered = ((fns.refill, (shared, state, fns.problem_shape, mask, mask)),
             (fns.advance, (shared, state, scalar, scalar,
                            jax.ShapeDtypeStruct((batch,), jnp.int32))))

  def compile_one(jitted, args):
    try:
      jitted.lower(*args).compile()
    except Exception:  # pylint: disable=broad-except
      pass  # The stream's own call compiles it again and raises.

  # Not daemons: an interpreter that exits while XLA compiles in a daemon
  # thread aborts (lp.device_checks.DeviceA.warm_up).
  threads = [threading.Thread(target=compile_one, args=call)
             for call in lowered]
  for thread in threads:
    thread.start()

  def wait():
    for thread in threads:
      thread.join()

  return wait

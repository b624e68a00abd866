"""Continuous batching of LP instances over a fixed, compiled batch of slots.

`batch` slots iterate together (`admm.run_until`, batch axis sharded over
devices, the matrix replicated, the state donated); whenever a quarter of
them holds a verdict candidate, those are handed out and their slots
restarted with queued instances (`admm.refill`), so slow instances do not
hold the batch. One compile per (settings, mesh, batch, m_pad, matrix
shape): `compiled` caches them.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import sharding
from bottleneck.lp import admm, instances as instances_lib


class Compiled(NamedTuple):
  """Jitted init / advance / refill of a fixed-size batch of LP slots."""
  init: Callable
  advance: Callable
  refill: Callable


@functools.lru_cache(maxsize=4)
def compiled(settings: admm.Settings, mesh, batch: int, m_pad: int, n: int,
             d: int) -> Compiled:
  """Compiles once per (settings, mesh, shapes)."""
  rep = sharding.replicated(mesh)

  def freeze(state, active):
    return state._replace(status=jnp.where(active, state.status,
                                           admm.MAX_ITER))

  def init(shared, problem, active):
    return freeze(admm.init(shared, problem, settings), active)

  def advance(shared, state, max_steps, stop_below):
    return admm.run_until(shared, state, settings, max_steps, stop_below)

  def refill(shared, state, problem, replace, active):
    new = admm.refill(shared, state, problem, replace, settings)
    return freeze(new, active | ~replace)

  f32 = jax.ShapeDtypeStruct
  problem_shape = admm.Problem(f32((batch, m_pad), jnp.int32),
                               f32((batch, m_pad), bool),
                               f32((batch, m_pad), jnp.float32),
                               f32((batch,), jnp.float32))
  shared_shape = admm.Shared(f32((n, d), jnp.float32), f32((d,), jnp.float32),
                             f32((d,), jnp.float32))
  state_shape = jax.eval_shape(init, shared_shape, problem_shape,
                               f32((batch,), bool))
  by_rank = lambda x: (sharding.batch_sharded(mesh, x.ndim) if x.ndim
                       else rep)
  state_sh = jax.tree.map(by_rank, state_shape)
  problem_sh = jax.tree.map(by_rank, problem_shape)
  b1 = sharding.batch_sharded(mesh, 1)
  return Compiled(
      jax.jit(init, in_shardings=(rep, problem_sh, b1),
              out_shardings=state_sh),
      jax.jit(advance, in_shardings=(rep, state_sh, None, None),
              out_shardings=state_sh, donate_argnums=1),
      jax.jit(refill, in_shardings=(rep, state_sh, problem_sh, b1, b1),
              out_shardings=state_sh, donate_argnums=1))


class Finished(NamedTuple):
  """A slot's outcome: the solver's claim and its candidates."""
  index: int  # Position of the instance in the input list.
  claim: str  # admm.STATUS_NAMES of the final status.
  x_rot: np.ndarray  # [d] best primal candidate (solver basis).
  mu: np.ndarray  # [N] best multipliers candidate.
  iterations: int  # Iterations the instance ran.


def run(shared: admm.Shared, instances, settings: admm.Settings, batch: int,
        m_pad: int, mesh) -> Iterator[Finished]:
  """Yields every instance once, as its slot finishes (any order)."""
  n, d = shared.a_rot.shape
  fns = compiled(settings, mesh, batch, m_pad, n, d)
  pending = list(range(len(instances)))[::-1]  # pop() takes the next one.
  slots = [pending.pop() if pending else -1 for _ in range(batch)]

  def problem():
    return instances_lib.pad([instances[max(j, 0)] for j in slots], m_pad,
                             batch)

  state = fns.init(shared, problem(), np.array(slots) >= 0)
  while any(j >= 0 for j in slots):
    n_active = sum(j >= 0 for j in slots)
    stop_below = n_active - max(1, batch // 4) if pending else 0
    state = fns.advance(shared, state, jnp.int32(settings.max_iters),
                        jnp.int32(max(stop_below, 0)))
    status, started, decided = jax.device_get(
        (state.status, state.started_at, state.decided_at))
    finished = [i for i, j in enumerate(slots)
                if j >= 0 and status[i] != admm.RUNNING]
    if finished:
      x_rot, mu = jax.device_get((state.x_cert, state.mu_cert))
    for i in finished:
      yield Finished(slots[i], admm.STATUS_NAMES[int(status[i])], x_rot[i],
                     mu[i], int(decided[i] - started[i]))
      slots[i] = pending.pop() if pending else -1
    if finished and any(j >= 0 for j in slots):
      replace = np.zeros(batch, bool)
      replace[finished] = True
      state = fns.refill(shared, state, problem(), replace,
                         np.array(slots) >= 0)

"""Continuous batching of LP instances over a fixed, compiled batch of slots.

`batch` slots iterate together (`admm.run_until`, batch axis sharded over
devices, the matrix replicated, the state donated); whenever a quarter of
them holds a verdict candidate, those are handed out and their slots
restarted with queued instances (`admm.refill`), so slow instances do not
hold the batch; on a CPU frozen groups of slots cost nothing
(admm._by_live_groups). One compile per (settings, mesh, batch, m_pad,
matrix shape): `compiled` caches them (lp.precompile compiles them ahead,
beside an accelerator).

Decide rather than solve: the in-loop checks nominate a verdict only on
cheap float32 evidence (a primal point below the threshold, a dual bound
over a ball). A `decide` callback (the float64 certificates on the host)
gets the raw iterate of every slot still running at ages `first_check`,
2 `first_check`, 4 `first_check`, ... and releases the slot as soon as it
proves a verdict: ADMM's duals identify a valid dual certificate long
before its iterates converge (16384 x 512, m = 90, t* = 1.001 to 1.07: all
8 decided at age 200, where the in-loop test needed 370 to over 5000).
These host checks run while the device iterates the next chunk (`_due`
copies the iterates, the chunk is dispatched, `_check` decides).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Iterator, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import sharding
from bottleneck.lp import admm, instances as instances_lib, rotation


class Compiled(NamedTuple):
  """Jitted advance / refill / resume / freeze of a fixed-size batch of LP
  slots (the first state is a refill of a blank one: no compile of its
  own)."""
  advance: Callable
  refill: Callable
  resume: Callable
  freeze: Callable  # Slots the host released, with no instance to follow.
  state_sharding: admm.State  # NamedShardings of the slots' state.
  state_shape: admm.State  # Its ShapeDtypeStructs.
  problem_shape: admm.Problem  # A batch of instances' ShapeDtypeStructs.
  shared_shape: rotation.Shared  # The prepared matrix's.


@functools.lru_cache(maxsize=8)
def compiled(settings: admm.Settings, mesh, batch: int, m_pad: int, n: int,
             d: int) -> Compiled:
  """Compiles once per (settings, mesh, shapes)."""
  rep = sharding.replicated(mesh)
  if settings.group is None and mesh.devices.size > 1:  # Groups of a batch
    settings = dataclasses.replace(settings, group=0)  # sharded over devices
    # would be gathered across them: each device iterates its whole shard.

  def freeze(state, active):
    return state._replace(status=jnp.where(active, state.status,
                                           admm.MAX_ITER))

  def init(shared, problem, active):
    return freeze(admm.init(shared, problem, settings), active)

  def advance(shared, state, max_steps, stop_below, nominate_from):
    return admm.run_until(shared, state, settings, max_steps=max_steps,
                          stop_below=stop_below, nominate_from=nominate_from)

  def refill(shared, state, problem, replace, active):
    new = admm.refill(shared, state, problem, replace, settings)
    return freeze(new, active | ~replace)

  f32 = jax.ShapeDtypeStruct
  problem_shape = admm.Problem(f32((batch, m_pad), jnp.int32),
                               f32((batch, m_pad), bool),
                               f32((batch, m_pad), jnp.float32),
                               f32((batch,), jnp.float32))
  shared_shape = rotation.Shared(f32((n, d), jnp.float32),
                                 f32((d,), jnp.float32),
                                 f32((d,), jnp.float32))
  state_shape = jax.eval_shape(init, shared_shape, problem_shape,
                               f32((batch,), bool))
  by_rank = lambda x: (sharding.batch_sharded(mesh, x.ndim) if x.ndim
                       else rep)
  state_sh = jax.tree.map(by_rank, state_shape)
  problem_sh = jax.tree.map(by_rank, problem_shape)
  b1 = sharding.batch_sharded(mesh, 1)
  # Autotuned on a GPU (not sharding.UNTUNED): untuned, paper-size Figure
  # 1's stream ran slower on an H100, and lp.precompile hides the
  # autotuner's compile time.
  jit = functools.partial(jax.jit, out_shardings=state_sh)
  return Compiled(
      advance=jit(advance, in_shardings=(rep, state_sh, None, None, b1),
                  donate_argnums=1),
      refill=jit(refill, in_shardings=(rep, state_sh, problem_sh, b1, b1),
                 donate_argnums=1),
      resume=jit(admm.resume, in_shardings=(state_sh, b1),
                 donate_argnums=0),
      freeze=jit(lambda state, which: freeze(state, ~which),
                 in_shardings=(state_sh, b1), donate_argnums=0),
      state_sharding=state_sh, state_shape=state_shape,
      problem_shape=problem_shape, shared_shape=shared_shape)


class Finished(NamedTuple):
  """A slot's outcome: the solver's claim and its candidates."""
  index: int  # Position of the instance in the input list.
  claim: str  # admm.STATUS_NAMES of the final status.
  x_rot: np.ndarray  # [d] best primal candidate (solver basis).
  mu: np.ndarray  # [N] best multipliers candidate (0 off its W).
  iterations: int  # Iterations the instance ran.
  decided: object = None  # What `decide` returned, if it released the slot.
  # (index, age) of the instances still running when this one came out,
  # and the global iteration counter then.
  running: tuple = ()
  clock: int = 0


# verify(index, claim, x_rot [d], mu [N]) -> a verdict object, or None when
# the in-loop nomination does not hold in float64 (the slot then resumes).
Verify = Callable[[int, str, np.ndarray, np.ndarray], object]
# decide(index, x_rot [d], u [N] (the dual iterate; 0 off the instance's
# working set), t (the solver's running estimate of t*), age, idle (the
# tail: few slots run, the host has time for costlier checks)) -> a
# verdict object, or None to go on.
Decide = Callable[[int, np.ndarray, np.ndarray, float, int, bool], object]


class Feed(Protocol):
  """Hands instances to the stream's free slots."""

  def next(self, force: bool) -> tuple[list, int]:
    """([(index, verdict)] settled without a slot, the next index to run
    or -1). force: -1 only if nothing at all is left."""

  def left(self) -> bool:
    """Whether any instance is neither handed out nor settled."""


class Fifo:
  """The instances in order, every one run."""

  def __init__(self, count: int):
    self.pending = list(range(count))[::-1]  # pop() takes the next one.

  def next(self, force: bool) -> tuple[list, int]:
    del force
    return [], self.pending.pop() if self.pending else -1

  def left(self) -> bool:
    return bool(self.pending)


def run(shared: rotation.Shared, instances, settings: admm.Settings,
        batch: int, m_pad: int, mesh, *, decide: Decide | None = None,
        first_check: int = 100, verify: Verify | None = None,
        feed: Feed | None = None,
        started: Callable[[], None] | None = None) -> Iterator[Finished]:
  """Yields every instance once, as its slot finishes (any order).

  With `decide`, every slot still running at age first_check * 2^k is
  offered to it (its raw iterate x and dual u) and released when it
  returns a verdict. With `verify`, an in-loop nomination is checked at
  once: a verdict is yielded (`decided`), else the slot resumes with its
  nominations quiet for as many iterations as it has run (doubling).
  `feed` hands out the instances (default `Fifo`: in order); one it
  settles (lp.chain_feed.Feed: from another member of its chain) is
  yielded at once with 0 iterations and never takes a slot. `started` is
  called once the first chunk is dispatched, its programs compiled (the
  driver starts the device checks' compiles there:
  lp.device_checks.DeviceA.for_mesh).
  """
  n, d = shared.a_rot.shape
  fns = compiled(settings, mesh, batch, m_pad, n, d)
  shared = jax.device_put(shared, sharding.replicated(mesh))  # As compiled.
  full = batch  # The tail: a quarter of it or less running (also once
  # moved to a batch that size).
  feed = feed or Fifo(len(instances))
  settled = []  # Finished by the feed (lp.chains), yielded next round.
  endgame = [False]  # The feed has had nothing to start but waiting ones.

  def take():  # The next instance to run, or -1: a waiting one (its chain
    for force in (False, True):  # busy) rather than an idle slot.
      done, j = feed.next(force)
      settled.extend(Finished(index=i, claim="decided", x_rot=None,
                              mu=None, iterations=0, decided=verdict)
                     for i, verdict in done)
      if j >= 0 or not feed.left():
        endgame[0] |= force or j < 0
        return j
    endgame[0] = True
    return -1

  slots = [take() for _ in range(batch)]
  next_check = np.full(batch, first_check)  # Age of each slot's next offer.
  # A slot's in-loop nominations wait until it has run this many
  # iterations (set when `verify` rejected one; 0 for a fresh instance).
  nominate_from = np.zeros(batch, np.int32)
  step = max(1, first_check // 2)  # Host visits: every `step` iterations.

  def problem():
    return instances_lib.pad([instances[max(j, 0)] for j in slots], m_pad,
                             len(slots))

  def advance(state, now):
    n_active = sum(j >= 0 for j in slots)
    quota = max(1, min(batch, 4 * n_active) // 4)  # Refill once a quarter
    stop_below = n_active - quota if feed.left() else 0  # is done.
    max_steps = settings.max_iters
    if decide is not None or not feed.left():  # Back at the next multiple of
      max_steps = step - now % step  # `step` (host checks, the tail).
    return fns.advance(shared, state, jnp.int32(max_steps),
                       jnp.int32(max(stop_below, 0)),
                       nominate_from.copy())  # The host edits its own.

  blank = jax.device_put(jax.tree.map(
      lambda leaf: np.zeros(leaf.shape, leaf.dtype), fns.state_shape),
                         fns.state_sharding)  # Every slot refilled:
  state = advance(fns.refill(shared, blank, problem(), np.ones(batch, bool),
                             np.array(slots) >= 0), 0)  # = admm.init.
  if started is not None:
    started()
  while any(j >= 0 for j in slots):
    yield from settled
    settled.clear()
    status, ages, now = jax.device_get(
        (state.status, state.iters, state.iteration))
    finished = [i for i, j in enumerate(slots)
                if j >= 0 and status[i] != admm.RUNNING]
    running = tuple((j, int(ages[i])) for i, j in enumerate(slots)
                    if j >= 0 and status[i] == admm.RUNNING)
    if finished:
      x_rot, mu, mu_idx = jax.device_get((state.x_cert, state.mu_cert,
                                          state.mu_idx))
    resumed = []
    for i in finished:
      claim = admm.STATUS_NAMES[int(status[i])]
      mu_i = admm.multipliers(n, mu[i], mu_idx[i])
      age = int(ages[i])
      verdict = None
      if verify and status[i] != admm.MAX_ITER:
        verdict = verify(slots[i], claim, x_rot[i], mu_i)
        if verdict is None:
          resumed.append(i)  # Not certified: iterate on.
          continue
      yield Finished(index=slots[i], claim=claim, x_rot=x_rot[i], mu=mu_i,
                     iterations=age, decided=verdict, running=running,
                     clock=int(now))
    if resumed:
      which = np.zeros(batch, bool)
      which[resumed] = True
      nominate_from[resumed] = ages[resumed] + max(
          int(ages[resumed].min()), settings.check_every)
      state = fns.resume(state, which)
      finished = [i for i in finished if i not in resumed]
    offers = [] if decide is None else _due(state, slots, status, ages,
                                            next_check)
    # The host checks of the offers overlap the next chunk of iterations
    # (dispatched first; JAX runs it asynchronously). A slot they release
    # iterates that chunk in vain and is refilled after it.
    ahead = bool(offers)
    if ahead:
      state = advance(state, int(now))
      tail = sum(j >= 0 for j in slots) <= full // 4  # Idle host: the
      finished += yield from _check(
          decide, offers, slots, next_check, n_rows=n, running=running,
          clock=int(now), every=step if tail else 0,
          idle=tail or endgame[0])
    queued = feed.left()
    for i in finished:  # The next queued instance takes the slot.
      slots[i] = take()
      next_check[i] = first_check
      nominate_from[i] = 0
    if finished and any(j >= 0 for j in slots):
      replace = np.zeros(batch, bool)
      replace[finished] = True
      if queued:
        state = fns.refill(shared, state, problem(), replace,
                           np.array(slots) >= 0)
      else:  # Nothing to start: no refill compile for the tail's batches.
        state = fns.freeze(state, replace)
    if not ahead and any(j >= 0 for j in slots):
      state = advance(state, int(now))
  yield from settled


def _due(state: admm.State, slots, status, ages, next_check):
  """The running slots due for a host check, with host copies of their
  iterates: [(slot, x [d], u [K], W's rows [K], t, age)]."""
  due = [i for i, j in enumerate(slots) if j >= 0 and
         status[i] == admm.RUNNING and ages[i] >= next_check[i]]
  if not due:
    return []
  x, u, idx, t = jax.device_get((state.x, state.work.u, state.rows.idx,
                                  state.t))
  return [(i, x[i], u[i], idx[i], float(t[i]), int(ages[i])) for i in due]


def _check(decide: Decide, offers, slots, next_check, *, n_rows: int,
           running: tuple, clock: int, every: int = 0, idle: bool = False):
  """Offers the due slots to `decide` (u as an [N] vector, one at a time);
  yields what it settles and returns those slots (their next offers are
  scheduled at twice the age, or `every` iterations later if given: the
  tail, where a few slow instances hold the run and the host is idle);
  `idle` tells `decide` so (costlier checks pay there)."""
  released = []
  for i, x, u_k, idx_k, t, age in offers:
    u = admm.multipliers(n_rows, u_k, idx_k)
    verdict = decide(slots[i], x, u, t, age, idle)
    if verdict is None:
      next_check[i] = age + (every or age)
      continue
    released.append(i)
    yield Finished(index=slots[i], claim="decided", x_rot=x, mu=u,
                   iterations=age, decided=verdict,
                   running=tuple(r for r in running if r[0] != slots[i]),
                   clock=clock)
  return released

"""Batched ADMM for the top-m selectability LP (seed 001, Section 6).

For an OPM A (N x d), a token set S (m rows) and targets y_S, solve

  minimise t   s.t.   A_S x = y_S,   a_j . x <= t  for j not in S,     (LP)

so t* is the smallest achievable largest other logit. The paper's questions:
(a) y_S = 1: S can be made the top m with equal logits iff t* < 1;
(b) y_S = ybar of eq. (14) (scale s of eq. (17)): the prescribed
    probabilities are reached with mass < delta off S if t* <= 1 - eps.
The solver only needs to *decide* t* < threshold, and stops an instance as
soon as it holds a certificate for either side (checked again in float64 by
`bottleneck.lp.certificates`).

Method: OSQP's ADMM (Stellato et al. 2020, Alg. 1) with P = 0 on
v = (x, t), constraint map K v = A x - t r (r = indicator of the rows not in
S) and the set C = {z : z_S = y_S, z_R <= 0}. Its linear system

  (sigma I + K^T diag(rho_vec) K) v = rhs,   rho_vec = rho_eq on S, rho on R

is solved without per-instance d x d work: A is rotated once into the
eigenbasis of A^T A (A' = A V, so A'^T A' = diag(lam)); then
sigma I + rho A'^T A' is diagonal, the S rows add a rank-m Woodbury term
(one m x m Cholesky per instance) and t borders the system (a scalar Schur
complement).

Working set (cost that follows the active rows, not N): at the optimum at
most d + 1 - m of the N - m other rows are active. Each instance iterates
on K rows W of R explicitly (z, u, gathered rows a_W); every other row j
is assumed inactive (u_j = 0, z_j < 0), and then ADMM keeps
z_j = a_j . zeta - tau for two tracked quantities (zeta, tau relax like x
and t), so their whole contribution to the x-update is
  rho A_I^T (A_I zeta - tau 1) = rho (lam * zeta - tau colsum)
      - rho A_S^T (A_S zeta - tau) - rho A_W^T (A_W zeta - tau),
O((m + K) d). While those rows stay inactive this is exactly the full
ADMM (W = all of R is today's algorithm); a full pass every `scan_every`
iterations (and whenever W alone suggests a FEASIBLE verdict) refreshes W
with the K largest logits (rows with positive multipliers kept), and is the
only full check a FEASIBLE nomination passes. The float64 certificates
never depend on W: a FEASIBLE embedding is checked on every row, and an
INFEASIBLE dual point supported on W is a dual point of the full LP.

One instance's iteration is `bottleneck.lp.admm_step` (vmapped here; on
a CPU by groups of instances whose rows stay in cache, `_iterate`).
API: `lp.rotation.prepare` (once per matrix, host float64: the
device-side `Shared` and the host-side `Basis`), `init` (lp.admm_state:
Settings, Problem, State), `update` (the
iterations up to the next check), `run_until` / `run` (jitted bounded
`lax.while_loop`, checks every `check_every` iterations, adapts each
instance's rho every `adapt_every`, refreshes the working sets every
`scan_every`), `refill` (continuous batching) and `lp.rotation.to_original`
(a rotated iterate back to an embedding of A). The solver only nominates
candidates; whether they prove anything is `bottleneck.lp.verdicts`' and
`bottleneck.lp.certificates`' business.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck.lp import admm_step
# The settings, problem and state live in admm_state; the solver's API
# names them here.
from bottleneck.lp.admm_state import (  # pylint: disable=unused-import
    FEASIBLE, INFEASIBLE, MAX_ITER, OBJECTIVES, RUNNING, STATUS_NAMES,
    Problem, Settings, State, init, working_set_size)
from bottleneck.lp.rotation import Shared

def _select(mask, new, old):
  """Per-instance where over a pytree with leading batch axis."""
  return jax.tree.map(
      lambda a, b: jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)),
                             a, b), new, old)


def group_size(s: Settings) -> int:
  """`s.group` resolved: None is 2 on a CPU backend, else 0 (all at once)."""
  if s.group is not None:
    return s.group
  return 2 if jax.default_backend() == "cpu" else 0


def block_size(s: Settings) -> int:
  """Iterations between two points where a check, scan or adaptation may
  fall: `update` runs at most this many in a row."""
  return math.gcd(s.check_every, s.scan_every, s.adapt_every)


def _by_live_groups(s: Settings, live, fn, args, frozen):
  """`jax.vmap(fn)(*args)` (leading batch axis) by `group_size` groups of
  slots; a group with no `live` slot is skipped and keeps its part of
  `frozen` (the outputs' pytree, whole batch). The groups are written into
  `frozen` in place (a loop carry): frozen slots then cost nothing, and a
  batch with a few running slots (the stream's tail) costs about what
  those slots do."""
  batch, group = live.shape[0], group_size(s)
  if not (0 < group < batch and batch % group == 0):
    return jax.vmap(fn)(*args)
  take = lambda start: lambda x: jax.lax.dynamic_slice_in_dim(x, start,
                                                              group)

  def one_group(g, out):
    start = g * group
    def run(out):
      new = jax.vmap(fn)(*jax.tree.map(take(start), tuple(args)))
      return jax.tree.map(
          lambda o, n: jax.lax.dynamic_update_slice_in_dim(o, n, start, 0),
          out, new)
    return jax.lax.cond(jnp.any(take(start)(live)), run, lambda o: o, out)

  return jax.lax.fori_loop(0, batch // group, one_group, frozen)


def _iterate(shared: Shared, state: State, s: Settings, steps):
  """`steps` iterations of every running instance (x, t, u_s, work), by
  `group_size` groups of instances or all at once."""
  step = functools.partial(admm_step.step, shared, s=s)

  def iterate(inst, f, rows, x, t, u_s, work):
    return jax.lax.fori_loop(0, steps, lambda _, c: step(inst, f, rows, *c),
                             (x, t, u_s, work))

  return _by_live_groups(
      s, state.status == RUNNING, iterate,
      (state.inst, state.factors, state.rows, state.x, state.t, state.u_s,
       state.work), (state.x, state.t, state.u_s, state.work))


def update(shared: Shared, state: State, s: Settings, steps=1,
           nominate_from=None) -> State:
  """`steps` iterations for every running instance (decided ones stay
  frozen), then the check / scan / adaptation due at the new iteration
  count. `steps` (a traced value is fine) must not cross a multiple of
  `block_size`: no check falls inside the run, so no status changes in it.
  `nominate_from` ([B] int32, default 0): an instance is nominated in the
  loop only once it has run that many iterations (the driver's quiet
  period after a nomination it could not certify)."""
  x, t, u_s, work = _iterate(shared, state, s, steps)
  running = state.status == RUNNING
  x, t, u_s, work = _select(running, (x, t, u_s, work),
                            (state.x, state.t, state.u_s, state.work))
  it = state.iteration + steps
  state = state._replace(x=x, t=t, u_s=u_s, work=work, iteration=it,
                         iters=state.iters + jnp.where(running, steps, 0))
  loud = (jnp.ones_like(running) if nominate_from is None else
          state.iters >= nominate_from)
  state = jax.lax.cond(it % s.check_every == 0,
                       lambda st: _check_all(shared, st, s, loud),
                       lambda st: st, state)
  state = jax.lax.cond(it % s.scan_every == 0,
                       lambda st: _scan_all(shared, st, s, loud),
                       lambda st: st, state)
  return jax.lax.cond(it % s.adapt_every == 0,
                      lambda st: _adapt_all(shared, st, s), lambda st: st,
                      state)


def _check_all(shared: Shared, state: State, s: Settings, loud) -> State:
  """In-loop nominations of the `loud` instances: INFEASIBLE from the dual
  bound on W; FEASIBLE only after a full pass over every row
  (`_full_logits`), which runs when W alone has an instance's projected
  point below its threshold. With objective 'solve' nothing is nominated
  (the candidates are recorded)."""
  running = state.status == RUNNING

  def bounds(inst, rows, work, x):  # Dual bound and W's largest logit.
    mu, t_low = admm_step.dual_bound(inst, rows, work)
    x_proj = admm_step.project(inst, x)
    return mu, t_low, x_proj, jnp.max(rows.a @ x_proj)

  inf = jnp.full(running.shape, jnp.inf, state.x.dtype)
  mu, t_low, x_proj, t_up_w = _by_live_groups(
      s, running, bounds, (state.inst, state.rows, state.work, state.x),
      (jnp.zeros_like(state.work.u), -inf, state.x, inf))
  infeasible = running & loud & (t_low > state.inst.threshold)
  if s.objective == "solve":
    infeasible = jnp.zeros_like(infeasible)
  better_low = running & (t_low > state.t_lower)
  state = state._replace(
      status=jnp.where(infeasible, INFEASIBLE, state.status),
      mu_cert=_select(better_low, mu, state.mu_cert),
      mu_idx=_select(better_low, state.rows.idx, state.mu_idx),
      t_lower=jnp.where(better_low, t_low, state.t_lower))
  if s.objective == "solve":
    return state  # The periodic scans record primal candidates.
  candidate = running & loud & ~infeasible & (t_up_w < state.inst.threshold)
  return jax.lax.cond(
      jnp.any(candidate),
      lambda st: _full_logits(shared, st, x_proj, candidate)[0],
      lambda st: st, state)


def _full_logits(shared: Shared, state: State, x_proj, which):
  """Every logit of every instance's projected iterate (one GEMM for the
  batch): nominates FEASIBLE where all other logits are below the
  threshold and keeps the best primal candidate, for the instances in
  `which` only (so that no instance's record depends on the others of its
  batch). Returns (state, logits)."""
  logits = (shared.a_rot @ x_proj.T).T  # [B, N]
  t_up = jnp.max(jax.vmap(admm_step.other_logits)(logits, state.inst),
                 axis=1)
  running = which & (state.status == RUNNING)
  feasible = running & (t_up < state.inst.threshold)
  better_up = running & (t_up < state.t_upper)
  return state._replace(
      status=jnp.where(feasible, FEASIBLE, state.status),
      x_cert=_select(better_up, x_proj, state.x_cert),
      t_upper=jnp.where(better_up, t_up, state.t_upper)), logits


def _scan_all(shared: Shared, state: State, s: Settings, loud) -> State:
  """Every `scan_every` iterations: the full pass of `_full_logits` (its
  nominations for the `loud` instances only), then
  each working set refreshed to the K largest logits (rows with a positive
  multiplier kept; new rows start at the shadow)."""
  x_proj = jax.vmap(admm_step.project)(state.inst, state.x)
  status = state.status
  state, logits = _full_logits(shared, state, x_proj, loud)
  if s.objective == "solve":  # Record the candidate, nominate nothing.
    state = state._replace(status=status)
  k = state.rows.idx.shape[1]

  def refresh(inst, rows, w, row_logits):
    keep = row_logits.at[rows.idx].max(jnp.where(w.u > 0, jnp.inf, -jnp.inf))
    return admm_step.select_rows(shared, inst, keep, k, old_rows=rows,
                                 old=w)

  # A group of slots with none running keeps its W (`_by_live_groups`);
  # decided slots in a running group are refreshed too (their work is
  # kept): no select copies the [B, K, d] rows.
  rows, work = _by_live_groups(
      s, status == RUNNING, refresh,
      (state.inst, state.rows, state.work, logits), (state.rows, state.work))
  return state._replace(rows=rows, work=_select(state.status == RUNNING,
                                                work, state.work))


def _adapt_all(shared: Shared, state: State, s: Settings) -> State:
  adapt = functools.partial(admm_step.adapted_factors, shared, s=s)
  factors = _by_live_groups(
      s, state.status == RUNNING, adapt,
      (state.inst, state.factors, state.rows, state.x, state.t, state.u_s,
       state.work), state.factors)
  return state._replace(factors=_select(state.status == RUNNING, factors,
                                        state.factors))


def run_until(shared: Shared, state: State, s: Settings, *, max_steps,
              stop_below=0, nominate_from=None) -> State:
  """Iterates until at most `stop_below` instances run or `max_steps` pass.

  Instances reaching `s.max_iters` iterations become MAX_ITER
  (undecided). Both bounds may be traced values (no recompile);
  `nominate_from` as in `update`.
  """
  start = state.iteration
  block = block_size(s)

  def cond(st):
    return ((st.iteration - start < max_steps) &
            (jnp.sum(st.status == RUNNING) > stop_below))

  def body(st):  # Up to the next block boundary, the end, or a cap.
    to_cap = jnp.min(jnp.where(st.status == RUNNING, s.max_iters - st.iters,
                               block))
    steps = jnp.minimum(jnp.minimum(block - st.iteration % block,
                                    start + max_steps - st.iteration), to_cap)
    st = update(shared, st, s, jnp.maximum(steps, 1), nominate_from)
    capped = (st.status == RUNNING) & (st.iters >= s.max_iters)
    return st._replace(status=jnp.where(capped, MAX_ITER, st.status))

  return jax.lax.while_loop(cond, body, state)


def refill(shared: Shared, state: State, problem: Problem, replace,
           s: Settings) -> State:
  """Restarts the instances where `replace` with the ones of `problem`.

  The others keep their state; the global iteration counter continues, so
  the check / adaptation schedule is shared.
  """
  merged = _select(replace, init(shared, problem, s), state)
  return merged._replace(iteration=state.iteration)


def resume(state: State, which) -> State:
  """Sets the instances `which` running again (a nomination the host could
  not certify); their iterates continue where they were."""
  return state._replace(status=jnp.where(which, RUNNING, state.status))


def run(shared: Shared, problem: Problem, s: Settings,
        max_iters=None) -> State:
  """init, then `update` in a bounded while_loop until all are decided.

  `max_iters` may be a traced value (no recompile when it changes).
  """
  cap = s.max_iters if max_iters is None else max_iters
  state = run_until(shared, init(shared, problem, s), s, max_steps=cap)
  return state._replace(status=jnp.where(state.status == RUNNING, MAX_ITER,
                                         state.status))


def multipliers(n: int, mu_k, idx_k) -> np.ndarray:
  """A multiplier vector on W as a full-length [N] float64 vector."""
  out = np.zeros(n)
  np.add.at(out, np.asarray(idx_k), np.asarray(mu_k, np.float64))
  return out

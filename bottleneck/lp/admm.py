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
device-side `Shared` and the host-side `Basis`), `init`, `update` (the
iterations up to the next check), `run_until` / `run` (jitted bounded
`lax.while_loop`, checks every `check_every` iterations, adapts each
instance's rho every `adapt_every`, refreshes the working sets every
`scan_every`), `refill` (continuous batching) and `lp.rotation.to_original`
(a rotated iterate back to an embedding of A). The solver only nominates
candidates; whether they prove anything is `bottleneck.lp.verdicts`' and
`bottleneck.lp.certificates`' business.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import checks
from bottleneck.lp import admm_step
from bottleneck.lp.rotation import Shared

RUNNING, FEASIBLE, INFEASIBLE, MAX_ITER = 0, 1, 2, 3
OBJECTIVES = ("decide", "solve")
STATUS_NAMES = {RUNNING: "running", FEASIBLE: "feasible",
                INFEASIBLE: "infeasible", MAX_ITER: "undecided"}


@dataclasses.dataclass(frozen=True)
class Settings:
  rho: float = 0.01  # Initial penalty of the inequality rows (scaled data).
  rho_eq_ratio: float = 1e3  # rho_eq / rho on the equality rows (OSQP).
  sigma: float = 1e-6  # Proximal term on v (keeps the system definite).
  alpha: float = 1.6  # Over-relaxation (OSQP default).
  max_iters: int = 5000  # Iteration cap; instances still open: UNDECIDED.
  check_every: int = 10  # Certificate checks every this many iterations.
  adapt_every: int = 50  # Per-instance rho adaptation (OSQP rule).
  # In-loop nomination of an infeasible candidate: the dual bound must clear
  # the threshold over R = check_radius_factor * |x_par| (what the float64
  # certificate then requires is verdicts.Policy's business).
  check_radius_factor: float = 10.0
  # Rows iterated explicitly per instance (0: `working_set_size` picks
  # ~1.25 d, or all rows where N - m <= 32 d and they take at most
  # 1 MiB); full passes every scan_every iterations.
  working_set: int = 0
  scan_every: int = 10
  # 'decide': stop at the first side of the threshold proved; 'solve': the
  # in-loop checks only record candidates, instances run until the host
  # certifies a bracket on t* (bottleneck.lp.bracket) or max_iters.
  objective: str = "decide"
  # Instances iterated together between two checks (`update`): 0 = the
  # whole batch at once (vmap: what accelerators want); g > 0 = groups of g
  # in turn (lax.map), each running its iterations up to the next check
  # while its working-set rows stay in cache; None = 2 on CPU, else 0. At
  # 50257 x 768, B = 32, the batch's [B, K, d] rows (100 MB) stream from
  # memory twice an iteration; a group of 2 (6 MB) stays in a CPU's L3,
  # and 2 was the fastest group size on a 2-core CPU.
  group: int | None = None

  def __post_init__(self):  # Bad settings would hang or NaN inside the loop.
    for name in ("max_iters", "check_every", "adapt_every", "scan_every"):
      checks.positive_int(name, getattr(self, name))
    if self.group is not None and (
        not isinstance(self.group, int) or self.group < 0):
      raise ValueError(f"`group` must be None or an integer >= 0 (0 = the "
                       f"whole batch); got {self.group!r}.")
    checks.one_of("objective", self.objective, OBJECTIVES)
    if not isinstance(self.working_set, int) or self.working_set < 0:
      raise ValueError(f"`working_set` must be an integer >= 0 (0 = auto); "
                       f"got {self.working_set!r}.")
    for name in ("rho", "sigma", "check_radius_factor"):
      checks.open_interval(name, getattr(self, name), 0.0, np.inf)
    checks.open_interval("alpha", self.alpha, 0.0, 2.0)
    checks.open_interval("rho_eq_ratio", self.rho_eq_ratio, 1.0, np.inf)


class Problem(NamedTuple):
  """A batch of instances; m is padded to a common m_pad."""
  subset: jax.Array  # [B, m_pad] int32 token indices (padding: any index).
  mask: jax.Array  # [B, m_pad] bool, False on padding.
  y: jax.Array  # [B, m_pad] target logits on S (0 on padding).
  threshold: jax.Array  # [B] decide t* < threshold.


def working_set_size(s: Settings, n: int, d: int, m_pad: int) -> int:
  """K: `s.working_set`, else K = 1.25 d rounded up to 128 (a vertex has
  at most d + 1 - m active rows; with fewer spare rows, rows turning active
  between scans slow the convergence; more rows make each iteration
  costlier: 1.25 d was the fastest of d, 1.33 d and 2 d at 50257 x 768 in
  the band), or every row of R (the full algorithm) where
  N - m <= 32 d and R's rows take at most 1 MiB (small matrices, as the
  tests'). Every slot holds its W's rows: W = R at 16384 x 512 would
  stream 1 GB of rows per iteration at B = 32, where K = 640 rows make the
  band's LPs an order of magnitude faster. At most N - m_pad."""
  if s.working_set:
    k = s.working_set
  elif n - m_pad <= 32 * d and (n - m_pad) * d * 4 <= 1 << 20:
    k = n - m_pad
  else:
    k = -(-(5 * d // 4) // 128) * 128
  return max(1, min(k, n - m_pad))


class State(NamedTuple):
  inst: admm_step.Instance  # [B, ...] constants.
  x: jax.Array  # [B, d] primal iterate (rotated, scaled basis).
  t: jax.Array  # [B]
  u_s: jax.Array  # [B, m_pad] dual iterate of the equality rows.
  rows: admm_step.Rows  # [B, ...] working sets.
  work: admm_step.Work  # [B, ...] iterates on them and the shadows.
  factors: admm_step.Factors  # [B, ...]
  iteration: jax.Array  # [] int32 global iteration counter.
  status: jax.Array  # [B] int32: RUNNING / FEASIBLE / INFEASIBLE / MAX_ITER
  started_at: jax.Array  # [B] int32 global iteration the instance started.
  decided_at: jax.Array  # [B] int32 global iteration of the verdict.
  # [B] int32: no in-loop nomination before this global iteration (set
  # when the host rejected one and resumed the instance).
  quiet_until: jax.Array
  x_cert: jax.Array  # [B, d] candidate primal certificate (rotated basis).
  mu_cert: jax.Array  # [B, K] candidate multipliers (sum 1) on rows
  mu_idx: jax.Array  # [B, K] mu_idx (the W they were found on).
  t_upper: jax.Array  # [B] max other logit at x_cert (inf if none yet).
  t_lower: jax.Array  # [B] best dual bound at radius R (-inf if none yet).


def init(shared: Shared, problem: Problem, s: Settings) -> State:
  """Starts every instance at the row-space point x_par, t = its max logit,
  W = the rows of largest logit there."""
  n, d = shared.a_rot.shape
  k = working_set_size(s, n, d, problem.subset.shape[1])

  def one(subset, mask, y, threshold):
    inst = admm_step.instance(shared, subset, mask, y, threshold, s)
    f = admm_step.factors(shared, inst.a_s, mask, n - jnp.sum(mask),
                 jnp.asarray(s.rho, inst.a_s.dtype), s)
    logits = shared.a_rot @ inst.x_par
    t = jnp.max(admm_step.other_logits(logits, inst))
    rows = admm_step.select_rows(shared, inst, logits, k)
    wz = logits[rows.idx]  # zeta = x_par: z_j = a_j.x_par - t <= 0 for all.
    work = admm_step.Work(wz - t, jnp.zeros(k, wz.dtype), inst.x_par, t, wz,
                inst.a_s @ inst.x_par)
    return inst, inst.x_par, t, rows, work, f

  inst, x, t, rows, work, factors = jax.vmap(one)(
      problem.subset, problem.mask, problem.y, problem.threshold)
  bsz, dtype = x.shape[0], x.dtype
  return State(
      inst=inst, x=x, t=t, u_s=jnp.zeros(inst.y.shape, dtype), rows=rows,
      work=work, factors=factors, iteration=jnp.zeros((), jnp.int32),
      status=jnp.zeros(bsz, jnp.int32), started_at=jnp.zeros(bsz, jnp.int32),
      decided_at=jnp.zeros(bsz, jnp.int32),
      quiet_until=jnp.zeros(bsz, jnp.int32),
      x_cert=jnp.zeros((bsz, d), dtype), mu_cert=jnp.zeros((bsz, k), dtype),
      mu_idx=rows.idx, t_upper=jnp.full(bsz, jnp.inf, dtype),
      t_lower=jnp.full(bsz, -jnp.inf, dtype))


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


def update(shared: Shared, state: State, s: Settings, steps=1) -> State:
  """`steps` iterations for every running instance (decided ones stay
  frozen), then the check / scan / adaptation due at the new iteration
  count. `steps` (a traced value is fine) must not cross a multiple of
  `block_size`: no check falls inside the run, so no status changes in it."""
  x, t, u_s, work = _iterate(shared, state, s, steps)
  running = state.status == RUNNING
  x, t, u_s, work = _select(running, (x, t, u_s, work),
                            (state.x, state.t, state.u_s, state.work))
  it = state.iteration + steps
  state = state._replace(x=x, t=t, u_s=u_s, work=work, iteration=it)
  state = jax.lax.cond(it % s.check_every == 0,
                       lambda st: _check_all(shared, st, s), lambda st: st,
                       state)
  state = jax.lax.cond(it % s.scan_every == 0,
                       lambda st: _scan_all(shared, st, s), lambda st: st,
                       state)
  return jax.lax.cond(it % s.adapt_every == 0,
                      lambda st: _adapt_all(shared, st, s), lambda st: st,
                      state)


def _check_all(shared: Shared, state: State, s: Settings) -> State:
  """In-loop nominations: INFEASIBLE from the dual bound on W; FEASIBLE
  only after a full pass over every row (`_full_logits`), which runs when
  W alone has an instance's projected point below its threshold. With
  objective 'solve' nothing is nominated (the candidates are recorded)."""
  running = state.status == RUNNING

  def bounds(inst, rows, work, x):  # Dual bound and W's largest logit.
    mu, t_low = admm_step.dual_bound(inst, rows, work)
    x_proj = admm_step.project(inst, x)
    return mu, t_low, x_proj, jnp.max(rows.a @ x_proj)

  inf = jnp.full(running.shape, jnp.inf, state.x.dtype)
  mu, t_low, x_proj, t_up_w = _by_live_groups(
      s, running, bounds, (state.inst, state.rows, state.work, state.x),
      (jnp.zeros_like(state.work.u), -inf, state.x, inf))
  loud = state.iteration >= state.quiet_until
  infeasible = running & loud & (t_low > state.inst.threshold)
  if s.objective == "solve":
    infeasible = jnp.zeros_like(infeasible)
  better_low = running & (t_low > state.t_lower)
  state = state._replace(
      status=jnp.where(infeasible, INFEASIBLE, state.status),
      decided_at=jnp.where(infeasible, state.iteration, state.decided_at),
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
      decided_at=jnp.where(feasible, state.iteration, state.decided_at),
      x_cert=_select(better_up, x_proj, state.x_cert),
      t_upper=jnp.where(better_up, t_up, state.t_upper)), logits


def _scan_all(shared: Shared, state: State, s: Settings) -> State:
  """Every `scan_every` iterations: the full pass of `_full_logits`, then
  each working set refreshed to the K largest logits (rows with a positive
  multiplier kept; new rows start at the shadow)."""
  x_proj = jax.vmap(admm_step.project)(state.inst, state.x)
  status = state.status
  state, logits = _full_logits(shared, state, x_proj,
                               state.iteration >= state.quiet_until)
  if s.objective == "solve":  # Record the candidate, nominate nothing.
    state = state._replace(status=status)
  k = state.rows.idx.shape[1]

  def refresh(inst, rows, w, row_logits):
    keep = row_logits.at[rows.idx].max(jnp.where(w.u > 0, jnp.inf, -jnp.inf))
    return admm_step.select_rows(shared, inst, keep, k, rows, w)

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


def run_until(shared: Shared, state: State, s: Settings, max_steps,
              stop_below=0) -> State:
  """Iterates until at most `stop_below` instances run or `max_steps` pass.

  Instances reaching `s.max_iters` iterations since their start become
  MAX_ITER (undecided). Both bounds may be traced values (no recompile).
  """
  start = state.iteration
  block = block_size(s)

  def cond(st):
    return ((st.iteration - start < max_steps) &
            (jnp.sum(st.status == RUNNING) > stop_below))

  def body(st):  # Up to the next block boundary, the end, or a cap.
    to_cap = jnp.min(jnp.where(st.status == RUNNING, st.started_at +
                               s.max_iters - st.iteration, block))
    steps = jnp.minimum(jnp.minimum(block - st.iteration % block,
                                    start + max_steps - st.iteration), to_cap)
    st = update(shared, st, s, jnp.maximum(steps, 1))
    capped = (st.status == RUNNING) & (st.iteration - st.started_at >=
                                       s.max_iters)
    return st._replace(status=jnp.where(capped, MAX_ITER, st.status),
                       decided_at=jnp.where(capped, st.iteration,
                                            st.decided_at))

  return jax.lax.while_loop(cond, body, state)


def refill(shared: Shared, state: State, problem: Problem, replace,
           s: Settings) -> State:
  """Restarts the instances where `replace` with the ones of `problem`.

  The others keep their state; the global iteration counter continues, so
  the check / adaptation schedule is shared.
  """
  fresh = init(shared, problem, s)
  fresh = fresh._replace(
      started_at=jnp.full_like(state.started_at, state.iteration),
      iteration=state.iteration)
  merged = _select(replace, fresh, state)
  return merged._replace(iteration=state.iteration)


def resume(state: State, which, quiet_for) -> State:
  """Sets the instances `which` running again (a nomination the host could
  not certify), with in-loop nominations quiet for `quiet_for` iterations;
  their iterates continue where they were."""
  return state._replace(
      status=jnp.where(which, RUNNING, state.status),
      quiet_until=jnp.where(which, state.iteration + quiet_for,
                            state.quiet_until))


def run(shared: Shared, problem: Problem, s: Settings,
        max_iters=None) -> State:
  """init, then `update` in a bounded while_loop until all are decided.

  `max_iters` may be a traced value (no recompile when it changes).
  """
  cap = s.max_iters if max_iters is None else max_iters
  state = run_until(shared, init(shared, problem, s), s, cap, 0)
  return state._replace(status=jnp.where(state.status == RUNNING, MAX_ITER,
                                         state.status))


def multipliers(n: int, mu_k, idx_k) -> np.ndarray:
  """A multiplier vector on W as a full-length [N] float64 vector."""
  out = np.zeros(n)
  np.add.at(out, np.asarray(idx_k), np.asarray(mu_k, np.float64))
  return out

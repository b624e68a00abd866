"""Batched ADMM for the top-m selectability LP (seed 001, Section 6).

For an OPM A (N x d), a token set S (m rows) and targets y_S, solve

  minimise t   s.t.   A_S x = y_S,   a_j . x <= t  for j not in S,     (LP)

so t* is the smallest achievable largest other logit. The paper's questions:
(a) y_S = 1: S can be made the top m with equal logits iff t* < 1;
(b) y_S = ybar of eq. (14) (scale s of eq. (17)): the prescribed
    probabilities are reached with mass < delta off S if t* <= 1 - eps.
The solver only needs to *decide* t* < threshold, and stops an instance as
soon as it holds a certificate for either side (checked again in float64 by
`bottleneck.certificates`).

Method: OSQP's ADMM (Stellato et al. 2020, Alg. 1) with P = 0 on
v = (x, t), constraint map K v = A x - t r (r = indicator of the rows not in
S) and the set C = {z : z_S = y_S, z_R <= 0}. Its linear system

  (sigma I + K^T diag(rho_vec) K) v = rhs,   rho_vec = rho_eq on S, rho on R

is solved without per-instance d x d work: A is rotated once into the
eigenbasis of A^T A (A' = A V, so A'^T A' = diag(lam)); then
sigma I + rho A'^T A' is diagonal, the S rows add a rank-m Woodbury term
(one m x m Cholesky per instance) and t borders the system (a scalar Schur
complement). Each iteration costs two products with the shared A (batched
into GEMMs across instances) plus O(m d).

API: `prepare` (once per matrix, host float64: the device-side `Shared`
and the host-side `Basis`), `init`, `update` (one iteration), `run_until` /
`run` (jitted bounded `lax.while_loop`, checks every `check_every`
iterations, adapts each instance's rho every `adapt_every`), `refill`
(continuous batching) and `to_original` (a rotated iterate back to an
embedding of A). The solver only nominates candidates; whether they prove
anything is `bottleneck.lp.certificates`' business.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import checks, linalg

RUNNING, FEASIBLE, INFEASIBLE, MAX_ITER = 0, 1, 2, 3
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
  # certificate then requires is certificates.Policy's business).
  check_radius_factor: float = 10.0

  def __post_init__(self):  # Bad settings would hang or NaN inside the loop.
    for name in ("max_iters", "check_every", "adapt_every"):
      checks.positive_int(name, getattr(self, name))
    for name in ("rho", "sigma", "check_radius_factor"):
      checks.open_interval(name, getattr(self, name), 0.0, np.inf)
    checks.open_interval("alpha", self.alpha, 0.0, 2.0)
    checks.open_interval("rho_eq_ratio", self.rho_eq_ratio, 1.0, np.inf)


class Shared(NamedTuple):
  """The matrix on device, prepared once and shared by every instance."""
  a_rot: jax.Array  # [N, d] A' = (A / scale) V, columns orthogonal.
  lam: jax.Array  # [d] eigenvalues of A'^T A'.
  colsum: jax.Array  # [d] sum of the rows of A'.


class Basis(NamedTuple):
  """Host-side map from the solver's basis back to A's (x = V x' / scale)."""
  v: np.ndarray  # [d, d] float64 eigenvectors of A^T A / scale^2.
  scale: float  # Row-norm normalisation of A.


class Problem(NamedTuple):
  """A batch of instances; m is padded to a common m_pad."""
  subset: jax.Array  # [B, m_pad] int32 token indices (padding: any index).
  mask: jax.Array  # [B, m_pad] bool, False on padding.
  y: jax.Array  # [B, m_pad] target logits on S (0 on padding).
  threshold: jax.Array  # [B] decide t* < threshold.


class Factors(NamedTuple):
  """Per-instance pieces of the linear system that depend on rho."""
  rho: jax.Array  # [] inequality penalty of this instance.
  c_inv: jax.Array  # [m_pad, m_pad] inverse Woodbury capacitance.
  h: jax.Array  # [d] H^{-1} b.
  b: jax.Array  # [d] coupling of t: rho * sum_{j in R} a'_j.
  kappa: jax.Array  # [] Schur complement of t.


_PREPARE_ROWS = 8192  # Rows rotated per float64 block in `prepare`.


def prepare(a_nxd, dtype=jnp.float32) -> tuple[Shared, Basis]:
  """Normalises and rotates A once (float64 eigendecomposition on host)."""
  a = np.asarray(a_nxd, np.float64)
  gram = a.T @ a
  scale = float(np.sqrt(np.trace(gram) / a.shape[0]))  # RMS row norm.
  lam, v = np.linalg.eigh(gram / scale**2)
  a_rot = np.empty(a.shape, np.dtype(dtype))  # Rotated in float64 by row
  colsum = np.zeros(a.shape[1])  # blocks: no N x d float64 temporary.
  v_scaled = v / scale
  for start in range(0, a.shape[0], _PREPARE_ROWS):
    block = a[start:start + _PREPARE_ROWS] @ v_scaled
    a_rot[start:start + _PREPARE_ROWS] = block
    colsum += block.sum(axis=0)
  return (Shared(jnp.asarray(a_rot), jnp.asarray(lam, dtype),
                 jnp.asarray(colsum, dtype)), Basis(v, scale))


def to_original(basis: Basis, x_rot_d) -> np.ndarray:
  """A solver iterate (rotated, scaled basis) as a float64 embedding of A."""
  return basis.v @ np.asarray(x_rot_d, np.float64) / basis.scale


def _factors(shared: Shared, a_s, mask, n_rest, rho, s: Settings) -> Factors:
  """Woodbury capacitance and t-border for one instance at penalty rho."""
  g = s.sigma + rho * shared.lam  # diag of sigma I + rho A'^T A'.
  c = (s.rho_eq_ratio - 1.0) * rho  # Extra penalty on the S rows.
  a_s_g = a_s / g[None, :]
  cap = a_s_g @ a_s.T + jnp.diag(jnp.where(mask, 1.0 / c, 1.0))
  cap_l = linalg.cholesky(cap)
  c_inv = linalg.cho_solve(cap_l, jnp.eye(a_s.shape[0], dtype=a_s.dtype))
  c_inv = c_inv * (mask[:, None] & mask[None, :])  # Padding contributes 0.
  b = rho * (shared.colsum - jnp.sum(a_s * mask[:, None], axis=0))
  h = _apply_h_inv(g, a_s_g, c_inv, b)
  kappa = s.sigma + rho * n_rest - b @ h
  return Factors(rho, c_inv, h, b, kappa)


def _apply_h_inv(g, a_s_g, c_inv, f):
  """(diag(g) + c A_S^T A_S)^{-1} f by Woodbury."""
  return f / g - a_s_g.T @ (c_inv @ (a_s_g @ f))


class Instance(NamedTuple):
  """Per-instance constants (computed once by `init`, loop-invariant)."""
  a_s: jax.Array  # [m_pad, d] rows of S (zero rows on padding).
  mask: jax.Array  # [m_pad] bool
  y: jax.Array  # [m_pad] targets on S.
  in_s: jax.Array  # [N] bool membership of S.
  y_full: jax.Array  # [N] y scattered to S (0 elsewhere).
  gram_inv: jax.Array  # [m_pad, m_pad] (A_S A_S^T)^{-1} (identity padding).
  x_par: jax.Array  # [d] row-space solution A_S^T (A_S A_S^T)^{-1} y.
  radius: jax.Array  # [] R of the in-loop dual bound.
  threshold: jax.Array  # []


def _rowspace_part(a_s, gram_inv, r):
  """A_S^T (A_S A_S^T)^{-1} r: the minimum-norm x with A_S x = r."""
  return a_s.T @ (gram_inv @ r)


def _instance(shared: Shared, subset, mask, y, threshold,
              s: Settings) -> Instance:
  n = shared.a_rot.shape[0]
  dtype = shared.a_rot.dtype
  a_s = shared.a_rot[subset] * mask[:, None]
  y = jnp.where(mask, y, 0.0).astype(dtype)
  in_s = jnp.zeros(n, bool).at[subset].max(mask)
  y_full = jnp.zeros(n, dtype).at[subset].add(y)
  gram = a_s @ a_s.T + jnp.diag(jnp.where(mask, 0.0, 1.0))
  gram_inv = linalg.cho_solve(linalg.cholesky(gram),
                              jnp.eye(a_s.shape[0], dtype=dtype))
  x_par = _rowspace_part(a_s, gram_inv, y)
  radius = s.check_radius_factor * jnp.linalg.norm(x_par)
  return Instance(a_s, mask, y, in_s, y_full, gram_inv, x_par, radius,
                  jnp.asarray(threshold, dtype))


class State(NamedTuple):
  inst: Instance  # [B, ...] constants.
  x: jax.Array  # [B, d] primal iterate (rotated, scaled basis).
  t: jax.Array  # [B]
  z: jax.Array  # [B, N] constraint iterate.
  u: jax.Array  # [B, N] dual iterate (on R: multipliers mu >= 0).
  factors: Factors  # [B, ...]
  iteration: jax.Array  # [] int32 global iteration counter.
  status: jax.Array  # [B] int32: RUNNING / FEASIBLE / INFEASIBLE / MAX_ITER
  started_at: jax.Array  # [B] int32 global iteration the instance started.
  decided_at: jax.Array  # [B] int32 global iteration of the verdict.
  x_cert: jax.Array  # [B, d] candidate primal certificate (rotated basis).
  mu_cert: jax.Array  # [B, N] candidate multipliers (sum 1 on R).
  t_upper: jax.Array  # [B] max other logit at x_cert (inf if none yet).
  t_lower: jax.Array  # [B] best dual bound at radius R (-inf if none yet).


def init(shared: Shared, problem: Problem, s: Settings) -> State:
  """Starts every instance at the row-space point x_par, t = its max logit."""
  n, d = shared.a_rot.shape

  def one(subset, mask, y, threshold):
    inst = _instance(shared, subset, mask, y, threshold, s)
    f = _factors(shared, inst.a_s, mask, n - jnp.sum(mask),
                 jnp.asarray(s.rho, inst.a_s.dtype), s)
    logits = shared.a_rot @ inst.x_par
    t = jnp.max(jnp.where(inst.in_s, -jnp.inf, logits))
    z = jnp.where(inst.in_s, inst.y_full, jnp.minimum(logits - t, 0.0))
    return inst, inst.x_par, t, z, f

  inst, x, t, z, factors = jax.vmap(one)(problem.subset, problem.mask,
                                         problem.y, problem.threshold)
  bsz, dtype = x.shape[0], x.dtype
  return State(
      inst=inst, x=x, t=t, z=z, u=jnp.zeros((bsz, n), dtype), factors=factors,
      iteration=jnp.zeros((), jnp.int32),
      status=jnp.zeros(bsz, jnp.int32), started_at=jnp.zeros(bsz, jnp.int32),
      decided_at=jnp.zeros(bsz, jnp.int32),
      x_cert=jnp.zeros((bsz, d), dtype), mu_cert=jnp.zeros((bsz, n), dtype),
      t_upper=jnp.full(bsz, jnp.inf, dtype),
      t_lower=jnp.full(bsz, -jnp.inf, dtype))


def _admm_step(shared: Shared, inst: Instance, f: Factors, x, t, z, u,
               s: Settings):
  """One OSQP iteration for one instance (Alg. 1, lines 3-6)."""
  g = s.sigma + f.rho * shared.lam
  rho_vec = jnp.where(inst.in_s, s.rho_eq_ratio * f.rho, f.rho)
  w = rho_vec * z - u
  # Line 3: solve (sigma I + K^T diag(rho) K) [x~; t~] = sigma v - q + K^T w,
  # with q = (0, 1) and K^T w = (A'^T w, -sum_R w).
  rhs_x = s.sigma * x + shared.a_rot.T @ w
  rhs_t = s.sigma * t - 1.0 - jnp.sum(jnp.where(inst.in_s, 0.0, w))
  u1 = _apply_h_inv(g, inst.a_s / g[None, :], f.c_inv, rhs_x)
  t_new = (rhs_t + f.b @ u1) / f.kappa
  x_new = u1 + f.h * t_new
  z_tilde = shared.a_rot @ x_new - jnp.where(inst.in_s, 0.0, t_new)
  # Line 4: over-relaxation.
  x = s.alpha * x_new + (1 - s.alpha) * x
  t = s.alpha * t_new + (1 - s.alpha) * t
  z_hat = s.alpha * z_tilde + (1 - s.alpha) * z
  # Line 5: projection onto C = {z_S = y_S, z_R <= 0}.
  z_new = jnp.where(inst.in_s, inst.y_full,
                    jnp.minimum(z_hat + u / rho_vec, 0.0))
  # Line 6: dual update.
  u = u + rho_vec * (z_hat - z_new)
  return x, t, z_new, u


def _candidates(shared: Shared, inst: Instance, x, u):
  """Certificate candidates for one instance.

  Primal: x projected onto {A_S x = y}; t_up = its largest other logit.
  Dual: mu = max(u, 0) on R scaled to sum 1; for every x with A_S x = y and
  |x - x_par| <= R, max_R a_j.x >= mu^T A_R x >= v.x_par - R |P_perp v| with
  v = A_R^T mu (P_perp: projection onto the null space of A_S).
  """
  x_proj = x - _rowspace_part(inst.a_s, inst.gram_inv, inst.a_s @ x - inst.y)
  logits = shared.a_rot @ x_proj
  t_up = jnp.max(jnp.where(inst.in_s, -jnp.inf, logits))
  mu = jnp.where(inst.in_s, 0.0, jnp.maximum(u, 0.0))
  total = jnp.sum(mu)
  mu = mu / jnp.where(total > 0, total, 1.0)
  v = shared.a_rot.T @ mu
  v_perp = v - _rowspace_part(inst.a_s, inst.gram_inv, inst.a_s @ v)
  t_low = jnp.where(total > 0,
                    v @ inst.x_par - inst.radius * jnp.linalg.norm(v_perp),
                    -jnp.inf)
  return x_proj, t_up, mu, t_low


def _adapt_rho(shared: Shared, inst: Instance, f: Factors, x, t, z, u,
               s: Settings) -> Factors:
  """OSQP's rule: rho *= sqrt(relative primal / relative dual residual)."""
  kx = shared.a_rot @ x - jnp.where(inst.in_s, 0.0, t)
  ktu_x = shared.a_rot.T @ u
  ktu_t = -jnp.sum(jnp.where(inst.in_s, 0.0, u))
  prim = jnp.max(jnp.abs(kx - z)) / jnp.maximum(
      jnp.maximum(jnp.max(jnp.abs(kx)), jnp.max(jnp.abs(z))), 1e-12)
  dual = jnp.maximum(jnp.max(jnp.abs(ktu_x)), jnp.abs(1.0 + ktu_t)) / (
      jnp.maximum(jnp.maximum(jnp.max(jnp.abs(ktu_x)), jnp.abs(ktu_t)), 1.0))
  ratio = jnp.sqrt(prim / jnp.maximum(dual, 1e-12))
  rho = jnp.clip(f.rho * ratio, 1e-6, 1e6)
  rho = jnp.where((ratio > 5.0) | (ratio < 0.2), rho, f.rho)
  n = shared.a_rot.shape[0]
  return _factors(shared, inst.a_s, inst.mask, n - jnp.sum(inst.mask), rho, s)


def _select(mask, new, old):
  """Per-instance where over a pytree with leading batch axis."""
  return jax.tree.map(
      lambda a, b: jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)),
                             a, b), new, old)


def update(shared: Shared, state: State, s: Settings) -> State:
  """One iteration for every running instance (decided ones stay frozen)."""
  step = functools.partial(_admm_step, shared, s=s)
  x, t, z, u = jax.vmap(step)(state.inst, state.factors, state.x, state.t,
                              state.z, state.u)
  running = state.status == RUNNING
  x, t, z, u = _select(running, (x, t, z, u),
                       (state.x, state.t, state.z, state.u))
  it = state.iteration + 1
  state = state._replace(x=x, t=t, z=z, u=u, iteration=it)
  state = jax.lax.cond(it % s.check_every == 0,
                       lambda st: _check_all(shared, st), lambda st: st, state)
  return jax.lax.cond(it % s.adapt_every == 0,
                      lambda st: _adapt_all(shared, st, s), lambda st: st,
                      state)


def _check_all(shared: Shared, state: State) -> State:
  x_proj, t_up, mu, t_low = jax.vmap(functools.partial(_candidates, shared))(
      state.inst, state.x, state.u)
  running = state.status == RUNNING
  feasible = running & (t_up < state.inst.threshold)
  infeasible = running & ~feasible & (t_low > state.inst.threshold)
  status = jnp.where(feasible, FEASIBLE,
                     jnp.where(infeasible, INFEASIBLE, state.status))
  better_up = running & (t_up < state.t_upper)
  better_low = running & (t_low > state.t_lower)
  return state._replace(
      status=status,
      decided_at=jnp.where(feasible | infeasible, state.iteration,
                           state.decided_at),
      x_cert=_select(better_up, x_proj, state.x_cert),
      t_upper=jnp.where(better_up, t_up, state.t_upper),
      mu_cert=_select(better_low, mu, state.mu_cert),
      t_lower=jnp.where(better_low, t_low, state.t_lower))


def _adapt_all(shared: Shared, state: State, s: Settings) -> State:
  adapt = functools.partial(_adapt_rho, shared, s=s)
  factors = jax.vmap(adapt)(state.inst, state.factors, state.x, state.t,
                            state.z, state.u)
  return state._replace(factors=_select(state.status == RUNNING, factors,
                                        state.factors))


def run_until(shared: Shared, state: State, s: Settings, max_steps,
              stop_below=0) -> State:
  """Iterates until at most `stop_below` instances run or `max_steps` pass.

  Instances reaching `s.max_iters` iterations since their start become
  MAX_ITER (undecided). Both bounds may be traced values (no recompile).
  """
  start = state.iteration

  def cond(st):
    return ((st.iteration - start < max_steps) &
            (jnp.sum(st.status == RUNNING) > stop_below))

  def body(st):
    st = update(shared, st, s)
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


def run(shared: Shared, problem: Problem, s: Settings,
        max_iters=None) -> State:
  """init, then `update` in a bounded while_loop until all are decided.

  `max_iters` may be a traced value (no recompile when it changes).
  """
  cap = s.max_iters if max_iters is None else max_iters
  state = run_until(shared, init(shared, problem, s), s, cap, 0)
  return state._replace(status=jnp.where(state.status == RUNNING, MAX_ITER,
                                         state.status))

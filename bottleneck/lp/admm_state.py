"""The batched ADMM's settings, problem and state (bottleneck.lp.admm runs
it; bottleneck.lp.admm_step is one instance's iteration).

A State holds, per slot of the batch, the instance's constants, the
iterates (x, t, the equality rows' duals, the working set's rows and their
iterates), its factorisation, its status and the best candidates the
in-loop checks recorded; `init` starts every instance at the row-space
point.
"""

from __future__ import annotations

import dataclasses
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
  iters: jax.Array  # [B] int32 iterations the instance has run (frozen
  # once it is decided; 0 after a refill).
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
    f = admm_step.factors(shared, inst.a_s, mask,
                          n_rest=n - jnp.sum(mask),
                          rho=jnp.asarray(s.rho, inst.a_s.dtype), s=s)
    logits = shared.a_rot @ inst.x_par
    t = jnp.max(admm_step.other_logits(logits, inst))
    rows = admm_step.select_rows(shared, inst, logits, k)
    wz = logits[rows.idx]  # zeta = x_par: z_j = a_j.x_par - t <= 0 for all.
    work = admm_step.Work(z=wz - t, u=jnp.zeros(k, wz.dtype),
                          zeta=inst.x_par, tau=t, wz=wz,
                          sz=inst.a_s @ inst.x_par)
    return inst, inst.x_par, t, rows, work, f

  inst, x, t, rows, work, factors = jax.vmap(one)(
      problem.subset, problem.mask, problem.y, problem.threshold)
  bsz, dtype = x.shape[0], x.dtype
  return State(
      inst=inst, x=x, t=t, u_s=jnp.zeros(inst.y.shape, dtype), rows=rows,
      work=work, factors=factors, iteration=jnp.zeros((), jnp.int32),
      status=jnp.zeros(bsz, jnp.int32), iters=jnp.zeros(bsz, jnp.int32),
      x_cert=jnp.zeros((bsz, d), dtype), mu_cert=jnp.zeros((bsz, k), dtype),
      mu_idx=rows.idx, t_upper=jnp.full(bsz, jnp.inf, dtype),
      t_lower=jnp.full(bsz, -jnp.inf, dtype))

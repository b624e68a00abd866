"""lp.finish's interior point on a JAX device, in float64.

The same Mehrotra predictor-corrector as `finish._ipm` (Nocedal & Wright,
Alg. 14.3, inequality form min t over w = (z, t) s.t. F w <= h, |z|_inf <=
B), as one jitted, bounded `lax.while_loop`. Beside an accelerator the
exact finish is what holds a trained head's figure: on a GPU machine
Gemma 3's finishes took most of its stream on the host, almost all of it
the (d - m + 1)^2 normal equations F^T D F of each iteration. Nothing it returns is trusted (the caller
certifies x_W and the duals in float64 on the host), so where it runs
changes no verdict's proof.

Shapes stay fixed: F's rows are padded to a multiple of `ROW_BUCKET` and
its z columns to one of `COLUMN_BUCKET` less one (one compile per bucket
pair, not per row count and m). Padded rows carry F = 0, h = 1, mu = 0,
s = 1; padded z coordinates a zero column, box multipliers 0, box slacks
1 and a unit diagonal in the normal equations; both get a zero
complementarity target. So they never move and enter no sum: the
iterates are those of the unpadded problem (to rounding).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck.lp import mehrotra

ROW_BUCKET = 512  # Rows of F are padded up to a multiple of this,
COLUMN_BUCKET = 128  # its columns (z and t) likewise.


class State(NamedTuple):
  """The loop's iterate (K rows and n columns after padding)."""
  w: jax.Array  # [n] (z, t).
  sl: jax.Array  # [K] row slacks h - F w.
  mu: jax.Array  # [K] row multipliers (0 on padded rows).
  su: jax.Array  # [n - 1] slacks of z <= B.
  sb: jax.Array  # [n - 1] slacks of -z <= B.
  pu: jax.Array  # [n - 1] their multipliers.
  pl: jax.Array  # [n - 1]
  duals: jax.Array  # [L, K] mu at the first iterate within each gap level.
  have: jax.Array  # [L] whether that level was reached.
  pinned: jax.Array  # Iterations with t still on the box (box_exit).
  t_before: jax.Array  # t at the previous iteration.
  it: jax.Array  # Iterations run (the loop stops at max_iters).
  done: jax.Array  # A stopping test held (or the factorization failed).
  converged: jax.Array  # The relative gap reached gap_tol.


def init(f, h, mask, zmask, box, *, levels: int) -> State:
  """z = 0, t above every row (s > 0), mu uniform over the real rows; the
  padded z coordinates' box multipliers 0, their slacks 1."""
  k, n = f.shape
  w = jnp.zeros(n).at[-1].set(jnp.max(jnp.where(mask, -h, -jnp.inf)) + 1.0)
  return State(w=w, sl=h - f @ w, mu=jnp.where(mask, 1.0 / jnp.sum(mask), 0.0),
               su=jnp.where(zmask, box, 1.0), sb=jnp.where(zmask, box, 1.0),
               pu=jnp.where(zmask, 1e-3, 0.0), pl=jnp.where(zmask, 1e-3, 0.0),
               duals=jnp.zeros((levels, k)), have=jnp.zeros(levels, bool),
               pinned=jnp.array(0), t_before=jnp.array(jnp.inf),
               it=jnp.array(0), done=jnp.array(False),
               converged=jnp.array(False))


def _step(pairs):
  """The largest alpha <= 1 keeping every v + alpha dv >= 0."""
  alpha = jnp.array(1.0)
  for v, dv in pairs:
    alpha = jnp.minimum(alpha, jnp.min(jnp.where(dv < 0, -v / jnp.where(
        dv < 0, dv, -1.0), jnp.inf)))
  return alpha


def update(st: State, f, h, mask, zmask, box, *, enough, box_exit, levels,
           gap_tol) -> State:
  """One iteration of finish._ipm's loop: the stopping tests, then (unless
  one stops) a predictor-corrector step."""
  k, n = f.shape
  nz = n - 1
  real, real_z = jnp.sum(mask), jnp.sum(zmask)
  w, sl, mu, su, sb, pu, pl = st.w, st.sl, st.mu, st.su, st.sb, st.pu, st.pl
  r_d = (f.T @ mu).at[-1].add(1.0).at[:nz].add(pu - pl)
  r_p = jnp.where(mask, f @ w + sl - h, 0.0)
  gap = sl @ mu + su @ pu + sb @ pl
  dual_value = -h @ mu - box * (pu.sum() + pl.sum())
  scale = jnp.maximum(1.0, jnp.abs(w[-1]))
  primal_ok = jnp.max(jnp.abs(r_p)) <= 1e-9 * scale
  feasible = primal_ok & (jnp.max(jnp.abs(r_d)) <= 1e-9)
  dist = jnp.abs(w[-1] - dual_value)
  reached = feasible & (dist <= levels * scale) & ~st.have
  duals = jnp.where(reached[:, None], mu[None, :], st.duals)
  have = st.have | reached
  converged = feasible & (dist <= gap_tol * scale)
  pinned = jnp.where(box_exit & (jnp.abs(w[-1] - st.t_before) <= 1e-6 * scale)
                     & (jnp.max(jnp.abs(w[:nz])) > 0.9 * box),
                     st.pinned + 1, 0)
  stop = converged | ((w[-1] < enough) & primal_ok) | (pinned >= 3)
  checked = st._replace(duals=duals, have=have, pinned=pinned,
                        t_before=w[-1], it=st.it + 1, converged=converged)

  def newton(_):
    d_rows, d_u, d_l = mu / sl, pu / su, pl / sb
    normal = f.T @ (d_rows[:, None] * f)
    normal = normal.at[jnp.arange(nz), jnp.arange(nz)].add(d_u + d_l)
    normal = normal + 1e-14 * jnp.trace(normal) / (real_z + 1) * jnp.eye(n)
    normal = normal.at[jnp.arange(nz), jnp.arange(nz)].add(
        jnp.where(zmask, 0.0, 1.0))  # Padded z: a unit diagonal, dz = 0.
    chol = jax.scipy.linalg.cho_factor(normal, lower=True)
    m_gap = gap / (real + 2 * real_z)

    def direction(rc_rows, rc_u, rc_l):
      rc_rows = jnp.where(mask, rc_rows, 0.0)  # Padded rows and z
      rc_u, rc_l = jnp.where(zmask, rc_u, 0.0), jnp.where(zmask, rc_l, 0.0)
      rhs = -r_d - f.T @ ((-rc_rows + mu * r_p) / sl)
      rhs = rhs.at[:nz].add(-((-rc_u) / su - (-rc_l) / sb))
      dw = jax.scipy.linalg.cho_solve(chol, rhs)
      dsl = -r_p - f @ dw
      dmu = (-rc_rows - mu * dsl) / sl
      dsu, dsb = -dw[:nz], dw[:nz]
      return (dw, dsl, dmu, dsu, (-rc_u - pu * dsu) / su, dsb,
              (-rc_l - pl * dsb) / sb)

    moved = checked._replace(**dict(zip(
        ("w", "sl", "su", "sb", "mu", "pu", "pl"),
        mehrotra.predictor_corrector(direction, _step,
                                   (w, sl, su, sb, mu, pu, pl), gap, m_gap))))
    ok = jnp.all(jnp.isfinite(chol[0]))  # Else finish._ipm's LinAlgError.
    return jax.tree.map(lambda a, b: jnp.where(ok, a, b), moved,
                        checked._replace(done=True))

  return jax.lax.cond(stop, lambda _: checked._replace(done=True), newton,
                      None)


@functools.partial(jax.jit, static_argnames=("max_iters", "levels",
                                             "gap_tol"))
def _run(f, h, mask, zmask, box, enough, box_exit, *, max_iters: int,
         levels: tuple, gap_tol: float):
  st = init(f, h, mask, zmask, box, levels=len(levels))
  levels_arr = jnp.asarray(levels)
  st = jax.lax.while_loop(
      lambda s: ~s.done & (s.it < max_iters),
      lambda s: update(s, f, h, mask, zmask, box, enough=enough,
                       box_exit=box_exit, levels=levels_arr,
                       gap_tol=gap_tol), st)
  return st.w, st.mu, st.duals, st.have, st.converged


def run(f, h, box: float, settings, *, enough: float = -np.inf,
        box_exit: bool = False):
  """finish._ipm's (w, duals (tightest first, the last iterate's mu
  first), on_box, converged), computed on JAX's default device."""
  f = np.asarray(f, np.float64)
  k, n = f.shape
  rows = -(-k // ROW_BUCKET) * ROW_BUCKET
  cols = -(-n // COLUMN_BUCKET) * COLUMN_BUCKET
  f_pad = np.zeros((rows, cols))
  f_pad[:k, :n - 1], f_pad[:k, -1] = f[:, :-1], f[:, -1]  # (z, 0.., t).
  h_pad = np.ones(rows)
  h_pad[:k] = h
  levels = tuple(float(g) for g in settings.dual_gaps)
  with jax.enable_x64(True):
    args = jax.device_put((f_pad, h_pad, np.arange(rows) < k,
                           np.arange(cols - 1) < n - 1, np.float64(box),
                           np.float64(enough), np.bool_(box_exit)))
    w_pad, mu, duals, have, converged = jax.device_get(_run(
        *args, max_iters=int(settings.max_iters), levels=levels,
        gap_tol=float(settings.gap_tol)))
  w = np.append(w_pad[:n - 1], w_pad[-1])
  order = np.argsort(levels)  # finish._ipm: sorted by level, 0.0 (mu) first.
  out = [mu[:k]] + [duals[i, :k] for i in order if have[i]]
  on_box = bool(np.max(np.abs(w[:-1]), initial=0.0) > 0.5 * box)
  return w, out, on_box, bool(converged)

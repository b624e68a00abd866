"""One ADMM iteration of the top-m LP for one instance (vmapped by
`bottleneck.lp.admm`, whose docstring states the method: OSQP's Alg. 1 on
v = (x, t) with the linear system solved through A's rotated Gram, a
Woodbury term for S and a Schur border for t; a working set W of rows
iterated explicitly and a shadow (zeta, tau) for the others).

Pure functions of one instance's arrays: its constants (`instance`), the
rho-dependent factors (`factors`, `adapted_factors`), the working set
(`select_rows`), the iteration itself (`step`), the projection onto
A_S x = y (`project`) and the in-loop dual bound (`dual_bound`).
`shared` is lp.rotation.Shared (a_rot, lam, colsum); `s` is admm.Settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp

from bottleneck import linalg

if TYPE_CHECKING:  # Types only: admm_state builds on this module.
  from bottleneck.lp.admm_state import Settings
  from bottleneck.lp.rotation import Shared


class Factors(NamedTuple):
  """Per-instance pieces of the linear system that depend on rho."""
  rho: jax.Array  # [] inequality penalty of this instance.
  c_inv: jax.Array  # [m_pad, m_pad] inverse Woodbury capacitance.
  h: jax.Array  # [d] H^{-1} b.
  b: jax.Array  # [d] coupling of t: rho * sum_{j in R} a'_j.
  kappa: jax.Array  # [] Schur complement of t.



def factors(shared: Shared, a_s, mask, *, n_rest, rho,
            s: Settings) -> Factors:
  """Woodbury capacitance and t-border for one instance at penalty rho."""
  g = s.sigma + rho * shared.lam  # diag of sigma I + rho A'^T A'.
  c = (s.rho_eq_ratio - 1.0) * rho  # Extra penalty on the S rows.
  a_s_g = a_s / g[None, :]
  cap = a_s_g @ a_s.T + jnp.diag(jnp.where(mask, 1.0 / c, 1.0))
  cap_l = linalg.cholesky(cap)
  c_inv = linalg.cho_solve(cap_l, jnp.eye(a_s.shape[0], dtype=a_s.dtype))
  c_inv = c_inv * (mask[:, None] & mask[None, :])  # Padding contributes 0.
  b = rho * (shared.colsum - jnp.sum(a_s * mask[:, None], axis=0))
  h = apply_h_inv(g, a_s_g, c_inv, b)
  kappa = s.sigma + rho * n_rest - b @ h
  return Factors(rho, c_inv, h, b, kappa)


def apply_h_inv(g, a_s_g, c_inv, f):
  """(diag(g) + c A_S^T A_S)^{-1} f by Woodbury."""
  return f / g - a_s_g.T @ (c_inv @ (a_s_g @ f))



class Instance(NamedTuple):
  """Per-instance constants (computed once by `init`, loop-invariant)."""
  subset: jax.Array  # [m_pad] int32 rows of S (padding: any index).
  a_s: jax.Array  # [m_pad, d] rows of S (zero rows on padding).
  mask: jax.Array  # [m_pad] bool
  y: jax.Array  # [m_pad] targets on S (0 on padding).
  gram_inv: jax.Array  # [m_pad, m_pad] (A_S A_S^T)^{-1} (identity padding).
  x_par: jax.Array  # [d] row-space solution A_S^T (A_S A_S^T)^{-1} y.
  radius: jax.Array  # [] R of the in-loop dual bound.
  threshold: jax.Array  # []


def rowspace_part(a_s, gram_inv, r):
  """A_S^T (A_S A_S^T)^{-1} r: the minimum-norm x with A_S x = r."""
  return a_s.T @ (gram_inv @ r)


def instance(shared: Shared, subset, mask, y, threshold,
             s: Settings) -> Instance:
  dtype = shared.a_rot.dtype
  a_s = shared.a_rot[subset] * mask[:, None]
  y = jnp.where(mask, y, 0.0).astype(dtype)
  gram = a_s @ a_s.T + jnp.diag(jnp.where(mask, 0.0, 1.0))
  gram_inv = linalg.cho_solve(linalg.cholesky(gram),
                              jnp.eye(a_s.shape[0], dtype=dtype))
  x_par = rowspace_part(a_s, gram_inv, y)
  radius = s.check_radius_factor * jnp.linalg.norm(x_par)
  return Instance(subset=subset, a_s=a_s, mask=mask, y=y, gram_inv=gram_inv,
                  x_par=x_par, radius=radius,
                  threshold=jnp.asarray(threshold, dtype))


def other_logits(logits_n, inst: Instance):
  """The logits with S's rows at -inf (scatter-min: padding entries of the
  subset, which may repeat a real row, leave it alone)."""
  return logits_n.at[inst.subset].min(jnp.where(inst.mask, -jnp.inf,
                                                jnp.inf))


class Rows(NamedTuple):
  """An instance's working set W (changed only by scans and refills)."""
  idx: jax.Array  # [K] int32 rows of R iterated explicitly.
  a: jax.Array  # [K, d] those rows of A'.


class Work(NamedTuple):
  """The iterates on W and the shadow of the other rows."""
  z: jax.Array  # [K] constraint iterate on W.
  u: jax.Array  # [K] dual iterate on W (multipliers mu >= 0).
  zeta: jax.Array  # [d] rows j outside S and W: z_j = a_j . zeta - tau,
  tau: jax.Array  # []  u_j = 0 (assumed inactive; refreshed by scans).
  wz: jax.Array  # [K] A_W zeta.
  sz: jax.Array  # [m_pad] A_S zeta.


def select_rows(shared: Shared, inst: Instance, scores_n, k: int,
                 old_rows: Rows | None = None, old: Work | None = None):
  """W = the k rows of R with the largest `scores_n`; with the old W, its
  rows keep their z and u, new rows start inactive at the shadow."""
  idx = jax.lax.top_k(other_logits(scores_n, inst), k)[1].astype(jnp.int32)
  rows = Rows(idx, shared.a_rot[idx])
  if old is None:
    return rows
  order = jnp.argsort(old_rows.idx)  # Each new row's place in the old W
  # (a search of the sorted old rows: no [N] array per instance; the scan's
  # temporaries at 262144 x 640, B = 32, went from 135 to 102 MB).
  found = jnp.minimum(jnp.searchsorted(old_rows.idx[order], idx), k - 1)
  kept = old_rows.idx[order][found] == idx
  pos = order[found]
  wz = rows.a @ old.zeta
  z = jnp.where(kept, old.z[pos], jnp.minimum(wz - old.tau, 0.0))
  u = jnp.where(kept, old.u[pos], 0.0)
  return rows, old._replace(z=z, u=u, wz=wz)



def step(shared: Shared, inst: Instance, f: Factors, rows: Rows, x, t, u_s,
         w: Work, s: Settings):
  """One OSQP iteration for one instance (Alg. 1, lines 3-6), on S, W and
  the shadow of the other (inactive) rows."""
  n = shared.a_rot.shape[0]
  g = s.sigma + f.rho * shared.lam
  rho, rho_eq = f.rho, s.rho_eq_ratio * f.rho
  mask = inst.mask.astype(x.dtype)
  n_inactive = n - jnp.sum(mask) - rows.idx.shape[0]
  # Line 3: solve (sigma I + K^T diag(rho) K) [x~; t~] = sigma v - q + K^T w
  # with w = rho z - u: S rows (z = y), W rows, and the inactive rows
  # (u = 0, z = A_I zeta - tau) through the shared A'^T A' = diag(lam).
  w_s = mask * (rho_eq * inst.y - u_s)
  w_w = rho * w.z - w.u
  rhs_x = (s.sigma * x + rho * (shared.lam * w.zeta - w.tau * shared.colsum)
           + inst.a_s.T @ (w_s - rho * mask * (w.sz - w.tau))
           + rows.a.T @ (w_w - rho * (w.wz - w.tau)))
  inactive_sum = rho * (shared.colsum @ w.zeta - mask @ w.sz -
                        jnp.sum(w.wz) - w.tau * n_inactive)
  rhs_t = s.sigma * t - 1.0 - jnp.sum(w_w) - inactive_sum
  u1 = apply_h_inv(g, inst.a_s / g[None, :], f.c_inv, rhs_x)
  t_new = (rhs_t + f.b @ u1) / f.kappa
  x_new = u1 + f.h * t_new
  ax_w = rows.a @ x_new
  ax_s = inst.a_s @ x_new
  # Line 4: over-relaxation (the shadow relaxes like the rows it stands
  # for: z_hat_I = A_I zeta_new - tau_new).
  relax = lambda new, old: s.alpha * new + (1 - s.alpha) * old
  z_hat_w = relax(ax_w - t_new, w.z)
  z_hat_s = relax(ax_s, inst.y)
  # Line 5: projection onto C = {z_S = y_S, z_R <= 0}; line 6: duals.
  z_w = jnp.minimum(z_hat_w + w.u / rho, 0.0)
  u_w = w.u + rho * (z_hat_w - z_w)
  u_s = u_s + rho_eq * mask * (z_hat_s - inst.y)
  w = w._replace(z=z_w, u=u_w, zeta=relax(x_new, w.zeta),
                 tau=relax(t_new, w.tau), wz=relax(ax_w, w.wz),
                 sz=relax(ax_s, w.sz))
  return relax(x_new, x), relax(t_new, t), u_s, w


def project(inst: Instance, x):
  """x moved onto {A_S x = y} (minimum-norm correction)."""
  return x - rowspace_part(inst.a_s, inst.gram_inv, inst.a_s @ x - inst.y)


def dual_bound(inst: Instance, rows: Rows, w: Work):
  """Dual candidate on W: mu = max(u, 0) scaled to sum 1; for every x with
  A_S x = y and |x - x_par| <= R, max_R a_j.x >= mu^T A_W x >= v.x_par -
  R |P_perp v| with v = A_W^T mu (mu is 0 off W: still a dual point of
  the full LP)."""
  mu = jnp.maximum(w.u, 0.0)
  total = jnp.sum(mu)
  mu = mu / jnp.where(total > 0, total, 1.0)
  v = rows.a.T @ mu
  v_perp = v - rowspace_part(inst.a_s, inst.gram_inv, inst.a_s @ v)
  t_low = jnp.where(total > 0,
                    v @ inst.x_par - inst.radius * jnp.linalg.norm(v_perp),
                    -jnp.inf)
  return mu, t_low


def adapted_factors(shared: Shared, inst: Instance, f: Factors, rows: Rows,
                    x, t, u_s, w: Work, s: Settings) -> Factors:
  """OSQP's rule: rho *= sqrt(relative primal / relative dual residual),
  residuals on S and W (the inactive rows carry no dual)."""
  mask = inst.mask.astype(x.dtype)
  kx_w, kx_s = rows.a @ x - t, inst.a_s @ x
  ktu_x = rows.a.T @ w.u + inst.a_s.T @ (mask * u_s)
  ktu_t = -jnp.sum(w.u)
  scale = jnp.maximum(jnp.maximum(jnp.max(jnp.abs(kx_w)), jnp.max(
      jnp.abs(mask * kx_s))), jnp.maximum(jnp.max(jnp.abs(w.z)), jnp.max(
          jnp.abs(inst.y))))
  prim = jnp.maximum(jnp.max(jnp.abs(kx_w - w.z)), jnp.max(
      jnp.abs(mask * (kx_s - inst.y)))) / jnp.maximum(scale, 1e-12)
  dual = jnp.maximum(jnp.max(jnp.abs(ktu_x)), jnp.abs(1.0 + ktu_t)) / (
      jnp.maximum(jnp.maximum(jnp.max(jnp.abs(ktu_x)), jnp.abs(ktu_t)), 1.0))
  ratio = jnp.sqrt(prim / jnp.maximum(dual, 1e-12))
  rho = jnp.clip(f.rho * ratio, 1e-6, 1e6)
  rho = jnp.where((ratio > 5.0) | (ratio < 0.2), rho, f.rho)
  n = shared.a_rot.shape[0]
  return factors(shared, inst.a_s, inst.mask,
                 n_rest=n - jnp.sum(inst.mask), rho=rho, s=s)

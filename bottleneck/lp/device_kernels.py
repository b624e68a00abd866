"""The host checks' largest products as jitted programs over a float32 A
on the LP's device, for lp.device_checks.DeviceA, which pads their shapes,
moves their inputs and bounds or checks what comes back on the host (its
module docstring says how). Each replaces a pass of lp.certificates,
lp.enclosure or lp.polish.
"""

import functools

import jax
import jax.numpy as jnp

from bottleneck import sharding
from bottleneck.lp import enclosure


# The checks' programs compile without autotuning (sharding.UNTUNED; XLA's
# GPU autotuner picks GEMM algorithms by compiling and timing candidates
# on the host's cores and the device). Autotuned, a cold H100 spent more
# compiling `scores` than the products cost in a whole run. Nothing depends on the algorithm here: the
# rounding bounds hold for any order of summation (the float32 dot is
# pinned below) and the enclosure measures its factor's error.
_device_jit = functools.partial(jax.jit, compiler_options=sharding.UNTUNED)


@_device_jit
def scores(a_NxD, x_BxD):
  """fl32(x A^T): [B, N], the dot pinned to float32 (no TF32 or bf16
  passes, which XLA's default precision allows on a GPU)."""
  return jax.lax.dot_general(
      x_BxD, a_NxD, (((1,), (1,)), ((), ())),
      precision=jax.lax.DotAlgorithmPreset.F32_F32_F32,
      preferred_element_type=jnp.float32)


@_device_jit
def logits(a_NxD, x_D):
  """A x in float64 as one fused pass over the float32 A (each product and
  the sum in float64, in whatever order: gamma_d as on the host)."""
  return jnp.sum(a_NxD.astype(jnp.float64) * x_D[None, :], axis=1)


@_device_jit
def rmatvec(a_NxD, rows_K, weights_K):
  """A_K^T w in float64 (padded rows carry weight 0)."""
  return a_NxD[rows_K].astype(jnp.float64).T @ weights_K


@_device_jit
def enclose(a_NxD, rows_P, sign_P, last_P, z_P, b_n, probe_n):
  """enclosure.enclose's and shifted_radius's float64 work for the global
  dual certificate (M's transpose built from A's rows: rows_P with
  sign_P in {1, -1, 0} and last column last_P)."""
  m_t = jnp.concatenate([a_NxD[rows_P].astype(jnp.float64) *
                         sign_P[:, None], last_P[:, None]], axis=1)
  gram = m_t.T @ m_t
  gram = jnp.tril(gram) + jnp.tril(gram, -1).T  # Its lower triangle, exact.
  lower = jnp.tril(jax.lax.linalg.cholesky(gram, symmetrize_input=False))
  solve = lambda rhs: jax.scipy.linalg.cho_solve((lower, True), rhs)
  z = z_P
  for _ in range(enclosure.REFINE_STEPS):  # As enclosure.enclose.
    z = z + m_t @ solve(b_n - m_t.T @ z)
  r = b_n - m_t.T @ z
  abs_mz = jnp.abs(m_t).T @ jnp.abs(z)
  v = probe_n
  for _ in range(enclosure.INVERSE_ITERATIONS):  # As shifted_radius.
    v = solve(v / jnp.linalg.norm(v))
  estimate = 1.0 / jnp.linalg.norm(v)
  column_sq = jnp.einsum("ij,ij->i", m_t, m_t)
  eye = jnp.eye(gram.shape[0], dtype=bool)
  outs = []
  for fraction in enclosure.SHIFT_FRACTIONS:
    shifted = jnp.where(eye, gram - fraction * estimate, gram)
    r_f = jnp.tril(jax.lax.linalg.cholesky(shifted, symmetrize_input=False))
    e = r_f @ r_f.T - shifted  # What the factor misses, measured.
    outs.append((jnp.sum(r_f * r_f), jnp.sum(e * e),
                 jnp.all(jnp.isfinite(r_f)), jnp.max(jnp.diagonal(shifted))))
  return (z, r, abs_mz, estimate, column_sq, jnp.all(jnp.isfinite(lower)),
          outs)


@_device_jit
def project(a_NxD, subset_M, m, support_K, k, mu0_K, x_par_D, rounds):
  """polish.project's active-set loop in float64 (module `project`)."""
  d = a_NxD.shape[1]
  a_s = a_NxD[subset_M].astype(jnp.float64) * (
      jnp.arange(subset_M.size) < m)[:, None]
  q = jnp.linalg.qr(a_s.T, mode="complete")[0]  # Zero columns: tau = 0.
  real = jnp.arange(support_K.size) < k
  rows = a_NxD[support_K].astype(jnp.float64) * real[:, None]
  null = jnp.arange(d) >= m  # Q's last d - m columns: null(A_S).
  b = jnp.concatenate([((rows @ q) * null[None, :]).T, real[None, :].astype(
      jnp.float64)])  # [Z^T A_K^T; 1^T] with zero rows for range(A_S^T).
  unused = jnp.diag(jnp.append(~null, False).astype(jnp.float64))
  target = jnp.zeros(d + 1).at[d].set(1.0)
  par = rows @ x_par_D
  need = d - m + 1  # A dual vertex's active rows.

  def body(st):
    keep, it, _, mu_before, _, value = st
    bk = b * keep[None, :]
    lower = jnp.tril(jax.lax.linalg.cholesky(bk @ bk.T + unused,
                                             symmetrize_input=False))
    factored = jnp.all(jnp.isfinite(lower))
    r = target - bk @ mu0_K
    mu = mu0_K + bk.T @ jax.scipy.linalg.cho_solve((lower, True), r)
    mu = jnp.where(factored, mu, mu_before)  # The kept rows no longer span
    # null(A_S): the last round's positive part, collapsed.
    value = jnp.where(it == 0, jnp.sum(jnp.where(keep, mu, 0.0) * par), value)
    nonneg = jnp.all(jnp.where(keep, mu, 0.0) >= 0)
    stop = nonneg | (jnp.sum(keep) <= need) | ~factored
    keep = jnp.where(stop, keep, keep & (mu > 0))
    return keep, it + 1, stop, mu, factored, value

  keep, it, _, mu, factored, value = jax.lax.while_loop(
      lambda st: ~st[2] & (st[1] < rounds), body,
      (real, jnp.int32(0), jnp.bool_(False), mu0_K, jnp.bool_(True),
       jnp.float64(jnp.nan)))
  collapsed = ~factored | ~jnp.all(jnp.where(keep, mu, 0.0) >= 0)
  return (jnp.where(keep, jnp.maximum(mu, 0.0), 0.0), (it > 1) | factored,
          collapsed, value)

"""Rigorous float64 enclosures for the LP certificates (nothing here
decides a verdict; `bottleneck.lp.certificates` does).

`enclose`: an exact solution z* of an underdetermined M z = b next to a
float z~, with a per-entry radius |z* - z~| <= r that holds in exact
arithmetic: the global dual certificate (M = [[A_S^T, -A_K^T], [0, 1^T]])
and the ray (M = A_S) both rest on it. `gamma` and `upper` bound the
rounding of float sums and products (Higham, Accuracy and Stability of
Numerical Algorithms, Thm 3.1 and 10.3).
"""

from __future__ import annotations

import numpy as np

U = np.finfo(np.float64).eps / 2  # Unit roundoff of float64.
REFINE_STEPS = 3  # Minimum-norm refinements of z~ before the bound.
INVERSE_ITERATIONS = 4  # Of lambda_min(G~)'s estimate, from `probe`.
SHIFT_FRACTIONS = (0.5, 0.25)  # Shifts c tried, as fractions of it.


def probe(n: int) -> np.ndarray:
  """The inverse iteration's fixed starting vector (deterministic)."""
  return np.random.default_rng(0).standard_normal(n)


def residual_bound(r, b, abs_m_abs_z, p: int):
  """|b - M z*|'s computed r plus the rounding of computing it, per entry
  (gamma_{p+1} (|b| + |M| |z|), itself bounded by `upper`)."""
  return np.abs(r) + upper(gamma(p + 1) * (np.abs(b) + abs_m_abs_z), p)


def radius_from_shift(c: float, rounding: float, r_bound, column_sq,
                      n: int):
  """(|z* - z~| bound per entry, alpha) from lambda_min(M M^T) >= lam =
  (c - rounding)(1 - 4u) > 0 (`shifted_radius`), or None where lam is
  not positive: |w*|_2 <= |r_bound|_2 / lam, |z* - z~|_i <= |M_{:,i}|
  |w*|_2."""
  lam = (c - rounding) * (1.0 - 4.0 * U)
  if not (np.isfinite(lam) and lam > 0.0):
    return None
  w_norm = upper(upper(float(np.linalg.norm(r_bound)), n) / lam, 1)
  columns = upper(np.sqrt(upper(column_sq, n)), 1)
  return upper(columns * w_norm, 1), rounding / c


def gamma(n: int, u: float = U) -> float:
  """gamma_n = n u / (1 - n u): the relative error bound of n roundings
  (u: the unit roundoff, float64's by default)."""
  return n * u / (1 - n * u)


def upper(x, n: int):
  """A rigorous upper bound of a float computation over n nonnegative terms
  (each term's and the sum's rounding, Higham Thm 3.1, with slack)."""
  return x * (1.0 + 2.0 * gamma(2 * n + 4))


def enclose(m_mat, z, b):
  """An exact solution of M z = b next to a float z~.

  z* = z~ + M^T w*, (M M^T) w* = b - M z~ exists whenever M M^T is
  nonsingular, and |z* - z~|_i <= |M_{:,i}| |w*|. Two rigorous bounds of
  |w*|, every float product bounded by gamma_n |.| |.|:
  - `shifted_radius` (first): |w*|_2 <= |b - M z~|_2 / lam, for a proven
    lower bound lam of lambda_min(M M^T) from one Cholesky factorization
    of the shifted Gram (no inverse: at d = 768, ~1/3 the cost of the
    second);
  - Rump-style (where that fails, e.g. a nearly singular M M^T):
    |w*|_inf <= |R|_inf |b - M z~|_inf / (1 - alpha), for a float
    R ~ (M M^T)^{-1} and a rigorous alpha >= |I - R M M^T|_inf < 1. The
    bound's nonnegative terms enter only through their row sums, so they
    are matrix-vector products ((|R| |G|) 1 = |R| (|G| 1)); the one n x n
    product formed is R G (R from a Cholesky factor of G, with LU as the
    fallback).
  Returns (z~ refined, the enclosure radius per entry, alpha (the share
  of the margin the rounding took), residual) or the reason it failed (a
  string).
  """
  import scipy.linalg  # pylint: disable=g-import-not-at-top
  n, p = m_mat.shape
  abs_m = np.abs(m_mat)
  gram = m_mat @ m_mat.T
  try:
    factor = scipy.linalg.cho_factor(gram, check_finite=False)
    if not np.all(np.isfinite(factor[0])):
      factor = None
  except (np.linalg.LinAlgError, ValueError):
    factor = None
  if factor is not None:
    solve = lambda rhs: scipy.linalg.cho_solve(factor, rhs, check_finite=False)
  else:
    try:
      inverse = np.linalg.inv(gram)
    except np.linalg.LinAlgError:
      return "M M^T is numerically singular"
    if not np.all(np.isfinite(inverse)):
      return "M M^T is numerically singular"
    solve = lambda rhs: inverse @ rhs
  for _ in range(REFINE_STEPS):  # Refine z~ towards M z = b (minimum-norm
    z = z + m_mat.T @ solve(b - m_mat @ z)  # steps).
  r = b - m_mat @ z
  r_bound = residual_bound(r, b, abs_m @ np.abs(z), p)
  if factor is not None:
    shifted = shifted_radius(m_mat, gram, factor, r_bound)
    if shifted is not None:
      return (z, *shifted, r)
  r_inv = solve(np.eye(n))
  abs_r = np.abs(r_inv)
  # Row sums of |I - fl(R G~)| + gamma_n |R| |G~| + gamma_p |R| |M| |M|^T
  # (G~ = fl(M M^T); the last two bound the rounding of R G~ and of G~).
  rows = (np.abs(np.eye(n) - r_inv @ gram).sum(axis=1) +
          gamma(n) * (abs_r @ np.abs(gram).sum(axis=1)) +
          gamma(p) * (abs_r @ (abs_m @ abs_m.sum(axis=0))))
  alpha = float(np.max(upper(rows, 2 * p + 2 * n)))
  if not alpha < 1.0:
    return f"verification failed: |I - R M M^T| bound {alpha:.3g} >= 1"
  w_bound = upper(np.max(abs_r.sum(axis=1)) * np.max(r_bound), n) / (
      1.0 - alpha)
  z_err = upper(abs_m.sum(axis=0) * w_bound, n)
  return z, z_err, alpha, r


def shifted_radius(m_mat, gram, factor, r_bound):
  """(|z* - z~| bound per entry, alpha) from lambda_min(M M^T) >= lam > 0,
  or None where no such lam is proven.

  If the float Cholesky factorization of H = fl(G~ - c I) (G~ = fl(M M^T))
  runs to completion, its factor R~ has R~^T R~ = H + E with |E| <=
  gamma_{n+1} |R~^T| |R~| (Higham Thm 10.3, any order of the sums, blocked
  or not). OpenBLAS's triangular solves multiply by the reciprocal of a
  diagonal entry instead of dividing by it: one more rounding per entry,
  so gamma_{2(n+1)} is used. |E|_2 <= that times |R~|_F^2; H = G~ - c I +
  D with |D_ii| <= u |H_ii|, and |G~ - M M^T|_2
  <= gamma_p |M|_F^2. R~^T R~ is positive semidefinite, hence
  lambda_min(M M^T) >= c - |E|_2 - |D|_2 - |G~ - M M^T|_2 =: lam. The
  shift c is half (then a quarter) of an inverse-iteration estimate of
  lambda_min(G~) through G~'s own factor."""
  import scipy.linalg  # pylint: disable=g-import-not-at-top
  n, p = m_mat.shape
  v = probe(n)
  for _ in range(INVERSE_ITERATIONS):
    v = scipy.linalg.cho_solve(factor, v / np.linalg.norm(v),
                               check_finite=False)
  estimate = 1.0 / float(np.linalg.norm(v))  # ~lambda_min(G~) from above.
  column_sq = np.einsum("ij,ij->j", m_mat, m_mat)  # |M_{:,i}|^2.
  frobenius_m = upper(float(np.sum(column_sq)), n * p)
  for fraction in SHIFT_FRACTIONS:
    c = fraction * estimate
    shifted = gram.copy()  # G~ - c I: the same floats as with np.eye (x - 0
    shifted[np.diag_indices(n)] -= c  # = x), without two n^2 temporaries.
    try:
      r_f = scipy.linalg.cholesky(shifted, check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
      continue
    if not np.all(np.isfinite(r_f)):
      continue
    r_flat = r_f.ravel(order="K")  # A view of the factor, no copy.
    rounding = upper(gamma(2 * (n + 1)) * upper(float(r_flat @ r_flat),
                                                  n * n)
                      + U * float(np.max(np.diag(shifted)))
                      + gamma(p) * frobenius_m, 4)
    out = radius_from_shift(c, rounding, r_bound, column_sq, n)
    if out is not None:
      return out
  return None


def flush_bound(x, d: int) -> float:
  """An absolute bound of what flushing subnormals to zero can cost a
  float32 dot product of length d with x: 2^-126 per product and per
  addition, and |x_k| 2^-126 per flushed entry of a row (doubled)."""
  tiny = float(np.finfo(np.float32).tiny)
  return 2.0 * tiny * (2.0 * d + float(np.abs(x).sum()))

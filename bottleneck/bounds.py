"""Closed-form top-m selectability of a random OPM (seed 001, Section 4.1).

For an N x d output projection matrix A with i.i.d. N(0, 1) entries and a set
S of m tokens, the row-space embedding x = A_S^T (A_S A_S^T)^{-1} 1 gives the
chosen tokens logit 1. The probability that every other logit is below 1 is

  exact           Phi^{N-m}(1 / sqrt(m v))                     Corollary 1, (4)
  gumbel          exp(-exp(-(z - mu) / sigma)), z = 1/sqrt(m v) below eq. (10)
  rowspace_exact  E_Q[Phi(sqrt(Q / m))^{N-m}],  Q ~ chi2(d - m + 1)   (ours)

with v(d, m) of eq. (8). The first two are the paper's approximation (it
treats a_j^T A_S^T and (A_S A_S^T)^{-1} as independent); the Gumbel form is
the one that reproduces all 22 rows of Table 1. The third is exact: given
A_S, the other logits a_j . x are i.i.d. N(0, |x|^2) with
|x|^2 = 1^T (A_S A_S^T)^{-1} 1, and m / |x|^2 ~ chi2(d - m + 1) because
(A_S A_S^T) ~ Wishart_m(I, d) (Mardia et al. Thm 3.4.7: for fixed a,
a^T a / a^T W^{-1} a ~ chi2(d - m + 1)).

All functions broadcast over (N, d, m), are pure jax.numpy, and can be jitted
(validation runs only on concrete inputs). Probabilities are computed in log
space.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special

from bottleneck import checks

FORMS = ("exact", "gumbel", "rowspace_exact")
# Quadrature nodes for the chi-square expectation of `rowspace_exact`.
_QUAD_POINTS = 2048


def _float(x):
  """`x` as the default float dtype (float32, or float64 under jax x64)."""
  return jnp.asarray(x, jnp.result_type(float))


def log_ndtr(z):
  """log Phi(z), accurate to float precision for all z.

  jax.scipy.special.log_ndtr loses up to 4% relative accuracy in float32 near
  z = 5, exactly where the bounds live (log Phi(z) ~ -3e-7). For z > 0 we use
  log1p(-erfc(z / sqrt 2) / 2), whose error is relative to Phi(-z): measured
  relative error < 3e-5 in float32 for z in [-20, 9] (tests/bounds_test.py).
  """
  z = _float(z)
  upper = jnp.log1p(-0.5 * special.erfc(jnp.maximum(z, 0.0) / math.sqrt(2.0)))
  return jnp.where(z > 0, upper, special.log_ndtr(z))


def _concrete(x):
  """`x` as a numpy array, or None while tracing under jit/vmap."""
  try:
    return np.asarray(x)
  except jax.errors.TracerArrayConversionError:
    return None


def check_sizes(N, d, m) -> None:
  """Raises ValueError unless 1 <= m < d - 3 and m < N, elementwise.

  `N=None` skips the vocabulary check (v(d, m) does not depend on N).
  """
  arrays = {"N": _concrete(2**31 - 1 if N is None else N),
            "d": _concrete(d), "m": _concrete(m)}
  if any(a is None for a in arrays.values()):
    return
  for name, arr in arrays.items():
    if not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 1):
      raise ValueError(f"`{name}` must hold integers >= 1; got {arr!r}.")
  N_, d_, m_ = np.broadcast_arrays(*arrays.values())
  for n_i, d_i, m_i in zip(N_.ravel(), d_.ravel(), m_.ravel()):
    checks.bounds_sizes(int(n_i), int(d_i), int(m_i))


def variance(d, m):
  """v(d, m) = d(d-1) / ((d-m)(d-m-1)(d-m-3)), eq. (3)/(8)."""
  check_sizes(None, d, m)
  d, m = _float(d), _float(m)
  return d * (d - 1) / ((d - m) * (d - m - 1) * (d - m - 3))


def _z(d, m):
  """1 / sqrt(m v): the standardised gap of Corollary 1."""
  d, m = _float(d), _float(m)
  return jnp.sqrt((d - m) * (d - m - 1) * (d - m - 3) / (m * d * (d - 1)))


def log_prob_exact(N, d, m):
  """log Phi^{N-m}(1/sqrt(m v)), Corollary 1 eq. (4), in log space."""
  check_sizes(N, d, m)
  return (_float(N) - _float(m)) * log_ndtr(_z(d, m))


def log_prob_gumbel(N, d, m):
  """Gumbel form of Phi^{N-m}(z) given below eq. (10).

  mu = Phi^{-1}(1 - 1/(N-m)), sigma = Phi^{-1}(1 - 1/((N-m) e)) - mu; the
  upper quantiles are written as -Phi^{-1}(q) to avoid 1 - q cancellation.
  """
  check_sizes(N, d, m)
  n_other = _float(N) - _float(m)
  mu = -special.ndtri(1.0 / n_other)
  sigma = -special.ndtri(1.0 / (n_other * math.e)) - mu
  return -jnp.exp(-(_z(d, m) - mu) / sigma)


def _log_prob_rowspace(n_other, m, k):
  """log E[Phi(sqrt(Q/m))^{n_other}], Q ~ chi2(k): trapezoid in log Q.

  With Q = k e^tau the log-density of tau is (k/2)(tau - expm1(tau)) + const:
  centred, so float32 keeps it accurate even for k ~ 10^4. The grid spans
  +-12 standard deviations of tau (plus 100/k on the left, where the density
  decays like k tau / 2); trapezoid sums of smooth, decaying integrands
  converge geometrically, and the weights are normalised to sum to 1.
  """
  s = jnp.sqrt(2.0 / k)
  lo = -12.0 * s - 100.0 / k
  hi = 12.0 * s
  u = jnp.linspace(0.0, 1.0, _QUAD_POINTS).reshape((1,) * lo.ndim + (-1,))
  tau = lo[..., None] + (hi - lo)[..., None] * u  # [..., Q]
  log_density = (k / 2.0)[..., None] * (tau - jnp.expm1(tau))
  z = jnp.sqrt(k / m)[..., None] * jnp.exp(0.5 * tau)
  log_g = n_other[..., None] * log_ndtr(z)
  return (jax.nn.logsumexp(log_density + log_g, axis=-1) -
          jax.nn.logsumexp(log_density, axis=-1))


def log_prob_rowspace_exact(N, d, m):
  """Exact log-probability of the row-space event for Gaussian A (ours)."""
  check_sizes(N, d, m)
  N, d, m = (_float(a) for a in (N, d, m))
  N, d, m = jnp.broadcast_arrays(N, d, m)
  return _log_prob_rowspace(N - m, m, d - m + 1)


_LOG_PROB = {
    "exact": log_prob_exact,
    "gumbel": log_prob_gumbel,
    "rowspace_exact": log_prob_rowspace_exact,
}


def log_prob(N, d, m, form: str = "exact"):
  """log P(the row-space embedding makes a random m-subset the top m).

  Validates concrete sizes, then evaluates the form as one jitted function
  (one compile per form and shape, not one per primitive as in eager mode).
  """
  return _evaluate(N, d, m, form, False)


def prob(N, d, m, form: str = "exact"):
  """P(top-m selectable by the row-space embedding), in the chosen form."""
  return _evaluate(N, d, m, form, True)


def _evaluate(N, d, m, form, exponentiate):
  checks.one_of("form", form, FORMS)
  check_sizes(N, d, m)
  return _jitted(_float(N), _float(d), _float(m), form, exponentiate)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _jitted(N, d, m, form, exponentiate):
  log_p = _LOG_PROB[form](N, d, m)
  return jnp.exp(log_p) if exponentiate else log_p


_M_BLOCK = 128  # m values evaluated per step of the m* scan.


@functools.partial(jax.jit, static_argnames="form")
def _block_log_prob(N, d, m0, form):
  """log P for m = m0 .. m0 + _M_BLOCK - 1 per row; -inf outside the domain."""
  m = m0 + jnp.arange(_M_BLOCK)[None, :]
  valid = m < jnp.minimum(d - 3, N)[:, None]
  safe_m = jnp.where(valid, m, 1)
  log_p = _LOG_PROB[form](N[:, None], d[:, None], safe_m)
  return jnp.where(valid, log_p, -jnp.inf)


def m_star(N, d, threshold: float = 0.99, form: str = "exact") -> np.ndarray:
  """m* = largest m with P(m') >= threshold for every m' <= m; over (N, d).

  Scans m upward in blocks until every (N, d) has crossed the threshold, so
  no monotonicity is assumed. (P decreases in m wherever it matters, but not
  everywhere: next to the pole m -> d - 3 it rises again from astronomically
  small values, so "largest m with P >= threshold" would be ill-posed for
  tiny thresholds.) Returns 0 where m = 1 already falls below.
  """
  checks.one_of("form", form, FORMS)
  threshold = checks.open_interval("threshold", threshold, 0.0, 1.0)
  N_arr, d_arr = np.broadcast_arrays(np.asarray(N), np.asarray(d))
  for name, arr in (("N", N_arr), ("d", d_arr)):
    if not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 1):
      raise ValueError(f"`{name}` must hold integers >= 1; got {arr!r}.")
  if np.any(d_arr < 5) or np.any(N_arr < 2):
    raise ValueError("m* needs d >= 5 and N >= 2 so that m = 1 is in the "
                     f"domain 1 <= m < min(d - 3, N); got N={N_arr}, d={d_arr}.")
  shape = N_arr.shape
  # N as a float: vocabularies >= 2^31 overflow int32 (x64 off); the forms
  # only use N - m in floating point anyway. d stays an exact integer.
  n_flat = _float(N_arr.ravel().astype(np.float64))
  d_flat = jnp.asarray(d_arr.ravel(), jnp.int32)
  log_thr = np.log(threshold)
  result = np.full(n_flat.shape, -1)
  m0 = 1
  while np.any(result < 0):
    below = np.asarray(_block_log_prob(n_flat, d_flat, m0, form)) < log_thr
    crossed = (result < 0) & below.any(axis=1)
    result[crossed] = m0 + np.argmax(below[crossed], axis=1) - 1
    m0 += _M_BLOCK
  return result.reshape(shape)


def empirical_m_star(m_values, fractions, threshold: float = 0.99) -> int:
  """Largest m of a sweep whose measured fraction is still >= threshold.

  The Monte-Carlo / LP analogue of `m_star` (0 if no m qualifies).
  """
  ok = [m for m, f in zip(m_values, fractions) if f >= threshold]
  return int(max(ok)) if ok else 0


def curve(N: int, d: int, m_values, form: str = "exact") -> np.ndarray:
  """P(m) for the m in `m_values` (Figure 2 / Figure 5 curves)."""
  m_values = np.asarray(m_values)
  return np.asarray(prob(N, d, m_values, form))


def table(rows, threshold: float = 0.99, form: str = "gumbel") -> list[dict]:
  """m* for each (model, N, d) row in every form; `m` is the chosen form's."""
  checks.one_of("form", form, FORMS)
  N = np.array([r.N for r in rows])
  d = np.array([r.d for r in rows])
  per_form = {f: m_star(N, d, threshold, f) for f in FORMS}
  out = []
  for i, row in enumerate(rows):
    rec = {"model": row.label, "N": row.N, "d": row.d,
           "m": int(per_form[form][i]), "m_paper": row.m_paper}
    rec.update({f"m_{f}": int(per_form[f][i]) for f in FORMS})
    out.append(rec)
  return out


if __name__ == "__main__":
  from bottleneck.apps import bounds_main  # pylint: disable=g-import-not-at-top
  bounds_main.run()

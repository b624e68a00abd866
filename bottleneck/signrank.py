"""Minimal embedding dimension d* and an explicit construction (seed 001, §5).

Corollary 3: for N >= 3m + 1, 2m <= d* <= 2m + 2, where d* is the least width
of an OPM that can make *every* m-subset of N tokens the top m.

Construction (d = 2m + 1, matching the sign-rank bound of Proposition 5):
row i of A is the trigonometric moment curve at t_i = 2 pi i / N,

  a_i = (1, cos t_i, sin t_i, ..., cos m t_i, sin m t_i),

so a_i . c = p(t_i) for the trigonometric polynomial p with coefficients c.
For a subset S, merge cyclically consecutive chosen indices into r <= m arcs
(centre c_k, half-width w_k reaching half-way to the unchosen neighbours) and
take

  p(t) = (-1)^{r-1} prod_k (cos(t - c_k) - cos w_k),

which has degree r <= m and 2r roots and is positive exactly on the arcs; so
the logits A c are positive on S and negative elsewhere. In exact arithmetic
this works for any N and m; in floating point the logits of S are tiny
relative to |c|, and `certify` measures when float64 can no longer prove the
order (a rigorous rounding-error bound, not a tolerance).
"""

from __future__ import annotations

import itertools

import numpy as np

from bottleneck import checks, linalg

_U64 = np.finfo(np.float64).eps / 2  # Unit roundoff of float64.


def dimension_bounds(m: int, N: int) -> tuple[int, int]:
  """(2m, 2m + 2): Corollary 3's bounds on d*; requires N >= 3m + 1."""
  m = checks.positive_int("m", m)
  N = checks.positive_int("N", N)
  if N < 3 * m + 1:
    raise ValueError(f"`N` must be >= 3m + 1 = {3 * m + 1} for Corollary 3 "
                     f"(Proposition 5's dual sign rank argument); got N={N}.")
  return 2 * m, 2 * m + 2


def angles(N: int) -> np.ndarray:
  return 2.0 * np.pi * np.arange(N) / N


def moment_curve_matrix(N: int, m: int) -> np.ndarray:
  """The N x (2m+1) OPM: rows on the trigonometric moment curve."""
  N, m = checks.positive_int("N", N), checks.positive_int("m", m)
  t = angles(N)[:, None] * np.arange(1, m + 1)[None, :]
  out = np.empty((N, 2 * m + 1))
  out[:, 0] = 1.0
  out[:, 1::2] = np.cos(t)
  out[:, 2::2] = np.sin(t)
  return out


def _check_subset(subset, N: int, m: int) -> np.ndarray:
  subset = checks.subset_indices("subset", subset, N)
  if subset.size != m:
    raise ValueError(f"`subset` must have exactly m={m} tokens; got "
                     f"{subset.size}.")
  if m >= N:
    raise ValueError(f"`m` must be < N = {N}; got {m}.")
  return np.sort(subset)


def arcs(subset, N: int) -> list[tuple[float, float]]:
  """(centre, half-width) of each cyclic run of chosen indices.

  A run i..j covers [t_i - h, t_j + h] with h = pi / N: the roots sit half-way
  between a chosen angle and its unchosen neighbour.
  """
  chosen = np.zeros(N, bool)
  chosen[np.asarray(subset)] = True
  if chosen.all():
    raise ValueError("`subset` must leave at least one token unchosen.")
  start = int(np.argmin(chosen))  # An unchosen index: runs do not wrap here.
  order = (start + np.arange(N)) % N
  out, run = [], []
  for i in order:
    if chosen[i]:
      run.append(i)
    elif run:
      out.append(run)
      run = []
  if run:
    out.append(run)
  h = np.pi / N
  step = 2.0 * np.pi / N
  result = []
  for run in out:
    first = run[0] * step
    length = (len(run) - 1) * step
    result.append((first + length / 2.0, length / 2.0 + h))
  return result


def _trig_coefficients(arc_list, m: int) -> np.ndarray:
  """Real coefficients (1, cos, sin, ..., cos m, sin m) of the arc product.

  Multiplies the factors in the complex-exponential basis (exact convolution,
  no sampling or aliasing): cos(t - c) - cos w = e^{-ic}/2 e^{it} - cos w +
  e^{ic}/2 e^{-it}.
  """
  gamma = np.array([1.0 + 0j])  # Coefficients of e^{ikt}, k = -deg..deg.
  for centre, half in arc_list:
    factor = np.array([np.exp(1j * centre) / 2, -np.cos(half),
                       np.exp(-1j * centre) / 2])
    gamma = np.convolve(gamma, factor)
    gamma /= np.max(np.abs(gamma))  # Keep the scale near 1 as degree grows.
  gamma *= (-1.0) ** (len(arc_list) - 1)
  deg = (gamma.size - 1) // 2
  pos = gamma[deg:]  # k = 0..deg
  c = np.zeros(2 * m + 1)
  c[0] = pos[0].real
  c[1:2 * deg + 1:2] = 2.0 * pos[1:].real
  c[2:2 * deg + 2:2] = -2.0 * pos[1:].imag
  return c / np.max(np.abs(c))


def subset_embedding(subset, N: int, m: int) -> np.ndarray:
  """Embedding c in R^{2m+1} making `subset` the top m of `moment_curve_matrix`."""
  subset = _check_subset(subset, N, m)
  return _trig_coefficients(arcs(subset, N), m)


def _exact_sign_log(subset, N: int) -> tuple[np.ndarray, np.ndarray]:
  """Sign and log|p(t_i)| from the product form (relative error ~ m * 1e-16).

  cos(t - c) - cos w = -2 sin((t - c + w)/2) sin((t - c - w)/2) has no
  cancellation, so these are the construction's logits in exact arithmetic
  (up to a positive constant factor relative to A @ c) to full precision,
  even where they underflow float64.
  """
  t = angles(N)
  arc_list = arcs(subset, N)
  log_abs = np.zeros(N)
  sign = np.full(N, (-1.0) ** (len(arc_list) - 1))
  for centre, half in arc_list:
    f = -2.0 * np.sin((t - centre + half) / 2) * np.sin((t - centre - half) / 2)
    sign *= np.sign(f)
    log_abs += np.log(np.abs(f))
  return sign, log_abs


def exact_logits(subset, N: int) -> np.ndarray:
  """Exact-arithmetic logits p(t_i), scaled so max |p(t_i)| = 1."""
  sign, log_abs = _exact_sign_log(subset, N)
  return sign * np.exp(log_abs - log_abs.max())


def exact_log10_margin(subset, N: int) -> float:
  """log10 of the exact normalised margin; finite even below 1e-308.

  Chosen logits are positive and the others negative, so min_S y - max_rest y
  = min_S |y| + min_rest |y|.
  """
  subset = np.asarray(subset)
  sign, log_abs = _exact_sign_log(subset, N)
  chosen = np.zeros(N, bool)
  chosen[subset] = True
  if np.any(sign[chosen] <= 0) or np.any(sign[~chosen] >= 0):
    raise AssertionError("construction violated: wrong sign in exact logits")
  log_margin = np.logaddexp(log_abs[chosen].min(), log_abs[~chosen].min())
  return float((log_margin - log_abs.max()) / np.log(10.0))


def normalised_margin(logits, subset) -> float:
  """(min chosen logit - max other logit) / max |logit|."""
  logits = np.asarray(logits, np.float64)
  chosen = np.zeros(logits.shape[0], bool)
  chosen[np.asarray(subset)] = True
  gap = logits[chosen].min() - logits[~chosen].max()
  return float(gap / np.max(np.abs(logits)))


def certify(a_nxd, c, subset) -> dict:
  """Float64 certificate that `subset` is exactly the top m of A @ c.

  With u the unit roundoff and n = d, each computed logit obeys
  |fl(a_i . c) - a_i . c| <= gamma_n sum_k |a_ik c_k|, gamma_n = n u/(1 - n u)
  (Higham, Thm 3.1). The order is certified for the stored float64 A and c iff
  min over S of (fl(y) - bound) > max over the rest of (fl(y) + bound).
  """
  a = np.asarray(a_nxd, np.float64)
  c = np.asarray(c, np.float64)
  n = a.shape[1]
  gamma = n * _U64 / (1 - n * _U64)
  y = a @ c
  err = gamma * (np.abs(a) @ np.abs(c))
  chosen = np.zeros(a.shape[0], bool)
  chosen[np.asarray(subset)] = True
  lower_s = float(np.min(y[chosen] - err[chosen]))
  upper_rest = float(np.max(y[~chosen] + err[~chosen]))
  return {"certified": lower_s > upper_rest,
          "float_margin": float(y[chosen].min() - y[~chosen].max()),
          "normalised_margin": normalised_margin(y, subset),
          "error_bound": float(err.max()),
          "certified_gap": lower_s - upper_rest}


def all_subsets(N: int, m: int):
  return (np.array(s) for s in itertools.combinations(range(N), m))


def random_subsets(N: int, m: int, count: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  return (rng.choice(N, size=m, replace=False) for _ in range(count))


def sweep(N: int, m: int, subsets, check_float64: bool = True) -> dict:
  """Worst exact (log10) and float64 margins of the construction over subsets.

  `certified` counts subsets whose order float64 proves (`certify`); with
  `check_float64=False` only the exact margins are computed (no N x d matrix).
  """
  a = moment_curve_matrix(N, m) if check_float64 else None
  worst_log10, worst_float, n_cert, n = np.inf, np.inf, 0, 0
  for subset in subsets:
    worst_log10 = min(worst_log10, exact_log10_margin(subset, N))
    if check_float64:
      cert = certify(a, subset_embedding(subset, N, m), subset)
      worst_float = min(worst_float, cert["normalised_margin"])
      n_cert += cert["certified"]
    n += 1
  return {"N": N, "m": m, "d": 2 * m + 1, "subsets": n,
          "certified": n_cert if check_float64 else None,
          "worst_exact_log10_margin": worst_log10,
          "worst_float64_margin": worst_float if check_float64 else None}


def random_rowspace_margins(N: int, d: int, m: int, trials: int,
                            seed: int = 0) -> dict:
  """Baseline: random Gaussian N x d matrices with the row-space embedding.

  For each trial, a fresh A and a random m-subset S; x makes the logits of S
  equal to 1 (eq. 5). Reports the fraction of trials where S is the top m and
  the median normalised margin (1 - max other) / max |logit| among those.
  """
  N, d, m = checks.topm_sizes(N, d, m)
  if m >= d:
    raise ValueError(f"`m` must be < d = {d}; got {m}.")
  rng = np.random.default_rng(seed)
  margins = []
  for _ in range(checks.positive_int("trials", trials)):
    a = rng.standard_normal((N, d))
    subset = rng.choice(N, size=m, replace=False)
    y = a @ linalg.rowspace(a[subset], np.ones(m))[0]
    rest = np.delete(y, subset)
    if rest.max() < 1.0:
      margins.append((1.0 - rest.max()) / np.abs(y).max())
  return {"N": N, "d": d, "m": m, "trials": trials,
          "fraction": len(margins) / trials,
          "median_margin": float(np.median(margins)) if margins else None}

"""Exact certificates that an m-subset cannot be the top m (seed 001, Cor. 3).

A subset S of the rows of an N x d matrix A is the top m of some logits
A x iff min_{i in S} a_i . x > max_{j not in S} a_j . x for some x, i.e. iff
a hyperplane strictly separates {a_i : i in S} from the other rows. By
Farkas' lemma it is NOT selectable iff the two convex hulls meet:

  sum_{i in P} lam_i a_i = sum_{j in Q} mu_j a_j,  lam, mu >= 0,
  sum lam = sum mu = 1,  P inside S,  Q outside S.            (certificate)

Radon's theorem gives such a pair for any d + 2 rows of a width-d matrix:
a nonzero alpha with sum alpha_i a_i = 0 and sum alpha_i = 0 splits them
into P = {alpha > 0} and Q = {alpha < 0}. With d = 2m - 1 that is 2m + 1
rows, so the smaller side has at most m rows; padded to m rows from outside
P and Q (N >= 3m + 1 leaves enough) it is an m-subset that no x selects.
This is the mechanism behind Corollary 3's lower bound d* >= 2m; the
functions here find the pair in exact rational arithmetic on the stored
float64 matrix and check it exactly (`check`), so a certificate is a proof
for that matrix, not a tolerance.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import numpy as np

from bottleneck import checks


class NotSelectable(NamedTuple):
  """A certificate that `subset` is not the top m of A x for any x."""
  subset: tuple[int, ...]  # The m-subset S (sorted).
  p: tuple[int, ...]  # Rows of S carrying lam.
  lam: tuple[Fraction, ...]  # Convex weights on P.
  q: tuple[int, ...]  # Rows outside S carrying mu.
  mu: tuple[Fraction, ...]  # Convex weights on Q.


def _exact(a) -> list[list[Fraction]]:
  return [[Fraction(float(v)) for v in row] for row in np.asarray(a)]


def kernel_vector(rows: list[list[Fraction]]) -> list[Fraction]:
  """A nonzero exact solution of M alpha = 0 for a matrix M (rows of
  Fractions) with more columns than rank: reduced row echelon form, the
  first free column set to 1 and the others to 0."""
  mat = [list(r) for r in rows]
  n_cols = len(mat[0])
  pivots, r = [], 0
  for col in range(n_cols):
    pivot = next((i for i in range(r, len(mat)) if mat[i][col] != 0), None)
    if pivot is None:
      continue
    mat[r], mat[pivot] = mat[pivot], mat[r]
    inv = 1 / mat[r][col]
    mat[r] = [v * inv for v in mat[r]]
    for i in range(len(mat)):
      if i != r and mat[i][col] != 0:
        f = mat[i][col]
        mat[i] = [v - f * w for v, w in zip(mat[i], mat[r])]
    pivots.append(col)
    r += 1
    if r == len(mat):
      break
  free = next(c for c in range(n_cols) if c not in pivots)  # Exists: rank
  alpha = [Fraction(0)] * n_cols                            # < n_cols.
  alpha[free] = Fraction(1)
  for i, col in enumerate(pivots):
    alpha[col] = -mat[i][free]
  return alpha


def radon(a_nxd, m: int, rows=None) -> NotSelectable:
  """A certificate for an m-subset of A's rows (A of width d <= 2m - 1):
  the Radon partition of `rows` (default: the first d + 2), its smaller
  side padded to m rows with the lowest indices outside the partition."""
  a = np.asarray(a_nxd, np.float64)
  n, d = a.shape
  m = checks.positive_int("m", m)
  if d > 2 * m - 1:
    raise ValueError(f"`A` has width d = {d} > 2m - 1 = {2 * m - 1}: Radon's "
                     "d + 2 rows may split into sides larger than m.")
  rows = list(range(d + 2)) if rows is None else [int(i) for i in rows]
  if len(rows) != d + 2 or n < d + 2 + m:
    raise ValueError(f"need d + 2 = {d + 2} rows and N >= {d + 2 + m}; got "
                     f"{len(rows)} rows of N = {n}.")
  exact = _exact(a[rows])
  alpha = kernel_vector([[x[k] for x in exact] for k in range(d)]
                        + [[Fraction(1)] * len(rows)])
  pos = [(i, v) for i, v in zip(rows, alpha) if v > 0]
  neg = [(i, -v) for i, v in zip(rows, alpha) if v < 0]
  small, big = sorted((pos, neg), key=len)
  used = {i for i, _ in pos + neg}
  pad = [i for i in range(n) if i not in used][:m - len(small)]
  total_s, total_b = sum(v for _, v in small), sum(v for _, v in big)
  return NotSelectable(
      tuple(sorted([i for i, _ in small] + pad)),
      tuple(i for i, _ in small), tuple(v / total_s for _, v in small),
      tuple(i for i, _ in big), tuple(v / total_b for _, v in big))


def check(a_nxd, cert: NotSelectable) -> bool:
  """Exactly (in rationals, on the stored float64 A) whether `cert` proves
  that its subset is not selectable: P inside S, Q outside, weights >= 0
  summing to 1, and sum lam_i a_i = sum mu_j a_j in every coordinate."""
  a = np.asarray(a_nxd, np.float64)
  s = set(cert.subset)
  shapes_ok = (len(cert.p) == len(cert.lam) >= 1 and
               len(cert.q) == len(cert.mu) >= 1 and
               len(s) == len(cert.subset))
  if not shapes_ok or not (set(cert.p) <= s) or (set(cert.q) & s):
    return False
  weights = list(cert.lam) + list(cert.mu)
  if any(w < 0 for w in weights) or sum(cert.lam) != 1 or sum(cert.mu) != 1:
    return False
  left = [sum((w * Fraction(float(a[i, k])) for i, w in zip(cert.p, cert.lam)),
              Fraction(0)) for k in range(a.shape[1])]
  right = [sum((w * Fraction(float(a[j, k])) for j, w in zip(cert.q, cert.mu)),
               Fraction(0)) for k in range(a.shape[1])]
  return left == right


def as_record(cert: NotSelectable, certified: bool) -> dict:
  """The certificate as JSON-ready numbers (weights rounded to float64:
  `certified` says whether the exact check passed)."""
  return {"subset": list(cert.subset), "p": list(cert.p),
          "lam": [float(v) for v in cert.lam], "q": list(cert.q),
          "mu": [float(v) for v in cert.mu], "certified": certified}

"""A matrix's facts for the float64 LP checks, computed once per matrix:
row norms and column max |entries| (for rounding bounds), bit-identical row
groups, whether the rows lie on one side (rays), cached QR factors of A_S^T,
and float64 products over a float32 A by row blocks."""

from __future__ import annotations

import collections
import sys

import numpy as np

from bottleneck import linalg
from bottleneck.lp import polish

# `prime` scores this many points or fewer by one GEMV each: OpenBLAS's
# SGEMM with 2-3 columns costs more than as many GEMVs (one thread, 50257
# x 768).
GEMV_POINTS = 3


class MatrixFacts:
  """A with the per-row norms and per-column max |entries| that the
  rounding bounds need (computed once per matrix, not per certificate),
  and the QR of A_S^T of recently checked subsets (an instance is checked
  several times). A float32 A is held as a float64 copy when that takes at
  most `float64_bytes` (products are then plain BLAS), else as it is, with
  every product formed in float64 by row blocks (exact for float32
  entries; a 262144 x 640 head needs no 1.3 GB copy)."""

  def __init__(self, a, float64_bytes: int = 1 << 30,
               cache_bytes: int = 32 << 20):
    self.a = np.asarray(a)
    if self.a.dtype not in (np.float32, np.float64) or (
        self.a.dtype == np.float32 and self.a.size * 8 <= float64_bytes):
      self.a = self.a.astype(np.float64)
    # A float32 A as given (no copy: its float32 products rank rows, `scores`).
    self.source = np.asarray(a) if np.asarray(a).dtype == np.float32 else (
        self.a)
    self.row_norms = head_norms(self.a)
    self.col_absmax = np.maximum(self.a.max(axis=0), -self.a.min(axis=0)
                                 ).astype(np.float64)
    self._twins = None
    self._one_sided = None
    self._scores = collections.OrderedDict()  # x's bytes -> A x (`scores`).
    self._qr = collections.OrderedDict()
    self._qr_bytes, self.cache_bytes = 0, cache_bytes
    self._device = None

  @property
  def device(self):
    """lp.device_checks.DeviceA: the float32 passes (`scores`, `prime`),
    the global dual certificate's Gram and polish.project's loop on a GPU;
    None: the host, also while the device's calls compile (DeviceA.
    available). One whose warm-up failed is dropped here, with one line on
    stderr, and the checks stay on the host."""
    device = self._device
    if device is not None and not device.available("scores"):
      if device.error is not None:
        sys.stderr.write(f"device checks off, on the host instead: "
                         f"{device.error}\n")
        self._device = None
      return None
    return device

  @device.setter
  def device(self, value) -> None:
    self._device = value

  @property
  def one_sided(self) -> bool:
    """Whether >= 95% of the rows lie on one side of the mean row: the
    matrices where rays (t* = -inf) occur (SmolLM2-135M, Gemma 3's head;
    a Gaussian matrix has half its rows on each side). Only decides
    whether `verify` tries to prove t* = -inf for a FEASIBLE verdict."""
    if self._one_sided is None:
      mean = np.asarray(self.a.sum(axis=0, dtype=np.float64)) / len(self.a)
      self._one_sided = bool(np.mean(polish.matvec(self.a, mean) > 0) >= 0.95)
    return self._one_sided

  def qr(self, subset):
    """(q, r) of A_S^T (reduced), cached; from the same factorization as
    `householder` (identical to np.linalg.qr's: both are LAPACK geqrf)."""
    reflectors, tau = self.householder(subset)
    return self._cached(b"qr" + np.asarray(subset).tobytes(), lambda: (
        _q(reflectors, tau, tau.size), np.triu(reflectors[:tau.size])))

  def null_basis(self, subset):
    """Z [d, d - m]: orthonormal basis of null(A_S) (the last columns of
    the complete Q of `householder`'s factorization), cached like `qr`."""
    reflectors, tau = self.householder(subset)
    return self._cached(b"null" + np.asarray(subset).tobytes(), lambda: (
        np.ascontiguousarray(_q(reflectors, tau, reflectors.shape[0])[
            :, tau.size:])))

  def householder(self, subset):
    """A_S^T's QR in LAPACK's compact form (reflectors, tau), cached: the
    one factorization of A_S^T per subset (`qr`, `null_basis` and
    polish.null_coords all use it)."""
    import scipy.linalg  # pylint: disable=g-import-not-at-top
    return self._cached(b"raw" + np.asarray(subset).tobytes(),
                        lambda: scipy.linalg.qr(self.rows(subset).T,
                                                mode="raw")[0])

  def scores(self, x) -> np.ndarray:
    """A x in A's own precision, to rank rows (not a bound: the float64
    products are `polish.matvec`'s); a float32 A's GEMV reads half the
    bytes of its float64 copy. The last x's scores are
    kept: a check ranks the rows at one x for its vertex and again for its
    dual polish. Returns a copy the caller may modify."""
    x = np.asarray(x, self.source.dtype)
    key = x.tobytes()
    if key not in self._scores:
      self._keep_scores(key, self.source @ x if self.device is None else
                        self.device.scores(x[None])[0])
    self._scores.move_to_end(key)
    return self._scores[key].copy()

  def prime(self, xs) -> None:
    """The scores of several points in one GEMM (reads A once, where a
    GEMV per point reads it once each), kept for `scores` (at most
    `score_slots` of them: prime no more at once)."""
    xs = np.asarray(xs, self.source.dtype)
    if self.device is not None:  # One call: B x N float32 back.
      for x, row in zip(xs, self.device.scores(xs)):
        self._keep_scores(x.tobytes(), row)
      return
    if len(xs) <= GEMV_POINTS:
      for x in xs:
        self._keep_scores(x.tobytes(), self.source @ x)
      return
    for x, column in zip(xs, (self.source @ xs.T).T):
      self._keep_scores(x.tobytes(), np.ascontiguousarray(column))

  @property
  def score_slots(self) -> int:
    """How many points' scores the cache keeps: 8 MiB of them, at least 2
    (32 MiB kept 32 at 262144 rows and took Gemma 3's LP to 2.01 GB)."""
    return max(2, (8 << 20) // (self.source.shape[0] *
                                self.source.dtype.itemsize))

  def _keep_scores(self, key: bytes, value) -> None:
    """LRU of the last `score_slots` points' scores."""
    self._scores[key] = value
    while len(self._scores) > self.score_slots:
      self._scores.popitem(last=False)

  def _cached(self, key: bytes, compute):
    """LRU over the factors of recently checked subsets (an instance is
    checked several times), at most `cache_bytes` in all: a null basis is
    d^2 float64 (3 MB at d = 640), and an unbounded cache held a tenth of
    a 262144 x 640 run's memory; recomputing one is cheap."""
    if key not in self._qr:
      value = compute()
      self._qr[key] = value
      self._qr_bytes += _nbytes(value)
      while self._qr_bytes > self.cache_bytes and len(self._qr) > 1:
        self._qr_bytes -= _nbytes(self._qr.popitem(last=False)[1])
    self._qr.move_to_end(key)
    return self._qr[key]

  def logits64(self, x, rows=None) -> np.ndarray:
    """A x in float64, on every row or on `rows`: one pass on the
    accelerator where the checks' products go there (`device`), else
    polish.matvec (by row blocks of a float32 A), or for fewer than half
    the rows those rows gathered. Either way each a_j . x is within gamma_d
    |a_j| |x| of the exact product (any summation order), so the checks
    may bound it (check_feasible, check_unbounded) as well as rank by it
    (lp.finish)."""
    device = self.device
    if device is None and rows is not None and 2 * len(rows) <= len(self.a):
      return self.rows(rows) @ np.asarray(x, np.float64)
    out = polish.matvec(self.a, x) if device is None else device.logits(x)
    return out if rows is None else out[rows]

  def rows(self, index) -> np.ndarray:
    """Rows of A as float64."""
    return self.a[np.asarray(index)].astype(np.float64)

  def rmatvec(self, mu) -> np.ndarray:
    """A^T mu in float64 over the nonzero entries of mu."""
    nz = np.flatnonzero(mu)
    return self.rows(nz).T @ np.asarray(mu, np.float64)[nz]

  def rowspace(self, subset, y):
    """linalg.rowspace of A_S through the cached QR: (x_par, q)."""
    q, r = self.qr(subset)
    return q @ np.linalg.solve(r.T, np.asarray(y, np.float64)), q

  def least_squares_t(self, subset, v) -> np.ndarray:
    """argmin |A_S^T lam - v| through the cached QR (the one the polish
    and `rowspace` factor already; lstsq's own SVD was a tenth of an
    INFEASIBLE check), by lstsq where R is near singular."""
    q, r = self.qr(subset)
    diag = np.abs(np.diag(r))
    if diag.size and diag.min() > 1e-12 * diag.max():
      import scipy.linalg  # pylint: disable=g-import-not-at-top
      return scipy.linalg.solve_triangular(r, q.T @ v, check_finite=False)
    return np.linalg.lstsq(self.rows(subset).T, v, rcond=None)[0]

  @property
  def twins(self) -> np.ndarray:
    """Per row, the id of its group of bit-identical rows (-1: unique).
    Trained heads have such rows (SmolLM2-135M: 15 rows in 4 groups)."""
    if self._twins is None:  # Identical rows share a key; sort by it and
      # compare neighbours bit for bit (np.unique(axis=0) would copy A twice).
      key = polish.matvec(self.a, np.random.default_rng(0).standard_normal(
          self.a.shape[1]))
      order = np.argsort(key, kind="stable")
      twins = np.full(self.a.shape[0], -1, np.int64)
      for i in np.flatnonzero(key[order][1:] == key[order][:-1]):
        p, q = order[i], order[i + 1]
        if np.array_equal(self.a[p], self.a[q]):
          twins[q] = twins[p] = twins[p] if twins[p] >= 0 else p
      self._twins = twins
    return self._twins


def as_facts(a) -> MatrixFacts:
  """`a` if it already is MatrixFacts, else MatrixFacts(a) (the checks take
  either; callers that check many instances pass the facts, built once)."""
  return a if isinstance(a, MatrixFacts) else MatrixFacts(a)


def _q(reflectors, tau, columns: int) -> np.ndarray:
  """The first `columns` columns of the Q whose Householder reflectors are
  (reflectors, tau) (LAPACK orgqr)."""
  from scipy.linalg import lapack  # pylint: disable=g-import-not-at-top
  q = np.zeros((reflectors.shape[0], columns), order="F")
  q[:, :tau.size] = reflectors
  q, _, info = lapack.dorgqr(q, tau, lwork=64 * max(1, columns),
                             overwrite_a=True)
  if info != 0:
    raise np.linalg.LinAlgError(f"orgqr failed (info {info})")
  return q


def _nbytes(value) -> int:
  return sum(v.nbytes for v in value) if isinstance(value, tuple) else (
      value.nbytes)


def head_norms(a) -> np.ndarray:
  """|a_j| per row in float64 (linalg.by_float64_blocks)."""
  return np.concatenate(linalg.by_float64_blocks(
      lambda rows: np.linalg.norm(rows, axis=1), a))

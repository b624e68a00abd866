"""Small dense linear algebra: the row-space solve, factorisations in XLA,
and host helpers (float64 row blocks, float32 rows sorted as uint64 keys).

`rowspace` (numpy float64) is the one row-space solve of the host-side code
(certificates, Proposition 2, the sign-rank baseline); the jitted solver
applies the same formula with a cached Gram inverse (`bottleneck.lp.admm`).

The JAX factorisations below are written in plain XLA ops (no LAPACK calls).

Why: on CPU, jaxlib's batched LAPACK kernels (potrf, geqrf, ...) split their
batch over the same intra-op thread pool they run on. With several CPU
devices executing at once (e.g. `--xla_force_host_platform_device_count=8`)
every pool thread can end up blocked inside such a kernel waiting for tasks
queued behind it: a deadlock (seen with vmapped `jnp.linalg.qr` on 8 fake
devices, 2 cores). These loops lower to ordinary HLO, need no LAPACK on
any backend, and vmap into batched matmuls. They are O(n^3) and meant for
the n <= ~1000 systems of this package.

Their products, and the simulation's (`bottleneck.simulate`), go through
`matmul`: float32 products at full precision (HIGHEST). XLA's default lets
a TPU multiply float32 in one bfloat16 pass (8 significant bits) and a
recent GPU in TF32 (11), which would move the simulation's logits near its
threshold of 1 and the Cholesky factor's |x_m|^2. Pinned per operation, so
no caller's `jax.default_matmul_precision` changes it;
`tests/precision_test.py` reads the precision off the lowered programs
(not a run on a TPU or GPU). The LP's ADMM (`lp.admm_step`) factors its
Gram matrices here too: pinned alike, though its verdicts are certified in
float64 whatever its device products' precision.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


HIGHEST = jax.lax.Precision.HIGHEST


def matmul(a, b):
  """a @ b with float32 products at full precision on any backend
  (HIGHEST: no bfloat16 passes on a TPU, no TF32 on a GPU; a CPU computes
  float32 products in full anyway, so its numbers are unchanged)."""
  return jnp.matmul(a, b, precision=HIGHEST)


def rowspace(a_s_mxd, y_m):
  """(x_par, q) for A_S of full row rank, in float64.

  x_par = A_S^T (A_S A_S^T)^{-1} y is the minimum-norm solution of
  A_S x = y (seed 001, eq. 5 with y = 1); q [d, m] is an orthonormal basis
  of the row space (A_S^T = Q R), so x - q q^T x projects onto null(A_S).
  Computed through QR, which keeps cond(A_S) instead of squaring it.
  """
  q, r = np.linalg.qr(np.asarray(a_s_mxd, np.float64).T)
  return q @ np.linalg.solve(r.T, np.asarray(y_m, np.float64)), q


def cholesky(a_nxn):
  """Lower-triangular L with L L^T = a (a symmetric positive definite).

  Left-looking, one column per step: column j of L is
  (a[:, j] - L[:, :j] L[j, :j]^T) / L[j, j] below the diagonal.
  """
  n = a_nxn.shape[-1]
  idx = jnp.arange(n)

  def body(j, l):
    col = a_nxn[:, j] - matmul(l, l[j])  # Columns >= j of l are still zero.
    diag = jnp.sqrt(col[j])
    new = jnp.where(idx > j, col / diag, 0.0) + jnp.where(idx == j, diag, 0.0)
    return l.at[:, j].set(new)

  return jax.lax.fori_loop(0, n, body, jnp.zeros_like(a_nxn))


def solve_lower(l_nxn, b_nxk):
  """Solves L Y = B by forward substitution (rows of Y in order)."""
  n = l_nxn.shape[-1]

  def body(i, y):
    return y.at[i].set((b_nxk[i] - matmul(l_nxn[i], y)) / l_nxn[i, i])

  return jax.lax.fori_loop(0, n, body, jnp.zeros_like(b_nxk))


def solve_lower_t(l_nxn, b_nxk):
  """Solves L^T X = B by back substitution (rows of X from the last)."""
  n = l_nxn.shape[-1]

  def body(k, x):
    i = n - 1 - k
    return x.at[i].set((b_nxk[i] - matmul(l_nxn[:, i], x)) / l_nxn[i, i])

  return jax.lax.fori_loop(0, n, body, jnp.zeros_like(b_nxk))


def cho_solve(l_nxn, b_nxk):
  """Solves (L L^T) X = B given the Cholesky factor L."""
  return solve_lower_t(l_nxn, solve_lower(l_nxn, b_nxk))


def host_rows(d: int) -> int:
  """Rows of a d-column float64 block of about 8 MiB: the host's row-block
  size for float64 work over a float32 A. Blocks under glibc's largest
  mmap threshold (32 MiB) are reused from the heap instead of mapped and
  faulted in again: A x over Gemma 3's 262144 x 640 head is several times
  faster in 1638-row blocks than in 8192-row ones, and
  `lp.rotation.prepare` peaks lower."""
  return max(1, (8 << 20) // (8 * max(int(d), 1)))


def by_float64_blocks(fn, a_nxd) -> list:
  """[fn(block of A's rows as float64)] over blocks of `host_rows` rows:
  per-row float64 work over a float32 A without a float64 copy of it (a
  262144 x 640 head would take 1.3 GB). Each block is freed before the
  next is made (a generator would hold two at once, and made A x
  slower)."""
  block = host_rows(a_nxd.shape[1])
  return [fn(a_nxd[start:start + block].astype(np.float64))
          for start in range(0, a_nxd.shape[0], block)]


def gram64(a_nxd, block: int | None = None) -> np.ndarray:
  """A^T A in float64, summed over blocks of `block` rows (default
  `host_rows`; never a float64 copy of A: a 262144 x 640 head would take
  1.3 GB). Host numpy; A may be a numpy or jax array."""
  n, d = np.shape(a_nxd)
  block = block or host_rows(d)
  gram = np.zeros((d, d), np.float64)
  for i in range(0, n, block):
    rows = np.asarray(a_nxd[i:i + block], np.float64)
    gram += rows.T @ rows
  return gram


def order_codes(x_kxn) -> np.ndarray:
  """Unsigned integer codes of a float32 / float64 array whose order is the
  values' numeric order (the bits, sign-flipped; -0 counts as +0): equal
  codes for equal values."""
  x = np.asarray(x_kxn)
  if x.dtype not in (np.float32, np.float64):
    raise ValueError(f"`x` must be float32 or float64; got {x.dtype}.")
  uint = np.uint32 if x.dtype == np.float32 else np.uint64
  bits = (x + x.dtype.type(0.0)).view(uint)  # -0 + 0 = +0.
  top = uint(1) << uint(8 * x.itemsize - 1)
  return np.where(bits & top, ~bits, bits | top)


def stable_argsort_rows(x_kxn) -> tuple[np.ndarray, np.ndarray]:
  """Each row's stable argsort (ties by increasing column) of a float32 or
  float64 matrix, and its `order_codes` in that order. An LSD radix sort of
  the float32 codes, 16 bits a pass through numpy's radix sort of uint16
  keys (np.argsort kind='stable'); float64 rows are sorted by their float32
  roundings (monotone), then the runs of equal roundings by the float64
  values: about twice as fast as np.sort of (value, column) uint64 keys,
  or np.argsort, at 262144 columns."""
  x = np.asarray(x_kxn)
  if x.ndim != 2:
    raise ValueError(f"`x` must be 2-D; got shape {x.shape}.")
  codes = order_codes(x)
  with np.errstate(over="ignore"):  # Beyond float32's range: +-inf, still
    # monotone; those runs are refined by the float64 codes like any other.
    coarse = codes if x.dtype == np.float32 else order_codes(
        x.astype(np.float32))
  order = np.empty(x.shape, np.intp)
  ordered = np.empty_like(codes)
  for i, row in enumerate(coarse):  # Row by row: 3x faster than 2-D takes.
    perm = np.argsort(row.astype(np.uint16), kind="stable")
    perm = perm[np.argsort((row[perm] >> 16).astype(np.uint16),
                           kind="stable")]
    if coarse is not codes:
      perm = _refine_runs(perm, row[perm], codes[i])
    order[i], ordered[i] = perm, codes[i][perm]
  return order, ordered


def _refine_runs(perm, coarse_sorted, fine):
  """`perm` sorted by coarse codes, with each run of equal coarse codes
  re-sorted by the fine codes (ties by column)."""
  same = coarse_sorted[1:] == coarse_sorted[:-1]
  if not same.any():
    return perm
  members = np.zeros(len(perm), bool)
  members[:-1] |= same
  members[1:] |= same
  at = np.flatnonzero(members)
  run = np.cumsum(np.concatenate([[True], ~same]))[at]
  cols = perm[at]
  perm = perm.copy()
  perm[at] = cols[np.lexsort((cols, fine[cols], run))]
  return perm

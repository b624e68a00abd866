"""The LP's matrix, prepared once: A normalised and rotated into the
eigenbasis of A^T A (seed 001, Section 6; the solver is lp.admm).

A' = (A / scale) V with V the eigenvectors of A^T A / scale^2, so that
A'^T A' = diag(lam): the ADMM system sigma I + rho A'^T A' is diagonal
and only the rows of S add a rank-m term per instance. `prepare` returns
the device side (`Shared`: A', lam, the column sums) and the host side
(`Basis`: V and the scale), with which `to_original` maps a solver
iterate back to a float64 embedding of A.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import linalg


class Shared(NamedTuple):
  """The matrix on device, prepared once and shared by every instance."""
  a_rot: jax.Array  # [N, d] A' = (A / scale) V, columns orthogonal.
  lam: jax.Array  # [d] eigenvalues of A'^T A'.
  colsum: jax.Array  # [d] sum of the rows of A'.


class Basis(NamedTuple):
  """Host-side map from the solver's basis back to A's (x = V x' / scale)."""
  v: np.ndarray  # [d, d] float64 eigenvectors of A^T A / scale^2.
  scale: float  # Row-norm normalisation of A.


def prepare(a_nxd, dtype=jnp.float32) -> tuple[Shared, Basis]:
  """Normalises and rotates A once (float64 eigendecomposition on host).

  Memory: A is read in row blocks, converted to float64 a block at a time,
  and its rotation written straight into the device array (donated
  updates): besides A itself, one N x d array of `dtype` is allocated."""
  a = np.asarray(a_nxd)
  rows = linalg.host_rows(a.shape[1])  # Per float64 block.
  gram = linalg.gram64(a, rows)
  scale = float(np.sqrt(np.trace(gram) / a.shape[0]))  # RMS row norm.
  lam, v = np.linalg.eigh(gram / scale**2)
  colsum = np.zeros(a.shape[1])
  # The rotation in the iterations' dtype, in which it is stored (float64
  # products rounded to float32 took twice as long at 262144 x 640); the
  # colsum is the stored rows' own.
  v_scaled = (v / scale).astype(dtype)
  a_rot = jnp.zeros(a.shape, dtype)
  for start in range(0, a.shape[0], rows):
    rotated = np.asarray(a[start:start + rows], dtype) @ v_scaled
    a_rot = _write_rows(a_rot, jnp.asarray(rotated), start)
    colsum += rotated.sum(axis=0, dtype=np.float64)
  return (Shared(a_rot, jnp.asarray(lam, dtype), jnp.asarray(colsum, dtype)),
          Basis(v, scale))


@functools.partial(jax.jit, donate_argnums=0)
def _write_rows(buffer, rows, start):
  return jax.lax.dynamic_update_slice(buffer, rows, (start, 0))


def to_original(basis: Basis, x_rot_d) -> np.ndarray:
  """A solver iterate (rotated, scaled basis) as a float64 embedding of A."""
  return basis.v @ np.asarray(x_rot_d, np.float64) / basis.scale

"""Monte-Carlo check of the row-space bound (seed 001, Appendix B, Figure 5).

Each trial draws A ~ N(0, 1) of size N x d and, for every m requested, takes
S = the first m rows (WLOG: the rows are exchangeable, so a random m-subset of
a fresh Gaussian matrix has the same law), forms the row-space embedding

  x_m = A_S^T (A_S A_S^T)^{-1} 1                         eq. (5)-(6), y_S = 1

and records t_m = max_{j not in S} a_j . x_m. The event of Corollary 1 is
t_m < 1; `fraction` is its Monte-Carlo frequency. One matrix per trial serves
every m (nested subsets), which makes a whole m-sweep cost one matrix.

Methods:
  matrix     materialises A in blocks of `ROW_BLOCK` rows (row tile t of
             `TILE_ROWS` rows drawn from fold_in(key_A, t)), so GPT-2 size
             (50257 x 768) needs only one block per trial in memory.
  projected  draws the other logits from their exact joint law given A_S:
             with Q an orthonormal basis of the row space of A_S and
             x_m = Q y_m, a . x_m = (Q^T a) . y_m and Q^T a ~ N(0, I_{m_max})
             for Gaussian a, so the rows of A_rest X are sampled as Z Y.
             Same A_S and X as `matrix`; d / m_max times fewer random
             numbers, exact in distribution (not an approximation).

Trials are vmapped in fixed-size chunks whose trial axis is sharded over all
devices (`NamedSharding`); trial i uses fold_in(key(seed), i), so results do
not depend on the chunk size or the number of devices. Every product is
`linalg.matmul`, float32 at full precision on any backend: with operands
rounded as a TPU's default bfloat16 pass rounds them (emulated on the CPU,
50257 x 768, m = 20..36, 48 trials), t_m moved by up to 3e-3 (TF32: 3e-4),
enough to flip verdicts within that distance of 1.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import bounds, checks, linalg, sharding
from bottleneck.io import cli

ROW_BLOCK = 4096  # Max rows of A per block of the `matrix` method.
TILE_ROWS = 64  # Rows of A per random-number call (fixes the stream).
METHODS = ("matrix", "projected")


def random_matrix(key, N: int, d: int):
  """The full N x d Gaussian matrix a trial with key `key` uses (method=matrix).

  Only for tests and small sizes: the simulation itself never holds it whole.
  """
  key_a = jax.random.fold_in(key, 0)
  rows = _block_rows(N)
  blocks = [_block(key_a, b, rows, d) for b in range(-(-N // rows))]
  return jnp.concatenate(blocks)[:N]


def _block_rows(N: int) -> int:
  return min(ROW_BLOCK, N)


def _block(key_a, b, rows, d):
  """Rows [b * rows, (b + 1) * rows) of the trial's matrix: tiles of
  `TILE_ROWS` rows, tile t drawn from fold_in(key_A, t), so that any
  prefix of rows costs only its own tiles (`projected` draws the m_max rows
  of A_S alone: at 50257 x 768, m <= 36, a 64-row tile instead of a
  4096-row block)."""
  tiles = -(-rows // TILE_ROWS)
  first = b * tiles
  draw = lambda t: jax.random.normal(jax.random.fold_in(key_a, t),
                                     (TILE_ROWS, d))
  return jax.vmap(draw)(first + jnp.arange(tiles)).reshape(-1, d)[:rows]


def rowspace_coefficients(a_s_mxd, m_values):
  """Coefficients of every x_m = A_m^T (A_m A_m^T)^{-1} 1 (A_m = first m rows).

  One Cholesky A_S A_S^T = L L^T serves every m: the leading m x m block of L
  is the Cholesky factor of A_m A_m^T. With Q = A_S^T L^{-T} (orthonormal
  columns spanning the row space) and the masks b_m = 1[i < m],

    y_m = b_m * L^{-1} b_m,   x_m = Q y_m = A_S^T L^{-T} y_m,   |x_m| = |y_m|.

  Returns (y [m_max, M], w [m_max, M]) with x_m = A_S^T w_m.
  """
  l = linalg.cholesky(linalg.matmul(a_s_mxd, a_s_mxd.T))
  mask = (jnp.arange(a_s_mxd.shape[0])[:, None] <
          jnp.asarray(m_values)[None, :]).astype(a_s_mxd.dtype)
  y = linalg.solve_lower(l, mask) * mask
  return y, linalg.solve_lower_t(l, y)


def _masked_max(logits_rxm, row_ids, m_values, n_rows):
  """Max over rows j with m <= j < n_rows (rows < m are the chosen set S)."""
  keep = (row_ids[:, None] >= m_values[None, :]) & (row_ids[:, None] < n_rows)
  return jnp.max(jnp.where(keep, logits_rxm, -jnp.inf), axis=0)


def trial(key, *, N: int, d: int, m_values: tuple[int, ...], method: str):
  """One trial: (max other logit t_m, |x_m|^2) for every m, each shape [M]."""
  m_arr = jnp.asarray(m_values)
  m_max = max(m_values)
  key_a = jax.random.fold_in(key, 0)
  rows = _block_rows(N)
  if method == "matrix":
    block0 = _block(key_a, 0, rows, d)
    a_s = block0[:m_max]
  else:  # The same rows of A_S, from their own tiles only.
    a_s = _block(key_a, 0, m_max, d)
  y, w = rowspace_coefficients(a_s, m_arr)
  x_dxm = linalg.matmul(a_s.T, w)
  x_sq_norm = jnp.sum(y * y, axis=0)

  if method == "matrix":
    best = _masked_max(linalg.matmul(block0, x_dxm), jnp.arange(rows), m_arr, N)

    def body(b, best):
      logits = linalg.matmul(_block(key_a, b, rows, d), x_dxm)
      row_ids = b * rows + jnp.arange(rows)
      return jnp.maximum(best, _masked_max(logits, row_ids, m_arr, N))

    best = jax.lax.fori_loop(1, -(-N // rows), body, best)
  else:  # projected: rows >= m_max from the exact law, rows < m_max explicit.
    # a . x_m = (Q^T a) . y_m with Q^T a ~ N(0, I_{m_max}) for a ~ N(0, I_d).
    best = _masked_max(linalg.matmul(a_s, x_dxm), jnp.arange(m_max), m_arr,
                       m_max)
    z = jax.random.normal(jax.random.fold_in(key, 1), (N - m_max, m_max))
    best = jnp.maximum(best, jnp.max(linalg.matmul(z, y), axis=0))
  return best, x_sq_norm


@dataclasses.dataclass(frozen=True)
class Simulation:
  """Per-trial results of `simulate`; every statistic derives from these."""
  N: int
  d: int
  m_values: tuple[int, ...]
  seed: int
  method: str
  max_other_logit: np.ndarray  # [trials, M]: t_m = max_{j not in S} a_j.x_m
  x_sq_norm: np.ndarray  # [trials, M]: |x_m|^2 = 1^T (A_S A_S^T)^{-1} 1

  @property
  def trials(self) -> int:
    return self.max_other_logit.shape[0]

  def fraction(self) -> np.ndarray:
    """Frequency of the Corollary 1 event t_m < 1, per m."""
    return np.mean(self.max_other_logit < 1.0, axis=0)

  def records(self) -> list[dict]:
    """One dict per m: fraction with its binomial standard error, bounds."""
    frac = self.fraction()
    out = []
    for i, m in enumerate(self.m_values):
      rec = {"m": m, "trials": self.trials, "fraction": float(frac[i]),
             "stderr": float(np.sqrt(frac[i] * (1 - frac[i]) / self.trials))}
      for form in bounds.FORMS:
        key = "bound" if form == "exact" else f"bound_{form}"
        rec[key] = (float(bounds.prob(self.N, self.d, m, form))
                    if m < self.d - 3 else None)
      out.append(rec)
    return out


@functools.lru_cache(maxsize=16)
def _chunk_fn(N, d, m_values, method, mesh):
  fn = jax.vmap(functools.partial(trial, N=N, d=d, m_values=m_values,
                                  method=method))
  out = sharding.batch_sharded(mesh, 2)
  return jax.jit(fn, in_shardings=sharding.batch_sharded(mesh, 1),
                 out_shardings=(out, out))


INT32_MAX = 2**31 - 1  # Row indices and counts are int32 on device.


def trial_bytes(N: int, d: int, m_max: int, n_m: int, method: str) -> int:
  """Peak bytes one trial of a chunk holds (measured at 50257 x 768, m up
  to 36: about 60 MB projected, 47 MB matrix, XLA temporaries included)."""
  if method == "projected":
    return 9 * 4 * N * m_max + 4 * d * m_max
  return 4 * 4 * _block_rows(N) * d + 8 * N * n_m


def check_args(N, d, m_values, trials, method="matrix", chunk=1):
  N, d = checks.positive_int("N", N), checks.positive_int("d", d)
  if N > INT32_MAX:
    raise ValueError(f"`N` must be at most {INT32_MAX} (int32 row indices on "
                     f"device); got {N}.")
  checks.positive_int("trials", trials)
  checks.positive_int("chunk", chunk)
  checks.one_of("method", method, METHODS)
  if not m_values:
    raise ValueError("`m` must list at least one value.")
  hi = min(d - 1, N - 1, ROW_BLOCK)
  for m in m_values:
    checks.int_in_range("m", m, 1, hi, "need m < d for an invertible A_S "
                        f"A_S^T, m < N, and m <= {ROW_BLOCK}")
  return N, d, tuple(sorted(set(int(m) for m in m_values)))


def simulate(N: int, d: int, m_values, trials: int, seed: int = 0,
             method: str = "matrix", chunk: int | None = None, devices=None,
             progress: bool = False) -> Simulation:
  """Runs `trials` Monte-Carlo trials for every m in `m_values`.

  chunk: trials per jitted call (at most `trials`, rounded up to a
    multiple of the device count); default: as many as fit in a quarter of
    the available memory, at most 1 GiB (`trial_bytes` per trial). Sizes
    whose single trial cannot fit are refused with the estimate.
  devices: devices to shard the trial axis over (default: all).
  """
  N, d, m_values = check_args(N, d, m_values, trials, method,
                              1 if chunk is None else chunk)
  mesh = sharding.batch_mesh(devices)
  n_dev = mesh.devices.size
  per_trial = trial_bytes(N, d, max(m_values), len(m_values), method)
  if chunk is None:
    budget = min(1 << 30, (checks.memory_bytes() or 4 << 30) // 4)
    chunk = max(1, min(trials, budget // per_trial))
  chunk = sharding.round_up(min(chunk, trials), n_dev)
  checks.fits_in_memory(
      chunk * per_trial, f"the simulation ({chunk} trials of {N} x {d} at "
      f"once, method {method})", "Lower `chunk`, `N` or the largest `m`" + (
          ", or use method=projected." if method == "matrix" else "."))
  fn = _chunk_fn(N, d, m_values, method, mesh)
  base = jax.random.key(seed)
  n_chunks = -(-trials // chunk)
  meter = cli.Progress(n_chunks * chunk, "trials") if progress else None
  t_parts, n_parts = [], []
  for c in range(n_chunks):
    ids = jnp.arange(c * chunk, (c + 1) * chunk)
    keys = jax.vmap(lambda i: jax.random.fold_in(base, i))(ids)
    t, n = fn(jax.device_put(keys, sharding.batch_sharded(mesh, 1)))
    t_parts.append(np.asarray(t))
    n_parts.append(np.asarray(n))
    if meter:
      meter.update((c + 1) * chunk)
  return Simulation(N, d, m_values, seed, method,
                    np.concatenate(t_parts)[:trials],
                    np.concatenate(n_parts)[:trials])


if __name__ == "__main__":
  from bottleneck.apps import simulate_main  # pylint: disable=g-import-not-at-top
  simulate_main.run()

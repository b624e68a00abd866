"""Token probabilities are log-linearly encoded in output embeddings (seed 003).

With alpha_w the averaged next-token probability of token w over a detect
set D (App. B.1) and E_w its output embedding, eq. (2) says

  -log alpha_w  ~=  A_D . E_w + B_D,

a multiple linear regression (MLR) across the V tokens. This module fits it
(float64 OLS with adjusted R^2 and t-test p-values), the random-vector and
shuffled baselines of Table 1, per-component / per-dimension Spearman
correlations (Fig. 3), Algorithm 1's probability editing (§3), dimension
removal by MLR saliency (§4, Fig. 6) and the frequency probe with the
convergence rate (§5, Fig. 7). Pure numpy/scipy on arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from bottleneck import checks, linalg



def mlr(y_n, x_nxd, x_moments: Moments | None = None) -> dict:
  """OLS of y on [1, X] (float64): coefficients, adjusted R^2, p-values.

  Textbook formulas: R^2 = 1 - SSR/SST, adj R^2 = 1 - (1 - R^2)(n-1)/(n-k-1),
  t = beta / se with se^2 = diag((X^T X)^{-1}) SSR / (n - k - 1), two-sided
  p from Student's t with n - k - 1 degrees of freedom.
  """
  y = checks.finite_array("y", y_n, ndim=1)
  return mlr_columns(y[:, None], x_nxd, x_moments)[0]


_BLOCK = 1 << 14  # Rows of X per block (float64 per block, never all).


def _column_means(x):
  return sum(x[i:i + _BLOCK].sum(0, dtype=np.float64)
             for i in range(0, len(x), _BLOCK)) / len(x)


class Moments(NamedTuple):
  """What every fit on a design X [n, k] shares: its float64 column means
  and centred Gram matrix (X - mean)^T (X - mean), summed over row blocks.
  One pass over X is the costly part on a large head, and the seed-003
  probes fit four models on the same head."""
  mean_k: np.ndarray
  gram_kxk: np.ndarray
  n: int


def moments(x_nxd) -> Moments:
  """`Moments` of X, in float64 row blocks (no float64 copy of X)."""
  return _moments(checks.finite_array("x", x_nxd, ndim=2))


def _moments(x) -> Moments:
  mean = _column_means(x)
  gram = np.zeros((x.shape[1],) * 2)
  for i in range(0, len(x), _BLOCK):
    c = x[i:i + _BLOCK].astype(np.float64) - mean
    gram += c.T @ c
  return Moments(mean, gram, len(x))


def _moments_of(x, given: Moments | None) -> Moments:
  """`given` if it is X's shape (the caller's cache), else X's own."""
  if given is None:
    return _moments(x)
  if given.n != x.shape[0] or given.gram_kxk.shape != (x.shape[1],) * 2:
    raise ValueError(f"`moments` are of a {given.n} x "
                     f"{given.gram_kxk.shape[0]} design; `x` is "
                     f"{x.shape[0]} x {x.shape[1]}.")
  return given


def mlr_columns(y_nxr, x_nxd, x_moments: Moments | None = None
                ) -> list[dict]:
  """`mlr` of each column of y on the same X, from one Gram matrix.

  X is centred by its column means (slopes, their standard errors and R^2
  are those of the regression on [1, X]; the intercept is shifted back),
  X^T X and X^T y are summed in float64 over row blocks and solved by an
  eigen-decomposition (rank as lstsq's rcond=None), residuals in a second
  pass: O(D^2) memory whatever V (a 262144 x 640 head needs no float64
  copy). Singular designs get the minimum-norm solution. `x_moments`:
  X's `moments`, if the caller holds them (fits on one X share them).
  """
  x = checks.finite_array("x", x_nxd, ndim=2)
  ys = checks.finite_array("y", y_nxr, ndim=2).astype(np.float64)
  n, k = x.shape
  if ys.shape[0] != n:
    raise ValueError(f"`y` must have one value per row of `x` ({n}); got "
                     f"{ys.shape[0]}.")
  if n <= k + 1:
    raise ValueError(f"MLR needs more rows than columns + 1; got {n} rows, "
                     f"{k} columns.")
  mean_x, gram, _ = _moments_of(x, x_moments)
  mean_y = ys.mean(0)
  xty = np.zeros((k, ys.shape[1]))
  for i in range(0, n, _BLOCK):
    xty += (x[i:i + _BLOCK].astype(np.float64) - mean_x).T @ (
        ys[i:i + _BLOCK] - mean_y)
  lam, vec = np.linalg.eigh(gram)
  sing = np.sqrt(np.clip(lam, 0.0, None))
  keep = sing > np.finfo(np.float64).eps * max(n, k + 1) * sing.max()
  gram_pinv = (vec[:, keep] / lam[keep]) @ vec[:, keep].T
  slopes = gram_pinv @ xty  # [k, r]
  ssr = np.zeros(ys.shape[1])
  for i in range(0, n, _BLOCK):
    xc = x[i:i + _BLOCK].astype(np.float64) - mean_x
    ssr += ((ys[i:i + _BLOCK] - mean_y - xc @ slopes) ** 2).sum(0)
  sst = ((ys - mean_y) ** 2).sum(0)
  dof = n - int(keep.sum()) - 1
  out = []
  for j in range(ys.shape[1]):
    beta = slopes[:, j]
    r2 = 1.0 - ssr[j] / sst[j]
    adj = 1.0 - (1.0 - r2) * (n - 1) / dof
    se = np.sqrt(np.clip(np.diag(gram_pinv) * ssr[j] / dof, 0.0, None))
    t = np.divide(beta, se, out=np.zeros_like(beta), where=se > 0)
    p = 2.0 * stats.t.sf(np.abs(t), dof)
    out.append({"intercept": float(mean_y[j] - mean_x @ beta),
                "slopes": beta, "p_values": p, "t": t, "r2": float(r2),
                "adj_r2": float(adj), "n": n, "k": k})
  return out


def fitted(fit: dict, x_nxd) -> np.ndarray:
  """intercept + X slopes, block by block (float64)."""
  x = np.asarray(x_nxd)
  return np.concatenate([fit["intercept"] + x[i:i + _BLOCK].astype(
      np.float64) @ fit["slopes"] for i in range(0, len(x), _BLOCK)])


def probability_mlr(alpha_v, e_vxd, seed: int = 0,
                    e_moments: Moments | None = None) -> dict:
  """Table 1: adj R^2 of -log alpha on E, with random and shuffled controls
  (the three fits share one factorisation of [1, E])."""
  alpha = checks.probabilities("alpha", alpha_v)
  y = -np.log(alpha)
  rng = np.random.default_rng(seed)
  rand = rng.standard_normal(y.size)
  fit, random_fit, shuffled_fit = mlr_columns(
      np.stack([y, rand / np.linalg.norm(rand), rng.permutation(y)], 1),
      e_vxd, e_moments)
  return {"fit": fit, "adj_r2": fit["adj_r2"],
          "random_adj_r2": random_fit["adj_r2"],
          "shuffled_adj_r2": shuffled_fit["adj_r2"]}


def average_ranks(rows_kxn) -> np.ndarray:
  """1-based ranks along each row, ties given their average rank (as
  scipy.stats.rankdata, vectorised over rows: one argsort)."""
  rows = np.asarray(rows_kxn, np.float64)
  k, n = rows.shape
  order = np.argsort(rows, axis=1)
  ordered = np.take_along_axis(rows, order, 1)
  new = np.ones((k, n), bool)  # A new value starts a tie group.
  new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
  group = np.cumsum(new.ravel()) - 1  # Groups never span two rows.
  starts = np.tile(np.arange(n), k)[new.ravel()]
  average = starts + (np.bincount(group) - 1) / 2.0 + 1.0
  out = np.empty((k, n))
  np.put_along_axis(out, order, average[group].reshape(k, n), 1)
  return out


def _abs_spearman_rows(rows_kxn, r_alpha) -> np.ndarray:
  """|Spearman r| of each row with alpha, given alpha's centred average
  ranks r_alpha, from one radix sort per row (`linalg.stable_argsort_rows`)
  and no scatter. Along the sorted order, position p has rank p + 1 unless
  it lies in a run of equal values [s, e], whose members all get the
  average (s + e)/2 + 1: sum_i R_i r_alpha_i is the untied sum plus, per
  run, ((s + e)/2 - p) summed against r_alpha (prefix sums), and so is
  sum_i (R_i - (n + 1)/2)^2. Only the runs cost extra."""
  rows = np.asarray(rows_kxn)
  if rows.dtype not in (np.float32, np.float64):
    rows = rows.astype(np.float64)
  k, n = rows.shape
  order, codes = linalg.stable_argsort_rows(rows)
  pos = np.arange(n, dtype=np.float64) - (n - 1) / 2.0  # R - (n + 1)/2.
  prefix = lambda v: np.concatenate([[0.0], np.cumsum(v)])
  cpp = prefix(pos * pos)  # The same for every row.
  numer, norm_sq = np.empty(k), np.full(k, cpp[-1])
  for i in range(k):
    g = r_alpha[order[i]]
    numer[i] = pos @ g
    same = codes[i, 1:] == codes[i, :-1]  # p and p + 1 tied.
    if not same.any():
      continue
    edge = np.diff(same.astype(np.int8), prepend=0, append=0)
    s, e = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)  # [s, e].
    cg, cpg = prefix(g), prefix(pos * g)
    avg = (pos[s] + pos[e]) / 2.0
    numer[i] += np.sum(avg * (cg[e + 1] - cg[s]) - (cpg[e + 1] - cpg[s]))
    norm_sq[i] += np.sum((e - s + 1) * avg**2 - (cpp[e + 1] - cpp[s]))
  return np.abs(numer) / (np.sqrt(norm_sq) * np.linalg.norm(r_alpha))


def spearman_profiles(alpha_v, e_vxd, block: int = 8,
                      workers: int | None = None,
                      e_moments: Moments | None = None,
                      columns: int | None = None) -> dict:
  """Fig. 3: |Spearman r| of alpha with each principal component (sorted by
  variance) and with each original dimension, and PCA variance ratios.
  Spearman r = Pearson r of average ranks (`_abs_spearman_rows`); PCA from
  the eigenvectors of the centred Gram matrix (D x D). Columns are ranked
  `block` at a time on `workers` threads (numpy's sorts release the GIL;
  default: one per core, at most 4), 8 blocks of columns in memory at once;
  float32 data is ranked in float32, its PC scores included. `columns`:
  profile only the first that many PCs and dimensions (None: all D; each
  costs a sort of V values)."""
  import concurrent.futures  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  e = checks.finite_array("e", e_vxd, ndim=2)
  alpha = np.asarray(alpha_v, np.float64)
  gram = _moments_of(e, e_moments).gram_kxk
  var, vecs = np.linalg.eigh(gram)
  var, vecs = np.clip(var[::-1], 0.0, None), vecs[:, ::-1]
  r_alpha = average_ranks(alpha[None])[0]
  r_alpha -= r_alpha.mean()
  d = e.shape[1]
  if columns is not None:
    if not 1 <= columns:
      raise ValueError(f"`columns` must be >= 1 (or None: all {d}); got "
                       f"{columns}.")
    d = min(d, int(columns))
  workers = workers or min(4, os.cpu_count() or 1)

  def abs_spearman(rows, span):  # rows(j0, j1) -> [j1 - j0, V].
    out = []
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
      for j0 in range(0, d, span):  # `span` rows in memory at once.
        r = rows(j0, min(j0 + span, d))
        out += pool.map(lambda j, r=r: _abs_spearman_rows(r[j:j + block],
                                                          r_alpha),
                        range(0, len(r), block))
    return np.concatenate(out)

  def scores(a, b):  # Principal-component scores V^T e (centring adds a
    # constant per component: the ranks are the same), in e's precision:
    # one GEMM per span (float64 row blocks were far slower on Gemma 3).
    return vecs[:, a:b].T.astype(e.dtype) @ e.T

  def dims(a, b):  # float32 columns are ranked as float32 (16 bits a pass).
    return np.ascontiguousarray(e[:, a:b].T)

  return {"pc_abs_spearman": abs_spearman(scores, 8 * block),
          "pc_variance_ratio": var / np.sum(var),
          "dim_abs_spearman": abs_spearman(dims, 8 * block)}


def edit_weights(slopes, p_values, b: float) -> np.ndarray:
  """Algorithm 1, line 3: Omega = |A|^b * S / || |A|^b * S ||_1.

  S is the per-dimension *confidence*, 1 - p (the paper calls it the
  p-value, but "more editing amount to stronger correlations" needs the
  confidence). b = +inf puts everything on the most salient dimension;
  b = -inf spreads it evenly ("Average" in the paper's Table 3).
  """
  a = np.abs(np.asarray(slopes, np.float64))
  conf = 1.0 - np.asarray(p_values, np.float64)
  if b == np.inf:
    out = np.zeros_like(a)
    out[np.argmax(a * conf)] = 1.0
    return out
  if b == -np.inf:
    return np.full_like(a, 1.0 / a.size)
  w = a**b * conf
  if not np.isfinite(w).all() or w.sum() <= 0:
    raise ValueError(f"`b`={b} gives no usable editing weights.")
  return w / w.sum()


def edit_embedding(e_vxd, token: int, r: float, slopes, p_values,
                   b: float = 2.0) -> np.ndarray:
  """Algorithm 1, line 4: E'_w = E_w - log(r) Omega / A (elementwise).

  Under eq. (2), -log alpha_w moves by A . dE = -log(r) sum(Omega) =
  -log(r): the token's averaged probability scales by r.
  """
  e = np.array(e_vxd, np.float64)
  checks.int_in_range("token", token, 0, e.shape[0] - 1)
  e[token] = e[token] + edit_delta(r, slopes, p_values, b)
  return e


def edit_delta(r, slopes, p_values, b: float = 2.0) -> np.ndarray:
  """The change dE = -log(r) Omega / A of the edited row (`edit_embedding`
  without the copy of E); `r` may be an array of scales -> [R, D]."""
  r = np.asarray(r, np.float64)
  if not np.all(r > 0):
    raise ValueError(f"`r` must be > 0 (a probability scale); got {r!r}.")
  slopes = np.asarray(slopes, np.float64)
  omega = edit_weights(slopes, p_values, b)
  safe = np.where(np.abs(slopes) > 0, slopes, np.inf)  # Omega_k=0 there.
  return np.multiply.outer(-np.log(r), omega / safe)


def scale_error(r: float, alpha_before, alpha_after, token: int) -> float:
  """e = |ln r - ln r_hat| with r_hat = alpha'_w / alpha_w (§3.2)."""
  r_hat = alpha_after[token] / alpha_before[token]
  return float(abs(np.log(r) - np.log(r_hat)))


def kl_unedited(alpha_before, alpha_after, token: int, block: int = 8):
  """KL(before || after) on the unedited tokens, each renormalised; for
  alpha_after [R, V] (R edits of one token) an [R] array, sharing log p
  (rows `block` at a time: O(block V) temporaries)."""
  after = np.atleast_2d(alpha_after)
  p = np.delete(np.asarray(alpha_before, np.float64), token)
  p = p / p.sum()
  log_p = np.log(p)
  out = np.empty(len(after))
  for i in range(0, len(after), block):
    q = np.delete(after[i:i + block].astype(np.float64), token, axis=1)
    q_log = np.log(q) - np.log(q.sum(1, keepdims=True))
    out[i:i + block] = (log_p[None, :] - q_log) @ p  # Differences first.
  return float(out[0]) if np.ndim(alpha_after) == 1 else out


def kl(p, q) -> float:
  p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
  return float(np.sum(p * (np.log(p) - np.log(q))))


def removal_order(slopes, adversarial: bool = False) -> np.ndarray:
  """§4: dimensions from least to most salient (|MLR slope|), or reversed."""
  order = np.argsort(np.abs(np.asarray(slopes)))
  return order[::-1] if adversarial else order


def frequency_r2(e_vxd, counts_v) -> float:
  """§5: adj R^2 of -log(corpus frequency) on the output embeddings.

  Tokens never seen in the corpus are left out (their log is undefined).
  """
  counts = np.asarray(counts_v, np.float64)
  seen = counts > 0
  if seen.sum() <= np.shape(e_vxd)[1] + 2:
    raise ValueError("`counts` has too few seen tokens for the MLR.")
  freq = counts[seen] / counts.sum()
  return mlr(-np.log(freq), np.asarray(e_vxd)[seen])["adj_r2"]


def convergence_rate(theta_t, theta_0, theta_final) -> float:
  """1 - |theta* - theta_t|_F / |theta* - theta_0|_F (Chen et al. 2022)."""
  t, z, f = (np.asarray(x, np.float64) for x in (theta_t, theta_0,
                                                 theta_final))
  denom = np.linalg.norm(f - z)
  return float(1.0 - np.linalg.norm(f - t) / denom) if denom > 0 else 1.0

"""Prescribed top-m probabilities (seed 001, Section 4.2, Proposition 2).

Given target probabilities p_1..p_m for a token set S (WLOG p_m = min p),
eq. (14) sets unscaled logits ybar_i = log(p_i / p_m) / s + 1 (so ybar_m = 1),
the row-space embedding xbar = A_S^T (A_S A_S^T)^{-1} ybar realises them on S,
and x = s xbar fixes every ratio p_i / p_m exactly (eq. 13). If every other
unscaled logit satisfies ybar_j <= 1 - eps (the event of Proposition 2), then
the scale of eq. (17),

  s = -(1 / eps) log(m delta / N),

makes the remaining tokens carry total probability < delta (eq. 15-16).
Everything here is float64 numpy: it is the reference the LP solver's
"probs" verdicts are checked against.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bottleneck import checks, linalg


def check_eps_delta(eps, delta) -> tuple[float, float]:
  """eps in (0, 1): relative logit gap; delta in (0, 1): mass off S."""
  return (checks.open_interval("eps", eps, 0.0, 1.0),
          checks.open_interval("delta", delta, 0.0, 1.0))


def scale(N: int, m: int, eps: float, delta: float) -> float:
  """s = -(1/eps) log(m delta / N), eq. (17)."""
  checks.topm_sizes(N, 1, m)
  eps, delta = check_eps_delta(eps, delta)
  return -np.log(m * delta / N) / eps


def unscaled_targets(p, s: float) -> np.ndarray:
  """ybar_i = log(p_i / min p) / s + 1, eq. (14); min ybar = 1."""
  p = checks.probabilities("p", p, normalise=True)
  if not s > 0:
    raise ValueError(f"`s` must be > 0; got {s!r}.")
  return np.log(p / p.min()) / s + 1.0


@dataclasses.dataclass(frozen=True)
class Prescribed:
  x: np.ndarray  # [d] embedding s * xbar.
  s: float  # Scale of eq. (17).
  ybar: np.ndarray  # [m] unscaled target logits on S, eq. (14).


def embedding(a_nxd, subset, p, eps: float = 0.05,
              delta: float = 0.1) -> Prescribed:
  """The row-space embedding of Proposition 2 for tokens `subset`."""
  a = checks.finite_array("A", a_nxd, ndim=2).astype(np.float64)
  N, d = a.shape
  subset = checks.subset_indices("subset", subset, N)
  m = subset.size
  if m >= d:
    raise ValueError(f"`subset` size m must be < d = {d} so that A_S has full "
                     f"row rank; got m={m}.")
  p = checks.probabilities("p", p, normalise=True)
  if p.size != m:
    raise ValueError(f"`p` must have one entry per token of `subset` ({m}); "
                     f"got {p.size}.")
  s = scale(N, m, eps, delta)
  ybar = unscaled_targets(p, s)
  a_s = a[subset]
  rank = np.linalg.matrix_rank(a_s @ a_s.T)
  if rank < m:
    raise ValueError("`A` rows of `subset` are linearly dependent (rank "
                     f"{rank} < m={m}); no embedding can prescribe their "
                     "logits.")
  xbar, _ = linalg.rowspace(a_s, ybar)
  return Prescribed(x=s * xbar, s=s, ybar=ybar)


def softmax_on_subset(logits_n, subset, p_m) -> tuple[float, float]:
  """How far softmax(logits) is from prescribing p on S (float64, log space).

  Returns (worst relative error of the ratios p_i / p_j on S, probability
  mass off S). The mass is summed directly (not 1 - mass on S) so tiny
  masses keep their precision.
  """
  logits = np.asarray(logits_n, np.float64)
  log_probs = logits - logsumexp(logits)
  q = np.exp(log_probs[subset])
  p = np.asarray(p_m, np.float64) / np.sum(p_m)
  ratio_err = float(np.max(np.abs((q / q.sum()) / p - 1.0)))
  rest = np.ones(logits.shape[0], bool)
  rest[subset] = False
  return ratio_err, float(np.exp(logsumexp(log_probs[rest])))


def logsumexp(v) -> float:
  """log(sum(exp(v))) of a vector, shifted by its maximum (as
  scipy.special.logsumexp, whose generality costs an order of magnitude
  on a vocabulary); -inf, inf or nan where the maximum
  is. Its rounding: a few ulps of max |v| for the shift and exp, numpy's
  pairwise sum, one log (certificates.check_probabilities' allowance)."""
  v = np.asarray(v, np.float64)
  top = float(np.max(v))
  if not np.isfinite(top):
    return top
  return top + float(np.log(np.sum(np.exp(v - top))))


def verify(a_nxd, subset, x, p, eps: float = 0.05, delta: float = 0.1,
           ratio_rtol: float = 1e-6) -> dict:
  """Float64 check of Proposition 2 for embedding `x`.

  Returns a dict with the Prop. 2 event (`event_holds`: every other unscaled
  logit <= 1 - eps), the measured mass off S, the worst relative error of the
  ratios p_i / p_j on S, and `ok` (ratios within `ratio_rtol` and mass < delta).
  When the event fails the guarantee does not apply; `message` says so.
  """
  a = np.asarray(a_nxd, np.float64)
  subset = checks.subset_indices("subset", subset, a.shape[0])
  p = checks.probabilities("p", p, normalise=True)
  logits = a @ np.asarray(x, np.float64)
  ratio_err, rest_mass = softmax_on_subset(logits, subset, p)
  in_s_mask = np.zeros(a.shape[0], bool)
  in_s_mask[subset] = True
  y_s_min = float(logits[subset].min())
  # Unscaled logits are logits / s with s = min over S (ybar_min = 1).
  unscaled_rest_max = (float(logits[~in_s_mask].max() / y_s_min) if y_s_min > 0
                       else float("inf"))
  event = unscaled_rest_max <= 1.0 - eps
  ok = ratio_err <= ratio_rtol and rest_mass < delta
  if event:
    message = (f"Prop. 2 event holds (max other unscaled logit "
               f"{unscaled_rest_max:.4f} <= 1 - eps = {1 - eps:.4f}): mass off "
               f"S {rest_mass:.3g} {'<' if rest_mass < delta else '>='} "
               f"delta = {delta}.")
  else:
    message = (f"Prop. 2 event FAILS (max other unscaled logit "
               f"{unscaled_rest_max:.4f} > 1 - eps = {1 - eps:.4f}): the "
               f"guarantee does not apply; measured mass off S {rest_mass:.3g}.")
  return {"event_holds": bool(event), "ok": bool(ok),
          "rest_mass": rest_mass, "ratio_rel_error": ratio_err,
          "max_other_unscaled_logit": unscaled_rest_max, "message": message}

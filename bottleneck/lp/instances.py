"""LP instances of seed 001, Section 6: subsets, targets, thresholds.

  logits   equal logits 1 on S, every other logit < 1          (Fig. 1 blue)
  probs    prescribed probabilities p ~ U[0.1, 1.1] (normalised) with
           eps, delta: A_S x = ybar (eq. 14), others <= 1 - eps, then
           x * s (eq. 17) gives ratios p exactly and mass < delta off S
                                                                (Fig. 1 red)
  natural  as probs, with p = the top-m probabilities of a next-token
           distribution from a file (Appendix D)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bottleneck import checks, prescribed
from bottleneck.lp import admm

PROBLEMS = ("logits", "probs", "natural")


@dataclasses.dataclass(frozen=True)
class Instance:
  """One LP: token set, targets on it, decision threshold."""
  subset: np.ndarray  # [m] token indices.
  y: np.ndarray  # [m] target (unscaled) logits on S.
  threshold: float  # Feasible iff t* < threshold.
  p: np.ndarray | None = None  # Target probabilities (probs / natural).
  scale: float | None = None  # s of eq. (17).
  chain: int | None = None  # Instances of one chain have nested subsets
  # (lp.chains; `topm.sweeps(nested=True)`), None: alone.


def make_instances(N: int, m: int, trials: int, problem: str, rng, *,
                   eps: float = 0.05, delta: float = 0.1, targets=None,
                   subsets=None, draws=None) -> list[Instance]:
  """Random (or given) subsets with the targets of `problem`. `draws`
  (probs): per trial, U[0.1, 1.1] values of which the first m are that
  trial's unnormalised p (nested chains share them along m); None: fresh
  ones from `rng`."""
  checks.one_of("problem", problem, PROBLEMS)
  checks.int_in_range("m", m, 1, N - 1, f"a proper subset of the N = {N} "
                      "tokens")
  checks.positive_int("trials", trials)
  if problem == "natural":
    targets = checks.finite_array("targets", targets, ndim=2)
    rows = np.flatnonzero((targets > 0).sum(axis=1) >= m)
    if rows.size == 0:
      raise ValueError(f"`targets` has no row with at least m={m} positive "
                       "probabilities.")
  out = []
  for i in range(trials):
    subset = (rng.choice(N, size=m, replace=False) if subsets is None
              else checks.subset_indices("subsets", subsets[i], N))
    if problem == "logits":
      out.append(Instance(subset, np.ones(m), 1.0))
      continue
    if problem == "probs":
      p = (rng.uniform(0.1, 1.1, size=m) if draws is None else
           np.asarray(draws[i][:m], np.float64))
    else:
      row = targets[rows[rng.integers(rows.size)]]
      p = np.sort(row)[::-1][:m]
      p = p[rng.permutation(m)]  # Assigned to random tokens (App. D).
    p = p / p.sum()
    s = prescribed.scale(N, m, eps, delta)
    out.append(Instance(subset, prescribed.unscaled_targets(p, s), 1.0 - eps,
                        p=p, scale=s))
  return out


def pad(instances, m_pad: int, batch: int) -> admm.Problem:
  """Stacks instances into an admm.Problem, padding m and the batch."""
  inst = list(instances) + [instances[0]] * (batch - len(instances))
  subset = np.zeros((batch, m_pad), np.int32)
  mask = np.zeros((batch, m_pad), bool)
  y = np.zeros((batch, m_pad), np.float32)
  for i, it in enumerate(inst):
    m = it.subset.size
    subset[i, :m], mask[i, :m], y[i, :m] = it.subset, True, it.y
  thr = np.array([it.threshold for it in inst], np.float32)
  return admm.Problem(subset, mask, y, thr)

"""The tests behind seed 001's LP ledger rows (Figs. 1 and 3, App. D,
trained vs random): Clopper-Pearson brackets on a selectable fraction, the
bracket they put on m* (the largest m selectable with probability >= 0.99,
Fig. 3's caption), Fisher's exact test per m with Holm's correction and
its exact power to see a difference of 0.1 between two curves, and
Newcombe's interval of their difference (an equivalence test: the curves
are alike when every interval lies within +-0.1)."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from bottleneck import stats

ALPHA = 0.05  # Family-wise level of the per-m tests (Holm).
DIFF = 0.1  # The difference in fraction a comparison must be able to see.
POWER = 0.8  # ... with at least this probability, at every m tested.
# Above this many subsets per curve, Fisher's test and its power take the
# normal approximation (the exact ones cost O(n1 n2) memory and time).
EXACT_MAX = 5000


@functools.lru_cache(maxsize=4096)
def interval(k: int, n: int) -> tuple[float, float]:
  """stats.binomial_interval(k, n) at 95 %, cached (readers ask for the
  same fractions again and again)."""
  return stats.binomial_interval(k, n)


def count(r: dict, key: str, at: str = "") -> int:
  """r[key] as a count: a non-negative integer (an integral float is
  taken); anything else a ValueError naming the field."""
  v = r[key]
  field = f"{at}.{key}" if at else key
  if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
      math.isfinite(v) and v >= 0 and v == int(v)):
    raise ValueError(f"`{field}` must be a non-negative integer; got {v!r}")
  return int(v)


def counts(r: dict) -> tuple[int, int, int]:
  """(feasible, undecided, trials) of one record, checked: counts with
  feasible + undecided <= trials (ValueError naming the field)."""
  at = f"m = {r.get('m', '?')}"
  k, n = count(r, "feasible", at), count(r, "trials", at)
  u = count(r, "undecided", at) if "undecided" in r else 0
  if k + u > n:
    raise ValueError(f"`{at}.feasible` {k} (+ undecided {u}) exceeds "
                     f"`trials` {n}")
  return k, u, n


def selectable(r: dict) -> tuple[int, int]:
  """(k, n) of one record: feasible subsets (undecided ones counted as not
  selectable) of `trials`."""
  k, _, n = counts(r)
  return k, n


def selectable_or_open(r: dict) -> tuple[int, int]:
  """(k, n) with undecided subsets counted as selectable."""
  k, u, n = counts(r)
  return k + u, n


def n_text(recs) -> str:
  """'20' or '10..100': the subsets per m of some records."""
  ns = sorted({int(r["trials"]) for r in recs})
  return str(ns[0]) if len(ns) == 1 else f"{ns[0]}..{ns[-1]}"


def certify_n(level: float, confidence: float = 0.95) -> int:
  """Fewest subsets, all selectable, whose Clopper-Pearson lower end
  reaches `level`: n with ((1 - confidence) / 2)^(1/n) >= level."""
  return math.ceil(math.log((1 - confidence) / 2) / math.log(level))


class MBracket(NamedTuple):
  """What the Clopper-Pearson brackets of a curve say of m*_level."""
  lo: int  # Largest m whose fraction's lower end is >= level (0: none).
  hi: float  # Smallest m whose upper end is < level, minus 1 (inf: none).
  point: int  # Largest m with every sampled subset selectable (0: none).
  none_from: float  # Smallest m with no sampled subset selectable (inf).


def _prefix_end(recs, ok) -> int:
  """Largest m of sorted records whose every record up to it is `ok`."""
  last = 0
  for r in recs:
    if not ok(r):
      break
    last = r["m"]
  return last


def m_bracket(recs, level: float) -> MBracket:
  """m*_level in [lo, hi] at 95 % per end, assuming the probability falls
  with m (nested subsets along m, or bisection probes on fresh ones): lo
  and every smaller m tested are certified >= level (undecided subsets
  counted as not selectable), hi + 1 is the smallest m certified below it
  (undecided counted as selectable)."""
  recs = sorted(recs, key=lambda r: r["m"])
  ends = {r["m"]: interval(*selectable(r)) for r in recs}
  # Undecided instances count against the lower end and for the upper.
  below = [r["m"] for r in recs if interval(*selectable_or_open(r))[1]
           < level]
  none = [r["m"] for r in recs if selectable(r)[0] == 0]
  return MBracket(
      _prefix_end(recs, lambda r: ends[r["m"]][0] >= level),
      min(below) - 1 if below else math.inf,
      _prefix_end(recs, lambda r: selectable(r)[0] == selectable(r)[1]),
      min(none) if none else math.inf)


def bracket_text(b: MBracket, scale: float = 1.0, fmt: str = "d") -> str:
  """'[0, 94]' or, as m*/d, '[0.000, 0.092]'."""
  hi = "inf" if b.hi == math.inf else format(b.hi / scale if scale != 1
                                              else int(b.hi), fmt)
  lo = format(b.lo / scale if scale != 1 else b.lo, fmt)
  return f"[{lo}, {hi}]"


def fractions_near(recs, around: float, width: int = 2) -> str:
  """'95: 97/100 (0.915 .. 0.994)' for the `width` records on each side
  of `around`."""
  recs = sorted(recs, key=lambda r: r["m"])
  i = min(range(len(recs)), key=lambda j: abs(recs[j]["m"] - around))
  out = []
  for r in recs[max(0, i - width):i + width + 1]:
    k, n = selectable(r)
    lo, hi = interval(k, n)
    out.append(f"{r['m']}: {k}/{n} ({lo:.3f} .. {hi:.3f})")
  return ", ".join(out)


def holm(pvalues) -> list[float]:
  """Holm's step-down adjusted p-values (family-wise error <= alpha when
  an adjusted p < alpha rejects)."""
  p = np.asarray(pvalues, np.float64)
  order = np.argsort(p, kind="stable")
  k = len(p)
  adj = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k)) * p[order]))
  out = np.empty(k)
  out[order] = adj
  return out.tolist()


def _log_fact(n: int) -> np.ndarray:
  return np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])


def _check_sizes(n1, n2) -> None:
  for name, n in (("n1", n1), ("n2", n2)):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
      raise ValueError(f"`{name}` must be a positive integer; got {n!r}")


def fisher_p(k1: int, n1: int, k2: int, n2: int) -> float:
  """Two-sided p of k1/n1 against k2/n2: Fisher's exact test
  (stats.fisher_exact) up to EXACT_MAX subsets per curve, the pooled
  two-proportion z test above (its normal approximation)."""
  if max(n1, n2) <= EXACT_MAX:
    return stats.fisher_exact(k1, n1, k2, n2)
  z = stats.two_proportion_z(k1, n1, k2, n2)
  return min(1.0, 2 * NormalDist().cdf(-abs(z)))


def z_power(n1: int, n2: int, p1: float, p2: float, alpha: float) -> float:
  """Normal-approximation power of the pooled two-proportion z test (two
  sided, level alpha) when the fractions are p1 (of n1) and p2 (of n2)."""
  nd = NormalDist()
  pbar = (n1 * p1 + n2 * p2) / (n1 + n2)
  se0 = math.sqrt(pbar * (1 - pbar) * (1 / n1 + 1 / n2))
  se1 = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
  gap, z = abs(p1 - p2), nd.inv_cdf(1 - alpha / 2)
  if se1 == 0:
    return float(gap > 0 and gap > z * se0)
  return nd.cdf((gap - z * se0) / se1) + nd.cdf((-gap - z * se0) / se1)


@functools.lru_cache(maxsize=64)
def fisher_rejects(n1: int, n2: int, alpha: float) -> np.ndarray:
  """(n1 + 1) x (n2 + 1) booleans: whether Fisher's two-sided exact test
  (stats.fisher_exact's: tables no likelier than the observed) rejects
  k1/n1 against k2/n2 at p < alpha (n1, n2 <= EXACT_MAX: ValueError
  above, where fisher_power takes z_power)."""
  _check_sizes(n1, n2)
  if max(n1, n2) > EXACT_MAX:
    raise ValueError(f"`n1`, `n2` {n1}, {n2}: the exact rejection table "
                     f"is for at most {EXACT_MAX} subsets per curve")
  lf = _log_fact(n1 + n2)
  out = np.zeros((n1 + 1, n2 + 1), bool)
  for t in range(n1 + n2 + 1):
    a = np.arange(max(0, t - n2), min(n1, t) + 1)
    pmf = np.exp(lf[n1] - lf[a] - lf[n1 - a] + lf[n2] - lf[t - a]
                 - lf[n2 - t + a] - (lf[n1 + n2] - lf[t] - lf[n1 + n2 - t]))
    order = np.sort(pmf)
    cum = np.cumsum(order)
    p = cum[np.searchsorted(order, pmf * (1 + 1e-7), side="right") - 1]
    out[a, t - a] = np.minimum(p, 1.0) < alpha
  out.flags.writeable = False  # Cached: shared by every caller.
  return out


def _binom_pmf(n: int, p: float) -> np.ndarray:
  k = np.arange(n + 1)
  if p in (0.0, 1.0):
    return (k == (0 if p == 0.0 else n)).astype(np.float64)
  lf = _log_fact(n)
  return np.exp(lf[n] - lf[k] - lf[n - k] + k * math.log(p)
                + (n - k) * math.log1p(-p))


def fisher_power(n1: int, n2: int, p1: float, p2: float,
                 alpha: float) -> float:
  """Exact probability that Fisher's test rejects at p < alpha when the
  fractions are p1 (of n1) and p2 (of n2); z_power above EXACT_MAX."""
  _check_sizes(n1, n2)
  if max(n1, n2) > EXACT_MAX:
    return z_power(n1, n2, p1, p2, alpha)
  return float(_binom_pmf(n1, p1) @ fisher_rejects(n1, n2, alpha)
               @ _binom_pmf(n2, p2))


def power_to_see(n1: int, n2: int, p: float, diff: float = DIFF,
                 alpha: float = ALPHA) -> float:
  """Power to see fractions p and p -+ diff (the harder side that stays
  in [0, 1]; the second curve moved)."""
  sides = [q for q in (p - diff, p + diff) if 0.0 <= q <= 1.0]
  return min(fisher_power(n1, n2, q, p, alpha) for q in sides)


def wilson(k: int, n: int, level: float) -> tuple[float, float]:
  """Wilson's score interval of k/n at `level` (two-sided)."""
  z = NormalDist().inv_cdf(1 - (1 - level) / 2)
  p, z2 = k / n, z * z
  mid = (k + z2 / 2) / (n + z2)
  half = z * math.sqrt(n) / (n + z2) * math.sqrt(p * (1 - p) + z2 / (4 * n))
  return max(0.0, mid - half), min(1.0, mid + half)


def newcombe(k1: int, n1: int, k2: int, n2: int, level: float
             ) -> tuple[float, float]:
  """Newcombe's hybrid score interval of k1/n1 - k2/n2 at `level`
  (Newcombe 1998, method 10: Wilson ends of each fraction combined)."""
  p1, p2 = k1 / n1, k2 / n2
  l1, u1 = wilson(k1, n1, level)
  l2, u2 = wilson(k2, n2, level)
  d = p1 - p2
  return (d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
          d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def mcnemar_p(b: int, c: int) -> float:
  """McNemar's exact test of paired outcomes: two-sided p of b discordant
  pairs one way and c the other under Bin(b + c, 1/2) (1 with none)."""
  n = b + c
  if n == 0:
    return 1.0
  pmf = np.exp(_log_fact(n)[n] - _log_fact(n) - _log_fact(n)[::-1]
               - n * math.log(2))
  return float(min(1.0, 2 * pmf[:min(b, c) + 1].sum()))


def newcombe_paired(both: int, only1: int, only2: int, neither: int,
                    level: float) -> tuple[float, float]:
  """Newcombe's score interval of p1 - p2 from paired outcomes (Newcombe
  1998b, method 10): Wilson ends of each fraction combined with the
  pairs' phi correlation (0 where a margin is empty). With phi = 0 it is
  the unpaired `newcombe` at n1 = n2."""
  n = both + only1 + only2 + neither
  k1, k2 = both + only1, both + only2
  p1, p2 = k1 / n, k2 / n
  l1, u1 = wilson(k1, n, level)
  l2, u2 = wilson(k2, n, level)
  margins = k1 * (n - k1) * k2 * (n - k2)
  # Newcombe's phi: its numerator ad - bc less n/2 when above n/2, 0 up
  # to n/2 (Altman et al. 2000, p. 52), so the interval is never narrower.
  ad_bc = both * neither - only1 * only2
  num = ad_bc - n / 2 if ad_bc > n / 2 else min(ad_bc, 0)
  phi = num / math.sqrt(margins) if margins else 0.0
  d = p1 - p2
  lo = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
  hi = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
  return d - math.sqrt(max(lo, 0.0)), d + math.sqrt(max(hi, 0.0))


def paired_counts(ra: dict, rb: dict) -> tuple[int, int, int, int]:
  """(both, only a, only b, neither) selectable over the same subsets:
  the two records' `trials_detail`, trial k against trial k (undecided
  counted as not selectable); a ValueError naming the m if they do not
  pair."""
  da, db = ra.get("trials_detail"), rb.get("trials_detail")
  if not (isinstance(da, list) and isinstance(db, list)) or len(da) != len(
      db) or not da:
    raise ValueError(f"m = {ra.get('m', '?')}: a paired comparison needs "
                     "both curves' `trials_detail` over the same subsets "
                     "(equal lengths)")
  fa = [x.get("verdict") == "feasible" for x in da]
  fb = [x.get("verdict") == "feasible" for x in db]
  pairs = list(zip(fa, fb))
  out = (pairs.count((True, True)), pairs.count((True, False)),
         pairs.count((False, True)), pairs.count((False, False)))
  if (out[0] + out[1], out[0] + out[2]) != (selectable(ra)[0],
                                           selectable(rb)[0]):
    raise ValueError(f"m = {ra.get('m', '?')}: the `trials_detail` verdicts "
                     f"({out[0] + out[1]} and {out[0] + out[2]} feasible) "
                     "disagree with the records' `feasible` counts")
  return out


class Comparison(NamedTuple):
  """Two selectability curves compared m by m."""
  rows: list  # Per m: m, k1, n1, k2, n2, p, p_holm, power, lo, hi.
  worst: dict  # The row with the smallest Holm-adjusted p.
  min_power: float  # Smallest power over m (Bonferroni level alpha / k).
  in_transition: bool  # Some m with a pooled fraction strictly in (0, 1).
  word: str  # 'differ' (a Holm p < alpha), 'alike' (every m in the
  #            transition has its difference's interval within +-diff),
  #            'small' (neither, or no m in the transition).
  widest: dict | None  # The m in the transition whose interval reaches
  #                      furthest from 0 (None: no m in the transition).
  level: float  # Confidence of each difference's interval (Bonferroni).
  alike: bool = False  # Every m in the transition has its difference's
  #                      interval within +-diff (whatever `word` says).
  paired: bool = False  # McNemar and the paired interval (same subsets).


def _moving(r) -> bool:
  return 0 < r["k1"] + r["k2"] < r["n1"] + r["n2"]


def compare(a, b, alpha: float = ALPHA, diff: float = DIFF,
            paired: bool = False) -> Comparison:
  """Curve a against curve b (records over the same m): Fisher's exact
  test per m, Holm-corrected, for a difference; for equivalence (two one-
  sided tests, as intervals), Newcombe's interval of the difference at
  1 - alpha / k per m in the transition (k of them, Bonferroni) within
  +-diff; the power to see `diff` at the pooled fraction, at alpha / k.
  `paired` (both curves over the same subsets, trial by trial): McNemar's
  exact test and Newcombe's paired interval instead (the power column
  stays Fisher's unpaired one: no verdict reads it)."""
  b_of = {r["m"]: r for r in b}
  pairs = [(ra, b_of[ra["m"]]) for ra in a if ra["m"] in b_of]
  if not pairs:
    raise ValueError("the two curves share no m")
  raw, rows = [], []
  for ra, rb in pairs:
    (k1, n1), (k2, n2) = selectable(ra), selectable(rb)
    if not (n1 and n2):
      raise ValueError(f"`trials` is 0 at m = {ra['m']}")
    row = {"m": ra["m"], "k1": k1, "n1": n1, "k2": k2, "n2": n2}
    if paired:
      row["pairs"] = paired_counts(ra, rb)
      raw.append(mcnemar_p(*row["pairs"][1:3]))
    else:
      raw.append(fisher_p(k1, n1, k2, n2))
    rows.append(dict(row, p=raw[-1]))
  moving = [r for r in rows if _moving(r)]
  level = 1 - alpha / max(len(moving), 1)
  for r, adj in zip(rows, holm(raw)):
    r["p_holm"] = adj
    pooled = (r["k1"] + r["k2"]) / (r["n1"] + r["n2"])
    r["power"] = power_to_see(r["n1"], r["n2"], pooled, diff,
                              alpha / len(rows))
    r["lo"], r["hi"] = (newcombe_paired(*r["pairs"], level) if paired else
                        newcombe(r["k1"], r["n1"], r["k2"], r["n2"], level))
  worst = min(rows, key=lambda r: r["p_holm"])
  min_power = min(r["power"] for r in rows)
  widest = max(moving, key=lambda r: max(-r["lo"], r["hi"]), default=None)
  alike = bool(moving) and all(-diff < r["lo"] and r["hi"] < diff
                               for r in moving)
  word = ("differ" if worst["p_holm"] < alpha else
          "alike" if alike else "small")
  return Comparison(rows, worst, min_power, bool(moving), word, widest,
                    level, alike, paired)


def comparison_text(c: Comparison, names=("a", "b")) -> str:
  """Per-m fractions, the smallest Holm p and the widest interval of the
  difference, in words."""
  per_m = ", ".join(f"{r['m']}: {r['k1']}/{r['n1']} vs {r['k2']}/{r['n2']}"
                    for r in c.rows)
  w = c.worst
  test = "McNemar" if c.paired else "Fisher"
  out = (f"{names[0]} vs {names[1]} selectable at m = {per_m}; smallest "
         f"Holm-adjusted {test} p {w['p_holm']:.3g} (m = {w['m']}, raw "
         f"{w['p']:.3g})")
  if c.widest is None:
    return out + "; no m in the transition (every fraction 0 or 1)"
  x = c.widest
  return out + (f"; difference {x['k1'] / x['n1'] - x['k2'] / x['n2']:+.3f}"
                f" in [{x['lo']:+.3f}, {x['hi']:+.3f}] at m = {x['m']} "
                f"(the widest of the m in the transition, {c.level:.4g} "
                f"Newcombe{' paired' * c.paired}), against +-{DIFF}")


def subsets_for_equivalence(p1: float, p2: float, k_tests: int,
                            diff: float = DIFF, alpha: float = ALPHA,
                            most: int = 10 ** 7) -> int | None:
  """Fewest subsets per curve (a multiple of 50) whose Newcombe interval
  at 1 - alpha / k_tests lies within +-diff if the fractions stay p1 and
  p2; None when none up to `most` does (|p1 - p2| near or past diff)."""
  level = 1 - alpha / k_tests

  def inside(n):
    lo, hi = newcombe(round(p1 * n), n, round(p2 * n), n, level)
    return -diff < lo and hi < diff
  if abs(p1 - p2) >= diff or not inside(most):
    return None
  lo, hi = 0, most // 50  # inside(50 * hi), not known at lo.
  while hi - lo > 1:
    mid = (lo + hi) // 2
    lo, hi = (lo, mid) if inside(50 * mid) else (mid, hi)
  return 50 * hi


def subsets_for_power(p: float, k_tests: int, diff: float = DIFF,
                      alpha: float = ALPHA, power: float = POWER) -> int:
  """About how many subsets per m and curve see p against p -+ diff (the
  harder side) at alpha / k_tests with `power`: the arcsine normal
  approximation, rounded up to 50 (Fisher's exact test needs somewhat
  more; fisher_power checks a choice)."""
  z = NormalDist().inv_cdf
  need = max(
      2 * (z(1 - alpha / k_tests / 2) + z(power)) ** 2 / (
          2 * math.asin(math.sqrt(q)) - 2 * math.asin(math.sqrt(p))) ** 2
      for q in (p - diff, p + diff) if 0.0 <= q <= 1.0)
  return 50 * math.ceil(need / 50)


class Shift(NamedTuple):
  """Whether curve `after` lies below curve `before` at some m."""
  p_holm: float  # Smallest Holm-adjusted Fisher p of a pair showing it (1).
  m_before: float  # The pair: before's probe at m_before (nan: none) ...
  m_after: float  # ... against after's at m_after <= m_before.
  pairs: int  # Pairs tested (the Holm family).


def falls(before, after) -> Shift:
  """Fisher's test per pair of probes (m_a of `before`, m_b <= m_a of
  `after`), Holm over the pairs: the fractions fall with m, so after's
  fraction at m_b significantly below before's at m_a puts after's curve
  below before's at m_a (fresh subsets per probe: the pairs are
  independent samples)."""
  pairs = [(ra, rb) for ra in before for rb in after if rb["m"] <= ra["m"]]
  if not pairs:
    return Shift(1.0, math.nan, math.nan, 0)
  raw = []
  for ra, rb in pairs:
    (k1, n1), (k2, n2) = selectable(ra), selectable(rb)
    lower = n1 and n2 and k2 / n2 < k1 / n1
    raw.append(fisher_p(k1, n1, k2, n2) if lower else 1.0)
  adj = holm(raw)
  i = min(range(len(pairs)), key=lambda j: adj[j])
  return Shift(adj[i], pairs[i][0]["m"], pairs[i][1]["m"], len(pairs))

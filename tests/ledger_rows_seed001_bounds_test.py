"""Both sides of the thresholds of seed 001's closed-form rows (Table 1,
Fig. 5 / App. B, Prop. 2, Cor. 3's two bounds; issue 77), their statistics
against scipy, and Cor. 3's exact non-selectability certificates against
scipy's LP.

The TOO_SMALL inputs of Fig. 5 and Prop. 2 are the quick report's numbers
(50257 x 768, 800 trials per m; 5 subsets per m), so a change of either
reader's rule on today's data shows up here."""

import fractions
import itertools
import math

import numpy as np
from absl.testing import absltest
from scipy import optimize
from scipy import stats as sp_stats

from bottleneck import models, separation, signrank, stats
from configs import report as report_config
from tests import ledger_sides
from tests.ledger_sides import Case
from train.report import claim
from train.report import seed001_bounds as sections
from train.report import seed001_bounds_rows as rows

R, D, T = claim.REPRODUCED, claim.DISAGREES, claim.TOO_SMALL
CONFIGS = {"quick": {"scale": "quick", "threshold": 0.99},
           "full": {"scale": "full", "threshold": 0.99}}


def _table1(differ: int = 0) -> dict:
  recs = [{"model": m.label, "N": m.N, "d": m.d, "m_paper": m.m_paper,
           "m_gumbel": m.m_paper + (i < differ), "m_exact": m.m_paper + 2,
           "note": m.note} for i, m in enumerate(models.TABLE1)]
  return {"table1": {"rows": recs, "threshold": 0.99, "rows_matching_paper":
                     {"gumbel": len(recs) - differ}}}


# Fig. 5: the quick report's counts at 50257 x 768 (800 trials per m) and
# eq. (4)'s probability there.
QUICK_FIG5 = {20: (800, .99993), 24: (800, .99816), 25: (798, .99645),
              26: (798, .99350), 27: (795, .98863), 28: (793, .98089),
              29: (792, .96908), 30: (781, .95168), 31: (769, .92695),
              33: (752, .84796), 36: (683, .63710)}


def _figure5(counts: dict, n: int = 800, size=(50257, 768),
             method: str = "projected") -> dict:
  recs = [{"m": m, "trials": n, "selected": k, "fraction": k / n,
           "bound": b} for m, (k, b) in sorted(counts.items())]
  return {"figure5": {
      "N": size[0], "d": size[1], "method": method, "threshold": 0.99,
      "records": recs, "m_star_simulation": max(
          (m for m, (k, _) in counts.items() if k / n >= 0.99), default=0),
      "m_star_closed_form": {"exact": 26, "gumbel": 26,
                             "rowspace_exact": 28}}}


# 3000 trials per m: m* = 28 with both neighbours' intervals clear of 0.99
# (28: 0.9918 .. 0.9972; 29: 0.9800 .. 0.9890).
SHARP = {27: (2995, .98), 28: (2985, .97), 29: (2955, .96),
         30: (2850, .95)}


def _prop2(per_m: dict, failed: int = 0) -> dict:
  """per_m: {m: (subsets, events, eq. (11)'s bound)}."""
  recs = [{"m": m, "subsets": n, "event_holds": k, "scale_s": 190.0,
           "ok_when_event_holds": k - (failed if i == 0 else 0),
           "p_bound_eq11": b}
          for i, (m, (n, k, b)) in enumerate(sorted(per_m.items()))]
  return {"prescribed": {"records": recs}}


QUICK_PROP2 = {10: (5, 5, 1.0), 20: (5, 5, .99959), 26: (5, 5, .97539),
               40: (5, 1, .04202), 60: (5, 0, 5.4e-30)}
FULL_PROP2 = {**QUICK_PROP2, 35: (20, 11, .41927), 40: (20, 5, .04202)}


def _signrank(short: int = 0, lower_ok: bool = True) -> dict:
  exh = [{"N": 3 * m + 1, "m": m, "subsets": math.comb(3 * m + 1, m),
          "certified": math.comb(3 * m + 1, m) - (short if m == 3 else 0),
          "worst_exact_log10_margin": -m / 2} for m in (2, 3)]
  sweeps = [{"N": n, "m": m, "subsets": 20, "certified": c,
             "worst_exact_log10_margin": lg}
            for n, m, c, lg in ((1000, 2, 20, -7.9), (50257, 2, 20, -11.3),
                                (50257, 4, 19, -17.2), (50257, 64, 0, -46.3))]
  exact = [{"N": 50257, "m": 383, "subsets": 5, "certified": None,
            "worst_exact_log10_margin": -77.43}]
  lower = sections.lower_bound_checks([(7, 2), (10, 3)], 1, 0)
  if not lower_ok:
    lower[1]["certificate"]["certified"] = False
  return {"signrank": {"exhaustive": exh, "random_subsets": sweeps,
                       "exact_only": exact, "lower_bound": lower}}


def _nan_closed(form: str) -> dict:
  """_figure5(SHARP) with one closed-form m* NaN."""
  out = _figure5(SHARP, n=3000)
  out["figure5"]["m_star_closed_form"][form] = math.nan
  return out


def _nan_exact_only() -> dict:
  """_signrank() with the exact-only sweep's subset count NaN."""
  out = _signrank()
  out["signrank"]["exact_only"][0]["subsets"] = math.nan
  return out


def _nan_subset() -> dict:
  """_signrank() with a NaN in the first certificate's subset."""
  out = _signrank()
  cert = out["signrank"]["lower_bound"][0]["certificate"]
  cert["subset"] = list(cert["subset"])[:-1] + [math.nan]
  return out


def _both(where, sections_, verdict, note):
  """The same numbers under the quick and the full config: one verdict."""
  return [Case("001", where, sections_, cfg, {"": verdict}, f"{note} "
               f"({name} config)") for name, cfg in CONFIGS.items()]


FIG5, PROP2 = "Fig. 5 / App. B", "Prop. 2 / eq. (11), (17)"
UPPER, LOWER = "Cor. 3 (d* <= 2m + 2)", "Cor. 3 (d* >= 2m)"
CASES = [
    *_both("Table 1", _table1(), R, "22/22 rows equal"),
    *_both("Table 1", _table1(differ=1), D, "one row's m* differs"),
    *_both(FIG5, _figure5(QUICK_FIG5), T, "quick: m* in 26..29 holds 28"),
    *_both(FIG5, _figure5(SHARP, n=3000), R,
           "28's interval above 0.99, 29's under it; bound under"),
    *_both(FIG5, _figure5({**SHARP, 29: (2985, .96)}, n=3000), D,
           "29's interval above 0.99 too: m* >= 29, clear of 28"),
    *_both(FIG5, _figure5({**SHARP, 30: (2850, .999)}, n=3000), D,
           "eq. (4)'s probability over the simulation's interval"),
    *_both(FIG5, _figure5({2: (300, .9999), 4: (244, .67)}, n=300,
                          size=(2000, 64)), R,
           "another size: only the bound's side, under the interval"),
    *_both(FIG5, _figure5({2: (300, .9999)}, n=300, size=(2000, 64)), T,
           "another size, the bound inside the only interval"),
    *_both(PROP2, _prop2(QUICK_PROP2), T,
           "quick: 5 subsets per m, every interval holds (11)"),
    *_both(PROP2, _prop2(FULL_PROP2), T,
           "m = 40: 5/20 clears (11)'s 0.042, but at m = 35, where (11) "
           "is informative (0.42), 11/20 in 0.32 .. 0.77 straddles it"),
    *_both(PROP2, _prop2({**FULL_PROP2, 35: (200, 150, .41927)}), R,
           "m = 35: 150/200 in 0.68 .. 0.81, over (11)'s 0.42: every "
           "informative m cleared"),
    *_both(PROP2, _prop2(FULL_PROP2, failed=1), D,
           "the construction failed where the event held"),
    *_both(PROP2, _prop2({35: (40, 5, .41927)}), D,
           "5/40 in 0.04 .. 0.27, under (11)'s 0.42"),
    *_both(PROP2, _prop2({40: (20, 0, .0001), 60: (20, 0, 1e-30)}), T,
           "the event never held"),
    *_both(UPPER, _signrank(), R, "every exhaustive subset certified"),
    *_both(UPPER, _signrank(short=1), T, "float64 could not prove one"),
    *_both(LOWER, _signrank(), R, "every matrix has a certificate"),
    *_both(LOWER, _signrank(lower_ok=False), T, "one certificate fails"),
    *_both(FIG5, _nan_closed("gumbel"), claim.NOT_RUN,
           "a NaN closed-form m*: not run, never printed as nan"),
    *_both(UPPER, _nan_exact_only(), claim.NOT_RUN,
           "a NaN subset count at GPT-2's 383 tokens: not run"),
    *_both(LOWER, _nan_subset(), claim.NOT_RUN,
           "a NaN index in a certificate's subset: not run"),
]


def _lp_selectable(a, subset) -> bool:
  """scipy's LP: some x, t with a_i x - t >= 1 on S, a_j x - t <= -1 off S."""
  n, d = a.shape
  rest = np.setdiff1d(np.arange(n), subset)
  a_ub = np.vstack([np.hstack([-a[subset], np.ones((len(subset), 1))]),
                    np.hstack([a[rest], -np.ones((len(rest), 1))])])
  res = optimize.linprog(np.zeros(d + 1), A_ub=a_ub, b_ub=-np.ones(n),
                         bounds=(None, None), method="highs")
  assert res.status in (0, 2), res.message
  return res.status == 0


class LedgerRowsSeed001BoundsTest(absltest.TestCase):

  def test_each_row_on_both_sides_of_its_threshold(self):
    ledger_sides.check(self, CASES)

  def test_table1_names_the_papers_mislabels(self):
    row = rows.read_table1(_table1()["table1"], {})
    self.assertIn("Falcon-7B's width", row.why)
    self.assertIn("Gemma2-2B", row.why)
    self.assertIn("22/22", row.ours)

  def test_the_table1_section_on_the_real_closed_forms(self):
    numbers = sections.table1(report_config.get_config("tiny"),
                              self.create_tempdir().full_path).numbers
    row = rows.read_table1(numbers, {})
    self.assertEqual((row.verdict, row.n), (R, "22 rows of Table 1"))
    self.assertIn("d = 4544", row.why)

  def test_figure5_row_names_the_papers_28_and_what_would_decide(self):
    row = rows.read_figure5(_figure5(QUICK_FIG5)["figure5"], {})
    self.assertIn("26 .. 29", row.ours)
    self.assertIn("792/800", row.ours)
    self.assertIn("paper's 28", row.why)
    self.assertIn("equals the threshold", row.why)
    self.assertEqual(row.n, "50257 x 768, 800 trials per m, m = 20..36")

  def test_figure5_row_reads_the_exact_law_of_the_simulated_event(self):
    s = _figure5(QUICK_FIG5)["figure5"]
    law = {28: 0.99142, 29: 0.98627}
    for r in s["records"]:
      r["bound_rowspace_exact"] = law.get(r["m"], 0.5)
    row = rows.read_figure5(s, {})
    self.assertEqual(row.verdict, T)
    self.assertIn("0.9914 at m = 28 and 0.9863 at 29, so m* = 28", row.why)
    need = rows.trials_to_decide(0.99142, 0.99)
    self.assertIn(f"~{math.ceil(need)} trials per m", row.why)

  def test_brackets_are_scipys_clopper_pearson(self):
    for k, n in ((792, 800), (793, 800), (0, 20), (5, 20), (20, 20)):
      ci = sp_stats.binomtest(k, n).proportion_ci(0.95, method="exact")
      got = stats.binomial_interval(k, n)
      np.testing.assert_allclose(got, (ci.low, ci.high), atol=1e-9)
      br = rows.brackets([{"m": 1, "trials": n, "selected": k}])[0]
      self.assertEqual((br["lo"], br["hi"]), got)

  def test_m_star_range_and_trials_to_decide(self):
    br = [{"m": m, "lo": lo, "hi": hi} for m, lo, hi in (
        (1, .995, 1.0), (2, .992, .999), (3, .98, .995), (4, .95, .985))]
    self.assertEqual(rows.m_star_range(br, 0.99), (2, 3))
    self.assertEqual(rows.m_star_range(br[2:3], 0.99), (None, None))
    self.assertTrue(math.isinf(rows.trials_to_decide(0.99, 0.99)))
    n = rows.trials_to_decide(0.995, 0.99)  # The interval's half-width
    half = sp_stats.norm.ppf(0.975) * math.sqrt(0.995 * 0.005 / n)
    self.assertAlmostEqual(half, 0.005)  # at n equals the distance.

  def test_cor3_upper_row_carries_the_realisability_at_scale(self):
    row = rows.read_cor3_upper(_signrank()["signrank"], {})
    self.assertIn("10^-77", row.why)
    self.assertIn("up to m = 2", row.why)
    self.assertIn("m = 4: 19/20", row.why)

  def test_radon_certificates_agree_with_scipys_lp(self):
    rng = np.random.default_rng(1)
    for n, m in ((7, 2), (10, 3), (13, 4)):
      for a in (signrank.moment_curve_matrix(n, m - 1),
                rng.standard_normal((n, 2 * m - 1))):
        cert = separation.radon(a, m)
        self.assertLen(cert.subset, m)
        self.assertTrue(separation.check(a, cert))
        self.assertFalse(_lp_selectable(a, np.array(cert.subset)))
      # The same subset is selectable at d = 2m + 1 (the construction).
      wide = signrank.moment_curve_matrix(n, m)
      self.assertTrue(_lp_selectable(wide, np.array(cert.subset)))

  def test_check_refuses_a_wrong_certificate(self):
    a = np.random.default_rng(2).standard_normal((10, 5))
    cert = separation.radon(a, 3)
    self.assertTrue(separation.check(a, cert))
    half = tuple(w / 2 for w in cert.lam)
    moved = cert._replace(q=(cert.q[0] + 1,) + cert.q[1:])
    inside = cert._replace(q=(cert.subset[0],) + cert.q[1:])
    for bad in (cert._replace(lam=half), moved, inside):
      self.assertFalse(separation.check(a, bad), bad)

  def test_kernel_vector_is_exact(self):
    a = np.random.default_rng(3).standard_normal((4, 6))
    exact = [[fractions.Fraction(float(v)) for v in r] for r in a]
    alpha = separation.kernel_vector(exact)
    self.assertTrue(any(alpha))
    for r in exact:
      self.assertEqual(sum(x * y for x, y in zip(r, alpha)), 0)

  def test_a_few_moment_curve_counts_match_scipy(self):
    # On the construction's rows at degree m - 1 the LP finds unselectable
    # exactly the m-subsets with no two cyclic neighbours (m arcs need 2m
    # sign changes, more than a degree-(m - 1) polynomial has): the Radon
    # subsets are among them.
    for n, m in ((7, 2), (10, 3)):
      a = signrank.moment_curve_matrix(n, m - 1)
      bad = [s for s in itertools.combinations(range(n), m)
             if not _lp_selectable(a, np.array(s))]
      apart = [s for s in itertools.combinations(range(n), m)
               if all((s[(i + 1) % m] - s[i]) % n > 1 for i in range(m))]
      self.assertEqual(bad, apart)
      self.assertIn(separation.radon(a, m).subset, bad)


if __name__ == "__main__":
  absltest.main()

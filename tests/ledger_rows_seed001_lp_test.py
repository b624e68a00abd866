"""Seed 001's LP ledger rows (train/report/seed001_lp_claims.py) on each
side of their thresholds, and their statistics (seed001_lp_stats) against
scipy: Fisher's exact test's power by enumeration, Holm by its
definition, m*'s Clopper-Pearson bracket."""

import itertools
import math

from absl.testing import absltest
import numpy as np
from scipy import stats as sps

from configs import report
from tests import ledger_sides
from tests.ledger_sides import Case
from train.report import claim
from train.report import seed001_lp_stats as st

R, D, T, C, N = (claim.REPRODUCED, claim.DISAGREES, claim.TOO_SMALL,
                 claim.CONSISTENT, claim.NOT_RUN)
CONFIG = report.get_config("quick").to_dict()
GPT2 = [50257, 768]  # The figure1 section's `shape` at the paper's size.


def rec(m, k, n):
  return {"m": m, "feasible": k, "trials": n, "undecided": 0,
          "fraction": k / n}


def curve(pairs, n):
  """Records from [(m, k), ...] at n subsets per m."""
  return [rec(m, k, n) for m, k in pairs]


def fig3_row(d, m_star, probes, n=20, big_n=32000):
  return {"N": big_n, "d": d, "N_over_d": big_n / d, "m_star_lp": m_star,
          "m_star_lp_upper": m_star, "m_over_d": m_star / d,
          "probes": curve(probes, n)}


def fig3(rows_d, rows_n=()):
  return {"figure3": {"by_d": rows_d, "by_n": list(rows_n) or [
      fig3_row(256, 40, [(40, 20)], big_n=8000),
      fig3_row(256, 30, [(30, 20), (31, 10)], big_n=128000)]}}


# Fig. 3 (d): rising ratios below d/5 at small d; the largest d's bracket
# reaches the band (CONSISTENT) or stays under it (DISAGREES).
RISING = [fig3_row(128, 10, [(10, 20), (11, 15)]),
          fig3_row(256, 25, [(25, 20), (26, 14)]),
          fig3_row(512, 60, [(60, 20), (61, 12)])]
AT_5 = [fig3_row(d, d // 5, [(int(0.16 * d), 400), (int(0.24 * d), 0)], 400)
        for d in (128, 256, 512, 1024)]


def n_rows(m_first, first_probes, m_last, last_probes):
  return [fig3_row(256, m_first, first_probes, big_n=8000),
          fig3_row(256, m_last, last_probes, big_n=128000)]


def trained(pairs):
  return {"trained": {"pairs": {
      k: {"trained": a, "gaussian": b} for k, (a, b) in pairs.items()}}}


ALIKE = (curve([(20, 700), (40, 350), (60, 0)], 700),
         curve([(20, 700), (40, 357), (60, 0)], 700))
SMOL_DIFF = (curve([(40, 190), (50, 190), (60, 190), (70, 146)], 200),
             curve([(40, 200), (50, 200), (60, 200), (70, 150)], 200))
MINILM_10 = (curve([(40, 10), (50, 8), (60, 2)], 10),
             curve([(40, 10), (50, 9), (60, 3)], 10))
NOT_RUN_HEADS = {"smollm2": N, "gemma3": N}

CASES = [
    # Fig. 1 (top): m*'s bracket inside / clear of / across 95 +- 5, 85 +- 5.
    Case("001", "Fig. 1 (top)", {"figure1": {
        "shape": GPT2, "logits": curve([(85, 400), (90, 400), (95, 380)], 400),
        "probs": curve([(75, 400), (80, 400), (85, 370)], 400)}}, CONFIG,
         {"logits": R, "probs": R}, "400 subsets certify both ends"),
    Case("001", "Fig. 1 (top)", {"figure1": {
        "shape": GPT2, "logits": curve([(50, 10), (60, 3), (70, 0)], 10),
        "probs": curve([(80, 10), (95, 10), (100, 5)], 10)}}, CONFIG,
         {"logits": D, "probs": T}, "logits certified below 90; probs "
         "10/10 up to 95 cannot certify 0.99"),
    Case("001", "Fig. 1 (top)", {"figure1": {
        "shape": [1000, 32], "logits": curve([(50, 10), (60, 3)], 10)}},
         CONFIG, {"logits": T}, "a 1000 x 32 matrix: not the paper's shape"),
    # Fig. 1 (bottom): the 32000 x 4096 panel absent is 'not run'.
    Case("001", "Fig. 1 (bottom)", {"figure1": {"wide": {"32000x2048": {
        "records": curve([(375, 400), (400, 300)], 400)}}}}, CONFIG,
         {"32000x2048": R, "32000x4096": N}, "[375, 399] inside 400 +- 25"),
    Case("001", "Fig. 1 (bottom)", {"figure1": {"wide": {
        "32000x2048": {"records": curve([(300, 5), (325, 0)], 10)},
        "32000x4096": {"records": curve([(1050, 10), (1075, 6)], 10)}}}},
         CONFIG, {"32000x2048": D, "32000x4096": T},
         "below 375 / 10 subsets across 1070 +- 25"),
    # Fig. 3 (d).
    Case("001", "Fig. 3", fig3(AT_5), CONFIG, {"": R},
         "every d's bracket inside d/5 +- 25 % (400 subsets)"),
    Case("001", "Fig. 3", fig3(RISING + [fig3_row(
        1024, 158, [(158, 20), (159, 19), (200, 0)])]), CONFIG, {"": C},
         "rising, below d/5 at small d, the largest d reaching it"),
    Case("001", "Fig. 3", fig3(RISING + [fig3_row(
        1024, 100, [(100, 20), (101, 10)])]), CONFIG, {"": D},
         "below d/5 at every d, the largest included"),
    Case("001", "Fig. 3", fig3([fig3_row(d, d // 5, [(d // 5, 20),
                                                      (int(0.3 * d), 0)])
                                for d in (128, 256, 512)]), CONFIG, {"": T},
         "20 subsets: every bracket reaches into the band"),
    # Fig. 3 (N panel).
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        40, [(40, 20), (41, 19)], 30, [(30, 20), (31, 10)])), CONFIG,
         {"": R}, "30 below 40, slope -0.10"),
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        40, [(40, 20)], 4, [(4, 20), (5, 0)])), CONFIG, {"": D},
         "a fast fall: slope -0.83"),
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        30, [(30, 20), (31, 10)], 40, [(40, 20)])), CONFIG, {"": D},
         "m* rises with N"),
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        40, [(40, 20)], 30, [(30, 20), (50, 0)])), CONFIG, {"": T},
         "the largest N's bracket reaches 40"),
    # App. D: Fisher per m, Holm; power.
    Case("001", "App. D / Fig. 6", {"natural": {
        "natural": ALIKE[0], "uniform": ALIKE[1]}}, CONFIG, {"": R},
         "700 subsets per m, no difference: power >= 0.8 everywhere"),
    Case("001", "App. D / Fig. 6", {"natural": {
        "natural": curve([(20, 100), (40, 20)], 100),
        "uniform": curve([(20, 100), (40, 80)], 100)}}, CONFIG, {"": D},
         "0.2 against 0.8 at m = 40"),
    Case("001", "App. D / Fig. 6", {"natural": {
        "natural": curve([(20, 20), (40, 10)], 20),
        "uniform": curve([(20, 20), (40, 10)], 20)}}, CONFIG, {"": T},
         "20 subsets: no power"),
    # Trained vs Gaussian, one row per subject.
    Case("001", "Fig. 1 (solid vs dotted)", trained({"minilm": MINILM_10}),
         CONFIG, {"minilm": T, **NOT_RUN_HEADS},
         "MiniLM at 10 subsets per m"),
    Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"minilm": MINILM_10, "smollm2": SMOL_DIFF}), CONFIG,
         {"minilm": T, "smollm2": D, "gemma3": N},
         "SmolLM2 0.95 vs 1.00 at 200 subsets per m"),
    Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"smollm2": ALIKE, "gemma3": ALIKE}), CONFIG,
         {"smollm2": R, "gemma3": R}, "700 subsets per m, alike"),
]


class SeedLpRowsTest(absltest.TestCase):

  def test_every_case_gives_its_verdicts(self):
    ledger_sides.check(self, CASES)

  def test_verdicts_do_not_depend_on_the_scale(self):
    for case in CASES:
      for scale in ("tiny", "full", "paper"):
        other = case._replace(config=report.get_config(scale).to_dict())
        with self.subTest(where=case.where, note=case.note, scale=scale):
          self.assertEqual(ledger_sides.verdicts(other), case.verdicts)

  def test_fisher_rejects_is_scipys_test(self):
    for n1, n2, alpha in ((7, 9, 0.05), (12, 5, 0.01)):
      got = st.fisher_rejects(n1, n2, alpha)
      for k1, k2 in itertools.product(range(n1 + 1), range(n2 + 1)):
        p = sps.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
        if abs(p - alpha) > 1e-9:  # Ties at alpha are rounding.
          self.assertEqual(got[k1, k2], p < alpha, (n1, n2, k1, k2, p))

  def test_fisher_power_is_the_rejection_probability(self):
    n1, n2, p1, p2, alpha = 15, 11, 0.9, 0.4, 0.05
    want = sum(sps.binom.pmf(k1, n1, p1) * sps.binom.pmf(k2, n2, p2)
               for k1 in range(n1 + 1) for k2 in range(n2 + 1)
               if sps.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
               < alpha)
    self.assertAlmostEqual(st.fisher_power(n1, n2, p1, p2, alpha), want, 12)
    # The figure: 10 subsets per m see only large differences.
    self.assertLess(st.power_to_see(10, 10, 0.5), 0.1)
    self.assertGreater(st.power_to_see(600, 600, 0.5, alpha=0.05 / 4), 0.8)

  def test_subsets_for_power_is_near_the_exact_power(self):
    n = st.subsets_for_power(0.5, 4)
    self.assertGreater(st.power_to_see(n + 50, n + 50, 0.5,
                                       alpha=0.05 / 4), 0.8)
    self.assertLess(st.power_to_see(n - 100, n - 100, 0.5,
                                    alpha=0.05 / 4), 0.8)

  def test_holm_is_its_definition(self):
    p = [0.01, 0.04, 0.03, 0.005]
    k, order = len(p), np.argsort(p)
    want, running = [0.0] * k, 0.0
    for i, j in enumerate(order):
      running = max(running, min(1.0, (k - i) * p[j]))
      want[j] = running
    np.testing.assert_allclose(st.holm(p), want)
    np.testing.assert_allclose(st.holm(p), [0.03, 0.06, 0.06, 0.02])

  def test_m_bracket_and_certify_n(self):
    self.assertEqual(st.certify_n(0.99), 368)
    self.assertGreaterEqual(sps.binomtest(368, 368).proportion_ci(
        0.95, "exact").low, 0.99)
    self.assertLess(sps.binomtest(367, 367).proportion_ci(
        0.95, "exact").low, 0.99)
    b = st.m_bracket(curve([(85, 400), (90, 400), (95, 380), (100, 0)],
                           400), 0.99)
    self.assertEqual(b, st.MBracket(90, 94, 90, 100))
    b = st.m_bracket(curve([(85, 10), (95, 10), (100, 9), (105, 5)], 10),
                     0.99)
    self.assertEqual((b.lo, b.hi, b.point, b.none_from),
                     (0, 104, 95, math.inf))
    # Undecided subsets cannot certify a fraction below the level.
    open_ = dict(rec(100, 5, 10), undecided=5)
    b = st.m_bracket([rec(90, 10, 10), open_, rec(110, 0, 10)], 0.99)
    self.assertEqual((b.hi, b.point), (109, 90))


if __name__ == "__main__":
  absltest.main()

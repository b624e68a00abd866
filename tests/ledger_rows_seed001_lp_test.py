"""Seed 001's LP ledger rows (train/report/seed001_lp_claims.py) on each
side of their thresholds, and their statistics (seed001_lp_stats) against
scipy: Fisher's exact test's power by enumeration, Holm by its
definition, m*'s Clopper-Pearson bracket, Newcombe's interval (Wilson's
ends from scipy; Newcombe 1998's worked example), McNemar's exact test
(scipy's binomial test) and the paired interval (its coverage)."""

import itertools
import time
import math

from absl.testing import absltest
import numpy as np
from scipy import stats as sps

from configs import report
from tests import ledger_sides
from tests.ledger_sides import Case
from train.report import claim
from train.report import ledger
from train.report import seed001_lp_claims as lp_claims
from train.report import seed001_lp_stats as st

R, D, T, N, NA = (claim.REPRODUCED, claim.DISAGREES, claim.TOO_SMALL,
                  claim.NOT_RUN, claim.NOT_APPLICABLE)
CONFIG = report.get_config("quick").to_dict()
GPT2 = [50257, 768]  # The figure1 section's `shape` at the paper's size.


def rec(m, k, n):
  return {"m": m, "feasible": k, "trials": n, "undecided": 0,
          "fraction": k / n}


def curve(pairs, n):
  """Records from [(m, k), ...] at n subsets per m."""
  return [rec(m, k, n) for m, k in pairs]


def paired(cells):
  """Two curves over the same subsets from [(m, both, only a, only b,
  neither)], each record's trials_detail trial by trial."""
  out = ([], [])
  for m, *counts in cells:
    kinds = sum(([k] * c for k, c in zip(
        ((1, 1), (1, 0), (0, 1), (0, 0)), counts)), [])
    for side in (0, 1):
      detail = [{"verdict": "feasible" if k[side] else "infeasible"}
                for k in kinds]
      out[side].append(dict(rec(m, sum(k[side] for k in kinds),
                                len(kinds)), trials_detail=detail))
  return out


PAIRED_ALIKE = paired([(20, 700, 0, 0, 0), (40, 345, 5, 12, 338),
                       (60, 0, 0, 0, 700)])
# 350 against 385 of 700 at m = 40, half the pairs discordant: McNemar p
# 0.08, the paired interval past -0.1.
PAIRED_GAP = paired([(20, 700, 0, 0, 0), (40, 175, 175, 210, 140),
                     (50, 50, 25, 25, 600), (60, 0, 0, 0, 700)])


def fig3_row(d, m_star, probes, n=20, big_n=32000):
  return {"N": big_n, "d": d, "N_over_d": big_n / d, "m_star_lp": m_star,
          "m_star_lp_upper": m_star, "m_over_d": m_star / d,
          "probes": curve(probes, n)}


def fig3(rows_d, rows_n=()):
  return {"figure3": {"by_d": rows_d, "by_n": list(rows_n) or [
      fig3_row(256, 40, [(40, 20)], big_n=8000),
      fig3_row(256, 30, [(30, 20), (31, 10)], big_n=128000)]}}


# Fig. 3 (d): rising ratios below d/5 at small d; the largest d's bracket
# reaches the band or stays under it: DISAGREES either way (the small d's
# brackets lie clear under d/5; a rise is an observation, no verdict).
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
# Not significant (Holm p 0.28) with power 0.89 >= 0.8 to see 0.1, yet
# the difference's interval at m = 40 reaches -0.109: the old 'alike' rule
# said REPRODUCED; an equivalence test cannot.
GAP_005 = (curve([(20, 700), (40, 350), (50, 100), (60, 0)], 700),
           curve([(20, 700), (40, 385), (50, 100), (60, 0)], 700))
SMOL_DIFF = (curve([(40, 190), (50, 190), (60, 190), (70, 146)], 200),
             curve([(40, 200), (50, 200), (60, 200), (70, 150)], 200))
SMOL_FAR = (curve([(40, 190), (50, 150), (60, 100), (70, 40)], 200),
            curve([(40, 200), (50, 200), (60, 190), (70, 150)], 200))
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
         CONFIG, {"logits": NA}, "a 1000 x 32 matrix: not the paper's "
         "shape (a setup difference, not uncertainty)"),
    Case("001", "Fig. 1 (top)", {"figure1": {
        "shape": [1000, 32], "logits": curve([(85, 400), (90, 400),
                                              (95, 380)], 400)}},
         CONFIG, {"logits": NA}, "inside 95 +- 5 but at 1000 x 32: not "
         "applicable, whatever the numbers"),
    # Fig. 1 (bottom): the 32000 x 4096 panel absent is 'not run'.
    Case("001", "Fig. 1 (bottom)", {"figure1": {"wide": {"32000x2048": {
        "records": curve([(375, 400), (400, 300)], 400)}}}}, CONFIG,
         {"32000x2048": R, "32000x4096": N}, "[375, 399] inside 400 +- 25"),
    Case("001", "Fig. 1 (bottom)", {"figure1": {"wide": {
        "32000x2048": {"records": curve([(300, 5), (325, 0)], 10)},
        "32000x4096": {"records": curve([(1050, 10), (1075, 6)], 10)}}}},
         CONFIG, {"32000x2048": D, "32000x4096": T},
         "below 375 / 10 subsets across 1070 +- 25"),
    # Fig. 1's T5-Large / GPT2-XL panels: d/5 +- 25 % = 154 .. 256 and
    # 240 .. 400.
    Case("001", "Fig. 1 (T5-Large, GPT2-XL)", {"figure1": {"wide": {
        "32128x1024": {"records": curve([(180, 400), (200, 300)], 400)},
        "50257x1600": {"records": curve([(200, 5), (220, 0)], 10)}}}},
         CONFIG, {"T5-Large": R, "GPT2-XL": D},
         "[180, 199] inside; GPT2-XL certified below 220 < 240"),
    Case("001", "Fig. 1 (T5-Large, GPT2-XL)", {"figure1": {"wide": {
        "32128x1024": {"records": curve([(150, 10), (180, 0)], 10)}}}},
         CONFIG, {"T5-Large": T, "GPT2-XL": N}, "10 subsets cannot certify "
         "0.99; GPT2-XL not run"),
    # Fig. 3 (d).
    Case("001", "Fig. 3", fig3(AT_5), CONFIG, {"": R},
         "every d's bracket inside d/5 +- 25 % (400 subsets)"),
    Case("001", "Fig. 3", fig3(RISING + [fig3_row(
        1024, 158, [(158, 20), (159, 19), (200, 0)])]), CONFIG, {"": D},
         "rising, below d/5 at small d, the largest d reaching it: the "
         "small d disagree (no 'consistent in direction')"),
    Case("001", "Fig. 3", fig3([fig3_row(d, d // 5, [(d // 5, 20),
                                                      (int(0.3 * d), 0)])
                                for d in (128, 256)] + [fig3_row(
        512, 200, [(140, 400), (200, 400)], 400)]), CONFIG, {"": D},
         "a bracket clear above the band (512: 400/400 at 200 > 128)"),
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
         {"": claim.CONSISTENT}, "30 below 40, point slope -0.10: the "
         "fall tested, its rate not"),
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        40, [(40, 20)], 4, [(4, 20), (5, 0)])), CONFIG, {"": T},
         "a fast fall: point slope -0.83, no interval"),
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        30, [(30, 20), (31, 10)], 40, [(40, 20)])), CONFIG, {"": D},
         "m* rises with N"),
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        40, [(40, 20)], 30, [(30, 20), (50, 0)])), CONFIG, {"": T},
         "the largest N's bracket reaches 40"),
    Case("001", "Fig. 3 (N panel)", fig3(AT_5, n_rows(
        40, [(40, 20)], 30, [(30, 20), (31, 15), (50, 0)])), CONFIG,
         {"": T}, "the smallest N's bracket [0, inf]; the largest N's 15/20 "
         "at 31 against 20/20 at 40: Fisher p 0.047, Holm over 2 pairs "
         "not significant (the old rule, hi 30 < m* 40, said reproduced)"),
    # App. D: McNemar per m on the same subsets, Holm; paired intervals.
    Case("001", "App. D / Fig. 6", {"natural": {
        "natural": PAIRED_ALIKE[0], "uniform": PAIRED_ALIKE[1]}}, CONFIG,
         {"": R}, "700 subsets per m, 17 discordant at m = 40: alike"),
    Case("001", "App. D / Fig. 6", {"natural": dict(zip(
        ("natural", "uniform"), paired([(20, 100, 0, 0, 0),
                                        (40, 20, 0, 60, 20)])))}, CONFIG,
         {"": D}, "0.2 against 0.8 at m = 40"),
    Case("001", "App. D / Fig. 6", {"natural": dict(zip(
        ("natural", "uniform"), paired([(20, 20, 0, 0, 0),
                                        (40, 5, 5, 5, 5)])))}, CONFIG,
         {"": T}, "20 subsets: no power"),
    Case("001", "App. D / Fig. 6", {"natural": {
        "natural": PAIRED_GAP[0], "uniform": PAIRED_GAP[1]}}, CONFIG,
         {"": T}, "a gap of 0.05 at 700 subsets, half the pairs "
         "discordant: not significant, its interval past -0.1"),
    # Trained vs Gaussian, one row per subject.
    Case("001", "Fig. 1 (solid vs dotted)", trained({"minilm": MINILM_10}),
         CONFIG, {"minilm": T, **NOT_RUN_HEADS},
         "MiniLM at 10 subsets per m"),
    Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"minilm": MINILM_10, "smollm2": SMOL_DIFF}), CONFIG,
         {"minilm": T, "smollm2": T, "gemma3": N},
         "SmolLM2 0.95 vs 1.00 at 200 subsets per m: significant, but the "
         "interval reaches inside +-0.1"),
    Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"minilm": MINILM_10, "smollm2": SMOL_FAR}), CONFIG,
         {"minilm": T, "smollm2": D, "gemma3": N},
         "SmolLM2 0.5 vs 0.95 at m = 60: clear of +-0.1"),
    Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"smollm2": ALIKE, "gemma3": ALIKE}), CONFIG,
         {"smollm2": R, "gemma3": R}, "700 subsets per m, alike"),
    Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"smollm2": GAP_005, "gemma3": ALIKE}), CONFIG,
         {"smollm2": T, "gemma3": R}, "SmolLM2 a gap of 0.05 at 700"),
]


def row(case):
  c = ledger_sides.claim_of(case.paper, case.where)
  return ledger._read(c, case.sections, case.config, case.where,  # pylint: disable=protected-access
                      strict=True)


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

  def test_real_heads_why_names_the_deciding_run(self):
    case = Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"smollm2": GAP_005, "minilm": GAP_005}), CONFIG, {})
    got = {r.subject: r for r in row(case)}
    paper = report.get_config("paper").trained.heads_trials
    self.assertIn(f"--scale=paper {paper}", got["smollm2"].why)
    self.assertNotIn("--scale=paper", got["minilm"].why)
    self.assertIn("m = 40: about", got["smollm2"].why)

  def test_figure1_off_shape_says_why(self):
    case = CASES[2]
    self.assertEqual(case.verdicts, {"logits": NA})
    (r,) = row(case)
    self.assertIn("not the paper's 50257 x 768", r.why)

  def test_figure3_states_per_d_verdicts_and_the_asymmetry(self):
    case = Case("001", "Fig. 3", fig3(RISING + [fig3_row(
        1024, 158, [(158, 20), (159, 19), (200, 0)])]), CONFIG, {})
    (r,) = row(case)
    self.assertIn("disagrees at d = 128, 256, 512", r.ours)
    self.assertIn("too small to speak at d = 1024", r.ours)
    self.assertIn("368", r.uncertainty)
    self.assertIn("inferred", " ".join(r.deviations))

  def test_figure3_n_lists_slowly_as_inferred(self):
    (r,) = row(CASES[[c.where for c in CASES].index("Fig. 3 (N panel)")])
    self.assertIn("definition of 'slowly' inferred (log-log slope > -0.5)",
                  r.deviations)

  def test_identical_rows_are_a_deviation(self):
    numbers = trained({"smollm2": ALIKE})
    numbers["trained"]["pairs"]["smollm2"]["identical_rows"] = {
        "tokens": 15, "groups": 4, "split_subsets": [
            {"m": 20, "split": 3}, {"m": 40, "split": 5}]}
    (r, _) = row(Case("001", "Fig. 1 (solid vs dotted)", numbers, CONFIG,
                      {}))
    said = " ".join(r.deviations)
    self.assertIn("15 tokens in 4 groups of identical rows", said)
    self.assertIn("20: 3, 40: 5", said)
    (r, _) = row(Case("001", "Fig. 1 (solid vs dotted)", trained(
        {"smollm2": ALIKE}), CONFIG, {}))
    self.assertNotIn("identical", " ".join(r.deviations))

  def test_malformed_counts_are_named(self):
    bad = {"negative trials": (rec(40, 5, -10), "trials"),
           "feasible > trials": (rec(40, 11, 10), "feasible"),
           "fractional trials": (rec(40, 5, 10.5), "trials"),
           "undecided past trials": (dict(rec(40, 8, 10), undecided=3),
                                     "feasible")}
    for note, (r, field) in bad.items():
      with self.subTest(note=note):
        case = Case("001", "App. D / Fig. 6", {"natural": {
            "natural": [r], "uniform": [rec(40, 5, 10)]}}, CONFIG, {})
        with self.assertRaisesRegex(ledger.Malformed, field):
          row(case)
    for v in (math.nan, math.inf):  # Not a number: 'not run'.
      case = Case("001", "App. D / Fig. 6", {"natural": {
          "natural": [rec(40, 5, v)], "uniform": [rec(40, 5, 10)]}},
                  CONFIG, {})
      self.assertEqual(ledger_sides.verdicts(case), {"": N})
    case = Case("001", "Fig. 3", fig3([dict(fig3_row(128, 10, [(10, 20)]),
                                            d=-128)] + RISING), CONFIG, {})
    with self.assertRaisesRegex(ledger.Malformed, "d"):
      row(case)

  def test_huge_trials_take_the_normal_approximation(self):
    start = time.perf_counter()
    big = 10 ** 12
    got = lp_claims.comparison_row(
        curve([(40, big // 2)], big), curve([(40, big // 2 + 10 ** 3)], big),
        ("a", "b"), statistic="")
    self.assertEqual(got.verdict, R)  # Gap 1e-9, interval ~3e-6 wide.
    got = lp_claims.comparison_row(
        curve([(40, big // 2)], big), curve([(40, big // 2 + 10 ** 9)], big),
        ("a", "b"), statistic="")
    # Gap 0.001: significant at 1e12, but inside the +-0.1 margin.
    self.assertEqual(got.verdict, R)
    self.assertIn("alike within the margin", got.why)
    self.assertLess(time.perf_counter() - start, 5)
    with self.assertRaisesRegex(ValueError, "n1"):
      st.fisher_rejects(-1, 5, 0.05)
    with self.assertRaisesRegex(ValueError, "at most"):
      st.fisher_rejects(st.EXACT_MAX + 1, 5, 0.05)

  def test_normal_approximation_meets_the_exact_at_the_cap(self):
    n = st.EXACT_MAX
    for k1, k2 in ((2500, 2500), (2500, 2600), (4900, 4950), (100, 140)):
      exact = st.stats.fisher_exact(k1, n, k2, n)
      z = st.fisher_p(k1, n + 1, k2, n + 1)  # Just over: the z test.
      self.assertAlmostEqual(exact, z, delta=0.02, msg=(k1, k2))
    exact = st.fisher_power(n, n, 0.5, 0.47, 0.05)
    self.assertAlmostEqual(exact, st.z_power(n, n, 0.5, 0.47, 0.05),
                           delta=0.02)
    self.assertEqual(st.fisher_power(n + 1, n + 1, 0.5, 0.47, 0.05),
                     st.z_power(n + 1, n + 1, 0.5, 0.47, 0.05))

  def test_newcombe_interval(self):
    # Newcombe (1998), Stat. Med. 17:873, Table II (h): 56/70 - 48/80.
    lo, hi = st.newcombe(56, 70, 48, 80, 0.95)
    self.assertAlmostEqual(lo, 0.0524, 4)
    self.assertAlmostEqual(hi, 0.3339, 4)
    for k, n in ((0, 20), (7, 20), (20, 20), (350, 700)):
      ci = sps.binomtest(k, n).proportion_ci(0.99, "wilson")
      np.testing.assert_allclose(st.wilson(k, n, 0.99), (ci.low, ci.high),
                                 atol=1e-12)

  def test_mcnemar_against_scipy(self):
    for b, c in ((0, 0), (5, 12), (0, 7), (175, 210), (60, 0), (3, 3)):
      want = sps.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
      self.assertAlmostEqual(st.mcnemar_p(b, c), want, 10)

  def test_paired_interval(self):
    # Uncorrelated pairs (phi = 0): the unpaired interval at n1 = n2.
    np.testing.assert_allclose(st.newcombe_paired(10, 10, 10, 10, 0.95),
                               st.newcombe(20, 40, 20, 40, 0.95))
    # Correlated pairs narrow it, around the same difference.
    lo, hi = st.newcombe_paired(345, 5, 12, 338, 0.95)
    ulo, uhi = st.newcombe(350, 700, 357, 700, 0.95)
    self.assertTrue(ulo < lo < -0.01 < hi < uhi)
    # Newcombe's phi takes n/2 off ad - bc: (45, 2, 2, 1) is [-0.105,
    # +0.105], not the uncorrected [-0.098, +0.098] (Altman 2000, p. 52).
    lo, hi = st.newcombe_paired(45, 2, 2, 1, 0.95)
    self.assertAlmostEqual(hi, 0.105, 3)
    self.assertAlmostEqual(lo, -0.105, 3)
    # Coverage at 95 % on correlated pairs (Newcombe's method 10 keeps
    # close to nominal): 2000 draws of 60 pairs.
    rng = np.random.default_rng(0)
    cells = np.array([0.35, 0.05, 0.15, 0.45])  # p1 0.40, p2 0.50.
    hits = 0
    for draw in rng.multinomial(60, cells, size=2000):
      lo, hi = st.newcombe_paired(*map(int, draw), 0.95)
      hits += lo <= -0.1 <= hi
    self.assertGreater(hits / 2000, 0.93)

  def test_paired_comparison_needs_the_same_subsets(self):
    a, b = paired([(40, 50, 0, 10, 40)])
    c = st.compare(a, b, paired=True)
    self.assertEqual(c.rows[0]["pairs"], (50, 0, 10, 40))
    self.assertLess(c.worst["p"], 0.01)  # McNemar sees the nested gap ...
    self.assertGreater(st.compare(a, b).worst["p"], 0.1)  # ... Fisher not.
    with self.assertRaisesRegex(ValueError, "same subsets"):
      st.compare(curve([(40, 50)], 100), b, paired=True)
    lying = [dict(b[0], feasible=10)]  # Counts against the verdicts.
    with self.assertRaisesRegex(ValueError, "disagree with the records"):
      st.compare(a, lying, paired=True)
    short = [dict(b[0], trials_detail=b[0]["trials_detail"][:-1])]
    with self.assertRaisesRegex(ValueError, "m = 40"):
      st.compare(a, short, paired=True)

  def test_subsets_for_equivalence(self):
    n = st.subsets_for_equivalence(0.5, 0.52, 4)
    level = 1 - 0.05 / 4
    lo, hi = st.newcombe(round(0.5 * n), n, round(0.52 * n), n, level)
    self.assertTrue(-0.1 < lo and hi < 0.1)
    m = n - 50
    lo, hi = st.newcombe(round(0.5 * m), m, round(0.52 * m), m, level)
    self.assertFalse(-0.1 < lo and hi < 0.1)
    self.assertIsNone(st.subsets_for_equivalence(0.5, 0.61, 4))


if __name__ == "__main__":
  absltest.main()


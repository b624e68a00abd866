"""The exact finish (lp.finish): interior point with row generation on the
rows an iterate names, against scipy/HiGHS, and its use by topm.solve."""

from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck import topm
from bottleneck.lp import admm, bracket, certificates, exact, finish
from bottleneck.lp import instances
from bottleneck.lp import facts as lp_facts
from tests import lp_test
from tests.lp_modes_test import _highs_t


def _band_instances(a, m, trials, seed):
  """Subsets of a random A at m and their HiGHS t* (the reference)."""
  rng = np.random.default_rng(seed)
  insts = topm.make_instances(a.shape[0], m, trials, "logits", rng)
  return insts, [_highs_t(a, it.subset, it.y) for it in insts]


def _finish_duals(a, m, trials, seed):
  """(instance, HiGHS t*, lp.finish's duals from the row-space point) for
  subsets of A at m, and A's facts."""
  facts = lp_facts.MatrixFacts(a)
  insts, truth = _band_instances(a, m, trials, seed)
  return facts, [(it, t_star, finish.solve(
      facts, it.subset, it.y, facts.rowspace(it.subset, it.y)[0])[1])
                 for it, t_star in zip(insts, truth)]


def _unbounded_instance(seed, n=1500, d=24, m=6):
  """(A, S, y) whose rows outside S lie below a direction v orthogonal to
  A_S: v is a ray, t* = -inf."""
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((n, d))
  v = rng.standard_normal(d)
  v /= np.linalg.norm(v)
  subset = rng.choice(n, m, replace=False)
  rest = np.setdiff1d(np.arange(n), subset)
  a[subset] -= np.outer(a[subset] @ v, v)
  a[rest] -= np.outer(a[rest] @ v + 0.05 + 0.1 * np.abs(
      rng.standard_normal(rest.size)), v)
  return a, subset, np.ones(m)


class FinishTest(absltest.TestCase):

  def test_t_star_and_certified_bracket_match_highs(self):
    a = np.random.default_rng(0).standard_normal((1500, 32))
    facts = lp_facts.MatrixFacts(a)
    insts, truth = _band_instances(a, 9, 4, 1)
    for it, t_star in zip(insts, truth):
      # A poor start: the row-space point, which names the wrong rows.
      x0 = facts.rowspace(it.subset, it.y)[0]
      x_w, duals, t_w, info = finish.solve(facts, it.subset, it.y, x0)
      self.assertEqual(info["violated"], 0)
      self.assertAlmostEqual(t_w, t_star, delta=1e-7 * max(1, abs(t_star)))
      lower, upper, _ = bracket.bracket(facts, it.subset, it.y, x_w,
                                        duals=duals)
      self.assertLessEqual(lower, t_star + 1e-9)
      self.assertGreaterEqual(upper, t_star - 1e-9)
      self.assertLess(upper - lower, 1e-4 * max(1, abs(t_star)))

  def test_row_generation_from_a_set_that_leaves_the_lp_unbounded(self):
    # Twice d + 1 - m rows around the row-space point cannot bound the
    # LP on their own here: the box holds it, and violated rows are added.
    a = np.random.default_rng(2).standard_normal((4000, 24))
    facts = lp_facts.MatrixFacts(a)
    insts, truth = _band_instances(a, 6, 2, 3)
    rounds = []
    for it, t_star in zip(insts, truth):
      x0 = facts.rowspace(it.subset, it.y)[0]
      _, _, t_w, info = finish.solve(facts, it.subset, it.y, x0,
                                     s=finish.Settings(rows_factor=1.0))
      rounds.append(info["rounds"])
      self.assertAlmostEqual(t_w, t_star, delta=1e-7 * max(1, abs(t_star)))
    self.assertGreater(max(rounds), 1)

  def test_a_stalled_round_with_nothing_violated_widens_w(self):
    # A round whose interior point stops short of its tolerances at a
    # point that violates no row (numpy 2.5's floats on a degenerate W of
    # SolveWithFinishTest's band, where 2.4's left one row violated) gets
    # the rows nearest to active and a next round, not "no result".
    a = np.random.default_rng(0).standard_normal((1500, 32))
    facts = lp_facts.MatrixFacts(a)
    (it,), (t_star,) = _band_instances(a, 9, 1, 1)
    x0 = exact.solve(a, it.subset, it.y)["x"]  # W names the active rows.
    _, _, t_w, info = finish.solve(facts, it.subset, it.y, x0)
    self.assertEqual(info["rounds"], 1)  # Converged at once, unstalled.
    real, calls = finish._ipm, []

    def stalled_first(f, h, box, s, **kwargs):
      w, duals, on_box, converged = real(f, h, box, s, **kwargs)
      calls.append(f.shape[0])
      return w, duals, on_box, converged and len(calls) > 1

    with mock.patch.object(finish, "_ipm", side_effect=stalled_first):
      x_w, _, t_w, info = finish.solve(facts, it.subset, it.y, x0)
    self.assertIsNotNone(x_w)
    self.assertEqual(info["rounds"], 2)
    self.assertGreater(calls[1], calls[0])  # W grew.
    self.assertAlmostEqual(t_w, t_star, delta=1e-7 * max(1, abs(t_star)))

  def test_unbounded_lp_comes_back_as_a_ray(self):
    # Rows outside S pushed below a direction v orthogonal to A_S: v is a
    # ray (t* = -inf; HiGHS: unbounded). Every restriction W has it too,
    # so the box solve sits on the box and the ray rounds must find v.
    a, subset, y = _unbounded_instance(0)
    res = lp_test._linprog_result(a, subset, y)
    self.assertEqual(res.status, 3)  # Unbounded.
    facts = lp_facts.MatrixFacts(a)
    x, duals, t_w, info = finish.solve(facts, subset, y,
                                       facts.rowspace(subset, y)[0])
    self.assertEqual(t_w, -np.inf)
    self.assertEmpty(duals)
    self.assertTrue(info["on_box"])
    self.assertTrue(certificates.check_unbounded(facts, subset, x)["ok"])
    # The point itself puts S on top with a margin of 1.
    self.assertTrue(certificates.check_feasible(facts, subset, y, x,
                                                0.0)["ok"])

  def test_threshold_stops_at_the_round_that_settles_the_side(self):
    # From a poor start (several rounds to t*), a threshold 2 % above or
    # below HiGHS's t* is settled in fewer rounds, on the right side, and
    # the settled side's evidence certifies it in float64.
    a = np.random.default_rng(2).standard_normal((4000, 24))
    facts = lp_facts.MatrixFacts(a)
    insts, truth = _band_instances(a, 6, 2, 3)
    s = finish.Settings(rows_factor=1.0)
    fewer = []
    for it, t_star in zip(insts, truth):
      x0 = facts.rowspace(it.subset, it.y)[0]
      full = finish.solve(facts, it.subset, it.y, x0, s=s)[3]["rounds"]
      for threshold, side in ((t_star - 0.02 * abs(t_star), "infeasible"),
                              (t_star + 0.02 * abs(t_star), "feasible")):
        x_w, duals, _, info = finish.solve(facts, it.subset, it.y, x0, s=s,
                                           threshold=threshold)
        self.assertEqual(info["settled"], side)
        self.assertLessEqual(info["rounds"], full)
        fewer.append(info["rounds"] < full)
        lower, upper, _ = bracket.bracket(
            facts, it.subset, it.y, x_w if side == "feasible" else None,
            duals=duals if side == "infeasible" else (), threshold=threshold)
        self.assertTrue(upper < threshold if side == "feasible" else
                        lower >= threshold)
        self.assertLessEqual(lower, t_star + 1e-9)
        self.assertGreaterEqual(upper, t_star - 1e-9)
    self.assertTrue(any(fewer))

  def test_feasible_side_needs_no_converged_round(self):
    # 6 interior-point iterations per round: no round converges, so
    # solving returns nothing; deciding, a round's point (A_S x = y by
    # construction) whose other logits all lie below the threshold is
    # returned, and check_feasible's float64 bound confirms it.
    a = np.random.default_rng(2).standard_normal((4000, 24))
    facts = lp_facts.MatrixFacts(a)
    insts, truth = _band_instances(a, 6, 2, 3)
    s = finish.Settings(max_iters=6)
    for it, t_star in zip(insts, truth):
      x0 = facts.rowspace(it.subset, it.y)[0]
      self.assertIsNone(finish.solve(facts, it.subset, it.y, x0, s=s)[0])
      threshold = t_star + 0.05 * abs(t_star)
      x, _, top, info = finish.solve(facts, it.subset, it.y, x0, s=s,
                                     threshold=threshold)
      self.assertEqual(info["settled"], "feasible")
      self.assertFalse(info["converged"])
      cert = certificates.check_feasible(facts, it.subset, it.y, x, np.inf)
      self.assertLess(cert["t_upper"], threshold)
      self.assertGreaterEqual(cert["t_upper"], t_star - 1e-9)

  def test_threshold_settles_an_unbounded_lp_before_its_ray(self):
    # t* = -inf (as in test_unbounded_lp_comes_back_as_a_ray), but the
    # first rays of W are not rays of the LP: deciding, the descent along
    # them from x already puts every other logit below the threshold, a
    # point check_feasible certifies, rounds before the LP's own ray.
    a, subset, y = _unbounded_instance(2)
    self.assertEqual(lp_test._linprog_result(a, subset, y).status, 3)
    facts = lp_facts.MatrixFacts(a)
    x0 = facts.rowspace(subset, y)[0]
    _, _, t_w, full = finish.solve(facts, subset, y, x0)
    self.assertEqual(t_w, -np.inf)
    x, duals, top, info = finish.solve(facts, subset, y, x0, threshold=1.0)
    self.assertEqual(info["settled"], "feasible")
    self.assertLess(info["rounds"], full["rounds"])
    self.assertEmpty(duals)
    cert = certificates.check_feasible(facts, subset, y, x, 1.0)
    self.assertTrue(cert["ok"])
    self.assertAlmostEqual(cert["t_upper"], top, delta=1e-9)

  def test_duals_are_dual_points_checked_in_float64(self):
    a = np.random.default_rng(4).standard_normal((800, 20))
    facts, cases = _finish_duals(a, 6, 2, 5)
    for it, t_star, duals in cases:
      certs = [certificates.check_infeasible_global(
          facts, it.subset, it.y, mu, -np.inf, **bracket.EXACT)
               for mu in duals]
      good = [c["t_lower"] for c in certs if c["ok"]]
      self.assertNotEmpty(good)
      self.assertLessEqual(max(good), t_star + 1e-9)
      # A tampered dual (mass moved to a row far from active) is refused
      # or proves much less.
      mu = duals[-1].copy()
      far = np.argmin(a @ facts.rowspace(it.subset, it.y)[0])
      mu[far] += 0.5 * mu.max()
      cert = certificates.check_infeasible_global(
          facts, it.subset, it.y, mu, -np.inf, **bracket.EXACT)
      self.assertFalse(cert["ok"] and cert["t_lower"] > t_star - 1e-3)

  def test_a_tight_dual_that_fails_is_blended_with_a_central_one(self):
    # Gemma 3's degenerate optima in miniature: the tightest dual is moved
    # along the dual constraints (sum mu = 1, A_S^T lam = A_W^T mu stay
    # exact) until one multiplier is -1e-7, outside the enclosure radius,
    # so it fails; mixed with the central dual it proves nearly its value.
    import scipy.linalg  # pylint: disable=g-import-not-at-top
    a = np.random.default_rng(10).standard_normal((1200, 20))
    facts, cases = _finish_duals(a, 5, 2, 11)
    for it, t_star, duals in cases:
      tight, central = duals[0], duals[-1]
      rows = np.flatnonzero(tight)
      m_mat = np.vstack([np.hstack([a[it.subset].T, -a[rows].T]),
                         np.r_[np.zeros(it.subset.size), np.ones(rows.size)]])
      step = scipy.linalg.null_space(m_mat)[it.subset.size:, 0]
      i = np.argmax(np.abs(step) / (tight[rows] + 1e-3))
      moved = tight.copy()
      moved[rows] += -(tight[rows[i]] + 1e-7) / step[i] * step
      self.assertFalse(certificates.check_infeasible_global(
          facts, it.subset, it.y, np.clip(moved, 0.0, None), -np.inf,
          **bracket.EXACT)["ok"])
      alone, _, _ = bracket.bracket(facts, it.subset, it.y, None,
                                    duals=(central,))
      lower, _, cert = bracket.bracket(facts, it.subset, it.y, None,
                                       duals=(np.clip(moved, 0.0, None),
                                              central))
      self.assertTrue(cert["ok"])
      self.assertLessEqual(lower, t_star + 1e-9)  # Sound,
      self.assertLess(t_star - lower, 0.5 * (t_star - alone))  # and closer.

  def test_factor_cache_is_bounded_in_bytes_and_exact(self):
    a = np.random.default_rng(5).standard_normal((300, 40))
    budget = 5 * 40 * 40 * 8  # About five null bases.
    facts = lp_facts.MatrixFacts(a, cache_bytes=budget)
    subsets = [np.arange(i, i + 6) for i in range(0, 240, 12)]
    for subset in subsets + subsets[:3]:
      z = facts.null_basis(subset)
      q, _ = facts.qr(subset)
      self.assertLessEqual(facts._qr_bytes, budget)
      self.assertEqual(facts._qr_bytes, sum(
          sum(v.nbytes for v in x) if isinstance(x, tuple) else x.nbytes
          for x in facts._qr.values()))
      # Z spans null(A_S), orthonormal, and orthogonal to range(A_S^T).
      np.testing.assert_allclose(a[subset] @ z, 0.0, atol=1e-12)
      np.testing.assert_allclose(z.T @ z, np.eye(34), atol=1e-12)
      np.testing.assert_allclose(q.T @ z, 0.0, atol=1e-12)
    self.assertLess(len(facts._qr), 2 * len(subsets))  # Evicted some.

  def test_scores_of_the_last_point_are_kept_as_a_copy(self):
    a = np.random.default_rng(6).standard_normal((300, 40)).astype(np.float32)
    facts = lp_facts.MatrixFacts(a)
    x, other = np.random.default_rng(7).standard_normal((2, 40))
    first = facts.scores(x)
    np.testing.assert_allclose(first, a @ x.astype(np.float32), rtol=1e-6)
    first[:] = np.inf  # A caller masks its copy (polish: S at -inf).
    np.testing.assert_array_equal(facts.scores(x), a @ x.astype(np.float32))
    np.testing.assert_array_equal(facts.scores(other),
                                  a @ other.astype(np.float32))


class SolveWithFinishTest(absltest.TestCase):

  def test_finish_decides_what_admm_left_open(self):
    # Rows on the unit sphere (as Gemma 3's head, t* near 1 in its band)
    # and 15 ADMM iterations, too few for these instances; the check at age
    # 10 runs the finish, and every verdict agrees with HiGHS.
    a = np.random.default_rng(6).standard_normal((2000, 32))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    insts, truth = _band_instances(a, 5, 6, 7)
    self.assertLen({t < 1.0 for t in truth}, 2)  # Both verdicts occur.
    few = dict(settings=admm.Settings(max_iters=15), batch=8, first_check=10)
    without = topm.solve(a, insts, finish_after=None, **few)
    self.assertGreater(sum(d["verdict"] == "undecided" for d in without), 3)
    details = topm.solve(a, insts, finish_after=10, **few)
    self.assertTrue(any(d["source"] == "ipm" for d in details))
    for det, t_star in zip(details, truth):
      self.assertNotEqual(det["verdict"], "undecided")
      self.assertTrue(det["certificate_ok"])
      self.assertEqual(det["verdict"] == "feasible", t_star < 1.0)

  def test_the_streams_tail_gets_its_finish_before_it_is_due(self):
    # 2 instances on 8 slots: the tail from the start, the host idle. The
    # finish is due only at age 10^4, but an instance open at 4 first
    # checks' age (40) gets it there. The two of 12 band subsets whose t*
    # lies nearest the threshold, which ADMM alone leaves open at 45 (with
    # the next ones, which it does decide depends on float32 rounding:
    # jax 0.10 and 0.12 differ).
    a = np.random.default_rng(6).standard_normal((2000, 32))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    insts, truth = _band_instances(a, 5, 12, 7)
    hardest = np.argsort(np.abs(np.asarray(truth) - 1.0))[:2]
    insts, truth = [insts[k] for k in hardest], [truth[k] for k in hardest]
    few = dict(settings=admm.Settings(max_iters=45), batch=8, first_check=10)
    alone = topm.solve(a, insts, finish_after=None, **few)
    self.assertEqual([d["verdict"] for d in alone], ["undecided"] * 2)
    details = topm.solve(a, insts, finish_after=10**4, **few)
    for det, t_star in zip(details, truth):
      self.assertEqual(det["source"], "ipm")
      self.assertTrue(det["certificate_ok"])
      self.assertEqual(det["verdict"] == "feasible", t_star < 1.0)

  def test_solve_mode_bracket_closes_through_the_finish(self):
    a = np.random.default_rng(8).standard_normal((2000, 32))
    insts, truth = _band_instances(a, 10, 3, 9)
    details = topm.solve(a, insts, settings=admm.Settings(max_iters=150),
                         batch=4, objective="solve", tolerance=1e-5,
                         finish_after=100)
    self.assertIn("ipm", {det["source"] for det in details})
    for det, t_star in zip(details, truth):
      self.assertTrue(det["bracket_closed"])
      self._assert_holds(det, t_star)

  def test_solve_mode_releases_what_the_finish_leaves_open(self):
    # A tolerance no certificate reaches (as at Gemma 3's degenerate band
    # optima, where the finish's t* is exact but its duals certify only to
    # ~2e-6): released after the due finish with its bracket, unclosed,
    # instead of iterating to the cap.
    a = np.random.default_rng(8).standard_normal((2000, 32))
    insts, truth = _band_instances(a, 10, 2, 9)
    details = topm.solve(a, insts, settings=admm.Settings(max_iters=1000),
                         batch=2, objective="solve", tolerance=1e-15,
                         finish_after=100)
    for det, t_star in zip(details, truth):
      self.assertFalse(det["bracket_closed"])
      self.assertEqual(det["source"], "ipm")
      self.assertLess(det["iterations"], 1000)
      self._assert_holds(det, t_star)
      self.assertLess(det["upper_bound"] - det["lower_bound"], 1e-6)

  def _assert_holds(self, det, t_star):
    """The record's certified bracket holds HiGHS's t* (to 1e-9)."""
    self.assertLessEqual(det["lower_bound"], t_star + 1e-9)
    self.assertGreaterEqual(det["upper_bound"], t_star - 1e-9)

  def test_solve_mode_finds_a_ray_early_on_a_one_sided_head(self):
    # Rows around one direction (as a trained head's: facts.one_sided) and
    # a subset with t* = -inf: ADMM alone has no ray by age 400; below the
    # threshold with no lower bound, the finish runs before it is due.
    rng = np.random.default_rng(0)
    u = rng.standard_normal(64)
    a = u / np.linalg.norm(u) + 0.5 * rng.standard_normal((2000, 64)) / 8
    subset = np.sort(rng.choice(2000, 8, replace=False))
    self.assertEqual(exact.solve(a, subset, np.ones(8))["t"], -np.inf)
    inst = [instances.Instance(subset, np.ones(8), 1.0)]
    few = dict(objective="solve", batch=1, first_check=50,
               settings=admm.Settings(max_iters=400))
    alone = topm.solve(a, inst, finish_after=None, **few)[0]
    self.assertFalse(alone["bracket_closed"])
    det = topm.solve(a, inst, **few)[0]  # finish_after stays 1600.
    self.assertEqual((det["upper_bound"], det["certificate"], det["source"]),
                     (-np.inf, "ray", "ipm"))
    self.assertLessEqual(det["iterations"], 100)

  def test_bad_finish_after(self):
    a = np.random.default_rng(0).standard_normal((200, 16))
    insts, _ = _band_instances(a, 4, 1, 0)
    with self.assertRaisesRegex(ValueError, "finish_after"):
      topm.solve(a, insts, finish_after=0)


if __name__ == "__main__":
  absltest.main()

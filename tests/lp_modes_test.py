"""Top-m LP at vocabulary scale: the working set, solve mode (t* to a
tolerance), scale invariance and repeated rows, against scipy/HiGHS."""

from unittest import mock

from absl.testing import absltest
import jax
import jax.numpy as jnp
import numpy as np
from scipy import optimize

from bottleneck import topm
from bottleneck.lp import admm, records


def _highs_t(a, subset, y):
  """t* by scipy's HiGHS on min t s.t. A_S x = y, A_R x <= t (reference)."""
  n, d = a.shape
  rest = np.setdiff1d(np.arange(n), subset)
  c = np.zeros(d + 1)
  c[-1] = 1.0
  res = optimize.linprog(
      c, A_ub=np.hstack([a[rest], -np.ones((rest.size, 1))]),
      b_ub=np.zeros(rest.size),
      A_eq=np.hstack([a[subset], np.zeros((subset.size, 1))]), b_eq=y,
      bounds=[(None, None)] * (d + 1), method="highs")
  assert res.status == 0, res.message
  return res.fun


def _instances(n, m_values, trials, problem, seed):
  rng = np.random.default_rng(seed)
  return [it for m in m_values
          for it in topm.make_instances(n, m, trials, problem, rng)]


class WorkingSetTest(absltest.TestCase):

  def test_small_working_set_agrees_with_highs(self):
    # 3000 x 24 with K = 48 rows iterated explicitly (the default would
    # use a working set too: N - m > 32 d); the other ~2950 rows are
    # shadows that must turn active through the full scans.
    a = np.random.default_rng(3).standard_normal((3000, 24))
    insts = _instances(3000, (3, 5, 7), 5, "logits", 1)
    details = topm.solve(a, insts, batch=8, working_set=48)
    decided, kinds = 0, set()
    for it, det in zip(insts, details):
      truth = ("feasible" if _highs_t(a, it.subset, it.y) < it.threshold
               else "infeasible")
      if det["verdict"] != "undecided":
        decided += 1
        kinds.add(truth)
        self.assertEqual(det["verdict"], truth)
        self.assertTrue(det["certificate_ok"])
    self.assertGreaterEqual(decided, 0.9 * len(insts))
    self.assertEqual(kinds, {"feasible", "infeasible"})


  def test_default_working_set_follows_d_not_n(self):
    # ~1.25 d rounded up to 128 wherever N - m exceeds 4 of those (at
    # 16384 x 512 the old rule, N - m > 32 d, iterated all 16304 rows per
    # slot explicitly: 1 GB of rows at B = 32); every row where N - m <=
    # 32 d and its rows take at most 1 MiB.
    s = admm.Settings()
    self.assertEqual(admm.working_set_size(s, 16384, 512, 80), 640)
    self.assertEqual(admm.working_set_size(s, 50257, 768, 96), 1024)
    self.assertEqual(admm.working_set_size(s, 400, 24, 8), 392)
    self.assertEqual(admm.working_set_size(s, 2000, 64, 8), 1992)
    self.assertEqual(admm.working_set_size(s, 4096, 256, 48), 384)
    self.assertEqual(admm.working_set_size(
        admm.Settings(working_set=48), 400, 24, 8), 48)


class LiveGroupsTest(absltest.TestCase):

  def test_groups_without_a_live_slot_keep_their_frozen_outputs(self):
    x = jnp.arange(8 * 3, dtype=jnp.float32).reshape(8, 3)
    frozen = -jnp.ones((8, 3))
    live = jnp.array([0, 0, 1, 0, 0, 0, 0, 1], bool)  # Groups 1 and 3 of 2.
    fn = lambda row: 2.0 * row + 1.0
    got = jax.jit(lambda x, f, l: admm._by_live_groups(
        admm.Settings(group=2), l, fn, (x,), f))(x, frozen, live)
    group_live = np.repeat(np.asarray(live).reshape(4, 2).any(1), 2)
    want = np.where(group_live[:, None], 2.0 * np.asarray(x) + 1.0, -1.0)
    np.testing.assert_array_equal(np.asarray(got), want)
    # group 0 (all at once): the plain vmap, frozen outputs unused.
    got = admm._by_live_groups(admm.Settings(group=0), live, fn, (x,), frozen)
    np.testing.assert_array_equal(np.asarray(got), 2.0 * np.asarray(x) + 1.0)


class SolveModeTest(absltest.TestCase):

  def test_bracket_holds_highs_t_star_to_tolerance(self):
    a = np.random.default_rng(4).standard_normal((600, 24))
    insts = _instances(600, (4, 8), 4, "logits", 2)
    details = topm.solve(a, insts, batch=8, objective="solve",
                         tolerance=1e-6)
    closed = 0
    for it, det in zip(insts, details):
      t_star = _highs_t(a, it.subset, it.y)
      lo, up = det["lower_bound"], det["upper_bound"]
      self.assertLessEqual(lo, t_star + 1e-9)
      self.assertGreaterEqual(up, t_star - 1e-9)
      if det["bracket_closed"]:
        closed += 1
        self.assertLessEqual(up - lo, 1e-6 * max(1.0, abs(up)) + 1e-12)
        self.assertEqual(det["verdict"], "feasible" if t_star < it.threshold
                         else "infeasible")
    self.assertGreaterEqual(closed, 0.9 * len(insts))

  def test_embedding_is_optimal_in_the_callers_units(self):
    # A x 1000 is scaled by 2^-10 inside solve: the embedding must come
    # back for the matrix passed in (x / 1000 of the unscaled problem's).
    a = 1000.0 * np.random.default_rng(5).standard_normal((600, 24))
    self.assertNotEqual(records.power_of_two_factor(a), 1.0)
    insts = _instances(600, (4, 8), 3, "logits", 3)
    details = topm.solve(a, insts, batch=8, objective="solve",
                         tolerance=1e-6, embeddings=True)
    checked = 0
    for it, det in zip(insts, details):
      if not np.isfinite(det["upper_bound"]):
        self.assertNotIn("embedding", det)
        continue
      x = det["embedding"]
      rest = np.setdiff1d(np.arange(600), it.subset)
      np.testing.assert_allclose(a[it.subset] @ x, it.y, atol=1e-9)
      logits = a[rest] @ x
      self.assertLessEqual(logits.max(), det["upper_bound"] + 1e-9)
      t_star = _highs_t(a, it.subset, it.y)  # An optimum, to tolerance.
      self.assertLessEqual(logits.max() - t_star, 1e-6 * abs(t_star) + 1e-9)
      checked += 1
    self.assertGreaterEqual(checked, 4)
    plain = topm.solve(a, insts[:2], batch=8, objective="solve")
    self.assertNotIn("embedding", plain[0])

  def test_t_star_quantiles_next_to_rays(self):
    solve = lambda t: {"verdict": "feasible", "bracket_closed": True,
                       "upper_bound": t}
    rec = topm.summarize([8], [[solve(-np.inf)] * 2 + [solve(1.0),
                                                       solve(2.0)]])[0]
    self.assertEqual(rec["t_star_median"], -np.inf)  # Between -inf and 1.
    self.assertAlmostEqual(rec["t_star_q90"], 1.7)
    self.assertEqual(rec["t_star_q10"], -np.inf)


class InvarianceTest(absltest.TestCase):

  def test_scaled_matrix_decides_alike(self):
    # Verdicts do not depend on the matrix's scale (t* and threshold are
    # homogeneous); before the power-of-two rescaling, 1e6 / 1e-6 made every
    # infeasible verdict undecided.
    a = np.random.default_rng(5).standard_normal((400, 20))
    insts = _instances(400, (3, 6), 4, "logits", 3)
    base = [d["verdict"] for d in topm.solve(a, insts, batch=8)]
    self.assertIn("infeasible", base)
    self.assertIn("feasible", base)
    for factor in (1e6, 1e-6):
      got = [d["verdict"] for d in topm.solve(a * factor, insts, batch=8)]
      self.assertEqual(got, base, factor)

  def test_power_of_two_scaling_in_place(self):
    # A Gaussian 400 x 64 has RMS row norm 8 = 2^3: scaled by 2^-3 exactly,
    # in place when asked and allowed (no second N x d array), else copied.
    a = np.random.default_rng(7).standard_normal((400, 64)).astype(np.float32)
    want = a / np.float32(8.0)
    copied = records.power_of_two_scaled(a)
    self.assertIsNot(copied, a)
    np.testing.assert_array_equal(copied, want)
    frozen = a.copy()
    frozen.flags.writeable = False
    self.assertIsNot(records.power_of_two_scaled(frozen, in_place=True),
                     frozen)
    scaled = records.power_of_two_scaled(a, in_place=True)
    self.assertIs(scaled, a)
    np.testing.assert_array_equal(a, want)
    unit = records.power_of_two_scaled(a, in_place=True)  # Already unit.
    self.assertIs(unit, a)
    np.testing.assert_array_equal(unit, want)

  def test_repeated_rows_in_a_subset(self):
    # Tokens 7 and 8 have identical rows: S = {7, 8, ...} is the LP of
    # S = {7, ...} on A without row 8 (HiGHS on that reduced matrix).
    rng = np.random.default_rng(6)
    a = rng.standard_normal((300, 16))
    a[8] = a[7]
    subsets = [[7, 8, 40], [7, 8, 40, 90, 120], [8, 7, 5, 6, 11, 12, 13]]
    insts = [topm.make_instances(300, len(s), 1, "logits", rng,
                                 subsets=[s])[0] for s in subsets]
    details = topm.solve(a, insts, batch=4)
    for s, it, det in zip(subsets, insts, details):
      dropped = s[1]  # The later of the two in the subset's order.
      self.assertEqual(det["repeated_rows"], [dropped])
      keep = np.delete(np.arange(300), dropped)
      reduced = np.searchsorted(keep, [i for i in s if i != dropped])
      truth = ("feasible" if _highs_t(a[keep], reduced, np.ones(len(s) - 1))
               < 1.0 else "infeasible")
      self.assertEqual(det["subset"], s)
      self.assertIn(det["verdict"], (truth, "undecided"))
    self.assertNotIn("undecided", [d["verdict"] for d in details[:1]])
    # Unequal prescribed logits on identical rows: no x exists.
    probs = topm.make_instances(300, 3, 1, "probs", rng, subsets=[[7, 8, 9]])
    det = topm.solve(a, probs)[0]
    self.assertEqual((det["verdict"], det["certificate"]),
                     ("infeasible", "twin_rows"))
    self.assertEqual(det["lower_bound"], np.inf)


class EtaTest(absltest.TestCase):

  def _clocked(self, times):
    clock = iter(times)
    return mock.patch.object(records.time, "perf_counter",
                             lambda: next(clock))

  def test_cost_model_counts_running_ages_and_host_seconds(self):
    # m = 10, 10, 20, 20, 32 slots. At t = 0 (global iteration 100)
    # instance 0 (m = 10, 100 iterations) finishes; at t = 1 (iteration
    # 400) instance 2 (m = 20, 300 iterations, 0.5 s on the host) while 1
    # and 3 run at ages 150 and 200. Seconds per global iteration:
    # (1 - 0.5) / 300. Running ages count as 2 a: m = 10 expects (100 +
    # 300) / 2 = 200 iterations, instance 1 needs max(200, 300) - 150 =
    # 150 more; m = 20 expects (300 + 400) / 2 = 350, instance 3 needs
    # 200 more: the critical path (200 > 350 / 32), plus m = 20's mean
    # host time 0.5 s. Without the running ages: 400 iterations of work
    # over 32 slots.
    for running, want in ((((1, 150), (3, 200)), 0.5 / 300 * 200 + 0.5),
                          ((), 0.5 / 300 * 400 / 32 + 0.5)):
      with self._clocked([0.0, 1.0]):
        cost = records.CostModel([10, 10, 20, 20], batch=32)
        cost.finished(0, 100, clock=100)
        cost.finished(2, 300, host_seconds=0.5, running=running, clock=400)
        self.assertAlmostEqual(cost.eta(), want)

  def test_finished_instances_listed_as_running_are_not_counted(self):
    with self._clocked([0.0, 1.0, 1.5]):
      cost = records.CostModel([10] * 4, batch=1)
      cost.finished(0, 100, clock=100)
      cost.finished(1, 100, running=((2, 50), (3, 60)), clock=200)
      cost.finished(2, 100, running=((2, 50), (3, 60)), clock=300)
      # m = 10 expects (300 + 120) / 4 = 105; instance 3 (age 60) needs
      # max(105, 120) - 60 = 60 more, at 1.5 / 200 s per iteration.
      self.assertAlmostEqual(cost.eta(), 60 * 1.5 / 200)


class BadInputTest(absltest.TestCase):

  def test_bad_settings(self):
    a = np.random.default_rng(0).standard_normal((200, 12))
    insts = _instances(200, (3,), 1, "logits", 0)
    with self.assertRaisesRegex(ValueError, "`objective`"):
      topm.solve(a, insts, objective="optimise")
    with self.assertRaisesRegex(ValueError, "`tolerance`"):
      topm.solve(a, insts, tolerance=0.0)
    with self.assertRaisesRegex(ValueError, r"`working_set` must be in"):
      topm.solve(a, insts, working_set=2)
    with self.assertRaisesRegex(ValueError, r"`working_set` must be in"):
      topm.solve(a, insts, working_set=199)


if __name__ == "__main__":
  absltest.main()

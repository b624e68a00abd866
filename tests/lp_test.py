"""Top-m LP: ADMM verdicts against scipy/HiGHS, the rotation, bad input
(the certificates: lp_certificates_test.py)."""

import dataclasses

from absl.testing import absltest, parameterized
import jax
import numpy as np
from scipy import optimize

from bottleneck import sharding, topm
from bottleneck.lp import admm, instances
from bottleneck.lp import rotation, stream
from bottleneck.lp import exact as lp_exact


def _linprog_result(a, subset, y):
  """scipy's HiGHS on min t s.t. A_S x = y, A_R x <= t (the reference)."""
  n, d = a.shape
  rest = np.setdiff1d(np.arange(n), subset)
  c = np.zeros(d + 1)
  c[-1] = 1.0
  a_ub = np.hstack([a[rest], -np.ones((rest.size, 1))])
  a_eq = np.hstack([a[subset], np.zeros((subset.size, 1))])
  return optimize.linprog(c, A_ub=a_ub, b_ub=np.zeros(rest.size), A_eq=a_eq,
                          b_eq=y, bounds=[(None, None)] * (d + 1),
                          method="highs")


def _linprog_t(a, subset, y):
  """t* by scipy's HiGHS (reference)."""
  res = _linprog_result(a, subset, y)
  assert res.status == 0, res.message
  return res.fun


def _matrix(n, d, seed):
  return np.random.default_rng(seed).standard_normal((n, d))


def _instances(a, m_values, trials, problem, seed):
  rng = np.random.default_rng(seed)
  return [it for m in m_values
          for it in topm.make_instances(a.shape[0], m, trials, problem, rng)]


class AgreementTest(parameterized.TestCase):

  @parameterized.parameters(
      (300, 20, (2, 4, 6, 8), "logits"),
      (300, 20, (2, 3, 5, 7), "probs"),
      (1500, 48, (6, 10, 14, 20), "logits"),
      (1500, 48, (4, 8, 12, 16), "probs"))
  def test_verdicts_agree_with_highs(self, n, d, m_values, problem):
    a = _matrix(n, d, n + d)
    insts = _instances(a, m_values, 6, problem, 0)
    details = topm.solve(a, insts, batch=8)
    decided = disagree = 0
    kinds = set()
    for it, det in zip(insts, details):
      t_star = _linprog_t(a, it.subset, it.y)
      if det["verdict"] == "undecided":
        continue
      decided += 1
      self.assertTrue(det["certificate_ok"])
      truth = "feasible" if t_star < it.threshold else "infeasible"
      kinds.add(truth)
      disagree += det["verdict"] != truth
      # The certified bound brackets HiGHS's t* and proves the verdict.
      if det["verdict"] == "feasible":
        self.assertBetween(det["upper_bound"], t_star - 1e-7, it.threshold)
        self.assertLess(det["upper_bound"], it.threshold)
      else:
        self.assertBetween(det["lower_bound"], it.threshold, t_star + 1e-7)
    self.assertEqual(disagree, 0)
    self.assertGreaterEqual(decided, 0.9 * len(insts))
    self.assertEqual(kinds, {"feasible", "infeasible"})  # Both sides covered.

  def test_sweeps_solve_each_problem_as_its_own_sweep(self):
    # One stream for several problems (in a shuffled queue order) gives
    # each problem the subsets and verdicts of its own sweep (independent
    # subsets per m here; nested ones: lp_chains_test).
    a = _matrix(300, 20, 5)
    both = topm.sweeps(a, [3, 6], 4, ("logits", "probs"), seed=2, batch=4,
                       nested=False)
    self.assertEqual(list(both), ["logits", "probs"])
    for problem, recs in both.items():
      # Reference without sweep/sweeps: the instances of each m drawn from
      # the problem's own rng(seed), solved one m at a time.
      rng = np.random.default_rng(2)
      self.assertEqual([r["problem"] for r in recs], [problem] * 2)
      for got, m in zip(recs, [3, 6]):
        self.assertEqual(got["m"], m)
        want = topm.solve(a, topm.make_instances(300, m, 4, problem, rng),
                          batch=4)
        self.assertEqual([t["subset"] for t in got["trials_detail"]],
                         [t["subset"] for t in want])
        self.assertEqual([t["verdict"] for t in got["trials_detail"]],
                         [t["verdict"] for t in want])
    with self.assertRaisesRegex(ValueError, "`problems`"):
      topm.sweeps(a, [3], 2, "logits")
    # m values per problem: each problem keeps its own m list and curve.
    mixed = topm.sweeps(a, {"probs": [6], "logits": [3, 6]}, 4, seed=2,
                        batch=4, nested=False)
    self.assertEqual(list(mixed), ["probs", "logits"])
    self.assertEqual([r["m"] for r in mixed["logits"]], [3, 6])
    detail = lambda recs, key: [[t[key] for t in r["trials_detail"]]
                                for r in recs]
    for key in ("subset", "verdict"):
      self.assertEqual(detail(mixed["logits"], key),
                       detail(both["logits"], key))
      want = topm.solve(a, topm.make_instances(
          300, 6, 4, "probs", np.random.default_rng(2)), batch=4)
      self.assertEqual(detail(mixed["probs"], key)[0],
                       [t[key] for t in want])

  def test_borderline_thresholds_are_never_wrong(self):
    a = _matrix(800, 32, 7)
    insts, truth = [], []
    for it in _instances(a, (6, 9), 4, "logits", 1):
      t_star = _linprog_t(a, it.subset, it.y)
      for offset in (-1e-3, 0.0, 1e-3):  # Just infeasible / tie / feasible.
        insts.append(dataclasses.replace(it, threshold=t_star + offset))
        truth.append(t_star)
    details = topm.solve(a, insts, batch=8)
    decided_near = 0
    for it, det, t_star in zip(insts, details, truth):
      if det["verdict"] == "feasible":
        self.assertLess(t_star, it.threshold)
      if det["verdict"] == "infeasible":
        self.assertGreaterEqual(t_star, it.threshold - 1e-9)
      if it.threshold == t_star:  # A tie can be certified neither way.
        self.assertEqual(det["verdict"], "undecided")
      else:
        decided_near += det["verdict"] != "undecided"
    self.assertGreater(decided_near, 0)  # The test is not vacuous.

  def test_host_checks_decide_band_instances_early(self):
    # m where t* of random subsets is within a few % of 1 (the transition
    # band): ADMM's in-loop nominations are slow there; the float64 host
    # checks of the running iterates (polish.vertex, polish.dual + the
    # global dual certificate) decide sooner, and never wrongly.
    a = _matrix(1500, 48, 21)
    insts = _instances(a, (8, 9), 8, "logits", 7)
    truth = [_linprog_t(a, it.subset, it.y) for it in insts]
    self.assertGreaterEqual(sum(abs(t - 1.0) < 0.05 for t in truth), 5)
    early = topm.solve(a, insts, batch=8, first_check=20)
    late = topm.solve(a, insts, batch=8, first_check=None)
    for t_star, det in zip(truth, early):
      self.assertNotEqual(det["verdict"], "undecided")
      self.assertTrue(det["certificate_ok"])
      self.assertEqual(det["verdict"] == "feasible", t_star < 1.0)
    self.assertLess(sum(x["iterations"] for x in early),
                    0.7 * sum(x["iterations"] for x in late))

  def test_iteration_cap_gives_undecided_not_wrong(self):
    a = _matrix(1500, 48, 3)
    insts = _instances(a, (12, 16), 4, "logits", 2)
    details = topm.solve(a, insts, settings=admm.Settings(max_iters=20),
                         batch=8)
    self.assertTrue(any(d["verdict"] == "undecided" for d in details))
    for it, det in zip(insts, details):
      if det["verdict"] != "undecided":
        truth = _linprog_t(a, it.subset, it.y) < 1.0
        self.assertEqual(det["verdict"] == "feasible", truth)

  def test_exact_fallback_settles_undecided(self):
    a = _matrix(600, 24, 5)
    insts = _instances(a, (5, 8), 3, "logits", 3)
    details = topm.solve(a, insts, settings=admm.Settings(max_iters=10),
                         batch=8, exact_fallback=True)
    self.assertTrue(all(d["verdict"] != "undecided" for d in details))
    self.assertTrue(any(d["source"] == "highs" for d in details))
    for it, det in zip(insts, details):
      self.assertTrue(det["certificate_ok"])
      truth = _linprog_t(a, it.subset, it.y) < 1.0
      self.assertEqual(det["verdict"] == "feasible", truth)

  def test_m_star_search_brackets_and_bisection(self):
    a = _matrix(800, 24, 9)
    res = topm.m_star_search(a, 6, settings=admm.Settings(max_iters=60),
                             batch=8)
    self.assertLessEqual(res.lower, res.upper)
    lower = {m: f for m, f, _ in res.probes}
    upper = {m: f + u / 6 for m, f, u in res.probes}
    # Bisection invariant, read off its own probes: m* passes, m* + 1 fails.
    for m_star, frac in ((res.lower, lower), (res.upper, upper)):
      self.assertGreaterEqual(frac[m_star], 0.99)
      self.assertLess(frac[m_star + 1], 0.99)
    # With HiGHS settling every undecided instance the brackets meet, at
    # linprog's answer for the probed subsets.
    exact = topm.m_star_search(a, 6, settings=admm.Settings(max_iters=60),
                               batch=8, exact_fallback=True)
    self.assertEqual(exact.lower, exact.upper)
    self.assertTrue(all(u == 0 for _, _, u in exact.probes))

  def test_lp_exact_matches_linprog(self):
    a = _matrix(1000, 40, 11)
    for it in _instances(a, (5, 12), 2, "logits", 4):
      for method in ("rowgen", "full"):
        sol = lp_exact.solve(a, it.subset, it.y, method=method)
        self.assertAlmostEqual(sol["t"], _linprog_t(a, it.subset, it.y),
                               places=6)
      # Row generation from any start (here a random embedding: its
      # largest logits miss most active rows) ends at the whole LP's t*.
      start_x = np.random.default_rng(it.subset[0]).standard_normal(40)
      sol = lp_exact.solve(a, it.subset, it.y, start_x=start_x)
      self.assertAlmostEqual(sol["t"], _linprog_t(a, it.subset, it.y),
                             places=6)
    with self.assertRaisesRegex(ValueError, "start_x.*d = 40"):
      lp_exact.solve(a, it.subset, it.y, start_x=np.ones(39))


class TransformTest(absltest.TestCase):

  def test_vmap_batch_equals_one_by_one(self):
    a = _matrix(500, 24, 9)
    insts = _instances(a, (4, 7), 2, "logits", 5)
    shared, _ = rotation.prepare(a)
    s = admm.Settings()
    batch = jax.jit(lambda p: admm.run(shared, p, s))(instances.pad(insts, 7, 4))
    for i, it in enumerate(insts):
      one = jax.jit(lambda p: admm.run(shared, p, s))(instances.pad([it], 7, 1))
      self.assertEqual(int(one.status[0]), int(batch.status[i]))
      np.testing.assert_allclose(one.t_upper[0], batch.t_upper[i], rtol=1e-4,
                                 atol=1e-5)

  def test_sharded_equals_single_device(self):
    self.assertEqual(jax.device_count(), 8)
    a = _matrix(700, 24, 13)
    insts = _instances(a, (4, 8, 11), 4, "probs", 6)
    multi = topm.solve(a, insts, batch=8)
    single = topm.solve(a, insts, batch=8, devices=jax.devices()[:1])
    self.assertEqual([d["verdict"] for d in multi],
                     [d["verdict"] for d in single])

  def test_decide_hears_idle_once_nothing_is_left_to_start(self):
    # The host may spend more on a check (topm: an early exact finish) only
    # once the feed has nothing left to start: before that, never.
    a = _matrix(1500, 48, 3)
    insts = _instances(a, (12, 16), 5, "logits", 2)
    shared, _ = rotation.prepare(a)
    mesh = sharding.batch_mesh(jax.devices()[:1])
    calls, emptied = [], []

    class Feed(stream.Fifo):

      def next(self, force):
        out = super().next(force)
        if not self.pending and not emptied:
          emptied.append(len(calls))  # Offers made before the last start.
        return out

    def decide(index, x, u, t, age, idle):
      del index, x, u, t
      calls.append((age, idle))

    list(stream.run(shared, insts, admm.Settings(max_iters=400), batch=4,
                    m_pad=16, mesh=mesh, decide=decide, first_check=10,
                    feed=Feed(len(insts))))
    idle = [flag for _, flag in calls]
    self.assertFalse(any(idle[:emptied[0]]))
    self.assertTrue(any(idle))
    self.assertEqual(idle, sorted(idle))  # Idle stays idle.

  def test_started_is_called_once_after_the_first_chunk_compiled(self):
    # topm starts the device checks' compiles there, so that they do not
    # compete with ADMM's (lp.device_checks.DeviceA.for_mesh).
    a = _matrix(1500, 48, 3)
    insts = _instances(a, (12,), 3, "logits", 5)
    shared, _ = rotation.prepare(a)
    mesh = sharding.batch_mesh(jax.devices()[:1])
    settings = admm.Settings(max_iters=300, check_every=7)  # Its own
    fns = stream.compiled(settings, mesh, 2, 16, *a.shape)  # compiles.
    seen, out = [], []

    def started():
      seen.append((len(out), fns.refill._cache_size(),
                   fns.advance._cache_size()))

    for finished in stream.run(shared, insts, settings, batch=2, m_pad=16,
                               mesh=mesh, started=started):
      out.append(finished)
    self.assertEqual(seen, [(0, 1, 1)])
    self.assertLen(out, len(insts))

  def test_a_rejected_nomination_resumes_with_a_quiet_period(self):
    # The host's verify rejects each instance's first in-loop nomination:
    # the slot iterates on, and is not nominated again before it has run
    # as many iterations again (the driver's nominate_from, not the
    # solver's state). Without the quiet period the next check would
    # nominate it check_every iterations later.
    a = _matrix(1500, 48, 3)
    insts = _instances(a, (12, 16), 3, "logits", 4)
    shared, _ = rotation.prepare(a)
    mesh = sharding.batch_mesh(jax.devices()[:1])
    settings = admm.Settings(max_iters=3000)

    def solve(reject_first):
      rejected = set()

      def verify(index, claim, x_rot, mu):
        del claim, x_rot, mu
        if reject_first and index not in rejected:
          rejected.add(index)
          return None
        return "certified"

      return {f.index: f.iterations for f in stream.run(
          shared, insts, settings, batch=1, m_pad=16, mesh=mesh,
          verify=verify)
              if f.decided == "certified"}

    first, second = solve(False), solve(True)
    self.assertEqual(sorted(second), list(range(len(insts))))
    self.assertTrue(any(age > settings.check_every
                        for age in first.values()))
    for index, age in second.items():
      self.assertGreaterEqual(
          age, first[index] + max(first[index], settings.check_every))

  def test_no_lapack_custom_calls_in_the_solver(self):
    a = _matrix(200, 16, 1)
    shared, _ = rotation.prepare(a)
    problem = instances.pad(_instances(a, (3,), 2, "logits", 0), 3, 2)
    hlo = jax.jit(lambda p: admm.run(shared, p, admm.Settings())).lower(
        problem).as_text()
    self.assertNotIn("custom_call", hlo)


class BadInputTest(parameterized.TestCase):

  def test_bad_inputs(self):
    a = _matrix(100, 10, 0)
    rng = np.random.default_rng(0)
    with self.assertRaisesRegex(ValueError, "`m`"):
      topm.solve(a, topm.make_instances(100, 10, 1, "logits", rng))
    with self.assertRaisesRegex(ValueError, "`subsets`"):
      topm.make_instances(100, 3, 1, "logits", rng, subsets=[[1, 1, 2]])
    with self.assertRaisesRegex(ValueError, "`subsets`"):
      topm.make_instances(100, 3, 1, "logits", rng, subsets=[[1, 2, 100]])
    bad = a.copy()
    bad[3, 3] = np.inf
    with self.assertRaisesRegex(ValueError, "`matrix`"):
      topm.solve(bad, topm.make_instances(100, 3, 1, "logits", rng))
    dep = a.copy()
    dep[5] = 2 * dep[4]
    with self.assertRaisesRegex(ValueError, r"`matrix`: the rows of tokens "
                                r"\[4, 5\] .* linearly dependent"):
      topm.solve(dep, topm.make_instances(100, 2, 1, "logits", rng,
                                          subsets=[[4, 5]]))
    with self.assertRaisesRegex(ValueError, "`eps`"):
      topm.sweep(a, [3], 1, "probs", eps=0.0)
    with self.assertRaisesRegex(ValueError, "`delta`"):
      topm.sweep(a, [3], 1, "probs", delta=1.5)
    with self.assertRaisesRegex(ValueError, "`problem`"):
      topm.sweep(a, [3], 1, "top")
    with self.assertRaisesRegex(ValueError, "`first_check`"):
      topm.solve(a, topm.make_instances(100, 3, 1, "logits", rng),
                 first_check=0)


if __name__ == "__main__":
  absltest.main()

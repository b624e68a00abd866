"""lp.device_checks: the float64 checks' products on the LP's device (a
GPU; here the CPU device, forced), against the host's numpy and exact
rational arithmetic."""

import fractions
import io
import os
import threading
from unittest import mock

from absl.testing import absltest
import jax
import numpy as np

from bottleneck import sharding, topm
from bottleneck.io import matrices
from bottleneck.lp import (certificates, device_checks, device_kernels,
                           enclosure, exact, finish, placement, polish)
from bottleneck.lp import facts as lp_facts
from tests import lp_finish_test
from tests.lp_certificates_test import _exact_min_norm_step


def _device_facts(a, m_max=16):
  facts = lp_facts.MatrixFacts(a)
  facts.device = device_checks.DeviceA(facts.source, jax.devices("cpu")[0],
                                       m_max)
  return facts


class EnabledTest(absltest.TestCase):

  def test_by_platform_and_override(self):
    with mock.patch.dict(os.environ, {device_checks.ENV: ""}):
      self.assertEqual([device_checks.enabled(p) for p in
                        ("cpu", "gpu", "tpu")], [False, True, False])
    with mock.patch.dict(os.environ, {device_checks.ENV: "1"}):
      self.assertEqual([device_checks.enabled(p) for p in
                        ("cpu", "gpu", "tpu")], [True, True, False])
      mesh = sharding.batch_mesh()
      a = np.eye(4, 3, dtype=np.float32)
      device = device_checks.DeviceA.for_mesh(a, mesh, 2)
      # By default nothing compiles until the caller starts the warm-up
      # (topm: after ADMM's first chunk); the checks stay on the host.
      self.assertIsNone(device._warming)
      self.assertFalse(device.available())
      device.warm_up()
      np.testing.assert_array_equal(device.scores(np.ones((2, 3))),
                                    np.ones((2, 4)) * [[1, 1, 1, 0]])
      self.assertTrue(device._compiled["scores"].is_set())
      device._warming.join()
      self.assertTrue(device.available() and device.fits(2, 6))
      with mock.patch.dict(os.environ, {device_checks.WARM_UP_ENV: "eager"}):
        device = device_checks.DeviceA.for_mesh(a, mesh, 2)
        # Compiling in the background from the start; a check waits for
        # its stage.
        self.assertIsNotNone(device._warming)
        self.assertTrue(device.fits(2, 6))
        self.assertTrue(device._compiled["dual"].is_set())
      with mock.patch.dict(os.environ, {device_checks.WARM_UP_ENV: "later"}):
        with self.assertRaisesRegex(ValueError, "BOTTLENECK_DEVICE_WARM_UP "
                                    "must be first_chunk or eager"):
          device_checks.DeviceA.for_mesh(a, mesh, 2)
      self.assertIsNone(device_checks.DeviceA.for_mesh(  # Not exact in f32.
          np.zeros((4, 3)), mesh, 2))
    with mock.patch.dict(os.environ, {device_checks.ENV: "0"}):
      self.assertFalse(device_checks.enabled("gpu"))

  def test_a_device_that_fails_its_warm_up_leaves_the_checks_on_the_host(self):
    # E.g. a backend that cannot pin the float32 dot: one stderr line, the
    # host's checks, not a traceback in the middle of a sweep.
    a = matrices.random(300, 12, seed=1)
    facts = lp_facts.MatrixFacts(a)
    facts.device = device_checks.DeviceA(facts.source, jax.devices("cpu")[0],
                                         4)
    device = facts.device
    with mock.patch.object(device_kernels, "scores",
                           side_effect=RuntimeError("no F32_F32_F32 here")):
      device.warm_up()
      with mock.patch("sys.stderr", new_callable=io.StringIO) as err:
        self.assertIsNone(facts.device)
        self.assertFalse(device.fits(2, 6))  # Waits for the dual stage.
    self.assertIn("no F32_F32_F32 here", err.getvalue())
    x = np.ones(12)
    np.testing.assert_array_equal(facts.scores(x), a @ x.astype(np.float32))

  def test_checks_stay_on_the_host_while_the_device_compiles(self):
    # A DeviceA that does not wait (for_mesh's default): before its warm-up
    # and while its stages compile, MatrixFacts.device is None (the host's
    # checks, no wait); once a stage has compiled, the device serves it.
    a = matrices.random(300, 12, seed=1)
    facts = lp_facts.MatrixFacts(a)
    device = device_checks.DeviceA(facts.source, jax.devices("cpu")[0], 4,
                                   waits=False)
    facts.device = device
    gate, real = threading.Event(), device_kernels.enclose
    x = np.ones(12)
    with mock.patch.object(device_kernels, "enclose",
                           side_effect=lambda *args: gate.wait(30) and real(
                               *args)), \
        mock.patch.object(device_kernels, "scores",
                          wraps=device_kernels.scores) as scores:
      self.assertIsNone(facts.device)
      device.warm_up()
      device._compiled["scores"].wait()
      self.assertIs(facts.device, device)  # Its stage has compiled,
      self.assertFalse(device.fits(2, 6))  # the dual stage not yet.
      before = scores.call_count
      np.testing.assert_allclose(facts.scores(x), a @ np.float32(x),
                                 rtol=1e-5, atol=1e-5)
      self.assertEqual(scores.call_count, before + 1)
      gate.set()
      device._warming.join()
    self.assertTrue(device.fits(2, 6))
    self.assertIsNone(device.dual_error)

  def test_a_dual_stage_that_fails_its_warm_up_keeps_only_those_on_the_host(
      self):
    # The Gram's Cholesky failing to compile: the float32 and float64
    # passes stay on the device, the INFEASIBLE checks' products go to the
    # host (fits is False), with one stderr line.
    a = matrices.random(300, 12, seed=1)
    facts = lp_facts.MatrixFacts(a)
    facts.device = device_checks.DeviceA(facts.source, jax.devices("cpu")[0],
                                         4)
    with mock.patch.object(device_kernels, "enclose",
                           side_effect=RuntimeError("no cholesky here")), \
        mock.patch("sys.stderr", new_callable=io.StringIO) as err:
      facts.device.warm_up()
      self.assertIsNotNone(facts.device)
      self.assertFalse(facts.device.fits(2, 6))
    self.assertIn("no cholesky here", err.getvalue())
    self.assertIsNone(facts.device.error)


class ScoresTest(absltest.TestCase):

  def test_device_scores_are_within_the_hosts_rounding_bound(self):
    # Rows over six orders of magnitude, points over four: every float32
    # score from the device is within certificates._score_bounds of the
    # float64 product, for points scored one at a time and primed together.
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3000, 64)) * 10.0 ** rng.uniform(
        -3, 3, (3000, 1))).astype(np.float32)
    facts = _device_facts(a)
    xs = rng.standard_normal((5, 64)) * 10.0 ** rng.uniform(-2, 2, (5, 1))
    facts.prime(xs[:3])
    for x in xs:
      approx, err = certificates._score_bounds(facts, x)
      exact_scores = a.astype(np.float64) @ x
      self.assertTrue(np.all(np.abs(approx - exact_scores) <= err))
      # The bound is tight enough to tell float32 from TF32 (10-bit
      # mantissas), which a GPU's default matmul precision would use.
      tf32 = lambda v: (np.asarray(v, np.float32).view(np.uint32) &
                        np.uint32(0xFFFFE000)).view(np.float32)
      coarse = tf32(a).astype(np.float64) @ tf32(x).astype(np.float64)
      self.assertFalse(np.all(np.abs(coarse - exact_scores) <= err))
    np.testing.assert_allclose(facts.scores(xs[0]), a @ xs[0].astype(
        np.float32), rtol=1e-4, atol=1e-3 * np.abs(a @ xs[0]).max())

  def test_device_float64_logits_are_within_the_float64_bound(self):
    # check_feasible's and the probability check's float64 logits: within
    # gamma_d |a_j| |x| of the exact products (here: of numpy's float64,
    # itself within that bound, so within twice it).
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3000, 64)) * 10.0 ** rng.uniform(
        -3, 3, (3000, 1))).astype(np.float32)
    facts = _device_facts(a)
    x = rng.standard_normal(64) * 30.0
    bound = 2 * enclosure.gamma(64) * facts.row_norms * np.linalg.norm(x)
    reference = a.astype(np.float64) @ x
    self.assertTrue(np.all(np.abs(facts.device.logits(x) - reference) <=
                           bound))
    # Float32 logits would not be: the bound tells them apart.
    self.assertFalse(np.all(np.abs((a @ x.astype(np.float32)).astype(
        np.float64) - reference) <= bound))

  def test_flush_bound(self):
    tiny = float(np.finfo(np.float32).tiny)
    self.assertEqual(enclosure.flush_bound(np.array([1.0, -2.0]), 2),
                     2.0 * tiny * (4.0 + 3.0))


class EncloseDualTest(absltest.TestCase):

  def test_the_radius_holds_the_exact_solution(self):
    # M = [[A_S^T, -A_K^T], [0, 1^T]] from 2 + 5 rows of a 40 x 6 float32
    # A: the device's refined z~ and radius against z* in exact rational
    # arithmetic, as enclosure.enclose's own test does.
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 6)).astype(np.float32)
    facts = _device_facts(a)
    subset, support = np.array([3, 17]), np.array([0, 5, 9, 22, 31])
    m_mat = np.vstack([np.hstack([a[subset].T, -a[support].T]).astype(
        np.float64), np.r_[np.zeros(2), np.ones(5)]])
    b = np.r_[np.zeros(6), 1.0]
    z0 = np.linalg.lstsq(m_mat, b, rcond=None)[0] + 1e-9
    out = facts.device.enclose_dual(subset, support, z0, b)
    self.assertNotIsInstance(out, str)
    z, z_err, alpha, _ = out
    self.assertLess(alpha, 0.01)  # The share of the shift the rounding took.
    exact_step = _exact_min_norm_step(m_mat, z, b)
    self.assertTrue(any(e != 0 for e in exact_step))
    for i in range(z.size):
      self.assertLessEqual(abs(exact_step[i]), fractions.Fraction(z_err[i]))
    # Near-duplicate rows in K (1e-7 apart in float32's last bits): no
    # shift is proven, and the device says so instead of a bound.
    a[31] = a[22] + np.float32(1e-7)
    out = _device_facts(a).device.enclose_dual(subset, support, z0, b)
    self.assertIsInstance(out, str)

  def test_global_certificate_as_on_the_host(self):
    # An INFEASIBLE and a FEASIBLE subset of a float32 head with HiGHS's
    # duals: the same verdict and dual value with the Gram on the device;
    # a declined device bound falls back to the host's enclosure.
    a = matrices.random(600, 24, seed=2)
    rng = np.random.default_rng(1)
    host, device = lp_facts.MatrixFacts(a), _device_facts(a)
    seen = set()
    for m in (2, 3, 6, 8):
      subset = rng.choice(600, m, replace=False)
      mu = exact.solve(a.astype(np.float64), subset, np.ones(m))["mu"]
      one = certificates.check_infeasible_global(host, subset, np.ones(m),
                                                 mu, 1.0)
      two = certificates.check_infeasible_global(device, subset, np.ones(m),
                                                 mu, 1.0)
      self.assertEqual(one["ok"], two["ok"])
      self.assertAlmostEqual(one["dual_value"], two["dual_value"], places=9)
      seen.add(one["ok"])
      with mock.patch.object(device.device, "enclose_dual",
                             return_value="declined"):
        three = certificates.check_infeasible_global(device, subset,
                                                     np.ones(m), mu, 1.0)
      self.assertEqual(three["t_lower"], one["t_lower"])
    self.assertEqual(seen, {True, False})
    # More rows than the device's compiled shape holds (a widened
    # support): the host's enclosure, not a new compile.
    narrow = _device_facts(a)
    narrow.device.rows = 8
    self.assertFalse(narrow.device.fits(8, 20))
    with mock.patch.object(narrow.device, "enclose_dual",
                           side_effect=AssertionError("device")):
      four = certificates.check_infeasible_global(narrow, subset, np.ones(m),
                                                  mu, 1.0)
    self.assertEqual(four["t_lower"], one["t_lower"])

  def test_projection_as_on_the_host(self):
    # polish.project's loop on the device (float64, its own QR) against the
    # host's (float32 Gram, refined): the same support, multipliers and
    # dual value, from HiGHS's duals nudged off the vertex, from a uniform
    # start (rows dropped over several rounds) and from a few rows at a
    # random point (the support collapses).
    a = matrices.random(600, 24, seed=2)
    rng = np.random.default_rng(5)
    host, device = lp_facts.MatrixFacts(a), _device_facts(a)
    collapsed = set()
    for m in (3, 6, 8):
      subset = rng.choice(600, m, replace=False)
      sol = exact.solve(a.astype(np.float64), subset, np.ones(m))
      sparse = np.zeros(600)
      sparse[rng.choice(600, 5)] = 1.0  # With a point far from x*: collapses.
      starts = ((sol["mu"] + 1e-3 * rng.random(600), sol["x"]),
                (np.ones(600), sol["x"]), (sparse, rng.standard_normal(24)))
      for mu, x in starts:
        one = polish.project(host, subset, mu, x, y=np.ones(m))
        with mock.patch.object(polish, "null_coords",
                               side_effect=AssertionError("host loop")):
          two = polish.project(device, subset, mu, x, y=np.ones(m))
        self.assertAlmostEqual(two.value, one.value, places=6)
        self.assertEqual(two.collapsed, one.collapsed)
        collapsed.add(one.collapsed)
        if not one.collapsed:
          np.testing.assert_array_equal(two.mu > 0, one.mu > 0)
          np.testing.assert_allclose(two.mu, one.mu, atol=1e-6)
        else:  # Too narrow for the global certificate either way.
          self.assertLess((two.mu > 0).sum() + m, 24 + 1)
    self.assertEqual(collapsed, {True, False})

  def test_the_exact_finish_with_device_logits_matches_highs(self):
    # lp.finish's row generation reads every row's float64 logit from the
    # device (MatrixFacts.logits64): HiGHS's t* in the band, and -inf (a
    # far point along the ray) on an unbounded instance.
    a = np.random.default_rng(0).standard_normal((1500, 32)).astype(
        np.float32)
    facts = _device_facts(a)
    insts, truth = lp_finish_test._band_instances(a.astype(np.float64), 9,
                                                  3, 1)
    with mock.patch.object(polish, "matvec",
                           side_effect=AssertionError("host pass")):
      for it, t_star in zip(insts, truth):
        x0 = facts.rowspace(it.subset, it.y)[0]
        _, _, t_w, info = finish.solve(facts, it.subset, it.y, x0)
        self.assertEqual(info["violated"], 0)
        self.assertAlmostEqual(t_w, t_star, delta=1e-7 * max(1, abs(t_star)))
      b, subset, y = lp_finish_test._unbounded_instance(1)
      _, _, t_w, _ = finish.solve(_device_facts(b.astype(np.float32)), subset,
                                  y, np.zeros(b.shape[1]))
    self.assertEqual(t_w, -np.inf)

  def test_a_ray_is_checked_on_device_logits(self):
    # check_unbounded's bound over every row outside S from the device's
    # float64 pass: HiGHS's ray of an unbounded LP passes, and fails once
    # one row of R is moved above the hyperplane the ray leaves.
    b, subset, y = lp_finish_test._unbounded_instance(2)
    b = b.astype(np.float32)
    ray = exact.solve(b.astype(np.float64), subset, y)["ray"]
    with mock.patch.object(polish, "matvec",
                           side_effect=AssertionError("host pass")):
      self.assertTrue(certificates.check_unbounded(
          _device_facts(b), subset, ray)["ok"])
      rest = np.setdiff1d(np.arange(len(b)), subset)
      up = rest[np.argmax(b[rest] @ ray)]
      b[up] -= 2.0 * np.float32((b[up] @ ray) / (ray @ ray)) * ray.astype(
          np.float32)  # Reflected: a_up . ray > 0 now.
      out = certificates.check_unbounded(_device_facts(b), subset, ray)
    self.assertFalse(out["ok"])
    self.assertIn("some row outside S", out["reason"])

  def test_a_sweep_gives_the_hosts_verdicts(self):
    a = matrices.random(2000, 32, seed=4)
    kwargs = dict(m_values=[6, 9, 12, 15], trials=6, problems=("logits",
                                                              "probs"))
    with mock.patch.dict(os.environ, {device_checks.ENV: "0"}):
      host = topm.sweeps(a, **kwargs)
    with mock.patch.dict(os.environ, {device_checks.ENV: "1",
                                      device_checks.WARM_UP_ENV: "eager"}), \
        mock.patch.object(device_checks.DeviceA, "enclose_dual",
                          autospec=True,
                          side_effect=device_checks.DeviceA.enclose_dual
                          ) as spy:
      device = topm.sweeps(a, **kwargs)
    # The default: the warm-up starts once the stream has dispatched its
    # first chunk; until its stages compile, the checks run on the host.
    with mock.patch.dict(os.environ, {device_checks.ENV: "1"}), \
        mock.patch.object(device_checks.DeviceA, "warm_up", autospec=True,
                          side_effect=device_checks.DeviceA.warm_up
                          ) as warm_up:
      after_first_chunk = topm.sweeps(a, **kwargs)
    self.assertTrue(warm_up.called)
    self.assertGreater(spy.call_count, 0)
    # A solve of a few instances (records.solve_special's, one each) keeps
    # its checks on the host: the compiles would not pay back.
    few = topm.make_instances(2000, 9, placement.DEVICE_CHECKS_MIN - 1,
                              "logits", np.random.default_rng(0))
    with mock.patch.dict(os.environ, {device_checks.ENV: "1"}), \
        mock.patch.object(device_checks.DeviceA, "for_mesh") as made:
      topm.solve(a, few)
    made.assert_not_called()
    verdicts = lambda out: [[x["verdict"] for x in r["trials_detail"]]
                            for p in sorted(out) for r in out[p]]
    self.assertEqual(verdicts(device), verdicts(host))
    self.assertEqual(verdicts(after_first_chunk), verdicts(host))
    self.assertIn("infeasible", str(verdicts(host)))
    self.assertIn("feasible'", str(verdicts(host)))


if __name__ == "__main__":
  absltest.main()

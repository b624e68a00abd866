"""lp.ipm, the exact finish's interior point as one jitted float64 loop,
against finish._ipm (numpy, the reference it copies) and inside
finish.solve against HiGHS."""

import types
from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck import sharding
from bottleneck.lp import finish, host_checks, ipm, placement, verdicts
from bottleneck.lp import facts as lp_facts
from tests.lp_finish_test import _band_instances, _unbounded_instance


def _working_set(seed, n=2000, d=30, m=8, rows=200):
  """(F, h) of (LP_W) on the `rows` largest logits at the row-space point
  of a random subset, as finish.solve builds them."""
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((n, d))
  facts = lp_facts.MatrixFacts(a)
  subset = rng.choice(n, m, replace=False)
  x_par = facts.rowspace(subset, np.ones(m))[0]
  logits = a @ x_par
  logits[subset] = -np.inf
  w_rows = np.argsort(-logits)[:rows]
  f = np.hstack([a[w_rows] @ facts.null_basis(subset), -np.ones((rows, 1))])
  return f, -(a[w_rows] @ x_par)


class IpmTest(absltest.TestCase):

  def assert_same(self, host, device, rtol=1e-9):
    (w0, d0, box0, c0), (w1, d1, box1, c1) = host, device
    np.testing.assert_allclose(w1, w0, rtol=rtol, atol=rtol)
    self.assertEqual((box1, c1), (box0, c0))
    self.assertEqual(len(d1), len(d0))  # The same gap levels reached.
    for mu0, mu1 in zip(d0, d1):
      np.testing.assert_allclose(mu1, mu0, rtol=1e-6, atol=1e-9)

  def test_iterates_are_the_hosts(self):
    s = finish.Settings()
    for seed in range(3):
      f, h = _working_set(seed)
      self.assert_same(finish._ipm(f, h, 1e4, s, box_exit=True),
                       ipm.run(f, h, 1e4, s, box_exit=True))

  def test_padding_changes_nothing(self):
    # 200 x 24 padded to 512 x 128 and to 1024 x 256: padded rows and z
    # coordinates never move.
    s = finish.Settings()
    f, h = _working_set(4)
    small = ipm.run(f, h, 1e4, s, box_exit=True)
    old = ipm.ROW_BUCKET, ipm.COLUMN_BUCKET
    try:
      ipm.ROW_BUCKET, ipm.COLUMN_BUCKET = 1024, 256
      self.assert_same(small, ipm.run(f, h, 1e4, s, box_exit=True),
                       rtol=1e-12)
    finally:
      ipm.ROW_BUCKET, ipm.COLUMN_BUCKET = old
    self.assertLen(small[0], f.shape[1])
    self.assertLen(small[1][0], f.shape[0])

  def test_early_stops_are_the_hosts(self):
    s = finish.Settings()
    f, h = _working_set(5, rows=40)  # Too few rows: t sits on the box.
    host = finish._ipm(f, h, 1e4, s, box_exit=True)
    self.assertTrue(host[2])
    self.assert_same(host, ipm.run(f, h, 1e4, s, box_exit=True))
    # Ray mode (h = 0, box 1) stopped by `enough` at the first t < -1e-3.
    a, subset, y = _unbounded_instance(0)
    facts = lp_facts.MatrixFacts(a)
    f = np.hstack([np.delete(a, subset, 0) @ facts.null_basis(subset),
                   -np.ones((a.shape[0] - subset.size, 1))])
    zero = np.zeros(f.shape[0])
    host = finish._ipm(f, zero, 1.0, s, enough=-1e-3)
    self.assertLess(host[0][-1], -1e-3)
    self.assert_same(host, ipm.run(f, zero, 1.0, s, enough=-1e-3))
    # And by the iteration cap.
    capped = finish.Settings(max_iters=4)
    f, h = _working_set(6)
    self.assert_same(finish._ipm(f, h, 1e4, capped),
                     ipm.run(f, h, 1e4, capped))

  def test_finish_on_the_device_matches_highs(self):
    a = np.random.default_rng(0).standard_normal((1500, 32))
    facts = lp_facts.MatrixFacts(a)
    insts, truth = _band_instances(a, 9, 3, 1)
    on = finish.Settings(on_device=True)
    for it, t_star in zip(insts, truth):
      x0 = facts.rowspace(it.subset, it.y)[0]
      _, _, t_w, info = finish.solve(facts, it.subset, it.y, x0, s=on)
      self.assertEqual(info["violated"], 0)
      self.assertAlmostEqual(t_w, t_star, delta=1e-7 * max(1, abs(t_star)))
    a, subset, y = _unbounded_instance(1)
    _, _, t_w, _ = finish.solve(lp_facts.MatrixFacts(a), subset, y,
                                np.zeros(a.shape[1]), s=on)
    self.assertEqual(t_w, -np.inf)

  def test_topm_moves_it_to_the_device_beside_an_accelerator(self):
    mesh = sharding.batch_mesh(None)
    self.assertIsNone(placement.device_finish_after(mesh))  # CPU devices here.
    gpu = types.SimpleNamespace(devices=np.array([types.SimpleNamespace(
        platform="gpu")]))
    self.assertEqual(placement.device_finish_after(gpu),
                     placement.DEVICE_FINISH_AFTER)
    for forced, after in (("1", 0.0), ("0", None)):
      with mock.patch.dict("os.environ", {"BOTTLENECK_DEVICE_FINISH": forced}):
        self.assertEqual(placement.device_finish_after(gpu), after)

  def test_host_finishes_hand_over_once_they_cost_enough(self):
    a = np.random.default_rng(0).standard_normal((1500, 32))
    facts = lp_facts.MatrixFacts(a)
    insts, _ = _band_instances(a, 9, 3, 1)
    host = host_checks.HostChecks(
        facts, insts, None, policy=verdicts.Policy(), delta=0.1,
        objective="decide", tolerance=1e-6, finish_after=0, first_check=100,
        device_finish_after=1e-9)
    seen, real = [], finish.solve

    def spy(*args, s, **kwargs):
      seen.append(s.on_device)
      return real(*args, s=s, **kwargs)

    with mock.patch.object(finish, "solve", spy):
      for k, it in enumerate(insts):
        out = host.exact_finish(k, facts.rowspace(it.subset, it.y)[0], None,
                                age=10**6)
        self.assertIsNotNone(out)
    self.assertEqual(seen, [False, True, True])  # After the first's 1e-9 s.
    self.assertGreater(host.finish_seconds, 0.0)


if __name__ == "__main__":
  absltest.main()

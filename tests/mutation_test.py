"""The suite can fail: with the code under test broken, its tests go red.

Each case swaps one piece for a no-op (an optimizer that does nothing, a
certificate checker that accepts everything, a solver front that calls
everything feasible), runs the tests
that guard it in-process, and requires at least one of them to fail.
"""

import contextlib
import unittest

from absl.testing import absltest
import numpy as np
import optax

from bottleneck.lp import (bracket, certificates, device_checks, enclosure,
                           ipm, polish, stream, verdicts)
from train.training import optim
import tests.lp_device_checks_test as lp_device_checks_test
import tests.lp_finish_test as lp_finish_test
import tests.lp_ipm_test as lp_ipm_test
import tests.lp_certificates_test as lp_certificates_test
import tests.lp_test as lp_test
import tests.lp_widen_test as lp_widen_test
import tests.optim_test as optim_test
import tests.trainer_test as trainer_test


@contextlib.contextmanager
def _swapped(module, name, replacement):
  original = getattr(module, name)
  setattr(module, name, replacement)
  try:
    yield
  finally:
    setattr(module, name, original)


def _failed(case_class, *names) -> int:
  result = unittest.TestResult()
  unittest.TestSuite(case_class(n) for n in names).run(result)
  return len(result.failures) + len(result.errors)


class MutationTest(absltest.TestCase):

  def test_an_optimizer_that_does_nothing_is_caught(self):
    with _swapped(optim, "optimizer", lambda t: optax.set_to_zero()):
      self.assertGreater(_failed(trainer_test.TrainingTest,
                                 "test_golden_values_after_three_steps"), 0)

  def test_a_schedule_that_is_constant_is_caught(self):
    with _swapped(optim, "schedule",
                  lambda t: optax.constant_schedule(t.lr)):
      self.assertGreater(_failed(optim_test.OptimizerTest,
                                 "test_schedules_at_key_steps"), 0)

  def test_certificate_checkers_that_accept_everything_are_caught(self):
    def accept(original):
      return lambda *a, **k: dict(original(*a, **k), ok=True)
    for name, guard in (
        ("check_feasible", "test_feasible_certificate_and_tampering"),
        ("check_infeasible_global",
         "test_global_certificate_rejects_tampering"),
        ("check_probabilities", "test_probabilities_checked"),
        ("check_unbounded", "test_unbounded_lp_reported_with_a_ray")):
      with _swapped(certificates, name, accept(getattr(certificates, name))):
        self.assertGreater(_failed(lp_certificates_test.CertificateTest, guard), 0,
                           msg=name)

  def test_checks_that_never_decide_are_caught(self):
    for name, never, guard in (
        ("check_twin_rows", None, "test_twin_rows_decide_infeasible"),
        ("check_unbounded", {"ok": False, "kind": "ray"},
         "test_unbounded_lp_reported_with_a_ray")):
      with _swapped(certificates, name, lambda *a, _v=never, **k: _v):
        self.assertGreater(_failed(lp_certificates_test.CertificateTest, guard), 0,
                           msg=name)

  def test_host_checks_that_never_decide_are_caught(self):
    def never(*args, **kwargs):  # stream._check that releases nothing.
      del args, kwargs
      return []
      yield  # pylint: disable=unreachable
    with _swapped(stream, "_check", never):
      self.assertGreater(_failed(
          lp_test.AgreementTest,
          "test_host_checks_decide_band_instances_early"), 0)

  def test_a_projection_that_never_collapses_is_caught(self):
    real = polish.project
    never = lambda *a, **k: real(*a, **k)._replace(collapsed=False)
    with _swapped(polish, "project", never):
      self.assertGreater(_failed(
          lp_widen_test.WidenTest,
          "test_a_collapse_is_reported_and_the_widest_support_certifies"), 0)

  def test_a_dual_blend_that_does_nothing_is_caught(self):
    keep = lambda facts, subset, y, *rest: (rest[-2], rest[-1])
    with _swapped(bracket, "_blend", keep):
      self.assertGreater(_failed(
          lp_finish_test.FinishTest,
          "test_a_tight_dual_that_fails_is_blended_with_a_central_one"), 0)

  def test_enclosures_with_no_radius_are_caught(self):
    # Both bounds of enclosure.enclose with their radius zeroed: the float
    # z~ then claims to be the exact solution.
    real = enclosure.shifted_radius
    zero = lambda *a: None if real(*a) is None else (0 * real(*a)[0], 0.0)
    with _swapped(enclosure, "shifted_radius", zero):
      self.assertGreater(_failed(
          lp_certificates_test.CertificateTest,
          "test_enclosure_holds_the_exact_solution"), 0)
    upper = enclosure.upper
    with _swapped(enclosure, "upper", lambda x, n: 0 * upper(x, n)):
      self.assertGreater(_failed(
          lp_certificates_test.CertificateTest,
          "test_enclosure_holds_the_exact_solution"), 0)

  def test_a_float32_ranking_that_trusts_its_top_row_is_caught(self):
    top = lambda facts, subset, x: np.array([np.argmax(
        facts.scores(x) - np.isin(np.arange(facts.a.shape[0]), subset) * 1e30)])
    with _swapped(certificates, "_rest_candidates", top):
      self.assertGreater(_failed(
          lp_certificates_test.CertificateTest,
          "test_feasible_check_of_a_float32_head_finds_the_float64_maximum"),
                         0)

  def test_a_device_interior_point_that_does_not_move_is_caught(self):
    still = lambda st, *a, **k: st._replace(done=True, it=st.it + 1)
    ipm._run.clear_cache()  # (Its trace holds the update it was built on.)
    try:
      with _swapped(ipm, "update", still):
        failed = _failed(lp_ipm_test.IpmTest, "test_iterates_are_the_hosts")
    finally:
      ipm._run.clear_cache()
    self.assertGreater(failed, 0)

  def test_device_checks_that_prove_too_much_or_do_nothing_are_caught(self):
    # The device's enclosure with its radius zeroed, its scores of x
    # rounded to float16 (TF32's 10-bit mantissa: a GPU's default matmul
    # precision), its float64 logits of x rounded to float32, and its
    # projection handing back the start unchanged.
    device = device_checks.DeviceA
    real = device.enclose_dual, device.scores, device.logits
    no_radius = lambda *a: (lambda out: out if isinstance(out, str) else (
        out[0], 0 * out[1], *out[2:]))(real[0](*a))
    enclose_t = lp_device_checks_test.EncloseDualTest
    scores_t = lp_device_checks_test.ScoresTest
    for name, broken, case, test in (
        ("enclose_dual", no_radius, enclose_t,
         "test_the_radius_holds_the_exact_solution"),
        ("scores", lambda self, xs: real[1](self, np.asarray(
            xs, np.float16)), scores_t,
         "test_device_scores_are_within_the_hosts_rounding_bound"),
        ("logits", lambda self, x: real[2](self, np.asarray(x, np.float32)),
         scores_t, "test_device_float64_logits_are_within_the_float64_bound"),
        ("project", lambda self, subset, support, mu0_k, *rest: (
            np.clip(mu0_k, 0, None), False, 0.0), enclose_t,
         "test_projection_as_on_the_host")):
      with _swapped(device, name, broken):
        self.assertGreater(_failed(case, test), 0, name)

  def test_a_front_that_calls_everything_feasible_is_caught(self):
    everything_feasible = lambda *a, **k: ("feasible", 0.0, {"ok": True})
    with _swapped(verdicts, "verify", everything_feasible):
      self.assertGreater(_failed(
          lp_test.AgreementTest,
          "test_borderline_thresholds_are_never_wrong"), 0)


if __name__ == "__main__":
  absltest.main()

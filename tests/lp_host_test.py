"""BLAS threads of the LP's float64 host checks (host_checks.host_blas_threads):
one beside CPU devices, a few beside an accelerator (on an H100 machine's
16 cores OpenBLAS's default of 16 made paper-size Figure 1's 1200-LP
sample 141 s instead of 24.5 s with 4), applied while the stream runs."""

import types
from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck import sharding, topm
from bottleneck.io import matrices
from bottleneck.lp import driver, host_checks


def _fake_mesh(platform: str):
  device = types.SimpleNamespace(platform=platform)
  return types.SimpleNamespace(devices=np.array([device], dtype=object))


class HostBlasThreadsTest(absltest.TestCase):

  def test_by_platform(self):
    self.assertEqual(host_checks.host_blas_threads(sharding.batch_mesh()), 1)
    with mock.patch.object(host_checks.os, "sched_getaffinity",
                           return_value=set(range(16)), create=True):
      self.assertEqual(host_checks.host_blas_threads(_fake_mesh("cpu")), 1)
      self.assertEqual(host_checks.host_blas_threads(_fake_mesh("gpu")),
                       host_checks.ACCELERATOR_BLAS_THREADS)
    with mock.patch.object(host_checks.os, "sched_getaffinity",
                           return_value={0, 1}, create=True):
      self.assertEqual(host_checks.host_blas_threads(_fake_mesh("tpu")), 2)

  def test_the_stream_runs_under_the_limit(self):
    a = matrices.random(600, 24, seed=0)
    calls = []
    real = driver.threadpoolctl.threadpool_limits

    def spy(limits=None, user_api=None):
      calls.append((limits, user_api))
      return real(limits, user_api=user_api)

    with mock.patch.object(host_checks, "host_blas_threads", return_value=3), \
        mock.patch.object(driver.threadpoolctl, "threadpool_limits", spy):
      out = topm.sweep(a, [4], 2, "logits", batch=2)
    self.assertEqual(calls, [(3, "blas")])
    self.assertEqual(out[0]["feasible"] + out[0]["infeasible"], 2)


if __name__ == "__main__":
  absltest.main()

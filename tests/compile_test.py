"""Every "compiles once" claim of WORKSPACE.md, checked with chex.

Each jitted entry point is wrapped in chex.assert_max_traces before its
cache is cleared, so a second trace (a recompile) raises.
"""

import logging
import os
import threading
from unittest import mock

from absl.testing import absltest
import chex
import jax
import numpy as np

from bottleneck import sharding, simulate, topm
from bottleneck.io import matrices
from bottleneck.lp import admm, precompile, rotation, stream


class CompileOnceTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    chex.clear_trace_counter()
    stream.compiled.cache_clear()
    simulate._chunk_fn.cache_clear()  # pylint: disable=protected-access

  def _lp_traces_once(self, run):
    """Runs `run` with admm.run_until and admm.refill allowed one trace."""
    originals = {name: getattr(admm, name) for name in ("run_until",
                                                          "refill")}
    try:
      for name, fn in originals.items():
        setattr(admm, name, chex.assert_max_traces(fn, n=1))
      run()
    finally:
      for name, fn in originals.items():
        setattr(admm, name, fn)

  def test_lp_solves_share_one_compile(self):
    # Many instances, refills and a second solve, all padded to one m_pad:
    # lp.stream's advance and refill trace once.
    a = matrices.random(600, 24, 0)
    rng = np.random.default_rng(0)
    def run():
      for m in (4, 7):
        topm.solve(a, topm.make_instances(600, m, 20, "logits", rng),
                   batch=8, m_pad=8)
    self._lp_traces_once(run)

  def test_m_star_search_compiles_once(self):
    # Every bisection probe is padded to the same m_pad.
    a = matrices.random(600, 24, 1)
    self._lp_traces_once(lambda: topm.m_star_search(a, 4, batch=8))

  def test_precompile_compiles_the_stream_ahead_of_it(self):
    # lp.precompile traces and compiles refill and advance in its
    # threads; the stream's own calls then trace and compile neither (a
    # precompile that did nothing, or lowered with other avals or
    # shardings than the calls, fails one of the two).
    a = matrices.random(500, 20, 2)
    insts = topm.make_instances(500, 5, 6, "logits",
                                np.random.default_rng(0))
    mesh, settings = sharding.batch_mesh(jax.devices()[:1]), admm.Settings()
    traced = {}
    originals = {name: getattr(admm, name) for name in ("run_until",
                                                          "refill")}

    def counting(name):
      def traced_fn(*args, **kwargs):
        traced.setdefault(name, []).append(threading.current_thread())
        return originals[name](*args, **kwargs)
      return traced_fn

    compiled_names = []

    class Compiles(logging.Handler):
      def emit(self, record):
        message = record.getMessage()
        if message.startswith("Finished XLA compilation of"):
          compiled_names.append(message.split()[4])

    handler = Compiles()
    logging.getLogger("jax").addHandler(handler)
    try:
      for name in originals:
        setattr(admm, name, counting(name))
      precompile.start(settings, mesh, 4, 5, *a.shape)()  # Started, joined.
      ahead = {name: list(threads) for name, threads in traced.items()}
      shared, _ = rotation.prepare(a)
      with jax.log_compiles(True):  # The stream's calls (this thread).
        out = list(stream.run(shared, insts, settings, 4, 5, mesh))
    finally:
      logging.getLogger("jax").removeHandler(handler)
      for name, fn in originals.items():
        setattr(admm, name, fn)
    self.assertLen(out, len(insts))
    self.assertEqual(set(ahead), {"run_until", "refill"})
    for threads in ahead.values():
      self.assertLen(threads, 1)
      self.assertIsNot(threads[0], threading.main_thread())
    self.assertEqual(traced, ahead)  # No trace by the stream's calls,
    self.assertNotIn("jit(refill)", compiled_names)  # nor a compile.
    self.assertNotIn("jit(advance)", compiled_names)

  def test_the_driver_precompiles_only_where_a_device_may_serve(self):
    # Beside an accelerator (here: a CPU device with the accelerator
    # layer's override), the driver starts lp.precompile before it prepares
    # A and waits for it before the stream; a CPU solve does not.
    a = matrices.random(400, 16, 3)
    insts = topm.make_instances(400, 3, 4, "logits",
                                np.random.default_rng(0))
    calls = []
    real = precompile.start

    def spy(*args):
      wait = real(*args)
      calls.append(args[2:])  # batch, m_pad, n, d

      def counted():
        calls.append("waited")
        wait()
      return counted

    env = lambda checks: mock.patch.dict(os.environ, {
        "BOTTLENECK_DEVICE_FINISH": "0", "BOTTLENECK_DEVICE_CHECKS": checks})
    with mock.patch.object(precompile, "start", spy):
      with env("0"):
        topm.solve(a, insts, batch=4)
      self.assertEqual(calls, [])
      with env("1"):
        out = topm.solve(a, insts, batch=4)
    slots = sharding.round_up(4, jax.device_count())  # Whole devices.
    self.assertEqual(calls, [(slots, 3, 400, 16), "waited"])
    self.assertLen(out, 4)

  def test_simulation_traces_the_trial_once(self):
    original = simulate.trial
    simulate.trial = chex.assert_max_traces(original, n=1)
    try:
      simulate.simulate(400, 24, [2, 3, 5], trials=40, chunk=8)  # 5 chunks.
      simulate.simulate(400, 24, [2, 3, 5], trials=24, chunk=8, seed=1)
    finally:
      simulate.trial = original


if __name__ == "__main__":
  absltest.main()

"""Every "compiles once" claim of WORKSPACE.md, checked with chex.

Each jitted entry point is wrapped in chex.assert_max_traces before its
cache is cleared, so a second trace (a recompile) raises.
"""

from absl.testing import absltest
import chex
import numpy as np

from bottleneck import simulate, topm
from bottleneck.io import matrices
from bottleneck.lp import admm, stream


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

"""Every float32 product the simulation, the Cholesky and the bounds run is
pinned to full precision (HIGHEST), read off the lowered programs.

XLA's default precision lets a TPU multiply float32 in one bfloat16 pass
and a recent GPU in TF32; a CPU multiplies in full either way, so no CPU
number can show a missing pin: the programs' `precision` attributes can.
Each program is lowered under `default_matmul_precision("bfloat16")`, so an
unpinned product shows as DEFAULT whatever the environment sets
(JAX_DEFAULT_MATMUL_PRECISION=highest would otherwise hide it). The LP
(`bottleneck/lp/`) is not checked here: its verdicts are certified in
float64 on the host, whatever its device products' precision.
"""

import re

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import bounds, linalg, sharding, simulate

_DOT = re.compile(r"stablehlo\.dot(?:_general)?\b.*")
_PRECISION = re.compile(r"precision = \[(\w+), (\w+)\]")


def _dot_precisions(lowered) -> list[tuple[str, ...]]:
  """(lhs, rhs) precision of every dot in a lowered program's StableHLO;
  ("none",) for a dot that states none (XLA's default)."""
  out = []
  for line in _DOT.findall(lowered.as_text()):
    found = _PRECISION.search(line)
    out.append(found.groups() if found else ("none",))
  return out


def _lower(fn, *args):
  with jax.default_matmul_precision("bfloat16"):
    return fn.lower(*args)


class PrecisionTest(parameterized.TestCase):

  def assert_all_highest(self, lowered, at_least: int = 1):
    precisions = _dot_precisions(lowered)
    self.assertGreaterEqual(len(precisions), at_least)
    self.assertEqual([p for p in precisions if p != ("HIGHEST", "HIGHEST")],
                     [], "a float32 product without precision=HIGHEST")

  @parameterized.parameters("matrix", "projected")
  def test_simulation_chunk_program(self, method):
    # The very program `simulate.simulate` runs: vmapped, sharded, jitted.
    # N > ROW_BLOCK so the matrix method's loop over blocks is in it.
    mesh = sharding.batch_mesh(None)
    n_dev = mesh.devices.size
    fn = simulate._chunk_fn(simulate.ROW_BLOCK + 100, 24, (2, 5), method,
                            mesh)
    keys = jax.random.split(jax.random.key(0), n_dev)
    # Gram, Cholesky, two solves, x = A_S^T w, logits (matrix: block 0 and
    # the loop; projected: A_S's and Z Y).
    self.assert_all_highest(_lower(fn, keys), at_least=7)

  @parameterized.parameters("cholesky", "solve_lower", "solve_lower_t",
                            "cho_solve")
  def test_linalg_programs(self, name):
    a = jnp.eye(5, dtype=jnp.float32)
    args = (a,) if name == "cholesky" else (a, jnp.ones((5, 2), jnp.float32))
    self.assert_all_highest(_lower(jax.jit(getattr(linalg, name)), *args))

  def test_bounds_programs(self):
    # The bounds hold no product today (elementwise and logsumexp only):
    # one added later is held to the same rule.
    f = np.float32
    for form in bounds.FORMS:
      for exponentiate in (False, True):
        self.assert_all_highest(
            _lower(bounds._jitted, f(1000), f(64), f(5), form, exponentiate),
            at_least=0)
      self.assert_all_highest(
          _lower(bounds._block_log_prob, np.full(2, 1000, f),
                 np.full(2, 64, np.int32), 1, form), at_least=0)

  def test_the_check_sees_an_unpinned_product(self):
    fn = jax.jit(lambda a: (linalg.matmul(a, a), a @ a))
    precisions = _dot_precisions(_lower(fn, jnp.eye(3)))
    self.assertEqual(precisions, [("HIGHEST", "HIGHEST"),
                                  ("DEFAULT", "DEFAULT")])


if __name__ == "__main__":
  absltest.main()

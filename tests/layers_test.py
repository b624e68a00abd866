"""Imports point one way (issue 61): what a layer may not pull in, checked
in a fresh interpreter (sys.modules after importing the layer)."""

import os
import subprocess
import sys

from absl.testing import absltest, parameterized

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LP_CERTIFY = ("enclosure", "facts", "polish", "certificates", "verdicts",
              "bracket", "exact")
LP_DRIVER = ("driver", "stream", "host_checks", "chains", "chain_feed",
             "transitions", "finish", "mehrotra", "records")
LP_SPEED = ("placement", "device_checks", "device_kernels", "ipm")


def loaded_after(modules: list[str]) -> set[str]:
  code = ("import sys\n" + "".join(f"import {m}\n" for m in modules) +
          "print('\\n'.join(sorted(sys.modules)))")
  out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                       capture_output=True, text=True).stdout
  return set(out.split())


class LayersTest(parameterized.TestCase):

  @parameterized.named_parameters(
      # The probes restore a run's parameters through its model and state
      # shapes, never through the training loop.
      ("probes_not_the_trainer",
       ["train.probes.subjects", "train.probes.encoding",
        "train.probes.compare"], ["train.training.trainer"]),
      # The LP's layers (bottleneck/lp/__init__.py): the algorithm knows
      # none of the others; certification neither the driver nor the
      # accelerator-only speed.
      ("lp_algorithm", [f"bottleneck.lp.{m}" for m in
                        ("instances", "rotation", "admm_state", "admm_step",
                         "admm")],
       [f"bottleneck.lp.{m}" for m in LP_CERTIFY + LP_DRIVER + LP_SPEED]),
      ("lp_certification", [f"bottleneck.lp.{m}" for m in LP_CERTIFY],
       [f"bottleneck.lp.{m}" for m in LP_DRIVER + LP_SPEED]),
      # The pure math does not know the trainer, the probes or the report.
      ("bottleneck_alone", ["bottleneck.topm", "bottleneck.gradient",
                            "bottleneck.encoding", "bottleneck.stats"],
       ["train", "configs"]),
  )
  def test_layer_does_not_import(self, layer, forbidden):
    loaded = loaded_after(layer)
    bad = sorted(m for m in loaded for f in forbidden
                 if m == f or m.startswith(f + "."))
    self.assertEmpty(bad, f"{layer} pulled in {bad}")

  def test_a_cpu_solve_runs_with_the_accelerator_layer_deleted(self):
    # Its modules made unimportable (as if deleted): a CPU solve still
    # decides every instance, its verdicts certified as usual.
    blocked = [f"bottleneck.lp.{m}" for m in LP_SPEED]
    code = ("import os, sys\n"
            "for name in os.environ.copy():\n"
            "  if name.startswith('BOTTLENECK_DEVICE'): os.environ.pop(name)\n"
            f"for name in {blocked!r}: sys.modules[name] = None\n"
            "from bottleneck import topm\n"
            "from bottleneck.io import matrices\n"
            "out = topm.sweep(matrices.random(400, 16, 0), [3, 6], 10,\n"
            "                 batch=4, finish_after=100)\n"
            "print(sum(r['feasible'] + r['infeasible'] for r in out))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         capture_output=True, text=True)
    self.assertEqual(out.returncode, 0, out.stderr[-2000:])
    self.assertEqual(out.stdout.split()[-1], "20")

  def test_the_driver_knows_the_accelerator_layers_overrides(self):
    from bottleneck.lp import driver, placement  # pylint: disable=g-import-not-at-top
    self.assertEqual(driver.ACCELERATOR_OVERRIDES, placement.OVERRIDES)

  def test_a_cpu_solve_never_loads_the_accelerator_layer(self):
    # The driver imports lp.device_checks (and lp.finish lp.ipm) only where
    # their work goes to a device: deleting them leaves a CPU solver.
    code = ("import os, sys\n"
            "os.environ.pop('BOTTLENECK_DEVICE_CHECKS', None)\n"
            "from bottleneck import topm\n"
            "from bottleneck.io import matrices\n"
            "out = topm.sweep(matrices.random(400, 16, 0), [3, 6], 10,\n"
            "                 batch=4, finish_after=100)\n"
            "assert sum(r['feasible'] + r['infeasible'] for r in out) == 20\n"
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    loaded = set(out.split())
    self.assertIn("bottleneck.lp.driver", loaded)
    self.assertEmpty(sorted(f"bottleneck.lp.{m}" for m in LP_SPEED
                            if f"bottleneck.lp.{m}" in loaded))


if __name__ == "__main__":
  absltest.main()

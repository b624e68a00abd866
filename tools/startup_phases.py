"""Where paper-size Figure 1 spends the seconds before its LP stream starts:
each step `topm_main` and `topm.solve` take before the first chunk, timed
one after the other in a fresh process (imports, the backend's start, the
Gaussian A, its instances, the float64 facts, the device checks' copy of
A, the rotation), then the JSON a run of this size prints.

  PYTHONPATH=. python3 tools/startup_phases.py [--N=50257] [--d=768]
      [--m_max=150] [--trials=100]

Prints one JSON line: seconds per step, in order, and their sum.
"""

import time

START = time.perf_counter()
# pylint: disable=g-import-not-at-top,wrong-import-position
import sys

steps, last = {}, [START]


def lap(name: str) -> None:
  now = time.perf_counter()
  steps[name], last[0] = round(now - last[0], 3), now


from bottleneck import sharding, topm
from bottleneck.apps import topm_main  # noqa: F401  (the binary's imports)
from bottleneck.io import cli, matrices
from bottleneck.lp import device_checks, records, rotation
from bottleneck.lp import facts as lp_facts
lap("imports")


def main(argv) -> None:
  args = dict(a.lstrip("-").split("=", 1) for a in argv[1:] if "=" in a)
  n, d = int(args.get("N", 50257)), int(args.get("d", 768))
  m_max, trials = int(args.get("m_max", 150)), int(args.get("trials", 100))
  m_values = list(range(5, m_max + 1, 5))
  import jax
  import numpy as np
  mesh = sharding.batch_mesh()
  jax.block_until_ready(jax.device_put(np.zeros(1), mesh.devices.flat[0]))
  lap("backend")
  a = matrices.random(n, d, seed=0)
  lap("random A")
  a = records.power_of_two_scaled(a, in_place=True)
  lap("power_of_two_scaled")
  drawn = topm.sweep_instances(n, {p: m_values for p in ("logits", "probs")},
                               trials)  # As topm.sweeps draws them.
  instances = [it for groups in drawn.values() for group in groups
               for it in group]
  lap(f"{len(instances)} instances")
  facts = lp_facts.MatrixFacts(a)
  lap("MatrixFacts")
  records.check_subsets(facts, instances)
  lap("check_subsets")
  device = device_checks.DeviceA.for_mesh(facts.source, mesh, m_max)
  if device is not None:
    jax.block_until_ready(device.a)
  lap("DeviceA" if device is not None else "DeviceA (none here)")
  shared, _ = rotation.prepare(a)
  jax.block_until_ready(shared)
  lap("rotation.prepare")
  cli.to_json([{"x": list(range(1000)), "y": 0.5}] * (len(instances) // 5))
  lap("to_json")  # About a run's JSON: 7 MB for 6000 instances.
  print(cli.to_json({"device": str(mesh.devices.flat[0]), "N": n, "d": d,
                     "steps_s": steps,
                     "total_s": round(sum(steps.values()), 2)}))


if __name__ == "__main__":
  main(sys.argv)

"""How long lp.device_checks.DeviceA's warm-up compiles take on this
machine's first device (cold: no persistent compile cache), with its calls
compiled one after another or concurrently.

  PYTHONPATH=. python3 benchmarks/device_warm_up.py [--serial] [--N=50257]
      [--d=768] [--m_max=150]

Prints one JSON line: each stage's seconds until ready and each call's.
"""

import json
import sys
import time


def main(argv) -> None:
  args = dict(a.lstrip("-").split("=", 1) for a in argv[1:] if "=" in a)
  n, d = int(args.get("N", 50257)), int(args.get("d", 768))
  import jax  # pylint: disable=g-import-not-at-top
  from bottleneck.io import matrices  # pylint: disable=g-import-not-at-top
  from bottleneck.lp import device_checks  # pylint: disable=g-import-not-at-top
  a = matrices.random(n, d, seed=0)
  start = time.perf_counter()
  device = device_checks.DeviceA(a, jax.devices()[0],
                                 int(args.get("m_max", 150)))
  device.warm_up(parallel="--serial" not in argv)
  ready = {}
  for stage in device_checks.STAGES:
    device._compiled[stage].wait()  # pylint: disable=protected-access
    ready[stage] = round(time.perf_counter() - start, 2)
  print(json.dumps({"device": str(jax.devices()[0]), "N": n, "d": d,
                    "parallel": "--serial" not in argv, "ready_s": ready,
                    "error": device.error, "dual_error": device.dual_error,
                    "calls_s": {k: round(v, 2) for k, v in
                                device.warm_up_seconds.items()}}))


if __name__ == "__main__":
  main(sys.argv)

"""How long lp.device_checks.DeviceA's warm-up compiles take on this
machine's first device (cold: no persistent compile cache), with its calls
compiled one after another or concurrently, and what they cost ADMM's own
compile (the first chunk's `refill` and `advance`, as topm.solve compiles
them for paper-size Figure 1: 32 slots, m_pad = m_max).

  PYTHONPATH=. python3 tools/device_warm_up.py [--serial] [--N=50257]
      [--d=768] [--m_max=150] [--admm=none|beside|before]

--admm=beside: the warm-up starts, then ADMM's programs compile in the main
thread (the order through 2d1a251); before: ADMM's programs first, then
the warm-up (topm's order since). Prints one JSON line: each stage's
seconds until ready and each call's, from the warm-up's start, and
`admm_s`, the seconds ADMM's two compiles took.
"""

import dataclasses
import json
import sys
import threading
import time


def _compile_admm(a, m_max: int) -> float:
  """Seconds to compile the stream's refill and advance (AOT, no run)."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bottleneck import sharding  # pylint: disable=g-import-not-at-top
  # pylint: disable=g-import-not-at-top
  from bottleneck.lp import admm, instances, rotation, stream
  shared, _ = rotation.prepare(a)
  settings = dataclasses.replace(admm.Settings(), working_set=0)
  mesh, batch, n, d = sharding.batch_mesh(), 32, *a.shape
  start = time.perf_counter()
  fns = stream.compiled(settings, mesh, batch, m_max, n, d)
  problem = instances.pad(instances.make_instances(
      n, m_max, batch, "logits", np.random.default_rng(0)), m_max, batch)
  active = np.ones(batch, bool)
  fns.refill.lower(shared, fns.state_shape, problem, active, active).compile()
  fns.advance.lower(shared, fns.state_shape, jnp.int32(1),
                    jnp.int32(0)).compile()
  return time.perf_counter() - start


def main(argv) -> None:
  args = dict(a.lstrip("-").split("=", 1) for a in argv[1:] if "=" in a)
  n, d = int(args.get("N", 50257)), int(args.get("d", 768))
  m_max, order = int(args.get("m_max", 150)), args.get("admm", "none")
  if order not in ("none", "beside", "before"):
    raise SystemExit(f"--admm must be none, beside or before; got {order!r}")
  import jax  # pylint: disable=g-import-not-at-top
  from bottleneck.io import matrices  # pylint: disable=g-import-not-at-top
  from bottleneck.lp import device_checks  # pylint: disable=g-import-not-at-top
  a = matrices.random(n, d, seed=0)
  admm_s = _compile_admm(a, m_max) if order == "before" else None
  start = time.perf_counter()
  device = device_checks.DeviceA(a, jax.devices()[0], m_max)
  device.warm_up(parallel="--serial" not in argv)
  ready = {}

  def note(stage):  # When the stage is ready, whatever the main thread does.
    device._compiled[stage].wait()  # pylint: disable=protected-access
    ready[stage] = round(time.perf_counter() - start, 2)

  waiters = [threading.Thread(target=note, args=(stage,))
             for stage in device_checks.STAGES]
  for waiter in waiters:
    waiter.start()
  if order == "beside":
    admm_s = _compile_admm(a, m_max)
  for waiter in waiters:
    waiter.join()
  print(json.dumps({"device": str(jax.devices()[0]), "N": n, "d": d,
                    "parallel": "--serial" not in argv, "admm": order,
                    "admm_s": admm_s and round(admm_s, 2), "ready_s": ready,
                    "error": device.error, "dual_error": device.dual_error,
                    "calls_s": {k: round(v, 2) for k, v in
                                device.warm_up_seconds.items()}}))


if __name__ == "__main__":
  main(sys.argv)

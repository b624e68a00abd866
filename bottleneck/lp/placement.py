"""The accelerator layer's decisions: when the host checks' largest
products (lp.device_checks) and lp.finish's interior point (lp.ipm) go to
the LP's device instead of the host. lp.driver imports it only where a
solve may send work to a device (an accelerator, or a CPU device where
one of OVERRIDES is 1): a CPU solve never loads this layer.
"""

from __future__ import annotations

import os

# Instances a solve needs before its checks' products go to a GPU
# (lp.device_checks): their compiles (one per call and matrix shape, in the
# background) pay back over many checks, not over the one-instance solves of
# records.solve_special (a reduced A each).
DEVICE_CHECKS_MIN = 16
DEVICE_CHECKS_ENV = "BOTTLENECK_DEVICE_CHECKS"  # 1: also a CPU device; 0: none.
DEVICE_FINISH_ENV = "BOTTLENECK_DEVICE_FINISH"  # 1: at once; 0: never.
OVERRIDES = (DEVICE_CHECKS_ENV, DEVICE_FINISH_ENV)


def device_checks_enabled(platform: str) -> bool:
  """Whether the checks' products go to a device of this platform
  (lp.device_checks): a GPU, or any but a TPU where DEVICE_CHECKS_ENV is
  1; none where it is 0."""
  forced = os.environ.get(DEVICE_CHECKS_ENV)
  if platform == "tpu" or forced == "0":
    return False
  return forced == "1" or platform == "gpu"


# Seconds of exact finishes on the host in one solve, beside an
# accelerator, after which they run on the device (lp.ipm). A device loop
# compiles once per shape bucket (seconds each), which paper-size Figure 1's
# few finishes would not pay back; Gemma 3's band (many) would.
DEVICE_FINISH_AFTER = 20.0


def device_finish_after(mesh) -> float | None:
  """When lp.finish's interior point moves to the device: after
  DEVICE_FINISH_AFTER seconds of host finishes beside an accelerator,
  never on CPU devices (numpy's, one BLAS thread beside XLA's iterations,
  is as fast there: benchmarks/RESULTS.md). BOTTLENECK_DEVICE_FINISH=1
  (at once) / =0 (never) overrides."""
  forced = os.environ.get(DEVICE_FINISH_ENV)
  if forced in ("0", "1"):
    return 0.0 if forced == "1" else None
  return None if mesh.devices.flat[0].platform == "cpu" else (
      DEVICE_FINISH_AFTER)

"""Where and when the LP's float64 host checks run beside the stream
(lp.stream, lp.host_checks): their first age, their BLAS threads, and when
their largest products (lp.device_checks) and lp.finish's interior point
(lp.ipm) go to the device instead. topm.solve reads these per solve.
"""

from __future__ import annotations

import os

from bottleneck.lp import admm


def first_check_age(settings: admm.Settings, n: int, d: int,
                    m_pad: int) -> int:
  """The age of an instance's first host check: 100, or 200 where a check
  (float64 work ~d^3) outweighs 64 iterations of one instance (~K d, K its
  working set). A failed check costs its time and an early success saves
  iterations: on a 2-core CPU, 200 made the band's instances at 50257 x
  768 faster, and 100 the report's 8192 x 256 sweep (every row in the
  working set)."""
  k = admm.working_set_size(settings, n, d, m_pad)
  return 200 if d * d > 64 * k else 100


# BLAS threads of the host checks beside an accelerator. On a 16-core H100
# machine OpenBLAS's default of 16 threads made paper-size Figure 1 several
# times slower than 1 thread; 4 was the fastest.
ACCELERATOR_BLAS_THREADS = 4


def host_blas_threads(mesh) -> int:
  """BLAS threads for the float64 host checks (polish, certificates,
  lp.finish), which run one at a time beside the devices' iterations.
  CPU devices: one, XLA's iterations use the cores (on a 2-core CPU two
  threads made the checks and the finish slower). Accelerators: ACCELERATOR_BLAS_THREADS
  (at most the host's cores)."""
  if mesh.devices.flat[0].platform == "cpu":
    return 1
  cores = len(os.sched_getaffinity(0)) if hasattr(
      os, "sched_getaffinity") else (os.cpu_count() or 1)
  return min(ACCELERATOR_BLAS_THREADS, cores)


# Instances a solve needs before its checks' products go to a GPU
# (lp.device_checks): their compiles (one per call and matrix shape, in the
# background) pay back over many checks, not over the one-instance solves of
# records.solve_special (a reduced A each).
DEVICE_CHECKS_MIN = 16
DEVICE_CHECKS_ENV = "BOTTLENECK_DEVICE_CHECKS"  # 1: also a CPU device; 0: none.


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
  forced = os.environ.get("BOTTLENECK_DEVICE_FINISH")
  if forced in ("0", "1"):
    return 0.0 if forced == "1" else None
  return None if mesh.devices.flat[0].platform == "cpu" else (
      DEVICE_FINISH_AFTER)

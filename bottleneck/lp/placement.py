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
  iterations: on the 2-core CPU of benchmarks/RESULTS.md, 200 made 32
  instances of 50257 x 768 (K = 1024) at m = 95, 105, 120 14-29 % faster,
  100 kept the report's 8192 x 256 sweep (K = N - m, every row) 28 %
  faster."""
  k = admm.working_set_size(settings, n, d, m_pad)
  return 200 if d * d > 64 * k else 100


# BLAS threads of the host checks beside an accelerator. On the H100
# machine of benchmarks/RESULTS.md (16 cores), 1200 LPs of paper-size
# Figure 1: 141 s with OpenBLAS's default of 16 threads (an INFEASIBLE
# check's median 1.07 s), 38.2 s with 1 (0.13 s), 24.5 s with 4 (0.10 s).
ACCELERATOR_BLAS_THREADS = 4


def host_blas_threads(mesh) -> int:
  """BLAS threads for the float64 host checks (polish, certificates,
  lp.finish), which run one at a time beside the devices' iterations.
  CPU devices: one, XLA's iterations use the cores (on the 2-core CPU of
  benchmarks/RESULTS.md two threads made the checks slower: lp.finish on
  Gemma 3's head 1.9x, polish.dual 1.7x, a 240-LP sample of paper-size
  Figure 1 89 -> 69 s with one). Accelerators: ACCELERATOR_BLAS_THREADS
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


# Seconds of exact finishes on the host in one solve, beside an
# accelerator, after which they run on the device (lp.ipm). A device loop
# compiles once per shape bucket (seconds each), which paper-size Figure 1's
# few finishes (5, 3.4 s on the H200's host) would not pay back; Gemma 3's
# band (71, 245 s there) would.
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

"""Test package: 8 fake CPU devices, strict rank promotion, quick compiles
and a shared compile cache.

Importing this package (pytest does so before any test module, and
`python -m tests.<name>_test` likewise) sets XLA_FLAGS before JAX initialises
its backends, so sharded-vs-unsharded tests see 8 devices on any machine.
"""

import importlib.metadata
import os
import re
import tempfile

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG)
# The suite compiles hundreds of programs that each run for milliseconds
# (a cold suite spent about half its time in XLA's CPU compiler): LLVM at
# -O1 without its expensive passes. Both flags change how hard LLVM
# optimises, not what a program computes (no fast-math: IEEE semantics
# kept); the golden values and every reference comparison pass unchanged,
# and colab 04's numbers were identical to the last digit. On the 2-core CPU
# of benchmarks/RESULTS.md, colab 04 from empty caches took 82 -> 59 and
# 65 -> 55 s of CPU in two A/B pairs. Binaries and notebook kernels the
# tests start inherit them (one_device_env keeps them).
_OPTIONS = ["--xla_backend_optimization_level=1",
            "--xla_llvm_disable_expensive_passes=true"]
# jaxlib 0.10 (Python 3.11's pin) still has XLA's older elemental CPU
# emitters: they compiled the LP's ADMM loop faster, and the whole suite
# from empty caches took a fifth less time, every test passing. jaxlib
# 0.12 dropped the flag, and XLA aborts on a flag it does not know.
if re.match(r"0\.(\d|10)\.", importlib.metadata.version("jaxlib")):
  _OPTIONS.append("--xla_cpu_use_fusion_emitters=false")
for _opt in _OPTIONS:
  if _opt.split("=")[0] not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " " + _opt
os.environ.setdefault("MPLBACKEND", "Agg")
# Every saved figure must have labels, a title and (with several series) a
# legend: bottleneck.io.plots.save raises otherwise (binaries and notebook
# kernels started by the tests inherit this).
os.environ["BOTTLENECK_STRICT_FIGURES"] = "1"
# pytest -n 3 runs three test processes (and their binaries, notebook kernels)
# side by side: OpenBLAS threads of several processes spinning on 2 cores made
# numpy-heavy tests up to 10x slower (colab 06's gradient cell: 10 s alone,
# 114 s next to another run). One BLAS thread per process; XLA's own pool
# is unaffected.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
  os.environ.setdefault(_var, "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# One persistent XLA compilation cache for every test process (pytest-xdist
# workers, binaries, notebook kernels inherit it): the suite compiles the
# same train steps, probes and LP loops in many processes.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(
    tempfile.gettempdir(), f"bottleneck-tests-jax-cache-{os.getuid()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")

import jax  # pylint: disable=g-import-not-at-top,wrong-import-position


def one_device_env(**extra) -> dict:
  """os.environ (plus `extra`) for a subprocess of this checkout's code on
  one CPU device, as users run binaries and notebooks: PYTHONPATH the repo,
  the 8 fake devices dropped, the suite's other XLA options kept."""
  env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), **extra)
  env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                              if f != _FLAG)
  return env


jax.config.update("jax_numpy_rank_promotion", "raise")

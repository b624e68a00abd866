"""Test package: 8 fake CPU devices and strict rank promotion for every test.

Importing this package (pytest does so before any test module, and
`python -m tests.<name>_test` likewise) sets XLA_FLAGS before JAX initialises
its backends, so sharded-vs-unsharded tests see 8 devices on any machine.
"""

import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG)
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax  # pylint: disable=g-import-not-at-top,wrong-import-position

jax.config.update("jax_numpy_rank_promotion", "raise")

"""Argument checks shared by every public function.

Each check raises `ValueError` naming the argument, the allowed range and the
value received, so that bad input never surfaces as a traceback from inside
JAX or as a silent NaN.
"""

from __future__ import annotations

import os
from typing import Iterable

import numpy as np


class ArgumentError(ValueError):
  """A ValueError that knows the argument it names (`name`), so that a
  caller reading the value from a file can name the file's own key."""

  def __init__(self, name: str, message: str):
    super().__init__(message)
    self.name = name


def _is_integer(value) -> bool:
  return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def positive_int(name: str, value) -> int:
  """Returns `value` as int; raises unless it is an integer >= 1."""
  if not _is_integer(value) or value < 1:
    raise ArgumentError(name, f"`{name}` must be an integer >= 1; got "
                        f"{value!r}.")
  return int(value)


def int_in_range(name: str, value, lo: int, hi: int, why: str = "") -> int:
  """Returns `value` as int; raises unless it is an integer in [lo, hi]."""
  if not _is_integer(value) or not lo <= value <= hi:
    extra = f" ({why})" if why else ""
    raise ArgumentError(name, f"`{name}` must be an integer in [{lo}, {hi}]"
                        f"{extra}; got {value!r}.")
  return int(value)


def open_interval(name: str, value, lo: float, hi: float) -> float:
  """Returns `value` as float; raises unless lo < value < hi."""
  return number_in(name, value, lo, hi)


def number_in(name: str, value, lo: float, hi: float, *,
              lo_closed: bool = False, hi_closed: bool = False) -> float:
  """Returns `value` as float; raises unless it is a number in the interval
  (lo, hi), closed on the sides asked for. NaN is never in it; infinity
  only where an open side is infinite and `hi_closed`/`lo_closed` says so."""
  span = (f"{'[' if lo_closed else '('}{lo}, {hi}"
          f"{']' if hi_closed else ')'}")
  try:
    val = float(value)
  except (TypeError, ValueError):
    val = None
  if isinstance(value, bool) or val is None or not (
      (lo <= val if lo_closed else lo < val) and
      (val <= hi if hi_closed else val < hi)):  # Also rejects NaN.
    raise ArgumentError(name, f"`{name}` must be a number in {span}; got "
                        f"{value!r}.")
  return val


def one_of(name: str, value, allowed: Iterable[str]) -> str:
  allowed = tuple(allowed)
  if value not in allowed:
    raise ArgumentError(name, f"`{name}` must be one of {allowed}; got "
                        f"{value!r}.")
  return value


def topm_sizes(N, d, m) -> tuple[int, int, int]:
  """Checks the sizes of a top-m question: N tokens, dimension d, m chosen.

  Requires 1 <= m < N. (The bounds additionally need m < d - 3; see
  `bounds_sizes`.)
  """
  N = positive_int("N", N)
  d = positive_int("d", d)
  m = positive_int("m", m)
  if m >= N:
    raise ValueError(f"`m` must satisfy 1 <= m < N = {N}; got m={m}.")
  return N, d, m


def bounds_sizes(N, d, m) -> tuple[int, int, int]:
  """Sizes for which v(d, m) of eq. (8) is defined: 1 <= m < d - 3, m < N."""
  N, d, m = topm_sizes(N, d, m)
  if m >= d - 3:
    raise ValueError(
        f"`m` must satisfy 1 <= m < d - 3 = {d - 3} (the variance v(d, m) of "
        f"eq. (8) has a pole at m = d - 3); got m={m} with d={d}.")
  return N, d, m


def finite_array(name: str, array, ndim: int | None = None) -> np.ndarray:
  """Returns `array` as a numpy array; raises on wrong rank or non-finite."""
  arr = np.asarray(array)
  if ndim is not None and arr.ndim != ndim:
    raise ValueError(
        f"`{name}` must have {ndim} dimensions; got shape {arr.shape}.")
  if arr.size == 0:
    raise ValueError(f"`{name}` must not be empty; got shape {arr.shape}.")
  if not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
    raise ValueError(f"`{name}` must be real-valued numbers; got dtype "
                     f"{arr.dtype}.")
  if not np.all(np.isfinite(arr)):
    bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
    raise ValueError(f"`{name}` must be finite; it has {bad} NaN/inf entries.")
  return arr


def nonfinite_count(values) -> int:
  """How many entries of a float array are NaN or inf. A float32 sum is
  finite only if every entry is (NaN and inf survive a sum), so the exact
  count runs only when the sum is not (an overflow, or a bad entry): one
  fast pass over finite data, no boolean temporary."""
  arr = np.asarray(values)
  if arr.dtype.kind != "f" or np.isfinite(np.add.reduce(arr, axis=None)):
    return 0
  return int(arr.size - np.count_nonzero(np.isfinite(arr)))


def probabilities(name: str, p, normalise: bool = False) -> np.ndarray:
  """A 1-D vector of strictly positive, finite probabilities.

  With `normalise=True` the vector is rescaled to sum to 1 (targets are often
  given as unnormalised weights, e.g. U[0.1, 1.1] draws in Section 6).
  """
  p = finite_array(name, p, ndim=1).astype(np.float64)
  if np.any(p <= 0):
    raise ValueError(
        f"`{name}` must be strictly positive (allowed range (0, 1]); "
        f"got min {p.min()!r}.")
  if normalise:
    p = p / p.sum()
  elif p.sum() > 1 + 1e-6:  # float32-computed distributions round above 1.
    raise ValueError(f"`{name}` must sum to at most 1; got sum {p.sum()!r}.")
  return p


def subset_indices(name: str, subset, N: int) -> np.ndarray:
  """Distinct integer indices in [0, N)."""
  idx = np.asarray(subset)
  if idx.ndim != 1 or idx.size == 0:
    raise ValueError(f"`{name}` must be a non-empty 1-D list of token indices; "
                     f"got shape {idx.shape}.")
  if not np.issubdtype(idx.dtype, np.integer):
    raise ValueError(f"`{name}` must hold integers; got dtype {idx.dtype}.")
  if idx.min() < 0 or idx.max() >= N:
    raise ValueError(f"`{name}` entries must be in [0, {N - 1}]; got min "
                     f"{idx.min()}, max {idx.max()}.")
  if np.unique(idx).size != idx.size:
    raise ValueError(f"`{name}` must not repeat an index; got {idx.size} "
                     f"entries, {np.unique(idx).size} distinct.")
  return idx.astype(np.int64)


def memory_bytes() -> int | None:
  """Memory this process may still use: MemAvailable where /proc/meminfo
  has it, else the physical memory; None when neither can be read."""
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  try:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  except (ValueError, OSError, AttributeError):
    return None


def fits_in_memory(need: int, what: str, advice: str) -> None:
  """A clear error, before allocating, when `need` bytes exceed what this
  machine has available (instead of an OOM kill later)."""
  have = memory_bytes()
  if have is not None and need > have:
    raise ValueError(f"{what} needs about {need / 2**30:.1f} GiB; this "
                     f"machine has {have / 2**30:.1f} GiB available. {advice}")

"""The host checks' passes over A and their largest float64 products, on the
accelerator that iterates the LP.

Beside a GPU the stream waits on the host's float64 checks (most of
paper-size Figure 1's stream on an H200), and most of their time is
products that an accelerator does in microseconds:

- `scores`: fl32(A fl32(x)) for up to `MatrixFacts.score_slots` points at
  once, the float32 pass that ranks rows (certificates._rest_candidates,
  _logits_or_upper_bounds, polish.project, host_checks.Carry). Its rounding
  bound (certificates._score_bounds: gamma32_d |a_j| |x|, Higham Thm 3.1)
  holds for any order of summation, with or without FMA, so it holds on
  the device as on the host provided the device computes in float32: the
  dot's algorithm is pinned to F32_F32_F32 (no TF32 or bf16 passes, which
  XLA's default precision allows on a GPU). An accelerator that flushes
  subnormals to zero loses at most 2^-126 per product, addition and
  flushed entry of x: `enclosure.flush_bound`, added to the bound on either
  path.
- `logits`: A x in float64 for the rows the float32 pass cannot rule out
  (certificates.check_feasible, _logits_or_upper_bounds), as one fused
  pass over all of A instead of a gather of those rows on the host.
- `enclose_dual`: the (d + 1)^2 Gram of the global INFEASIBLE
  certificate's M = [[A_S^T, -A_K^T], [0, 1^T]] (built on the device from
  A's float32 rows: exact in float64), its Cholesky factor, z~'s
  refinement and the shifted Cholesky of enclosure.shifted_radius, in
  float64. The host turns what comes back (the residual, |M| |z|, the
  factor's sum of squares, what the factor misses, the shift) into a
  rigorous bound as enclosure.enclose does, assuming only what its
  float64 products need: IEEE arithmetic, sums in any order (Higham Thm
  3.1). The factorization's own error is measured, not assumed (L~ L~^T
  - H, one more GEMM), since a GPU library's blocked Cholesky is not
  documented. The Rump-style fallback stays on the host.
- `project`: polish.project's active-set loop, in float64, with the
  device's QR of A_S^T (nothing there is trusted).

A device call waits for the ADMM chunk dispatched before the checks
(lp.stream), at most one chunk per visit of the host.

`DeviceA.for_mesh` decides where this runs: beside a GPU; not on CPU
devices (numpy's BLAS on the host is as fast there, and XLA's iterations
hold the cores), nor on a TPU (its float32 products are bf16 passes and
its float64 is emulated: Higham's bounds would not hold).
BOTTLENECK_DEVICE_CHECKS=1 (also on CPU devices: the tests) / =0 (never)
overrides. The programs (lp.device_kernels) compile in the background
once ADMM's first chunk is dispatched, the checks due before that on the
host (`for_mesh`; BOTTLENECK_DEVICE_WARM_UP=eager: from the start).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time

import jax
import numpy as np

from bottleneck.lp import device_kernels as kernels
from bottleneck.lp import enclosure, placement

ROW_BUCKET = 512  # Rows of A gathered (S and K) are padded to a multiple,
SUBSET_BUCKET = 64  # and S's alone (the projection's QR) to one of this.
SCORE_SIZES = (1, 4, 16, 64)  # Points scored at once, padded to the next.
STAGES = ("scores", "dual")  # `warm_up`: every check, then INFEASIBLE ones.
ENV = placement.DEVICE_CHECKS_ENV
WARM_UP_ENV = "BOTTLENECK_DEVICE_WARM_UP"  # first_chunk (default) | eager.
enabled = placement.device_checks_enabled  # Decided where the driver is.


class DeviceA:
  """A float32 A on one device, with the checks' products over it."""

  def __init__(self, a_f32, device, m_max: int, waits: bool = True):
    self.device = device
    self.a = jax.device_put(np.asarray(a_f32, np.float32), device)
    self.n, self.d = a_f32.shape
    # One padded shape per kind of call, so one compile each: S's rows to
    # m_max rounded up, and the gathered rows (S and K: the projection's
    # first support and the dual certificate's) to 2 (d + 1) rounded up.
    self.m_pad = -(-m_max // SUBSET_BUCKET) * SUBSET_BUCKET
    self.rows = -(-2 * (self.d + 1) // ROW_BUCKET) * ROW_BUCKET
    # waits: a check waits for its stage's compiles (and, before
    # `warm_up`, compiles what it calls); else it is not `available` until
    # `warm_up` has compiled its stage, and runs on the host meanwhile.
    self.waits = waits
    self._warming = None
    self._compiled = {stage: threading.Event() for stage in STAGES}  # Set
    self._warmers = set()  # once `warm_up` has run a stage; its threads.
    self.warm_up_seconds = {}  # Per call (`warm_up`).
    self.error = None  # Why a `scores`-stage warm-up call failed, if one did,
    self.dual_error = None  # and why a `dual`-stage one did.

  @classmethod
  def for_mesh(cls, a, mesh, m_max: int) -> "DeviceA | None":
    """A DeviceA on the mesh's first device where the checks go there
    (module docstring), None otherwise, or for a float64 A (its rows are
    not exact in float32). By default (WARM_UP_ENV unset or `first_chunk`)
    its calls compile once the caller starts `warm_up`, which topm does
    after ADMM's first chunk is dispatched (lp.stream.run's `started`):
    then ADMM's programs compile alone, and the checks due meanwhile run
    on the host. WARM_UP_ENV=`eager`: they compile from here on, beside
    ADMM's, and every check waits for its stage (as through 2d1a251)."""
    device = mesh.devices.flat[0]
    if not enabled(device.platform) or np.asarray(a).dtype != np.float32:
      return None
    mode = os.environ.get(WARM_UP_ENV) or "first_chunk"
    if mode not in ("first_chunk", "eager"):
      raise ValueError(f"{WARM_UP_ENV} must be first_chunk or eager; got "
                       f"{mode!r}.")
    out = cls(a, device, m_max, waits=mode == "eager")
    if out.waits:
      out.warm_up()
    return out

  def warm_up(self, parallel: bool = True) -> None:
    """Runs every call once on blank inputs in background threads (once:
    a second call does nothing), so their compiles (seconds) do not hold
    the first checks. A stage is ready once its calls have run (STAGES:
    the order the checks first need them; waiting for all of them held
    the first checks on an H100), and the calls compile concurrently (`parallel`; XLA's
    compiles release the GIL), their seconds in `warm_up_seconds`. A
    `scores`-stage call that fails (a backend without a pinned float32
    dot, say) sets `error`; a `dual`-stage one sets `dual_error` (`fits` is
    then False: those checks stay on the host)."""
    if self._warming is not None:
      return
    one, b = np.arange(1), np.eye(self.d + 1)[-1]
    part = functools.partial
    calls = {  # stage -> (name, blank call)
        "scores": [(f"scores[{size}]", part(self.scores, np.zeros(
            (size, self.d), np.float32))) for size in SCORE_SIZES] + [
                ("logits", part(self.logits, np.zeros(self.d)))],
        "dual": [
            ("project", part(self.project, one, one + 1, np.ones(1), None,
                             1)),
            ("rmatvec", part(self.rmatvec, one, np.ones(1))),
            ("enclose_dual", part(self.enclose_dual, one, one + 1,
                                  np.zeros(2), b))]}
    assert tuple(calls) == STAGES
    # Not daemons: a process that exits while XLA compiles in a daemon
    # thread aborts ("terminate called after throwing ..."), as a short run
    # would that ends before the compiles do; the interpreter waits instead.
    self._warming = threading.Thread(target=self._blank_calls, args=(
        calls, parallel))
    self._warming.start()

  def _blank_calls(self, calls, parallel: bool) -> None:
    failed = {stage: [] for stage in calls}

    def blank(stage, name, call):
      self._warmers.add(threading.get_ident())  # Its calls do not wait.
      start = time.perf_counter()
      try:
        with np.errstate(all="ignore"):
          call()
      except Exception as e:  # pylint: disable=broad-except
        failed[stage].append(f"{type(e).__name__}: {e}".splitlines()[0])
      finally:  # An ident may be reused by a later thread.
        self._warmers.discard(threading.get_ident())
      self.warm_up_seconds[name] = time.perf_counter() - start

    threads = {stage: [threading.Thread(target=blank, args=(stage, *named))
                       for named in stage_calls]
               for stage, stage_calls in calls.items()}
    for thread in sum(threads.values(), []) if parallel else ():
      thread.start()
    for stage in STAGES:
      for thread in threads[stage]:
        if not parallel:
          thread.start()
        thread.join()
      if failed[stage] and stage == "scores":
        self.error = failed[stage][0]
      elif failed[stage] and self.error is None:
        self.dual_error = failed[stage][0]
        sys.stderr.write("device checks of INFEASIBLE claims off, on the "
                         f"host instead: {self.dual_error}\n")
      self._compiled[stage].set()

  def available(self, stage: str = "scores") -> bool:
    """Whether the calls of `stage` (STAGES) can run here now. Where the
    checks wait (`waits`) this waits for the stage's compiles, if
    `warm_up` started them; else it is False until `warm_up` has compiled
    them. False for good where a call failed to compile (`error`,
    `dual_error`; MatrixFacts.device then drops a device whose `scores`
    failed, with one stderr line)."""
    if self.waits:
      self._wait(stage)
    elif not self._compiled[stage].is_set():  # Set by `warm_up` only.
      return False
    return self.error is None and (stage == "scores" or
                                   self.dual_error is None)

  def _wait(self, stage: str) -> None:
    """A direct call waits for its stage's warm-up compiles, if any."""
    if (self._warming is not None and
        threading.get_ident() not in self._warmers):
      self._compiled[stage].wait()

  def fits(self, m: int, rows: int) -> bool:
    """Whether a call on m rows of S and `rows` gathered rows in all has
    its compiled shape here (wider supports stay on the host) and its
    `dual` stage is `available`."""
    return self.available("dual") and m <= self.m_pad and rows <= self.rows

  def scores(self, xs_BxD) -> np.ndarray:
    """fl32(A fl32(x)) for each row x of xs: [B, N] float32 (B padded to a
    power of four on the device: one compile per size)."""
    self._wait("scores")
    xs = np.asarray(xs_BxD, np.float32)
    pad = next((size for size in SCORE_SIZES if size >= len(xs)), len(xs))
    xs_pad = np.zeros((pad, self.d), np.float32)
    xs_pad[:len(xs)] = xs
    out = kernels.scores(self.a, jax.device_put(xs_pad, self.device))
    return np.asarray(jax.device_get(out))[:len(xs)]

  def project(self, subset, support, mu0_k, x_par, rounds: int):
    """polish.project's loop for the support K (rows of largest rank), in
    float64 on the device: (mu on K, collapsed, value), or None where the
    whole support's Gram is not definite (the caller runs the host's
    loop, whose least squares go on from there). Where a later round's
    Gram is not (rows dropped below d - m + 1 that span null(A_S)), the
    last round's positive part is returned, collapsed (the host takes a
    least-squares step there; either way the support is too narrow for
    the global certificate). The null-space basis comes from the
    device's complete QR of A_S^T (padded with zero columns: their
    reflectors are the identity); nothing here is trusted."""
    self._wait("dual")
    m, k = len(subset), len(support)
    size = self.rows
    idx_s = np.zeros(self.m_pad, np.int32)
    idx_s[:m] = subset
    idx_k = np.zeros(size, np.int32)
    idx_k[:k] = support
    mu0 = np.zeros(size)
    mu0[:k] = mu0_k
    par = np.zeros(self.d) if x_par is None else np.asarray(x_par,
                                                            np.float64)
    with jax.enable_x64(True):
      mu, started, collapsed, value = jax.device_get(kernels.project(
          self.a, *jax.device_put((idx_s, np.int32(m), idx_k, np.int32(k),
                                   mu0, par, np.int32(rounds)), self.device)))
    if not started:
      return None
    return mu[:k], bool(collapsed), float(value) if x_par is not None else (
        np.nan)

  def logits(self, x) -> np.ndarray:
    """A x in float64, every row: [N] (the checks bound its rounding by
    gamma_d |a_j| |x|, which holds for any summation order)."""
    self._wait("scores")
    with jax.enable_x64(True):
      return np.array(jax.device_get(kernels.logits(self.a, jax.device_put(
          np.asarray(x, np.float64), self.device))))  # Writable.

  def rmatvec(self, rows, weights) -> np.ndarray:
    """A_rows^T weights in float64 (not a bound: a starting point)."""
    self._wait("dual")
    size = self.rows
    idx = np.zeros(size, np.int32)
    idx[:len(rows)] = rows
    w = np.zeros(size)
    w[:len(rows)] = weights
    with jax.enable_x64(True):
      return np.asarray(jax.device_get(kernels.rmatvec(
          self.a, *jax.device_put((idx, w), self.device))))

  def enclose_dual(self, subset, support, z, b):
    """enclosure.enclose for M = [[A_S^T, -A_K^T], [0, 1^T]] at z~ = z:
    (z~ refined, radius per entry, alpha, residual), or a string saying
    why the shifted-Cholesky bound failed (the caller then runs the host's
    enclosure, Rump's fallback included)."""
    self._wait("dual")
    m, k = len(subset), len(support)
    p = m + k
    size = self.rows
    rows = np.zeros(size, np.int32)
    rows[:m], rows[m:p] = subset, support
    sign = np.zeros(size)
    sign[:m], sign[m:p] = 1.0, -1.0
    last = np.zeros(size)
    last[m:p] = 1.0
    z_pad = np.zeros(size)
    z_pad[:p] = z
    n = self.d + 1
    with jax.enable_x64(True):
      out = jax.device_get(kernels.enclose(self.a, *jax.device_put(
          (rows, sign, last, z_pad, np.asarray(b, np.float64),
           enclosure.probe(n)), self.device)))
    z_pad, r, abs_mz, estimate, column_sq, factored, shifts = out
    if not factored:
      return "M M^T: no Cholesky factor on the device"
    z, column_sq = np.array(z_pad[:p]), column_sq[:p]
    gamma, upper = enclosure.gamma, enclosure.upper
    r_bound = enclosure.residual_bound(r, b, abs_mz, size)
    frobenius_m = upper(float(np.sum(column_sq)), n * size)
    for fraction, (r_sq, e_sq, finite, diag_max) in zip(
        enclosure.SHIFT_FRACTIONS, shifts):
      if not finite:
        continue
      c = fraction * float(estimate)
      # The factor L~ of H = fl(G~ - c I) is not trusted to follow LAPACK's
      # error analysis (a GPU library's blocking is not documented): E =
      # L~ L~^T - H is measured, e = fl(fl(L~ L~^T) - H), and |E|_2 <=
      # |e|_F (1 + 2u) + gamma_n |L~|_F^2 (the product's rounding); L~ L~^T
      # is positive semidefinite, so lambda_min(H) >= -|E|_2. The rest is
      # enclosure.shifted_radius's bound.
      missed = upper(upper(np.sqrt(upper(float(e_sq), n * n)), 1) * (
          1.0 + 2.0 * enclosure.U) + gamma(n) * upper(float(r_sq), n * n), 2)
      rounding = upper(missed + enclosure.U * float(diag_max) +
                       gamma(size) * frobenius_m, 4)
      bound = enclosure.radius_from_shift(c, rounding, r_bound, column_sq, n)
      if bound is not None:
        return (z, *bound, r)
    return "no lower bound of lambda_min(M M^T) from a shifted Cholesky"

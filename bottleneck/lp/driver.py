"""The LP driver: one call decides (or brackets) a list of instances.

It composes the layers of `bottleneck.lp` (see its __init__): the matrix
is checked and scaled, subsets with repeated or all-zero rows are split off
(`records.solve_special`), the rest stream through the batched ADMM
(`stream.run`, continuous batching, jitted once per shape, batch axis
sharded over `devices`) while the host checks every nomination in float64
(`host_checks`), nested subsets carry verdicts along their chains
(`chains`, `chain_feed`), and each instance ends as a certified record
(`records`). `bottleneck.topm.solve` is its front with keyword arguments.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np
import threadpoolctl

from bottleneck import checks, sharding
from bottleneck.io import cli
from bottleneck.lp import (admm, bracket, host_checks, records, rotation,
                           stream, verdicts)
from bottleneck.lp import facts as lp_facts

# The host checks' freed float64 temporaries go back to the OS (malloc_trim)
# at most this often: without it glibc's heap creeps up over a run on a
# large head; a trim after every instance would cost a few % of the band's
# time.
TRIM_EVERY_S = 2.0

# lp.placement's environment overrides: set to 1, a solve on CPU devices
# sends work to its device too (tests of the accelerator layer).
ACCELERATOR_OVERRIDES = ("BOTTLENECK_DEVICE_CHECKS",
                         "BOTTLENECK_DEVICE_FINISH")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
  """How `solve` runs (bottleneck.topm.solve documents each field); built
  with keywords only."""
  settings: admm.Settings = admm.Settings()  # The ADMM iteration's.
  batch: int = 32  # Slots iterated together (continuous batching).
  exact_fallback: bool = False  # HiGHS settles undecided instances.
  delta: float = 0.1  # Margin of the 'probs' / 'natural' problems.
  devices: tuple | None = None  # The batch axis's mesh (None: all).
  policy: verdicts.Policy = verdicts.Policy()  # Which checks, in order.
  first_check: int | str | None = "auto"  # Age of the first host check.
  objective: str = "decide"  # decide | solve (bracket t*).
  tolerance: float = 1e-6  # Solve mode: relative width of the bracket.
  working_set: int | None = None  # Rows iterated explicitly per slot.
  finish_after: int | None = 1600  # Age of the exact finish (None: never).
  embeddings: bool = False  # Solve mode: the certified x of each record.

  def check(self) -> "Options":
    """Raises ValueError naming a bad field."""
    checks.positive_int("batch", self.batch)
    if self.first_check is not None and self.first_check != "auto":
      checks.positive_int("first_check", self.first_check)
    if self.finish_after is not None:
      checks.positive_int("finish_after", self.finish_after)
    checks.one_of("objective", self.objective, admm.OBJECTIVES)
    checks.open_interval("tolerance", self.tolerance, 0.0, np.inf)
    return self


def solve(a, instances, opts: Options, *, progress: bool | str = False,
          m_pad: int | None = None) -> list[dict]:
  """One record per instance, in order (bottleneck.topm.solve)."""
  if not instances:
    return []
  opts.check()
  a = checks.finite_array("matrix", a, ndim=2)  # float32 stays float32:
  scale = records.power_of_two_factor(a)  # x in A's units: scale * x.
  a = records.power_of_two_scaled(a, factor=scale)
  d = a.shape[1]
  m_pad = max([it.subset.size for it in instances] + [m_pad or 0])
  if m_pad >= d:
    raise ValueError(f"`m` must be < d = {d} (A_S needs full row rank); got "
                     f"{m_pad}.")
  if opts.working_set is not None and not (
      m_pad <= opts.working_set <= a.shape[0] - m_pad):
    raise ValueError(f"`working_set` must be in [m = {m_pad}, N - m = "
                     f"{a.shape[0] - m_pad}]; got {opts.working_set}.")
  settings = dataclasses.replace(opts.settings, objective=opts.objective,
                                 working_set=opts.working_set or 0)
  mesh = sharding.batch_mesh(opts.devices)
  slots = sharding.round_up(min(opts.batch, len(instances)),
                            mesh.devices.size)
  facts = lp_facts.MatrixFacts(a)  # float64 products by row blocks.
  special = records.special_subsets(facts, instances)
  placement = _placement(mesh)
  wait_compiles = None
  if not special and placement is not None:
    # Beside an accelerator, ADMM's programs compile while the host checks
    # ranks and prepares A (with repeated rows, the calls below on A
    # without them compile other shapes, so it runs after them).
    from bottleneck.lp import precompile  # pylint: disable=g-import-not-at-top
    wait_compiles = precompile.start(settings, mesh, slots, m_pad, *a.shape)
  records.check_subsets(facts, instances, special)
  if special:  # Repeated or all-zero rows in a subset.
    return _with_special(a, instances, opts, scale=scale, facts=facts,
                         special=special, progress=progress, m_pad=m_pad)
  return _stream(a, instances, opts, scale=scale, facts=facts,
                 settings=settings, batch=slots, mesh=mesh, m_pad=m_pad,
                 progress=progress, placement=placement,
                 wait_compiles=wait_compiles)


def _with_special(a, instances, opts, *, scale, facts, special, progress,
                  m_pad) -> list[dict]:
  """The plain subsets solved together; each special one by
  records.solve_special on A without its repeated / zero rows."""
  plain = [k for k in range(len(instances)) if k not in special]
  details = dict(zip(plain, solve(a, [instances[k] for k in plain], opts,
                                  progress=progress, m_pad=m_pad)))
  for k in plain:  # Solved on the scaled A: back to the caller's units.
    if "embedding" in details[k]:
      details[k]["embedding"] = scale * details[k]["embedding"]
  for k, (pairs, zeros) in special.items():
    details[k] = records.solve_special(
        lambda a_k, inst: solve(a_k, [inst], opts)[0], a, facts,
        instances[k], pairs=pairs, zeros=zeros)
    details[k].pop("embedding", None)
  return [details[k] for k in range(len(instances))]


def _stream(a, instances, opts, *, scale, facts, settings, batch, mesh,
            m_pad, progress, placement, wait_compiles) -> list[dict]:
  """The stream of `instances` (no special subsets) and its host checks;
  `placement` is _placement's, `wait_compiles` lp.precompile's (or None)."""
  objective, finish_after = opts.objective, opts.finish_after
  first_check = opts.first_check
  if first_check == "auto" or (objective == "solve" and first_check is None):
    # Solve mode is decided by the host checks.
    first_check = host_checks.first_check_age(settings, *a.shape, m_pad)
  facts.device = device = _device_a(placement, facts, mesh, m_pad,
                                    len(instances))
  shared, basis = rotation.prepare(a)
  cli.trim_heap()  # prepare's float64 blocks (0.1 GB at 262144 x 640).
  meter = cli.Progress(len(instances), progress if isinstance(
      progress, str) else "LP instances") if progress else None
  details = [None] * len(instances)
  # Instances enter the slots in a fixed pseudo-random order: a sweep
  # listed by m would otherwise run its easy small-m instances first (an ETA
  # far too short) and bunch the transition band's slow ones together.
  order = np.random.default_rng(0).permutation(len(instances))
  chained = objective == "decide" and any(
      it.chain is not None for it in instances)
  queue = [instances[i] for i in order]  # Stream index k is instance order[k].
  host = host_checks.HostChecks(
      facts, queue, basis, policy=opts.policy, delta=opts.delta,
      objective=objective, tolerance=opts.tolerance,
      finish_after=finish_after, first_check=first_check,
      device_finish_after=placement and placement.device_finish_after(mesh))
  carry = host_checks.Carry(host)  # Nested subsets: bisection per chain.
  known = carry.feed
  if wait_compiles is not None:
    wait_compiles()  # The stream's calls then find its programs compiled.
  runs = stream.run(shared, queue, settings, batch=batch, m_pad=m_pad,
                    mesh=mesh, decide=(host.solved if objective == "solve"
                                       else host.decide)
                    if first_check else None, first_check=first_check or 100,
                    verify=host.verify if objective == "decide" else None,
                    feed=known if chained else None,
                    started=None if device is None else device.warm_up)
  cost = records.CostModel(  # An open instance ends at the finish or cap.
      [it.subset.size for it in queue], batch,
      min(settings.max_iters, finish_after or settings.max_iters),
      known.expected_runs if chained else None)
  trimmed = time.perf_counter()
  # The host checks run as the stream pulls.
  with threadpoolctl.threadpool_limits(host_checks.host_blas_threads(mesh),
                                      user_api="blas"):
    for done, out in enumerate(runs, start=1):
      detail, cert = _record(facts, queue[out.index], out, basis=basis,
                             host=host, opts=opts)
      details[order[out.index]] = detail
      if (opts.embeddings and objective == "solve" and cert and
          cert.get("x") is not None and np.isfinite(detail["upper_bound"])):
        detail["embedding"] = scale * np.asarray(cert["x"], np.float64)
      known.learn(out.index, detail["verdict"], cert)
      if (chained and detail["verdict"] == "feasible" and out.x_rot is not
          None and cert and cert.get("x") is not None and
          np.isfinite(cert.get("t_upper", np.nan))):
        carry.down(out.index, cert)
      cost.finished(out.index, out.iterations, detail.get(
          "verify_seconds", 0.0), out.running if out.x_rot is not None else
                    cost.running, out.clock or cost.clock)
      if time.perf_counter() - trimmed > TRIM_EVERY_S:
        cli.trim_heap()
        trimmed = time.perf_counter()
      if meter:
        meter.update(done, cost.eta())
  return details


def _placement(mesh):
  """lp.placement (the accelerator layer's decisions) where this solve may
  send work to a device: an accelerator, or CPU devices with one of
  ACCELERATOR_OVERRIDES at 1. Else None: a CPU solve runs on the host
  checks alone and never imports the accelerator layer."""
  if mesh.devices.flat[0].platform == "cpu" and not any(
      os.environ.get(name) == "1" for name in ACCELERATOR_OVERRIDES):
    return None
  from bottleneck.lp import placement  # pylint: disable=g-import-not-at-top
  return placement


def _device_a(placement, facts, mesh, m_pad: int, count: int):
  """lp.device_checks' DeviceA where the checks' products go to the LP's
  device (placement.device_checks_enabled), else None. The accelerator
  layer is imported only then."""
  if placement is None or count < placement.DEVICE_CHECKS_MIN or not (
      placement.device_checks_enabled(mesh.devices.flat[0].platform)):
    return None
  from bottleneck.lp import device_checks  # pylint: disable=g-import-not-at-top
  return device_checks.DeviceA.for_mesh(facts.source, mesh, m_pad)


def _record(facts, inst, out, *, basis, host, opts) -> records.Record:
  """One finished stream slot as its record: decided by the host checks,
  else the best bracket it had (solve mode), else its claim checked."""
  if out.decided:
    return out.decided._replace(fields=dict(out.decided.fields,
                                            iterations=out.iterations))
  x = None if out.x_rot is None else rotation.to_original(basis, out.x_rot)
  if opts.objective == "solve":  # Capped: the best bracket it had.
    start = time.perf_counter()
    now = bracket.tighter(host.held.get(out.index), bracket.Held(
        *bracket.bracket(facts, inst.subset, inst.y, x, out.mu)))
    return records.bracketed(facts, inst, *now[:3],
                             iterations=out.iterations, start=start,
                             delta=opts.delta, policy=opts.policy,
                             tolerance=opts.tolerance, source=now.source)
  return records.decide(facts, inst, out.claim, x, out.mu,
                        iterations=out.iterations, policy=opts.policy,
                        delta=opts.delta,
                        exact_fallback=opts.exact_fallback)

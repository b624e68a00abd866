"""Top-m selectability of an OPM by LP (seed 001, Section 6, Figs 1/3, App. D).

For random m-subsets S of the tokens of a matrix A, decide whether an
embedding makes S the m most likely tokens:

  logits   equal logits 1 on S, every other logit < 1          (Fig. 1 blue)
  probs    prescribed probabilities p ~ U[0.1, 1.1] (normalised) with
           eps, delta: A_S x = ybar (eq. 14), others <= 1 - eps, then
           x * s (eq. 17) gives ratios p exactly and mass < delta off S
                                                                (Fig. 1 red)
  natural  as probs, with p = the top-m probabilities of a next-token
           distribution from a file (Appendix D)

Pipeline: instances -> batched ADMM (bottleneck.admm; jitted once, batch axis
sharded over devices) -> every certificate checked in float64
(bottleneck.certificates) -> UNDECIDED ones optionally settled by HiGHS
(bottleneck.lp_exact), whose answers are checked the same way.

  python -m bottleneck.topm --matrix=random --N=4096 --d=256 --m=20..60:10 \
      --trials=20 --problem=logits --format=json
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import admm, certificates, checks, cli, lp_exact, prescribed
from bottleneck import sharding

PROBLEMS = ("logits", "probs", "natural")


@dataclasses.dataclass(frozen=True)
class Instance:
  """One LP: token set, targets on it, decision threshold."""
  subset: np.ndarray  # [m] token indices.
  y: np.ndarray  # [m] target (unscaled) logits on S.
  threshold: float  # Feasible iff t* < threshold.
  p: np.ndarray | None = None  # Target probabilities (probs / natural).
  scale: float | None = None  # s of eq. (17).


def make_instances(N: int, m: int, trials: int, problem: str, rng,
                   eps: float = 0.05, delta: float = 0.1, targets=None,
                   subsets=None) -> list[Instance]:
  """Random (or given) subsets with the targets of `problem`."""
  checks.one_of("problem", problem, PROBLEMS)
  if problem == "natural":
    targets = checks.finite_array("targets", targets, ndim=2)
    rows = np.flatnonzero((targets > 0).sum(axis=1) >= m)
    if rows.size == 0:
      raise ValueError(f"`targets` has no row with at least m={m} positive "
                       "probabilities.")
  out = []
  for i in range(trials):
    subset = (rng.choice(N, size=m, replace=False) if subsets is None
              else checks.subset_indices("subsets", subsets[i], N))
    if problem == "logits":
      out.append(Instance(subset, np.ones(m), 1.0))
      continue
    if problem == "probs":
      p = rng.uniform(0.1, 1.1, size=m)
    else:
      row = targets[rows[rng.integers(rows.size)]]
      p = np.sort(row)[::-1][:m]
      p = p[rng.permutation(m)]  # Assigned to random tokens (App. D).
    p = p / p.sum()
    s = prescribed.scale(N, m, eps, delta)
    out.append(Instance(subset, prescribed.unscaled_targets(p, s), 1.0 - eps,
                        p, s))
  return out


def _pad(instances, m_pad, batch):
  """Stacks instances into an admm.Problem, padding m and the batch."""
  inst = list(instances) + [instances[0]] * (batch - len(instances))
  subset = np.zeros((batch, m_pad), np.int32)
  mask = np.zeros((batch, m_pad), bool)
  y = np.zeros((batch, m_pad), np.float32)
  for i, it in enumerate(inst):
    m = it.subset.size
    subset[i, :m], mask[i, :m], y[i, :m] = it.subset, True, it.y
  thr = np.array([it.threshold for it in inst], np.float32)
  return admm.Problem(subset, mask, y, thr)


class _Stream(NamedTuple):
  """Jitted init / advance / refill of a fixed-size batch of LP slots."""
  init: Callable
  advance: Callable
  refill: Callable


@functools.lru_cache(maxsize=4)
def _stream_fns(settings: admm.Settings, mesh, batch: int, m_pad: int,
                n: int, d: int) -> _Stream:
  """Compiles once per (settings, mesh, shapes); the batch axis is sharded,
  the matrix replicated, and the state's buffers are donated."""
  rep = sharding.replicated(mesh)

  def shared(a_rot, lam, colsum):
    return admm.Shared(a_rot, lam, colsum, None, 1.0)

  def freeze(state, active):
    return state._replace(status=jnp.where(active, state.status,
                                           admm.MAX_ITER))

  def init(a_rot, lam, colsum, problem, active):
    return freeze(admm.init(shared(a_rot, lam, colsum), problem, settings),
                  active)

  def advance(a_rot, lam, colsum, state, max_steps, stop_below):
    return admm.run_until(shared(a_rot, lam, colsum), state, settings,
                          max_steps, stop_below)

  def refill(a_rot, lam, colsum, state, problem, replace, active):
    new = admm.refill(shared(a_rot, lam, colsum), state, problem, replace,
                      settings)
    return freeze(new, active | ~replace)

  f32 = jax.ShapeDtypeStruct
  problem_shape = admm.Problem(f32((batch, m_pad), jnp.int32),
                               f32((batch, m_pad), bool),
                               f32((batch, m_pad), jnp.float32),
                               f32((batch,), jnp.float32))
  mat = (f32((n, d), jnp.float32), f32((d,), jnp.float32),
         f32((d,), jnp.float32))
  state_shape = jax.eval_shape(init, *mat, problem_shape,
                               f32((batch,), bool))
  by_rank = lambda x: (sharding.batch_sharded(mesh, x.ndim) if x.ndim
                       else rep)
  state_sh = jax.tree.map(by_rank, state_shape)
  problem_sh = jax.tree.map(by_rank, problem_shape)
  b1 = sharding.batch_sharded(mesh, 1)
  return _Stream(
      jax.jit(init, in_shardings=(rep, rep, rep, problem_sh, b1),
              out_shardings=state_sh),
      jax.jit(advance, in_shardings=(rep, rep, rep, state_sh, None, None),
              out_shardings=state_sh, donate_argnums=3),
      jax.jit(refill, in_shardings=(rep, rep, rep, state_sh, problem_sh, b1,
                                    b1),
              out_shardings=state_sh, donate_argnums=3))


def _verify(facts, inst: Instance, status, x, mu, settings, delta):
  """Float64 verdict for one instance from the solver's candidates."""
  a64 = facts
  if status == admm.FEASIBLE:
    cert = certificates.check_feasible(a64, inst.subset, inst.y, x,
                                       inst.threshold)
    if cert["ok"] and inst.p is not None:
      probs = certificates.check_probabilities(facts.a, inst.subset, cert["x"],
                                               inst.p, inst.scale, delta)
      cert["ok"] = probs["ok"]
      cert.update(rest_mass=probs["rest_mass"],
                  ratio_rel_error=probs["ratio_rel_error"])
    return ("feasible" if cert["ok"] else "undecided"), cert["t_upper"], cert
  if status == admm.INFEASIBLE:
    for support_factor in (2.0, 4.0, 8.0):  # Wider supports if needed.
      polished = certificates.polish(a64, inst.subset, mu, x, support_factor)
      cert = certificates.check_infeasible(a64, inst.subset, inst.y, polished,
                                           inst.threshold,
                                           settings.radius_factor)
      if cert["ok"]:
        break
    return ("infeasible" if cert["ok"] else "undecided"), cert["t_lower"], cert
  return "undecided", float("nan"), {"ok": False}


def solve(a, instances, settings: admm.Settings = admm.Settings(),
          batch: int = 32, exact_fallback: bool = False, delta: float = 0.1,
          devices=None, progress: bool = False,
          m_pad: int | None = None) -> list[dict]:
  """Decides every instance; returns one detail dict per instance, in order.

  Continuous batching: `batch` slots iterate together; whenever a quarter of
  them has a verdict candidate, those are harvested (and checked in float64)
  and their slots restarted with queued instances, so slow instances do not
  hold the batch. One compile per (matrix shape, batch, m_pad); m_pad
  defaults to the largest m (pass a fixed one to reuse a compile).
  """
  if not instances:
    return []
  a64 = checks.finite_array("matrix", a, ndim=2).astype(np.float64)
  facts = certificates.MatrixFacts(a64)
  n, d = a64.shape
  m_pad = max([it.subset.size for it in instances] + [m_pad or 0])
  if m_pad >= d:
    raise ValueError(f"`m` must be < d = {d} (A_S needs full row rank); got "
                     f"{m_pad}.")
  for it in instances:  # Full row rank of A_S (else no x prescribes y_S).
    if np.linalg.matrix_rank(a64[it.subset]) < it.subset.size:
      raise ValueError(f"`subsets`: rows {it.subset.tolist()[:8]}... of the "
                       "matrix are linearly dependent (A_S rank-deficient).")
  mesh = sharding.batch_mesh(devices)
  batch = sharding.round_up(min(batch, len(instances)), mesh.devices.size)
  shared = admm.prepare(a64)
  mat = (shared.a_rot, shared.lam, shared.colsum)
  fns = _stream_fns(settings, mesh, batch, m_pad, n, d)
  meter = cli.Progress(len(instances), "LP instances") if progress else None
  pending = list(range(len(instances)))[::-1]  # pop() takes the next one.
  slots = [-1] * batch
  for i in range(batch):
    slots[i] = pending.pop() if pending else -1
  state = fns.init(*mat, _pad([instances[max(j, 0)] for j in slots], m_pad,
                              batch), np.array(slots) >= 0)
  details = [None] * len(instances)
  done = 0
  while any(j >= 0 for j in slots):
    n_active = sum(j >= 0 for j in slots)
    stop_below = n_active - max(1, batch // 4) if pending else 0
    state = fns.advance(*mat, state, jnp.int32(settings.max_iters),
                        jnp.int32(max(stop_below, 0)))
    status, started, decided = jax.device_get(
        (state.status, state.started_at, state.decided_at))
    finished = [i for i, j in enumerate(slots)
                if j >= 0 and status[i] != admm.RUNNING]
    if finished:
      x_rot, mu = jax.device_get((state.x_cert, state.mu_cert))
    for i in finished:
      inst = instances[slots[i]]
      x = shared.v @ np.asarray(x_rot[i], np.float64) / shared.scale
      details[slots[i]] = _detail(facts, inst, int(status[i]), x, mu[i],
                                  int(decided[i] - started[i]), settings,
                                  delta, exact_fallback)
      slots[i] = pending.pop() if pending else -1
      done += 1
    if meter:
      meter.update(done)
    if finished and any(j >= 0 for j in slots):
      replace = np.zeros(batch, bool)
      replace[finished] = True
      state = fns.refill(*mat, state, _pad(
          [instances[max(j, 0)] for j in slots], m_pad, batch), replace,
                         np.array(slots) >= 0)
  return details


def _detail(facts, inst, status, x, mu, iterations, settings, delta,
            exact_fallback) -> dict:
  """Checks one instance's candidate certificate (HiGHS if undecided)."""
  start = time.perf_counter()
  verdict, objective, cert = _verify(facts, inst, status, x, mu, settings,
                                     delta)
  source = "admm"
  if verdict == "undecided" and exact_fallback:
    verdict, objective, cert = _exact(facts, inst, settings, delta)
    source = "highs"
  return {"subset": inst.subset.tolist(), "verdict": verdict,
          "objective": objective, "margin": cert.get("margin"),
          "certificate_ok": bool(cert.get("ok", False)), "source": source,
          "iterations": iterations,
          "radius_over_x_par": cert.get("radius_over_x_par"),
          "rest_mass": cert.get("rest_mass"),
          "verify_seconds": time.perf_counter() - start}


def _exact(facts, inst: Instance, settings, delta):
  """HiGHS answer, turned into a certificate and checked like ADMM's."""
  sol = lp_exact.solve(facts.a, inst.subset, inst.y)
  if sol["status"] != "Optimal":
    return "undecided", float("nan"), {"ok": False}
  status = admm.FEASIBLE if sol["t"] < inst.threshold else admm.INFEASIBLE
  verdict, objective, cert = _verify(facts, inst, status, sol["x"],
                                     sol["mu"], settings, delta)
  cert["highs_t"] = sol["t"]
  return verdict, objective, cert


def summarize(m_values, details_per_m) -> list[dict]:
  """One record per m: counts of each verdict and the feasible fraction."""
  out = []
  for m, details in zip(m_values, details_per_m):
    counts = {v: sum(x["verdict"] == v for x in details)
              for v in ("feasible", "infeasible", "undecided")}
    decided = counts["feasible"] + counts["infeasible"]
    out.append({"m": m, "trials": len(details), **counts,
                "fraction": counts["feasible"] / len(details),
                "fraction_of_decided": (counts["feasible"] / decided
                                        if decided else None),
                "trials_detail": details})
  return out


def sweep(a, m_values, trials: int, problem: str = "logits", seed: int = 0,
          eps: float = 0.05, delta: float = 0.1, targets=None, subsets=None,
          **solve_kwargs) -> list[dict]:
  """Figure-1-style curve: `trials` random subsets for each m."""
  eps, delta = prescribed.check_eps_delta(eps, delta)
  a = np.asarray(a)
  rng = np.random.default_rng(seed)
  per_m = [make_instances(a.shape[0], m, trials, problem, rng, eps, delta,
                          targets, subsets) for m in m_values]
  flat = solve(a, [it for group in per_m for it in group], delta=delta,
               **solve_kwargs)
  return summarize(m_values, [flat[i * trials:(i + 1) * trials]
                              for i in range(len(m_values))])


def m_star_search(a, trials: int, problem: str = "logits", seed: int = 0,
                  threshold: float = 0.99, **solve_kwargs):
  """Largest m whose `trials` random subsets are selectable at >= threshold.

  Integer bisection on m (fresh subsets at every probe), all probes padded to
  one m so the solver compiles once. Returns (m*, probes), probes being
  (m, fraction, undecided) in the order evaluated; m* = 0 if m = 1 fails.
  """
  a = np.asarray(a)
  n, d = a.shape
  rng = np.random.default_rng(seed)
  hi = min(d - 1, n - 1, max(2, d // 2))
  probes = []

  def ok(m):
    details = solve(a, make_instances(n, m, trials, problem, rng),
                    m_pad=hi, **solve_kwargs)
    frac = np.mean([x["verdict"] == "feasible" for x in details])
    probes.append((m, float(frac),
                   sum(x["verdict"] == "undecided" for x in details)))
    return frac >= threshold

  if not ok(1):
    return 0, probes
  if ok(hi):  # Rare: widen once to the largest m with full row rank.
    lo, hi = hi, min(d - 1, n - 1)
    if ok(hi):
      return hi, probes
  else:
    lo = 1
  while hi - lo > 1:
    mid = (lo + hi) // 2
    lo, hi = (mid, hi) if ok(mid) else (lo, mid)
  return lo, probes


def main(argv):
  from absl import flags  # pylint: disable=g-import-not-at-top
  from bottleneck import matrices  # pylint: disable=g-import-not-at-top
  del argv
  f = flags.FLAGS
  mat = matrices.load(f.matrix, f.N, f.d, f.seed)
  m_values = cli.parse_int_list("m", f.m)
  subsets = targets = None
  if f.subsets:
    subsets = np.load(f.subsets.removeprefix("npy:"), allow_pickle=False)
    if subsets.ndim != 2 or len(m_values) != 1 or subsets.shape[1] != \
        m_values[0]:
      raise ValueError("`subsets` must be a trials x m .npy of indices with "
                       "one --m equal to its width.")
    trials = subsets.shape[0]
  else:
    trials = f.trials
  if f.problem == "natural":
    if not f.targets:
      raise ValueError("`targets` (npy:PATH of probability vectors, one per "
                       "row) is required for --problem=natural.")
    targets = np.load(f.targets.removeprefix("npy:"), allow_pickle=False)
  settings = admm.Settings(max_iters=f.max_iters)
  records = sweep(mat.array, m_values, trials, f.problem, f.seed, f.eps,
                  f.delta, targets, subsets, settings=settings, batch=f.batch,
                  exact_fallback=f.exact_fallback, progress=True)
  if f.format == "json":
    print(cli.to_json(records))
  else:
    cols = ["m", "trials", "feasible", "infeasible", "undecided", "fraction"]
    print(cli.format_records(records, f.format, cols))
  if f.plot:
    from bottleneck import plots  # pylint: disable=g-import-not-at-top
    plots.save(plots.topm_curves({f"{mat.name} {f.problem}": records},
                                 mat.array.shape), f.plot)
    print(f"wrote {f.plot}", file=sys.stderr)


def _define_flags():
  from absl import flags  # pylint: disable=g-import-not-at-top
  flags.DEFINE_string("matrix", "random", "random | npy:PATH[:KEY] | "
                      "safetensors:PATH[:TENSOR] | hf:DIR | minilm")
  flags.DEFINE_integer("N", 4096, "Rows of a random matrix.")
  flags.DEFINE_integer("d", 256, "Columns of a random matrix.")
  flags.DEFINE_string("m", "20..60:10", "m values: '28', '10,20', '5..150:5'.")
  flags.DEFINE_integer("trials", 20, "Random subsets per m.")
  flags.DEFINE_enum("problem", "logits", PROBLEMS, "Which LP (see docstring).")
  flags.DEFINE_integer("seed", 0, "Seed of the matrix and the subsets.")
  flags.DEFINE_string("subsets", None, "npy:PATH of a trials x m index array.")
  flags.DEFINE_string("targets", None, "npy:PATH of probability vectors "
                      "(rows) for --problem=natural.")
  flags.DEFINE_float("eps", 0.05, "Logit gap of Prop. 2 (paper: 0.05).")
  flags.DEFINE_float("delta", 0.1, "Mass allowed off S (paper: 0.1).")
  flags.DEFINE_integer("max_iters", 5000, "ADMM iteration cap.")
  flags.DEFINE_integer("batch", 32, "LP instances per jitted call.")
  flags.DEFINE_bool("exact_fallback", False, "Settle undecided instances "
                    "with HiGHS (certified the same way).")
  flags.DEFINE_enum("format", "json", cli.FORMATS, "Output format.")
  flags.DEFINE_string("plot", None, "Write the curve(s) to this PNG.")


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

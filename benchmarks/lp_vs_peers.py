"""Top-m LP where it is hard: bottleneck vs HiGHS, MPAX and OR-Tools PDLP.

  python3 -m venv /tmp/peers
  /tmp/peers/bin/pip install mpax==0.2.4 ortools==9.15.6755
  PYTHONPATH=. .venv/bin/python benchmarks/lp_vs_peers.py \
      --peers_python=/tmp/peers/bin/python --out=benchmarks/lp_vs_peers.json

(The peers get their own environment: ortools pins protobuf < 6.34.)

`--matrix=gemma3` (or `smollm2`, any bottleneck.io.matrices spec) runs the
same comparison on a trained head (saved once to a file every solver reads)
at the band m of its own transition.

Figure 1 is a sweep of m *through* the transition, where t* of a random
subset is within a few % of 1 and a first-order solver needs many
iterations to tell which side it is on. Per size, the m values (below) are
in that band, plus one easy m on each side. The instances (Gaussian N x d,
seed 0, random m-subsets, y_S = 1, threshold 1) are drawn once here, written
to a file, and every solver reads the same ones in its own subprocess (peak
memory = its own ru_maxrss):

  bottleneck    topm.solve on every instance, batch 32 (certified verdicts),
                run twice: `s/inst` includes compile, the second excludes it.
  highs         bottleneck.lp.exact rowgen (HiGHS IPM on S plus the rows
                of largest row-space logit, violated rows added until none:
                the fastest exact setting measured).
  mpax          MPAX r2HPDHG (eps_abs = eps_rel = 1e-4, float32, dense),
                jax.vmap over the instances of one m; run twice (compile).
  pdlp          OR-Tools PDLP (relative optimality 1e-4), one by one.

`--objective=solve` (`--tolerance`, default 1e-6): ours in solve mode; a
row then also gives the largest relative distance of our certified bracket
from HiGHS's t* (bounded instances) and whether both say t* = -inf (rays).
`--highs_start=ours`: HiGHS's row generation starts from the rows of
largest logit at our certified embedding (its t* is still the whole LP's;
its time then not a peer's; instances with no embedding skipped, t = NaN).
`--m=a,b` replaces the band m values (regime "given"); `--trials=k` gives
every solver the same k instances.

A verdict is t < 1 or not; `disagree` counts decided instances whose verdict
differs from HiGHS's (ours are certified in float64, the peers' are not).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

# (N, d): {m: "band" / "easy"}; band m: t* of random subsets within ~10 %
# of 1 (topm: 4096x256 m = 45..55, 16384x512 80..90, 50257x768 96).
SIZES = {(4096, 256): {24: "easy", 48: "band", 52: "band", 64: "easy"},
         (16384, 512): {48: "easy", 80: "band", 90: "band", 128: "easy"},
         (50257, 768): {96: "band"},
         # Gemma 3's head size; its Gaussian's transition (report real_llm,
         # 4 subsets per m: 4/4 selectable at 50, 0/4 at 70).
         (262144, 640): {60: "band"}}
# Trained heads (`--matrix=gemma3`, any bottleneck.io.matrices spec): the
# band m of their own transition (seed 001 Figure 1 on the head).
TRAINED_BAND = {"gemma3": {60: "band"}, "smollm2": {60: "band"}}
# Instances per m for each solver (the peers are 10-100x slower).
TRIALS = {"bottleneck": 32, "highs": 4, "mpax": 8, "pdlp": 4}
BIG = {"bottleneck": 32, "highs": 2, "mpax": 4, "pdlp": 2}  # At 50257 x 768.
HUGE = {"bottleneck": 32, "highs": 1, "mpax": 2, "pdlp": 1}  # 262144 x 640.


def _matrix(n, d, path=""):
  """The Gaussian N x d of seed 0, or the saved trained head at `path`."""
  if path:
    return np.load(path)
  return np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)


def _rss_gb():
  return resource.getrusage(  # GB (ru_maxrss: KiB)
      resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def _bottleneck(a, subsets, objective="decide", tolerance=1e-6):
  from bottleneck import topm  # pylint: disable=g-import-not-at-top
  from bottleneck.lp import instances  # pylint: disable=g-import-not-at-top
  insts = [instances.Instance(s, np.ones(s.size), 1.0) for s in subsets]
  times, details = [], None
  for _ in range(2):
    start = time.perf_counter()
    details = topm.solve(a, insts, batch=32, objective=objective,
                         tolerance=tolerance,
                         embeddings=objective == "solve")
    times.append(time.perf_counter() - start)
  return {"verdicts": [x["verdict"] for x in details],
          "embeddings": [x["embedding"].tolist() if "embedding" in x
                         else None for x in details],
          "iterations": [x["iterations"] for x in details],
          "t_bounds": [(x["lower_bound"], x["upper_bound"]) for x in details],
          "seconds": times}


def _highs(a, subsets, starts=None):
  from bottleneck.lp import exact  # pylint: disable=g-import-not-at-top
  a64 = a.astype(np.float64)
  out = {"t": [], "seconds": [0.0]}
  for i, s in enumerate(subsets):
    x = None if starts is None else starts[i]
    if x is not None and not np.all(np.isfinite(x)):  # Ours: a ray.
      out["t"].append(np.nan)
      out["skipped"] = out.get("skipped", 0) + 1
      continue
    start = time.perf_counter()
    sol = exact.solve(a64, s, np.ones(s.size), method="rowgen", start_x=x)
    out["seconds"][0] += time.perf_counter() - start
    out["t"].append(sol["t"] if sol["status"] == "Optimal" else np.nan)
  return out


def _mpax(a, subsets):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import mpax  # pylint: disable=g-import-not-at-top
  n, d = a.shape
  a_dev = jnp.asarray(a)
  solver = mpax.r2HPDHG(eps_abs=1e-4, eps_rel=1e-4, iteration_limit=100000,
                        jit=True)

  def one(subset, rest):  # min t s.t. A_S x = 1, t - a_j . x >= 0 (j in R).
    m = subset.shape[0]
    eq = jnp.concatenate([a_dev[subset], jnp.zeros((m, 1))], axis=1)
    ineq = jnp.concatenate([-a_dev[rest], jnp.ones((rest.shape[0], 1))],
                           axis=1)
    c = jnp.zeros(d + 1).at[d].set(1.0)
    lp = mpax.create_lp(c, eq, jnp.ones(m), ineq, jnp.zeros(rest.shape[0]),
                        jnp.full(d + 1, -jnp.inf), jnp.full(d + 1, jnp.inf),
                        use_sparse_matrix=False)
    result = solver.optimize(lp)
    return result.primal_solution[d], result.iteration_count

  rests = np.stack([np.setdiff1d(np.arange(n), s) for s in subsets])
  batched = jax.jit(jax.vmap(one))
  out = {"seconds": []}
  for _ in range(2):
    start = time.perf_counter()
    t, iters = jax.block_until_ready(batched(jnp.asarray(np.stack(subsets)),
                                             jnp.asarray(rests)))
    out["seconds"].append(time.perf_counter() - start)
  out["t"], out["iterations"] = np.asarray(t).tolist(), np.asarray(
      iters).tolist()
  return out


def _pdlp(a, subsets):
  from ortools.pdlp import solvers_pb2  # pylint: disable=g-import-not-at-top
  from ortools.pdlp.python import pdlp  # pylint: disable=g-import-not-at-top
  import scipy.sparse  # pylint: disable=g-import-not-at-top
  n, d = a.shape
  a64 = a.astype(np.float64)
  params = solvers_pb2.PrimalDualHybridGradientParams()
  opt = params.termination_criteria.simple_optimality_criteria
  opt.eps_optimal_relative = 1e-4
  opt.eps_optimal_absolute = 1e-4
  params.num_threads = os.cpu_count() or 1
  out = {"t": [], "seconds": [0.0]}
  for s in subsets:
    start = time.perf_counter()
    rest = np.setdiff1d(np.arange(n), s)
    mat = np.zeros((n, d + 1))
    mat[:s.size, :d] = a64[s]
    mat[s.size:, :d], mat[s.size:, d] = a64[rest], -1.0
    qp = pdlp.QuadraticProgram()
    qp.resize_and_initialize(d + 1, n)
    qp.objective_vector = np.eye(d + 1)[d]
    qp.constraint_lower_bounds = np.concatenate(
        [np.ones(s.size), np.full(rest.size, -np.inf)])
    qp.constraint_upper_bounds = np.concatenate(
        [np.ones(s.size), np.zeros(rest.size)])
    qp.variable_lower_bounds = np.full(d + 1, -np.inf)
    qp.variable_upper_bounds = np.full(d + 1, np.inf)
    qp.constraint_matrix = scipy.sparse.csc_matrix(mat)
    result = pdlp.primal_dual_hybrid_gradient(qp, params)
    out["seconds"][0] += time.perf_counter() - start
    out["t"].append(float(result.primal_solution[d]))
  return out


def child(solver, path):
  data = np.load(path)
  n, d = int(data["n"]), int(data["d"])
  a = _matrix(n, d, str(data["matrix"]))
  subsets = list(data["subsets"])
  if solver == "bottleneck":
    out = _bottleneck(a, subsets, str(data["objective"]),
                      float(data["tolerance"]))
  elif solver == "highs":
    out = _highs(a, subsets, data["starts"] if "starts" in data else None)
  else:
    out = {"mpax": _mpax, "pdlp": _pdlp}[solver](a, subsets)
  out["peak_rss_gb"] = _rss_gb()
  print(json.dumps(out, default=float))


def _verdicts(run):
  if "verdicts" in run:
    return run["verdicts"]
  return ["undecided" if not np.isfinite(t) else
          "feasible" if t < 1.0 else "infeasible" for t in run["t"]]


def _run(solver, python, n, d, subsets, tmp, matrix="", objective="decide",
         tolerance=1e-6, starts=None):
  path = os.path.join(tmp, f"{solver}_{n}_{subsets[0].size}.npz")
  extra = {} if starts is None else {"starts": np.array(
      [np.full(d, np.nan) if x is None else x for x in starts])}
  np.savez(path, n=n, d=d, subsets=np.stack(subsets), matrix=matrix,
           objective=objective, tolerance=tolerance, **extra)
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(  # The repo, then the
      [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))  # caller's.
  proc = subprocess.run([python, __file__, f"--child={solver}",
                         f"--path={path}"], capture_output=True, text=True,
                        env=env, check=False)
  if proc.returncode:
    raise RuntimeError(f"{solver} {n}x{d}: {proc.stderr[-2000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


def _name(row) -> str:
  return "" if row.get("matrix", "gaussian") == "gaussian" else (
      f" ({row['matrix']})")


def table(results) -> str:
  """The RESULTS.md table of a run's JSON (`--table=PATH`)."""
  lines = ["| N x d | m (regime) | bottleneck s/inst (warm) | verdicts F/I/U "
           "| HiGHS rowgen s/inst | MPAX s/inst (warm) | PDLP s/inst | "
           "speed-up vs HiGHS / MPAX / PDLP | disagreements with HiGHS "
           "(ours, MPAX, PDLP) | peak GB (ours, HiGHS, MPAX, PDLP) |",
           "|" + "---|" * 10]
  for row in results["rows"]:
    ours = row["bottleneck"]
    verdicts = _verdicts(row["solvers"]["bottleneck"])
    get = lambda name, key, fmt="{:.2f}": fmt.format(row[name][key]) if (
        name in row) else "-"
    lines.append(
        f"| {row['N']} x {row['d']}{_name(row)} | {row['m']} "
        f"({row['regime']}) | "
        f"{ours['s_per_instance']:.3f} ({ours['s_per_instance_warm']:.3f}) | "
        f"{verdicts.count('feasible')}/{verdicts.count('infeasible')}/"
        f"{verdicts.count('undecided')} | {get('highs', 's_per_instance')} | "
        f"{get('mpax', 's_per_instance')} "
        f"({get('mpax', 's_per_instance_warm')}) | "
        f"{get('pdlp', 's_per_instance')} | "
        f"**{get('highs', 'bottleneck_speedup', '{:.1f}')}x** / "
        f"{get('mpax', 'bottleneck_speedup', '{:.1f}')}x / "
        f"{get('pdlp', 'bottleneck_speedup', '{:.1f}')}x | "
        f"{get('bottleneck', 'disagree_with_highs', '{}')}, "
        f"{get('mpax', 'disagree_with_highs', '{}')}, "
        f"{get('pdlp', 'disagree_with_highs', '{}')} | "
        + ", ".join(get(k, "peak_rss_gb") for k in ("bottleneck", "highs",
                                                     "mpax", "pdlp")) + " |")
  solved = [row for row in results["rows"]
            if row.get("bottleneck", {}).get("t_star_compared") is not None]
  if results.get("objective") == "solve" and solved:
    lines += ["", "| N x d | m | t* compared (bounded) | max relative error "
              "of our bracket vs HiGHS | HiGHS rays / ours -inf too |",
              "|---|---|---|---|---|"]
    for row in solved:
      ours = row["bottleneck"]
      err = ours["t_star_max_rel_err"]
      lines.append(f"| {row['N']} x {row['d']}{_name(row)} | {row['m']} | "
                   f"{ours['t_star_compared']} | "
                   f"{'-' if err is None else f'{err:.1e}'} | "
                   f"{ours['highs_rays']} / {ours['rays_both']} |")
  return "\n".join(lines)


def main():
  args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
  if "child" in args:
    child(args["child"], args["path"])
    return
  if "table" in args:
    with open(args["table"]) as f:
      print(table(json.load(f)))
    return
  peers_python = args.get("peers_python", sys.executable)
  solvers = args.get("solvers", "bottleneck,highs,mpax,pdlp").split(",")
  sizes = [tuple(map(int, s.split("x"))) for s in args.get(
      "sizes", ",".join(f"{n}x{d}" for n, d in SIZES)).split(",")]
  spec, matrix_path, bands = args.get("matrix", "gaussian"), "", SIZES
  objective = args.get("objective", "decide")
  if args.get("highs_start", "ours") != "ours":
    raise SystemExit("error: --highs_start must be 'ours' (or left out); "
                     f"got {args['highs_start']!r}.")
  tolerance = float(args.get("tolerance", "1e-6"))
  if spec != "gaussian":  # A trained head, saved once for every solver.
    from bottleneck.io import matrices  # pylint: disable=g-import-not-at-top
    head = np.asarray(matrices.load(spec).array, np.float32)
    sizes, bands = [head.shape], {head.shape: TRAINED_BAND.get(
        spec, {head.shape[1] // 10: "band"})}
  results = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d"),
             "objective": objective,
             "machine": f"{platform.node()} {platform.machine()}, "
                        f"{os.cpu_count()} cores", "rows": []}
  with tempfile.TemporaryDirectory() as tmp:
    if spec != "gaussian":
      matrix_path = os.path.join(tmp, "matrix.npy")
      np.save(matrix_path, head)
      del head
    for n, d in sizes:
      rng = np.random.default_rng(1)
      given = {int(m): "given" for m in args["m"].split(",")} if (
          "m" in args) else None
      for m, regime in (given or bands.get((n, d), {d // 6: "smoke"})
                        ).items():
        trials = HUGE if n > 200000 else BIG if n > 20000 else TRIALS
        if "trials" in args:  # The same count for every solver.
          trials = {k: int(args["trials"]) for k in TRIALS}
        subsets = [np.sort(rng.choice(n, m, replace=False))
                   for _ in range(max(trials.values()))]
        row = {"N": n, "d": d, "m": m, "regime": regime, "matrix": spec,
               "solvers": {}}
        for solver in solvers:
          k = trials[solver]
          python = sys.executable if solver in ("bottleneck", "highs") else (
              peers_python)
          ours = row["solvers"].get("bottleneck", {}).get("embeddings")
          starts = ours[:k] if (solver == "highs" and ours and args.get(
              "highs_start") == "ours") else None
          run = _run(solver, python, n, d, subsets[:k], tmp, matrix_path,
                     objective, tolerance, starts)
          run["instances"] = k
          row["solvers"][solver] = run
          print(f"{n}x{d} m={m} ({regime}) {solver}: {k} in "
                f"{run['seconds'][0]:.1f} s (warm {run['seconds'][-1]:.1f}"
                f" s), peak {run['peak_rss_gb']:.2f} GB", flush=True)
        row["solvers"].get("bottleneck", {}).pop("embeddings", None)
        if args.get("highs_start") == "ours":  # Not a peer's time then.
          row["highs_start"] = "ours"
        _compare(row)
        results["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "solvers"}),
              flush=True)
        if "out" in args:
          with open(args["out"], "w") as f:
            json.dump(results, f, indent=1, default=float)


def _compare(row):
  """Per solver: s/instance (cold, warm), verdict counts, disagreements
  with HiGHS, and the speed-up of bottleneck over it."""
  runs = row["solvers"]
  truth = _verdicts(runs["highs"]) if "highs" in runs else None
  ours = runs.get("bottleneck")
  for name, run in runs.items():
    verdicts = _verdicts(run)
    k = run["instances"]
    summary = {"s_per_instance": run["seconds"][0] / k,
               "s_per_instance_warm": run["seconds"][-1] / k,
               "peak_rss_gb": run["peak_rss_gb"],
               "undecided": verdicts.count("undecided")}
    if truth is not None:
      pairs = [(v, t) for v, t in zip(verdicts, truth)
               if v != "undecided" and t != "undecided"]
      summary["disagree_with_highs"] = sum(v != t for v, t in pairs)
      summary["compared"] = len(pairs)
    if truth is not None and name == "bottleneck":
      summary.update(_t_star_error(run["t_bounds"], runs["highs"]["t"]))
    if ours is not None and name != "bottleneck":
      summary["bottleneck_speedup"] = summary["s_per_instance"] / (
          ours["seconds"][0] / ours["instances"])
      summary["bottleneck_speedup_warm"] = summary[
          "s_per_instance_warm"] / (ours["seconds"][-1] / ours["instances"])
    row[name] = summary


def _t_star_error(bounds, highs_t) -> dict:
  """Largest max(|lower - t*|, |upper - t*|) / max(1, |t*|) of our certified
  brackets where HiGHS's t* is finite and both sides proved; of HiGHS's rays
  (t* = -inf), how many we also give -inf for."""
  rel, rays, both_inf = [], 0, 0
  for (lower, upper), t in zip(bounds, highs_t):
    lower, upper, t = (np.nan if v is None else float(v)
                       for v in (lower, upper, t))
    if t == -np.inf:
      rays += 1
      both_inf += upper == -np.inf
    elif np.isfinite(t) and np.isfinite(lower) and np.isfinite(upper):
      rel.append(max(abs(lower - t), abs(upper - t)) / max(1.0, abs(t)))
  return {"t_star_max_rel_err": max(rel) if rel else None,
          "t_star_compared": len(rel), "highs_rays": rays,
          "rays_both": both_inf}


if __name__ == "__main__":
  main()

"""`python -m bottleneck.topm`: Figure 1's top-m LP with certificates.

  python -m bottleneck.topm --matrix=minilm --m=30..70:10 --trials=20 \
      --problem=logits --format=table
  # The paper's Figure 1 (both problems in one stream; ETA on stderr):
  python -m bottleneck.topm --N=50257 --d=768 --m=5..150:5 --trials=100 \
      --problem=logits,probs --format=table --plot=figure1.png
"""

import sys

from absl import flags

from bottleneck import topm
from bottleneck.io import cli, matrices
from bottleneck.lp import admm
from bottleneck.lp import records as lp_records


def define_flags():
  flags.DEFINE_string("matrix", "random", "random | npy:PATH[:KEY] | "
                      "safetensors:PATH[:TENSOR] | hf:DIR | gguf:PATH | "
                      "smollm2 | gemma3 | minilm")
  flags.DEFINE_integer("N", 4096, "Rows of a random matrix.")
  flags.DEFINE_integer("d", 256, "Columns of a random matrix.")
  flags.DEFINE_string("m", "20..60:10", "m values: '28', '10,20', '5..150:5'.")
  flags.DEFINE_integer("trials", 20, "Random subsets per m.")
  flags.DEFINE_list("problem", ["logits"], "Which LP, or several solved in "
                    f"one stream ({', '.join(topm.PROBLEMS)}; see "
                    "bottleneck/lp/instances.py). Figure 1: logits,probs.")
  flags.DEFINE_integer("seed", 0, "Seed of the matrix and the subsets.")
  flags.DEFINE_bool("nested", True, "Trial k's subsets are the first m "
                    "tokens of one random permutation (each still a uniform "
                    "m-subset); most verdicts then follow from the few LPs "
                    "solved around each trial's transition "
                    "(bottleneck/lp/chains.py). --nonested: independent "
                    "subsets for every m.")
  flags.DEFINE_string("subsets", None, "npy:PATH of a trials x m index array "
                      "(m is its width; --m may be left out).")
  flags.DEFINE_string("targets", None, "npy:PATH of probability vectors "
                      "(rows) for --problem=natural.")
  flags.DEFINE_float("eps", 0.05, "Logit gap of Prop. 2 (paper: 0.05).")
  flags.DEFINE_float("delta", 0.1, "Mass allowed off S (paper: 0.1).")
  flags.DEFINE_integer("max_iters", 5000, "ADMM iteration cap.")
  flags.DEFINE_integer("batch", 32, "LP instances per jitted call.")
  flags.DEFINE_string("first_check", "auto", "Float64 host checks of "
                      "running instances at this age, then at twice it, ... "
                      "(0: only the solver's own in-loop verdicts; auto: "
                      "100, or 200 where a check costs more than 64 "
                      "iterations, lp.host_checks.first_check_age).")
  flags.DEFINE_bool("exact_fallback", False, "Settle undecided instances "
                    "with HiGHS (certified the same way).")
  flags.DEFINE_enum("objective", "decide", ["decide", "solve"],
                    "decide: stop at the first side of the threshold proved; "
                    "solve: t* to --tolerance with a certified bracket.")
  flags.DEFINE_float("tolerance", 1e-6, "Relative width of the certified "
                     "bracket on t* (--objective=solve).")
  flags.DEFINE_integer("working_set", None, "Rows per instance iterated "
                       "explicitly (default: ~1.25 d, or all where N - m <= "
                       "32 d and they take at most 1 MiB).")
  flags.DEFINE_integer("finish_after", 1600, "An instance still open at "
                       "this age gets one exact finish (interior point on "
                       "its working set; 0: never).")
  flags.DEFINE_bool("gaussian_twin", False, "Also solve the same m, trials "
                    "and problems on a Gaussian matrix of the same shape "
                    "(the papers' random OPM; seed --seed): one curve each.")
  flags.DEFINE_enum("format", "json", cli.FORMATS, "Output format.")
  flags.DEFINE_string("plot", None, "Write the curve(s) to this PNG.")


def main(argv):
  del argv
  f = flags.FLAGS
  cli.check_seed("seed", f.seed)
  if f.plot:
    cli.output_file("plot", f.plot)
  if not f.tolerance > 0:
    raise ValueError(f"`tolerance` must be > 0; got {f.tolerance}.")
  if f.targets and "natural" not in f.problem:
    raise ValueError("`targets` is only read by --problem=natural; got "
                     f"--problem={','.join(f.problem)}.")
  m_values = cli.parse_int_list("m", f.m)
  first_check = f.first_check
  if first_check != "auto":
    if not first_check.isdigit():
      raise ValueError("`first_check` must be 'auto' or an integer >= 0 "
                       f"(0: never); got {first_check!r}.")
    first_check = int(first_check) or None
  subsets = targets = None
  trials = f.trials
  if f.subsets:
    subsets = matrices.read_npy(f.subsets.removeprefix("npy:"), "subsets")
    if subsets.ndim != 2:
      raise ValueError(f"`subsets` must be a trials x m array of indices; "
                       f"got shape {subsets.shape}.")
    if f["m"].present and m_values != [subsets.shape[1]]:
      raise ValueError(f"`m` ({f.m}) must be the width of `subsets` "
                       f"({subsets.shape[1]}), or left out.")
    m_values, trials = [subsets.shape[1]], subsets.shape[0]
  if f.matrix == "random" and max(m_values) >= min(f.N, f.d):
    raise ValueError(f"`m` must be < min(N, d) = {min(f.N, f.d)} (A_S needs "
                     f"full row rank); got {max(m_values)}.")
  mat = matrices.load(f.matrix, f.N, f.d, f.seed)
  if max(m_values) >= min(mat.array.shape):
    raise ValueError(f"`m` must be < min(N, d) = {min(mat.array.shape)} for "
                     f"{mat.name}; got {max(m_values)}.")
  for problem in f.problem:
    if problem not in topm.PROBLEMS:
      raise ValueError(f"`problem` must be a comma list of "
                       f"{', '.join(topm.PROBLEMS)}; got {problem!r}.")
  if "natural" in f.problem:
    if not f.targets:
      raise ValueError("`targets` (npy:PATH of probability vectors, one per "
                       "row) is required for --problem=natural.")
    targets = matrices.read_npy(f.targets.removeprefix("npy:"), "targets")
  shape, head = mat.array.shape, mat.array
  heads = [mat.name] + [f"gaussian {shape[0]}x{shape[1]}"] * f.gaussian_twin
  del mat  # The head is freed before its twin is drawn.
  curves = {}
  for k, name in enumerate(heads, start=1):
    array = head if k == 1 else matrices.random(*shape, seed=f.seed)
    head = None  # Ours alone: scaled in place, not copied (lp.records).
    array = lp_records.power_of_two_scaled(array, in_place=True)
    label = (f"[{k}/{len(heads)}] {name}: LP instances" if len(heads) > 1
             else "LP instances")
    per_problem = topm.sweeps(
        array, m_values, trials, f.problem, f.seed, eps=f.eps, delta=f.delta,
        targets=targets, subsets=subsets,
        nested=f.nested and subsets is None,
        settings=admm.Settings(max_iters=f.max_iters), batch=f.batch,
        exact_fallback=f.exact_fallback, first_check=first_check,
        progress=label,
        objective=f.objective, tolerance=f.tolerance,
        working_set=f.working_set, finish_after=f.finish_after or None)
    del array
    cli.release_memory()
    for p, recs in per_problem.items():
      curves[f"{name} {p}"] = [dict(r, matrix=name) for r in recs]
  records = [r for recs in curves.values() for r in recs]
  if f.format == "json":
    print(cli.to_json(records))
  else:
    cols = ["m", "trials", "feasible", "infeasible", "undecided", "fraction",
            "fraction_upper"] + (["t_star_q10", "t_star_median", "t_star_q90",
                                  "unclosed"] if f.objective == "solve"
                                 else [])
    print(cli.format_records(records, f.format, ["matrix"] * (
        len(heads) > 1) + ["problem"] * (len(f.problem) > 1) + cols))
  if f.plot:
    from bottleneck.io import plots  # pylint: disable=g-import-not-at-top
    plots.save(plots.topm_curves(curves, shape), f.plot)
    print(f"wrote {f.plot}", file=sys.stderr)


def run():
  cli.run_binary(main, define_flags)

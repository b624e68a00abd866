"""`python -m bottleneck.topm`: Figure 1's top-m LP with certificates.

  python -m bottleneck.topm --matrix=minilm --m=30..70:10 --trials=20 \
      --problem=logits --format=table
"""

import sys

from absl import flags

from bottleneck import topm
from bottleneck.io import cli, matrices
from bottleneck.lp import admm


def define_flags():
  flags.DEFINE_string("matrix", "random", "random | npy:PATH[:KEY] | "
                      "safetensors:PATH[:TENSOR] | hf:DIR | gguf:PATH | "
                      "smollm2 | minilm")
  flags.DEFINE_integer("N", 4096, "Rows of a random matrix.")
  flags.DEFINE_integer("d", 256, "Columns of a random matrix.")
  flags.DEFINE_string("m", "20..60:10", "m values: '28', '10,20', '5..150:5'.")
  flags.DEFINE_integer("trials", 20, "Random subsets per m.")
  flags.DEFINE_enum("problem", "logits", topm.PROBLEMS,
                    "Which LP (see bottleneck/lp/instances.py).")
  flags.DEFINE_integer("seed", 0, "Seed of the matrix and the subsets.")
  flags.DEFINE_string("subsets", None, "npy:PATH of a trials x m index array "
                      "(m is its width; --m may be left out).")
  flags.DEFINE_string("targets", None, "npy:PATH of probability vectors "
                      "(rows) for --problem=natural.")
  flags.DEFINE_float("eps", 0.05, "Logit gap of Prop. 2 (paper: 0.05).")
  flags.DEFINE_float("delta", 0.1, "Mass allowed off S (paper: 0.1).")
  flags.DEFINE_integer("max_iters", 5000, "ADMM iteration cap.")
  flags.DEFINE_integer("batch", 32, "LP instances per jitted call.")
  flags.DEFINE_integer("first_check", 100, "Float64 host checks of running "
                       "instances at this age, then at twice it, ... (0: "
                       "only the solver's own in-loop verdicts).")
  flags.DEFINE_bool("exact_fallback", False, "Settle undecided instances "
                    "with HiGHS (certified the same way).")
  flags.DEFINE_enum("format", "json", cli.FORMATS, "Output format.")
  flags.DEFINE_string("plot", None, "Write the curve(s) to this PNG.")


def main(argv):
  del argv
  f = flags.FLAGS
  mat = matrices.load(f.matrix, f.N, f.d, f.seed)
  m_values = cli.parse_int_list("m", f.m)
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
  if f.problem == "natural":
    if not f.targets:
      raise ValueError("`targets` (npy:PATH of probability vectors, one per "
                       "row) is required for --problem=natural.")
    targets = matrices.read_npy(f.targets.removeprefix("npy:"), "targets")
  records = topm.sweep(mat.array, m_values, trials, f.problem, f.seed, f.eps,
                       f.delta, targets, subsets,
                       settings=admm.Settings(max_iters=f.max_iters),
                       batch=f.batch, exact_fallback=f.exact_fallback,
                       first_check=f.first_check or None, progress=True)
  if f.format == "json":
    print(cli.to_json(records))
  else:
    cols = ["m", "trials", "feasible", "infeasible", "undecided", "fraction",
            "fraction_upper"]
    print(cli.format_records(records, f.format, cols))
  if f.plot:
    from bottleneck.io import plots  # pylint: disable=g-import-not-at-top
    plots.save(plots.topm_curves({f"{mat.name} {f.problem}": records},
                                 mat.array.shape), f.plot)
    print(f"wrote {f.plot}", file=sys.stderr)


def run():
  cli.run_binary(main, define_flags)

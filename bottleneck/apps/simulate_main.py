"""`python -m bottleneck.simulate`: Figure 5's Monte-Carlo of the row space.

  python -m bottleneck.simulate --N=50257 --d=768 --m=20..36 --trials=200
"""

import sys

from absl import flags

from bottleneck import simulate
from bottleneck.io import cli


def define_flags():
  flags.DEFINE_integer("N", 50257, "Vocabulary size (rows of A).")
  flags.DEFINE_integer("d", 768, "Embedding width (columns of A).")
  flags.DEFINE_string("m", "20..36", "m values: '28', '1,5,9', '20..36', "
                      "'5..150:5'.")
  flags.DEFINE_integer("trials", 200, "Random matrices per m.")
  flags.DEFINE_integer("seed", 0, "Seed; trial i uses fold_in(key(seed), i).")
  flags.DEFINE_enum("method", "matrix", simulate.METHODS,
                    "See bottleneck/simulate.py.")
  flags.DEFINE_integer("chunk", None, "Trials per jitted call.")
  flags.DEFINE_enum("format", "json", cli.FORMATS, "Output format.")
  flags.DEFINE_string("plot", None, "Write the Figure 5 plot to this PNG.")


def main(argv):
  del argv
  f = flags.FLAGS
  cli.check_seed("seed", f.seed)
  if f.plot:
    cli.output_file("plot", f.plot)
  m_values = cli.parse_int_list("m", f.m)
  sim = simulate.simulate(f.N, f.d, m_values, f.trials, seed=f.seed,
                          method=f.method, chunk=f.chunk, progress=True)
  records = sim.records()
  print(cli.format_records(records, f.format))
  if f.plot:
    from bottleneck.io import plots  # pylint: disable=g-import-not-at-top
    plots.save(plots.simulation_vs_bounds(sim.N, sim.d, records), f.plot)
    print(f"wrote {f.plot}", file=sys.stderr)


def run():
  cli.run_binary(main, define_flags)

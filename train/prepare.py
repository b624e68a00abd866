"""Turns a folder of .txt / .jsonl / .parquet text into token shards.

  python -m train.prepare --input=/data/TinyStories --tokenizer=gpt2 \
      --outdir=/data/tinystories_gpt2
then train on it with --config.data.source=shards
--config.data.path=/data/tinystories_gpt2 --config.data.tokenizer=gpt2
(train/text/prepare.py: the formats, the split, the checks).
"""

from absl import flags

from bottleneck.io import cli

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("input", None, "A folder (read recursively, links "
                      "followed once) or a file of .txt / .jsonl / .parquet "
                      "text; a path taken literally (no glob patterns).")
  flags.DEFINE_string("tokenizer", "gpt2", "gpt2 | byte | hf:DIR | "
                      "gguf:PATH | smollm2 | gemma3.")
  flags.DEFINE_string("outdir", None, "New folder for train.bin, val.bin, "
                      "meta.json.")
  flags.DEFINE_integer("val_every", 100, "Every k-th document is held out.")
  flags.DEFINE_string("field", "text", "The text field (.jsonl) or column "
                      "(.parquet).")


def main(argv):
  del argv
  from train.text import prepare, tokenizers  # pylint: disable=g-import-not-at-top
  if not FLAGS.input or not FLAGS.outdir:
    raise ValueError("`input` and `outdir` are required.")
  tok = tokenizers.load(FLAGS.tokenizer)
  meta = prepare.prepare(FLAGS.input, tok, FLAGS.outdir, FLAGS.val_every,
                         FLAGS.field, cli.progress_callback("files"))
  print(cli.to_json({k: meta[k] for k in ("tokens", "documents", "tokenizer",
                                          "vocab_size", "files")}))


if __name__ == "__main__":
  cli.run_binary(main, _define_flags)

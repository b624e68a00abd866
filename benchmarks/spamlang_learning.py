"""Does the CPU SpamLang model's full-rank head learn the task, by Adam's
beta2 and lr (configs/spamlang.py: why the CPU model uses beta2 = 0.999)?

  PYTHONPATH=. .venv/bin/python benchmarks/spamlang_learning.py \
      --V=16384 --sightings=8 --b2=0.95,0.999 --lrs=0.003,0.01

Each setting is the report's run (train/report/spamlang.py: run_config,
run) at steps = sightings x V / 256 sequences,
with beta2 overridden; it prints one JSON line: accuracy on positions >= 1
of held-out sequences (learned: >= 0.95), final validation loss, seconds.
"""

import json
import math
import time

from absl import app, flags

from train.report import spamlang

FLAGS = flags.FLAGS
flags.DEFINE_integer("V", 16384, "Vocabulary size.")
flags.DEFINE_integer("D", 0, "Head rank (0: full).")
flags.DEFINE_float("sightings", 8, "Sequences per token.")
flags.DEFINE_list("b2", ["0.95", "0.999"], "Adam beta2 values.")
flags.DEFINE_list("lrs", ["0.003"], "Peak learning rates.")
flags.DEFINE_string("outdir", "/tmp/spamlang_learning", "Run folders.")


def main(argv):
  del argv
  steps = math.ceil(FLAGS.sightings * FLAGS.V / 256)
  for lr in map(float, FLAGS.lrs):
    for b2 in map(float, FLAGS.b2):
      cfg = spamlang.run_config(FLAGS.V, FLAGS.D, steps, lr)
      cfg.train.b2 = b2
      start = time.perf_counter()
      row = spamlang.run(cfg, FLAGS.outdir)
      print(json.dumps(dict(row, b2=b2, sightings=FLAGS.sightings,
                            seconds=round(time.perf_counter() - start, 1))),
            flush=True)


if __name__ == "__main__":
  app.run(main)

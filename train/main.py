"""Trains a model: python -m train.main --config=configs/X.py:ARG --workdir=DIR

DIR: a folder or gs://bucket/run (gcsfs installed; training/paths.py). Many
hosts: --coordinator_address etc., else automatic on TPU pods, SLURM, mpirun
(training/distributed.py); all must see one DIR (a shared file system or an
object store), or they hang at the first save. Rerunning resumes. Ctrl-C
stops between steps (exit 130); SIGTERM saves the step reached (exit 143).
"""

import json
import signal

from absl import flags
from ml_collections import config_flags

from bottleneck.io import cli

FLAGS = flags.FLAGS
config_flags.DEFINE_config_file("config", None, "Config file (path:arg).",
                                lock_config=True)
flags.DEFINE_string("workdir", None, "Run folder, or gs://...: one that "
                    "every process sees (a shared file system).")
flags.DEFINE_bool("dry_run", False, "Print the parameter count and exit.")
flags.DEFINE_string("coordinator_address", None, "host:port of process 0.")
flags.DEFINE_integer("num_processes", None, "Processes in the job.")
flags.DEFINE_integer("process_id", None, "This process's index.")
flags.DEFINE_enum("distributed", "auto", ["auto", "yes", "no"], "auto: "
                  "jax.distributed where the environment is a cluster.")


def main(_):
  from train.training import distributed  # pylint: disable=g-import-not-at-top
  distributed.initialize(FLAGS.coordinator_address, FLAGS.num_processes,
                         FLAGS.process_id, FLAGS.distributed)
  from train.models import build, weights  # pylint: disable=g-import-not-at-top
  from train.probes import hooks  # pylint: disable=g-import-not-at-top
  from train.training import trainer  # pylint: disable=g-import-not-at-top
  config = FLAGS.config
  if config is None:
    raise ValueError("`config` is required: --config=configs/thesis.py:model1")
  if FLAGS.dry_run:
    cfg = trainer.check_config(config)  # Every value; the model config.
    n = weights.param_count(weights.expected_shapes(cfg))
    print(json.dumps({"params": n, "params_millions": round(n / 1e6, 3),
                      "flops_per_token": build.flops_per_token(cfg, n),
                      "model": config.model.to_dict()}))
    return
  if not FLAGS.workdir:
    raise ValueError("`workdir` is required (or --dry_run).")
  try:  # train_and_evaluate checks every value before anything runs.
    summary = trainer.train_and_evaluate(
        config, FLAGS.workdir,
        hooks.factory(config.probes) if config.probes else None)
  finally:  # Exiting: a late Ctrl-C must not become a traceback at exit.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
  print(json.dumps(summary))


if __name__ == "__main__":
  cli.run_binary(main, lambda: None)

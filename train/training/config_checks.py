"""The training config's checks (`check_config`): every value range-checked
before anything runs, one error naming the field and its range. The
trainer calls it once per run (train/training/trainer.py re-exports it)."""

from __future__ import annotations

import functools

from bottleneck import checks
from train.models import build
from train.text import data
from train.training import init as init_lib
from train.training import memory, optim

_INF = float("inf")
# Every number of the training config that the model and the schedule do
# not check themselves: (low, high, low closed, high closed).
RANGES = {
    "train.weight_decay": (0.0, _INF, True, False),
    "train.b1": (0.0, 1.0, True, False),
    # Adam's betas: b2 = 1 would freeze nu at 0, b2 = 0 forget every past
    # gradient (Table 3: 0.95; SpamLang's CPU model 0.999).
    "train.b2": (0.0, 1.0, False, False),
    "train.eps": (0.0, _INF, False, False),
    "train.grad_clip": (0.0, _INF, True, False),
    "data.val_fraction": (0.0, 1.0, False, False),
    "peak_flops": (0.0, _INF, True, False),
}
INT_RANGES = {"seed": (0, 2**31 - 1), "data.seed": (0, 2**31 - 1),
              "data.synthetic_stories": (2, 10**8),
              "data.spamlang_vocab": (2, 2**31 - 1)}


def check_config(config):
  """Every value range-checked before anything runs (one error naming the
  field and its range): counts and periods that would divide by zero or
  never fire, the optimizer's and the data's numbers, the schedule, the
  model's fields (its config class checks them) and the step's memory.
  Returns the model config it built (train_and_evaluate passes it on: one
  check and one model config per run)."""
  for key in ("eval_every", "log_every", "checkpoint_every", "eval_batches",
              "keep_checkpoints"):
    checks.positive_int(key, config[key])
  for key in ("steps", "batch_size", "grad_accum"):
    checks.positive_int(f"train.{key}", config.train[key])
  get = lambda dotted: functools.reduce(lambda c, k: c[k],
                                        dotted.split("."), config)
  for key, (lo, hi, lo_closed, hi_closed) in RANGES.items():
    checks.number_in(key, get(key), lo, hi, lo_closed=lo_closed,
                     hi_closed=hi_closed)
  for key, (lo, hi) in INT_RANGES.items():
    checks.int_in_range(key, get(key), lo, hi)
  if config.data.source == "spamlang":
    variant = checks.one_of("data.spamlang_variant",
                            config.data.get("spamlang_variant", "repeat"),
                            data.SPAMLANG_VARIANTS)
    if variant == "fresh_first":  # Token 0 starts every sequence.
      checks.int_in_range("data.spamlang_vocab", config.data.spamlang_vocab,
                          3, 2**31 - 1, "with spamlang_variant='fresh_first'")
  eval_at = config.get("eval_at", ())
  if not isinstance(eval_at, (tuple, list)):
    raise checks.ArgumentError("eval_at", "`eval_at` must be a tuple of "
                               f"steps; got {eval_at!r}.")
  for step in eval_at:
    checks.int_in_range("eval_at", step, 1, config.train.steps,
                        "steps of this run")
  optim.schedule(config.train)  # Validates lr, warm-up and the schedule.
  checks.int_in_range("train.loss_chunk", config.train.loss_chunk, 0,
                      2**31 - 1)
  cfg = build.model_config(config.model)
  init_lib.check(config.train, cfg)
  memory.check(config, cfg)  # The step's estimate (training/memory.py).
  return cfg



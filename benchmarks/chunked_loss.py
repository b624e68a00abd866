"""The chunked cross-entropy against the naive one (issue 59): one SpamLang
training step at seed 002 Table 3's batch (128 x 64 tokens), peak memory
and seconds, each setting in its own process.

  .venv/bin/python benchmarks/chunked_loss.py                 # the table
  .venv/bin/python benchmarks/chunked_loss.py --one=chunked,131072,32,small

Settings: loss (chunked | naive: every logit of the batch at once), V, the
head's rank D (0: full) and the backbone (small: 2 llama-like layers of
width 128, 4 heads of 32, 2 KV heads, FFN 384; table3: seed 002 Table 3's
30 layers of width 576, 9 heads of 64, 3 KV heads, FFN 1536; table3_remat: each block's activations recomputed in the
backward pass). Each process builds the trainer, runs one step to
compile, then times two; it prints a JSON line with the seconds per step,
the loss of the first step and its peak RSS (VmHWM).
"""

import json
import os
import subprocess
import sys
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("one", "", "loss,V,D,backbone: run one setting here.")
flags.DEFINE_integer("steps", 2, "Timed steps per setting.")

SETTINGS = [("chunked", 131072, 32, "small"), ("naive", 131072, 32, "small"),
            ("chunked", 16384, 32, "small"), ("naive", 16384, 32, "small"),
            ("chunked", 16384, 0, "small"), ("naive", 16384, 0, "small"),
            ("chunked", 131072, 32, "table3")]
BACKBONES = {"small": dict(n_layer=2, n_head=4, n_kv_head=2, n_embd=128,
                           ffn_dim=384, head_dim=32),
             "table3": dict(n_layer=30, n_head=9, n_kv_head=3, n_embd=576,
                            ffn_dim=1536, head_dim=64)}
BACKBONES["table3_remat"] = dict(BACKBONES["table3"], remat=True)


def _config(vocab: int, rank: int, backbone: str):
  from configs import spamlang  # pylint: disable=g-import-not-at-top
  c = spamlang.get_config(f"V={vocab}" + (f",D={rank}" if rank else ""))
  c.model.family, c.model.arch, c.model.head_bias = "llama", "", False
  for key, value in BACKBONES[backbone].items():
    c.model[key] = value
  c.model.block_size, c.model.dtype = 64, "float32"
  c.train.batch_size, c.train.warmup = 128, 1
  return c


def _one(loss: str, vocab: int, rank: int, backbone: str) -> dict:
  import jax  # pylint: disable=g-import-not-at-top
  from train.text import data  # pylint: disable=g-import-not-at-top
  from train.training import loss as loss_lib, trainer  # pylint: disable=g-import-not-at-top
  if loss == "naive":  # Every logit of the batch at once, autodiff.
    def naive(cfg, params, h, y, chunk=0):
      del chunk
      project, k, b, cap = cfg.head_linear(params)

      def head(hc):
        z = (hc if project is None else project(hc)) @ k
        z = z if b is None else z + b[None, :]
        return cap * jax.numpy.tanh(z / cap) if cap else z
      return loss_lib.naive_xent(head, h, y)
    loss_lib.model_xent = naive
  config = _config(vocab, rank, backbone)
  tr = trainer.Trainer(config)
  loader, _, _ = data.make_loaders(config)
  state = tr.init_fn()
  times, first = [], None
  for step in range(FLAGS.steps + 1):
    batch = tr.global_batch(*loader.batch(step))
    start = time.perf_counter()
    state, metrics = tr.step_fn(state, *batch, tr.learning_rates[step])
    value = float(metrics["loss"])  # Waits for the step.
    times.append(time.perf_counter() - start)
    first = value if first is None else first
    del batch
  with open("/proc/self/status") as f:
    hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
  return {"loss": loss, "V": vocab, "D": rank, "backbone": backbone,
          "tokens": 128 * 64, "params": tr.n_params,
          "seconds_per_step": sum(times[1:]) / FLAGS.steps,
          "first_loss": first, "peak_rss_gb": round(hwm * 1024 / 1e9, 2),
          "devices": jax.device_count()}


def main(argv):
  del argv
  if FLAGS.one:
    loss, vocab, rank, backbone = FLAGS.one.split(",")
    print(json.dumps(_one(loss, int(vocab), int(rank), backbone)))
    return
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  for setting in SETTINGS:
    out = subprocess.run(
        [sys.executable, __file__, f"--one={','.join(map(str, setting))}",
         f"--steps={FLAGS.steps}"], env=env, capture_output=True, text=True,
        check=False)
    if out.returncode:
      print(json.dumps({"setting": setting, "failed": out.stderr[-500:]}))
    else:
      print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
  app.run(main)

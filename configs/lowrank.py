"""Seed 002 §3.1: one backbone, LM heads of rank D = 2^i (the D sweep).

  for D in 32 64 128 256 512; do python -m train.main \
      --config=configs/lowrank.py:D=$D --workdir=runs/lowrank_$D \
      --config.data.path=/data/TinyStories; done

The backbone (width 512, 6 layers) is shared; only W = A B changes rank, so
the loss curves isolate the gradient bottleneck (paper: 2B models, D = 32 ..
4096, x16 slower convergence at D = 32). `,cpu`: width 64, byte-level
synthetic stories, 300 steps. Expected: lower loss at every step for larger D.
"""

from configs import base, common


def get_config(arg: str = "D=64"):
  args = common.parse_arg(arg, D=64, cpu=False)
  cpu = args.cpu
  c = base.get_config()
  c.model.head = "lowrank"
  c.model.head_rank = args.D
  c.model.n_layer, c.model.n_head, c.model.n_embd = (2, 2, 64) if cpu else (
      6, 8, 512)
  c.data.source = "synthetic_stories" if cpu else "tinystories"
  c.data.tokenizer = "byte" if cpu else "gpt2"
  c.model.vocab_size = 257 if cpu else 50257
  c.train.schedule = "wsd"  # As in seed 002's pretraining (Table 4).
  c.train.steps = 300 if cpu else 20000
  c.train.batch_size = 16 if cpu else 64
  c.train.warmup = 30 if cpu else 2000
  c.train.lr = 3e-3 if cpu else 3e-4
  c.eval_every = 100 if cpu else 500
  c.checkpoint_every = 100 if cpu else 1000
  return c

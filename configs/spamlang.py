"""Seed 002 §3.2: SpamLang, where each sequence repeats its first token.

  python -m train.main --config=configs/spamlang.py:V=16384,D=32 --workdir=...

Arguments: V (vocabulary, default 1024) and D (head rank; default: full
width). The language is trivially expressible (predict the previous token),
yet a rank-D head must push V-dimensional gradients through D dimensions.
Paper (Table 3): 30 layers, width 576, seq 64, batch 128, 5000 steps, lr
1e-4..; final loss grows with V for small D (Fig. 14). `,cpu`: 2 layers,
width 64, 300 steps. Expected (cpu): near-zero loss for V << D, rising loss
as V grows past what the head passes.
"""

from configs import base, common


def get_config(arg: str = ""):
  args = common.parse_arg(arg, V=1024, D=0, cpu=False)
  cpu = args.cpu
  c = base.get_config()
  v = args.V
  c.data.source = "spamlang"
  c.data.spamlang_vocab = v
  c.model.vocab_size = v
  c.model.block_size = 64  # Sequence length 64 (Table 3).
  c.model.n_layer, c.model.n_head, c.model.n_embd = (2, 2, 64) if cpu else (
      30, 9, 576)
  if args.D:  # 0: the full-rank untied head.
    c.model.head = "lowrank"
    c.model.head_rank = args.D
  c.train.batch_size = 32 if cpu else 128
  c.train.steps = 300 if cpu else 5000
  c.train.warmup = 30 if cpu else 500
  c.train.lr = 3e-3 if cpu else 1e-4
  c.train.weight_decay = 0.01
  c.eval_every = 100 if cpu else 500
  c.log_every = 50
  c.checkpoint_every = 100 if cpu else 1000
  return c

"""Seed 002 §3.2: SpamLang, where each sequence repeats its first token.

  python -m train.main --config=configs/spamlang.py:V=16384,D=32 --workdir=...
  python -m train.main --config=configs/spamlang.py:V=4096,D=8,cpu --workdir=...

The definition is inferred: the section of our copy of the paper that
defines SpamLang is missing. What the copy keeps (Fig. 14's caption, App.
G.1, Table 3) fits a language whose sequences repeat one token drawn
uniformly from V (train/text/data.py: SpamLangLoader): trivially expressible
at any rank D >= 2 (Prop. 2.4), so a loss that rises with V at small D is
the gradient bottleneck, not expressivity.

Arguments: V (vocabulary, default 1024), D (the head's rank; 0 = full),
lr (0 = the scale's), b2 (Adam's beta2; 0 = the scale's), tied (the head
is the input embedding: full rank only), variant ('repeat' | 'fresh_first':
train/text/data.py SpamLangLoader), seed, and the scale: none = Table 3 (SmolLM2-135M's
architecture: 30 llama-like layers of width 576, 9 heads, 3 KV heads, FFN
1536; sequences of 64, batch 128, 5000 steps, warm-up 500, AdamW (0.9,
0.95), weight decay 0.01, cosine, clipping 1, bfloat16 compute; lr 1e-4,
one of Fig. 14's); `cpu` = 2 llama-like layers of width 128 on sequences
of 4, batch 256, lr 3e-3 and Adam's beta2 = 0.999 (the report's quick and
full scales set the steps). Why 0.999 on the CPU model: a token's head row
gets its own gradient only from its token's few sequences; with 0.95 Adam's
second moment forgets them between sightings and scales the softmax's
small dense gradient up to full steps. Measured (benchmarks/RESULTS.md,
SpamLang learning): V = 16384, 8 sequences per token, lr 3e-3, the
full-rank head reaches accuracy 0.87 with 0.95 and 0.98 with 0.999.
"""

from configs import base, common

TABLE3 = dict(n_layer=30, n_head=9, n_kv_head=3, n_embd=576, ffn_dim=1536,
              head_dim=64)
CPU = dict(n_layer=2, n_head=4, n_kv_head=2, n_embd=128, ffn_dim=384,
           head_dim=32)


def get_config(arg: str = ""):
  args = common.parse_arg(arg, V=1024, D=0, lr=0.0, b2=0.0, tied=False,
                          variant="repeat", seed=0, cpu=False)
  if args.tied and args.D:
    raise ValueError(f"config arguments `tied` and `D` ({args.D}): a tied "
                     "head is the input embedding [V, width], which has no "
                     "rank-D factorisation; use D=0 with tied, or tied=0.")
  cpu = args.cpu
  c = base.get_config()
  c.seed = args.seed
  c.data.source = "spamlang"
  c.data.spamlang_vocab = args.V
  c.data.spamlang_variant = args.variant  # Checked by the trainer.
  c.model.family = "llama"
  c.model.vocab_size = args.V
  c.model.head = "tied" if args.tied else "untied"
  c.model.head_bias = False
  for key, value in (CPU if cpu else TABLE3).items():
    c.model[key] = value
  c.model.block_size = 4 if cpu else 64  # Table 3: sequences of 64.
  c.model.dtype = "float32" if cpu else "bfloat16"
  if args.D:  # 0: the full-rank untied head.
    c.model.head = "lowrank"
    c.model.head_rank = args.D
  c.train.batch_size = 256 if cpu else 128
  c.train.steps = 600 if cpu else 5000
  c.train.warmup = 60 if cpu else 500
  c.train.lr = args.lr or (3e-3 if cpu else 1e-4)
  c.train.weight_decay = 0.01
  # Table 3: (0.9, 0.95); the CPU model's default 0.999, see above.
  c.train.b2 = args.b2 or (0.999 if cpu else 0.95)
  c.eval_every = 100 if cpu else 500
  c.eval_batches = 4
  c.log_every = 50
  c.checkpoint_every = 300 if cpu else 1000
  return c

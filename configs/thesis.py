"""Seed 004: the thesis's eight models (Table 4.1) on TinyStories.

  python -m train.main --config=configs/thesis.py:model8 --workdir=runs/m8 \
      --config.data.path=/data/TinyStories
  python -m train.main --config=configs/thesis.py:model1,cpu --workdir=/tmp/m1

`model1`..`model8` set heads / layers / width; `,cpu` swaps in the generated
story corpus, a byte-level vocabulary and 300 short steps (runs in ~a minute
on 2 cores). Expected: parameter counts 6,690,641 (models 1, 3, 5),
6,889,809 (2, 4, 6), 28,971,089 (7), 70,485,073 (8): Table 4.1's 6.69M,
6.89M, 29M, 70M at its rounding (the report's ledger checks it); on
TinyStories the validation loss falls fastest for model 8, then 7, then 6
(Fig. 5.1).
"""

from configs import base, common

MODELS = {  # name: (heads, layers, width), Table 4.1
    "model1": (1, 4, 64), "model2": (1, 8, 64), "model3": (4, 4, 64),
    "model4": (4, 8, 64), "model5": (8, 4, 64), "model6": (8, 8, 64),
    "model7": (1, 4, 256), "model8": (8, 6, 512),
}


def get_config(arg: str = "model1"):
  args = common.parse_arg(arg, positional="model", model="model1", cpu=False)
  if args.model not in MODELS:
    raise ValueError(f"configs/thesis.py takes model1..model8 with optional "
                     f",cpu; got {arg!r}.")
  c = base.get_config()
  c.model.n_head, c.model.n_layer, c.model.n_embd = MODELS[args.model]
  c.data.source = "tinystories"
  c.data.tokenizer = "gpt2"  # GPT-Neo's BPE, 50257 tokens.
  c.train.steps = 20000
  c.eval_every = 500
  if args.cpu:
    c.data.source = "synthetic_stories"
    c.data.tokenizer = "byte"
    c.model.vocab_size = 257
    c.train.steps = 300
    c.train.batch_size = 16
    c.train.warmup = 30
    c.train.lr = 3e-3
    c.eval_every = 100
    c.log_every = 25
    c.checkpoint_every = 100
  return c

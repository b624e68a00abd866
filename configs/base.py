"""Defaults shared by every training config (each field commented).

Experiment files (thesis.py, spamlang.py, lowrank.py) start from
`get_config()` here and change what their experiment needs.
"""

from ml_collections import config_dict


def get_config() -> config_dict.ConfigDict:
  c = config_dict.ConfigDict()
  c.seed = 0  # Seed of initialisation, data order and dropout.

  c.model = config_dict.ConfigDict()
  c.model.family = "gpt"  # gpt (thesis GPT) | llama (llama-like Transformer).
  # llama: '' = the fields below; smollm2 | gemma3 | gguf:PATH | hf:DIR =
  # that checkpoint's architecture, fresh weights (train/models/build.py);
  # gpt: '' or hf:DIR of a GPT-2 folder.
  c.model.arch = ""
  # V (must cover the tokenizer; with arch, 0 = the architecture's).
  c.model.vocab_size = 50257
  c.model.block_size = 128  # Context length T (thesis: 128, see WORKSPACE).
  c.model.n_layer = 4  # Transformer blocks.
  c.model.n_head = 1  # Attention heads (must divide n_embd).
  c.model.n_embd = 64  # Width.
  c.model.dropout = 0.0  # gpt: dropout on residual branches, embeddings.
  c.model.qkv_bias = False  # Bias on q, k, v (GPT-2: True; arch: its own).
  c.model.head = "untied"  # untied | tied | lowrank (W = A B).
  c.model.head_rank = 0  # D of a low-rank head (1 <= D <= n_embd).
  c.model.head_bias = True  # Bias on the logits (gpt only: llama False).
  c.model.activation = "gelu"  # gpt: gelu | gelu_exact | relu (llama: mlp).
  c.model.layer_norm_eps = 1e-5  # LayerNorm (llama: RMSNorm) epsilon.
  c.model.dtype = "float32"  # Compute dtype: float32 | bfloat16 (mixed).
  c.model.n_kv_head = 0  # llama: KV heads (0 = n_head).
  c.model.ffn_dim = 0  # llama: MLP width (0 = 4 n_embd).
  c.model.head_dim = 0  # llama: per-head width (0 = n_embd / n_head).
  c.model.rope_theta = 10000.0  # llama: RoPE base.
  c.model.mlp = "swiglu"  # llama: swiglu | geglu | gelu.
  c.model.remat = False  # llama: recompute blocks in the backward (memory).

  c.data = config_dict.ConfigDict()
  c.data.source = "synthetic_stories"  # See train/text/data.py SOURCES.
  c.data.path = ""  # tinystories folder/file; text: comma list of globs.
  c.data.online = False  # tinystories: download from the hub if no path.
  c.data.tokenizer = "gpt2"  # gpt2 | byte | hf:DIR.
  c.data.val_fraction = 0.05  # Held-out share where a source has no split.
  c.data.cache_dir = ""  # Token shards ('' = $BOTTLENECK_CACHE or ~/.cache).
  c.data.synthetic_stories = 4000  # Stories generated (synthetic_stories).
  c.data.spamlang_vocab = 1024  # V of SpamLang (source=spamlang).
  # SpamLang's first prediction: 'repeat' (a copy, loss floor 0) or
  # 'fresh_first' (a draw after a start token, counted: floor ln(V-1)/T).
  c.data.spamlang_variant = "repeat"
  c.data.seed = 0  # Seed of the synthetic corpora.

  c.train = config_dict.ConfigDict()
  c.train.steps = 20000  # Optimizer steps (thesis: 20,000 "epochs").
  c.train.batch_size = 64  # Global batch, sequences (per optimizer step).
  c.train.grad_accum = 1  # Micro-batches per step (batch_size is split).
  c.train.lr = 3e-4  # Peak learning rate.
  c.train.warmup = 200  # Linear warm-up steps.
  c.train.schedule = "cosine"  # cosine | wsd | constant.
  c.train.decay_fraction = 0.1  # wsd: share of steps in the final decay.
  c.train.min_lr_ratio = 0.1  # Final lr / peak lr.
  c.train.weight_decay = 0.1  # AdamW decay (matrices only).
  c.train.b1 = 0.9  # AdamW beta1.
  c.train.b2 = 0.95  # AdamW beta2.
  c.train.eps = 1e-8  # AdamW epsilon.
  c.train.grad_clip = 1.0  # Global-norm clipping (0 = off).
  c.train.fsdp = False  # Shard parameters and optimizer state (ZeRO-3).
  # Start from a checkpoint's weights (continued pretraining): '' (fresh) |
  # smollm2 | gemma3 | gguf:PATH | hf:DIR; its architecture must be the
  # model's (model.family=llama, model.arch = the same checkpoint).
  c.train.init = ""
  # A low-rank head under `init`: svd (the checkpoint head's truncated SVD)
  # | fresh.
  c.train.init_head = "svd"
  # Tokens per chunk of the cross-entropy (0 = as many as fit 32 MiB of
  # float32 logits on a CPU, 512 MiB on an accelerator): the loss never
  # holds [B, T, V] (training/loss.py).
  c.train.loss_chunk = 0

  c.eval_every = 500  # Validation loss every N steps (thesis: 500).
  # Further steps evaluated besides every eval_every-th (the low-rank
  # sweep's early grid, where its statistic's crossing lies).
  c.eval_at = ()
  c.eval_batches = 10  # Validation batches per evaluation.
  c.log_every = 50  # Progress line and metrics.jsonl row every N steps.
  # Also write metrics.jsonl's rows as TensorBoard scalars in
  # WORKDIR/tensorboard (tensorboardX; off: the CPU runs skip its cost).
  c.tensorboard = False
  c.checkpoint_every = 500  # Checkpoint every N steps.
  c.keep_checkpoints = 3  # Checkpoints kept (oldest deleted).
  c.async_checkpoint = True  # Write checkpoints in the background.
  # Training-time probes: comma list of name:every (train/probes/hooks.py),
  # e.g. 'gradient:200'. Steps without a probe run the plain step.
  c.probes = ""
  c.peak_flops = 0.0  # Device peak FLOP/s for MFU (0 = known table/none).
  return c

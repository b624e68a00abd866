"""Llama-architecture GGUF files (llama.cpp) as train.llama parameters.

  params, cfg, tokenizer = gguf_llama.load(path)

Metadata -> LlamaConfig; every tensor dequantised to float32 with
`gguf.quants.dequantize` (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, ...);
llama.cpp's converter permutes the rows of attn_q / attn_k inside each head
(so that its RoPE pairs dimensions 2i, 2i+1), which is undone here (HF
layout: i pairs with i + head_dim/2); the BPE tokenizer is rebuilt from the
file's own vocabulary and merges. No pickle anywhere.

File reading and dequantisation: bottleneck/io/gguf_file.py.
"""

from __future__ import annotations

import os

from bottleneck.io import gguf_file
from train import llama, tokenizers

_LAYER = {"attn_norm": ("attn_norm", "scale"),
          "ffn_norm": ("mlp_norm", "scale"),
          "attn_q": ("attn", "q"), "attn_k": ("attn", "k"),
          "attn_v": ("attn", "v"), "attn_output": ("attn", "o"),
          "ffn_gate": ("gate",), "ffn_up": ("up",), "ffn_down": ("down",)}
_field = gguf_file.field
_tensor = gguf_file.tensor


def config(reader, path: str) -> llama.LlamaConfig:
  arch = _field(reader, "general.architecture", path)
  if arch not in ("llama", "mistral", "qwen2"):
    raise ValueError(f"`model` {path!r}: general.architecture={arch!r} is "
                     "not supported (llama, mistral, qwen2).")
  get = lambda k, d=None: _field(reader, f"{arch}.{k}", path, d)
  names = {t.name for t in reader.tensors}
  n_vocab = get("vocab_size", len(_field(reader, "tokenizer.ggml.tokens",
                                         path)))
  return llama.LlamaConfig(
      vocab_size=int(n_vocab), n_layer=int(get("block_count")),
      n_head=int(get("attention.head_count")),
      n_kv_head=int(get("attention.head_count_kv",
                        get("attention.head_count"))),
      n_embd=int(get("embedding_length")),
      ffn_dim=int(get("feed_forward_length")),
      rope_theta=float(get("rope.freq_base", 10000.0)),
      rms_eps=float(get("attention.layer_norm_rms_epsilon")),
      tied="output.weight" not in names,
      qkv_bias="blk.0.attn_q.bias" in names,
      block_size=min(int(get("context_length", 2048)), 2048))


def unpermute(w_oxi, n_head: int):
  """Inverse of llama.cpp's `permute` of Q/K rows (per head, interleaved ->
  half-split), on a weight [out, in] or a bias [out]."""
  shape = w_oxi.shape
  w = w_oxi.reshape(n_head, shape[0] // n_head // 2, 2, *shape[1:])
  return w.swapaxes(1, 2).reshape(shape)


def load(path: str):
  """(params, LlamaConfig, tokenizer) of a Llama-architecture GGUF file."""
  reader = gguf_file.reader(path)
  cfg = config(reader, path)
  p = {}
  for t in reader.tensors:
    w = _tensor(t, path)
    parts = t.name.split(".")
    if t.name == "token_embd.weight":
      p["embed"] = {"embedding": w}
    elif t.name == "output_norm.weight":
      p["norm"] = {"scale": w}
    elif t.name == "output.weight":
      p["lm_head"] = {"kernel": w.T}
    elif parts[0] == "blk" and parts[2] in _LAYER:
      keys = _LAYER[parts[2]]
      if parts[2] in ("attn_q", "attn_k"):
        w = unpermute(w, cfg.n_head if parts[2] == "attn_q" else cfg.n_kv_head)
      node = p.setdefault(f"layer_{parts[1]}", {})
      for k in keys[:-1] if keys[-1] == "scale" else keys:
        node = node.setdefault(k, {})
      if keys[-1] == "scale":
        node["scale"] = w
      else:
        node["kernel" if parts[3] == "weight" else "bias"] = (
            w.T if parts[3] == "weight" else w)
  check_shapes(p, cfg, path)
  return {"params": p}, cfg, tokenizer(reader, path)


def check_shapes(p, cfg, path):
  """Every parameter the config implies exists with its shape."""
  import jax  # pylint: disable=g-import-not-at-top
  want = jax.eval_shape(lambda: llama.init_params(cfg))["params"]
  flat_want = dict(jax.tree_util.tree_leaves_with_path(want))
  flat_got = dict(jax.tree_util.tree_leaves_with_path(p))
  for key, spec in flat_want.items():
    name = "/".join(k.key for k in key)
    if key not in flat_got:
      raise ValueError(f"`model` {path!r} lacks the tensor for {name}.")
    if tuple(flat_got[key].shape) != tuple(spec.shape):
      raise ValueError(f"`model` {path!r}: {name} has shape "
                       f"{tuple(flat_got[key].shape)}, the metadata implies "
                       f"{tuple(spec.shape)}.")


def tokenizer(reader, path: str) -> tokenizers.Tokenizer:
  """The file's byte-level BPE (tokenizer.ggml.model = gpt2) as a Tokenizer."""
  from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # pylint: disable=g-import-not-at-top
  kind = _field(reader, "tokenizer.ggml.model", path)
  if kind != "gpt2":
    raise ValueError(f"`model` {path!r}: tokenizer.ggml.model={kind!r}; only "
                     "byte-level BPE ('gpt2') is supported.")
  tokens = _field(reader, "tokenizer.ggml.tokens", path)
  merges = [tuple(m.split(" ", 1)) for m in
            _field(reader, "tokenizer.ggml.merges", path)]
  bpe = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges,
                             fuse_unk=False))
  byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
  if _field(reader, "tokenizer.ggml.pre", path, "default") == "smollm":
    # SmolLM's tokenizer.json: every digit is its own pre-token.
    byte_level = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), byte_level])
  bpe.pre_tokenizer = byte_level
  bpe.decoder = decoders.ByteLevel()
  eos = int(_field(reader, "tokenizer.ggml.eos_token_id", path, 0))
  return tokenizers.Tokenizer(
      f"gguf:{os.path.basename(path)}", len(tokens), eos,
      lambda text: bpe.encode(text).ids, lambda ids: bpe.decode(list(ids)))

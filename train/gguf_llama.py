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

import dataclasses
import os

from bottleneck.io import gguf_file
from train import llama, tokenizers, weights

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
  names = {t.name: t for t in reader.tensors}
  n_vocab = get("vocab_size", len(_field(reader, "tokenizer.ggml.tokens",
                                         path)))
  n_head, n_embd = int(get("attention.head_count")), int(get(
      "embedding_length"))
  theta = float(get("rope.freq_base", 10000.0))
  if "rope_freqs.weight" in names:  # Llama 3.1+: per-frequency divisors.
    divisors = tuple(float(f) for f in _tensor(names["rope_freqs.weight"],
                                                path).ravel())
  else:
    kind = get("rope.scaling.type", "none")
    divisors = llama.rope_divisors(
        {"rope_type": "default" if kind == "none" else kind,
         "factor": get("rope.scaling.factor", 1.0)}, n_embd // n_head, theta,
        f"model {path!r}: {arch}.rope.scaling")
  return llama.LlamaConfig(
      vocab_size=int(n_vocab), n_layer=int(get("block_count")),
      n_head=n_head,
      n_kv_head=int(get("attention.head_count_kv",
                        get("attention.head_count"))),
      n_embd=n_embd,
      ffn_dim=int(get("feed_forward_length")),
      rope_theta=theta, rope_divisors=divisors,
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


def load(path: str, dtype: str = "float32"):
  """(params, LlamaConfig, tokenizer) of a Llama-architecture GGUF file;
  parameters stored in `dtype` (float32 | bfloat16, also the compute
  dtype) after dequantisation."""
  reader = gguf_file.reader(path)
  cfg = dataclasses.replace(config(reader, path), dtype=dtype)
  where = f"`model` {path!r}"
  shapes = weights.expected_shapes(llama.init_params, cfg)
  weights.check_memory(shapes, dtype, where)
  p, to = {}, weights.np_dtype(dtype)
  for t in reader.tensors:
    w = _tensor(t, path).astype(to, copy=False)
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
  weights.check_shapes(p, shapes, where)
  return {"params": p}, cfg, tokenizer(reader, path)


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

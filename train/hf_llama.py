"""Llama / Mistral / Qwen2 weights from an HF folder (config.json + model
.safetensors or a sharded index) as train.llama parameters.

HF stores nn.Linear weights [out, in] (Flax kernels are [in, out]) and its
q/k rows already in the half-split RoPE layout train.llama uses, so no
permutation is needed (GGUF files differ: train/gguf_llama.py). Weights are
read with safetensors (bottleneck/io/hf.py); nothing is unpickled.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bottleneck.io import hf
from train import llama, weights

MODEL_TYPES = ("llama", "mistral", "qwen2")
_LAYER = {"input_layernorm.weight": ("attn_norm", "scale"),
          "post_attention_layernorm.weight": ("mlp_norm", "scale"),
          "self_attn.q_proj": ("attn", "q"), "self_attn.k_proj": ("attn", "k"),
          "self_attn.v_proj": ("attn", "v"), "self_attn.o_proj": ("attn", "o"),
          "mlp.gate_proj": ("gate",), "mlp.up_proj": ("up",),
          "mlp.down_proj": ("down",)}


def config_from_hf(c: dict, path: str) -> llama.LlamaConfig:
  if c.get("model_type") not in MODEL_TYPES:
    raise ValueError(f"`hf_dir` {path!r}: model_type={c.get('model_type')!r} "
                     f"is not one of {MODEL_TYPES} (gpt2 loads through "
                     "train/hf_gpt2.py).")
  weights.require_int_fields(c, path)
  head_dim = c["hidden_size"] // c["num_attention_heads"]
  if c.get("head_dim", head_dim) != head_dim:
    raise ValueError(f"`hf_dir` {path!r}: head_dim={c['head_dim']} differs "
                     "from hidden_size / num_attention_heads; not supported.")
  theta = float(c.get("rope_theta", 10000.0))
  return llama.LlamaConfig(
      vocab_size=c["vocab_size"], n_layer=c["num_hidden_layers"],
      n_head=c["num_attention_heads"],
      n_kv_head=c.get("num_key_value_heads") or c["num_attention_heads"],
      n_embd=c["hidden_size"], ffn_dim=c["intermediate_size"],
      rope_theta=theta,
      rope_divisors=llama.rope_divisors(
          c.get("rope_scaling"), head_dim, theta,
          f"hf_dir {path!r}: config.json rope_scaling"),
      rms_eps=float(c.get("rms_norm_eps", 1e-6)),
      tied=bool(c.get("tie_word_embeddings", False)),
      qkv_bias=c["model_type"] == "qwen2",
      block_size=min(int(c.get("max_position_embeddings", 2048)), 2048))


def load(directory: str, dtype: str = "float32"):
  """(params, LlamaConfig) from an HF Llama-family folder; parameters
  stored in `dtype` (float32 | bfloat16; also the compute dtype)."""
  cfg = config_from_hf(hf.read_config(directory, "hf_dir"), directory)
  cfg = dataclasses.replace(cfg, dtype=dtype)
  where = f"`hf_dir` {directory!r}"
  shapes = weights.expected_shapes(llama.init_params, cfg)
  weights.check_memory(shapes, dtype, where)
  p, to = {}, weights.np_dtype(dtype)
  for name, w in hf.read_tensors(directory, "hf_dir").items():
    w = np.asarray(w, to)
    name = name.removeprefix("model.")
    if name == "embed_tokens.weight":
      p["embed"] = {"embedding": w}
    elif name == "norm.weight":
      p["norm"] = {"scale": w}
    elif name == "lm_head.weight":
      if not cfg.tied:
        p["lm_head"] = {"kernel": w.T}
    elif name.startswith("layers."):
      _, i, rest = name.split(".", 2)
      stem, _, leaf = rest.rpartition(".")
      keys = _LAYER.get(rest) or _LAYER.get(stem)
      if keys is None:
        continue  # e.g. rotary inv_freq buffers.
      node = p.setdefault(f"layer_{i}", {})
      for k in keys[:-1]:
        node = node.setdefault(k, {})
      if keys[-1] == "scale":
        node["scale"] = w
      else:
        node.setdefault(keys[-1], {})["kernel" if leaf == "weight" else
                                      "bias"] = w.T if leaf == "weight" else w
  weights.check_shapes(p, shapes, where)
  return {"params": p}, cfg

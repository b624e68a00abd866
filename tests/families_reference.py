"""What families_test (and the tests that load small models) compare
against: an independent float64 numpy forward written from the HF modeling
code's semantics, and writers of small random checkpoints the way each
ecosystem stores them (HF folders: config.json + model.safetensors, Gemma
norms stored as w with 1 + w applied; llama.cpp GGUF files: metadata,
`blk.N.*` names, q/k rows permuted for the `llama` architecture only, Gemma
norms stored as 1 + w).
"""

import json
import math
import os

import gguf
import numpy as np
from safetensors.numpy import save_file

V, D, F = 300, 32, 48
IDS = np.array([5, 17, 3, 96, 0, 44, 8, 250, 12, 7, 33, 61, 2, 9])  # > window
# Architectures: the switches the reference reads (HF semantics).
ARCHS = {
    "llama": dict(L=2, H=4, KV=2, HD=8, mlp="swiglu", eps=1e-5, theta=1e4),
    "mistral": dict(L=2, H=4, KV=2, HD=8, mlp="swiglu", eps=1e-5, theta=1e4,
                    window=5, types=("local", "local")),
    "qwen2": dict(L=2, H=4, KV=2, HD=8, mlp="swiglu", eps=1e-6, theta=1e6,
                  qkv_bias=True),
    "qwen3": dict(L=2, H=4, KV=2, HD=16, mlp="swiglu", eps=1e-6, theta=1e6,
                  qk_norm=True),  # head_dim 16 != D / H = 8.
    "gemma2": dict(L=2, H=4, KV=1, HD=16, mlp="geglu", eps=1e-6, theta=1e4,
                   window=5, types=("local", "global"), post_norms=True,
                   embed_scale=True, attn_cap=5.0, final_cap=3.0,
                   qscale=12.0),
    "gemma3": dict(L=6, H=4, KV=1, HD=16, mlp="geglu", eps=1e-6, theta=1e6,
                   local_theta=1e4, window=5, types=("local",) * 5 +
                   ("global",), post_norms=True, embed_scale=True,
                   qk_norm=True, qscale=16.0),
}


def weights(arch: str, seed: int = 0) -> dict:
  """Random weights in a neutral layout: [out, in] matrices, norm scales
  as applied (effective)."""
  a = ARCHS[arch]
  rng = np.random.default_rng(seed)
  g = lambda *s: (0.3 * rng.standard_normal(s)).astype(np.float32)
  w = {"embed": g(V, D), "norm": 1 + g(D)}
  for i in range(a["L"]):
    w.update({f"{i}.q": g(a["H"] * a["HD"], D),
              f"{i}.k": g(a["KV"] * a["HD"], D),
              f"{i}.v": g(a["KV"] * a["HD"], D),
              f"{i}.o": g(D, a["H"] * a["HD"]), f"{i}.gate": g(F, D),
              f"{i}.up": g(F, D), f"{i}.down": g(D, F),
              f"{i}.attn_norm": 1 + g(D), f"{i}.mlp_norm": 1 + g(D)})
    if a.get("qkv_bias"):
      w.update({f"{i}.q_b": g(a["H"] * a["HD"]),
                f"{i}.k_b": g(a["KV"] * a["HD"]),
                f"{i}.v_b": g(a["KV"] * a["HD"])})
    if a.get("qk_norm"):
      w.update({f"{i}.q_norm": 1 + g(a["HD"]), f"{i}.k_norm": 1 + g(a["HD"])})
    if a.get("post_norms"):
      w.update({f"{i}.post_attn_norm": 1 + g(D),
                f"{i}.post_mlp_norm": 1 + g(D)})
  return w


def reference(a: dict, w: dict, ids, inv=None) -> np.ndarray:
  """Logits [T, V] in float64: pre-norm blocks, RMSNorm, half-split RoPE
  (HF rotate_half), grouped KV heads (head h reads kv h // (H / KV)),
  causal masks with an optional sliding window (j > i - window), optional
  QK-norm, post-norms, score / logit soft-caps, sqrt(d) input scaling,
  SwiGLU (SiLU gate) or GeGLU (tanh GELU), a tied head (or w['head'], or
  w['head_a'] @ w['head_b']). `inv`: the inverse frequencies of global
  layers (default theta^(-2i/h))."""
  w = {k: v.astype(np.float64) for k, v in w.items()}
  t, hd, heads, kv = len(ids), a["HD"], a["H"], a["KV"]
  eps = a["eps"]
  rms = lambda x, s: x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps) * s
  types = a.get("types") or ("global",) * a["L"]

  def rotary(x, theta, given=None):  # [T, heads, hd]
    freq = 1.0 / theta ** (np.arange(0, hd, 2) / hd) if given is None \
        else given
    ang = np.arange(t)[:, None] * freq[None]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None]
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None]
    half = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)
    return x * cos + half * sin

  if a["mlp"] == "swiglu":
    act = lambda z: z / (1 + np.exp(-z))
  else:
    act = lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (
        z + 0.044715 * z ** 3)))
  x = w["embed"][ids] * (math.sqrt(D) if a.get("embed_scale") else 1.0)
  for i in range(a["L"]):
    local = types[i] == "local"
    theta = a.get("local_theta", a["theta"]) if local else a["theta"]
    h = rms(x, w[f"{i}.attn_norm"])
    proj = lambda n, heads_: (h @ w[f"{i}.{n}"].T + w.get(
        f"{i}.{n}_b", 0.0)).reshape(t, heads_, hd)
    q, k, v = proj("q", heads), proj("k", kv), proj("v", kv)
    if a.get("qk_norm"):
      q, k = rms(q, w[f"{i}.q_norm"]), rms(k, w[f"{i}.k_norm"])
    given = None if local else inv
    q, k = rotary(q, theta, given), rotary(k, theta, given)
    out = np.zeros((t, heads, hd))
    scale = a.get("qscale", hd) ** -0.5
    for head in range(heads):
      g_ = head // (heads // kv)
      s = q[:, head] @ k[:, g_].T * scale
      if a.get("attn_cap"):
        s = a["attn_cap"] * np.tanh(s / a["attn_cap"])
      for qi in range(t):
        for kj in range(t):
          if kj > qi or (local and kj <= qi - a["window"]):
            s[qi, kj] = -np.inf
      p = np.exp(s - s.max(1, keepdims=True))
      out[:, head] = (p / p.sum(1, keepdims=True)) @ v[:, g_]
    attn = out.reshape(t, heads * hd) @ w[f"{i}.o"].T
    if a.get("post_norms"):
      attn = rms(attn, w[f"{i}.post_attn_norm"])
    x = x + attn
    h = rms(x, w[f"{i}.mlp_norm"])
    mlp = (act(h @ w[f"{i}.gate"].T) * (h @ w[f"{i}.up"].T)) @ \
        w[f"{i}.down"].T
    if a.get("post_norms"):
      mlp = rms(mlp, w[f"{i}.post_mlp_norm"])
    x = x + mlp
  head = w.get("head", w["embed"])  # Untied: w["head"] [V, D]; low-rank:
  if "head_a" in w:  # W = A B, A [V, r], B [r, D].
    head = w["head_a"] @ w["head_b"]
  logits = rms(x, w["norm"]) @ head.T
  if a.get("final_cap"):
    logits = a["final_cap"] * np.tanh(logits / a["final_cap"])
  return logits


# -- HF folders --------------------------------------------------------------

_HF_LLAMA = {"attn_norm": "input_layernorm",
             "mlp_norm": "post_attention_layernorm",
             "q": "self_attn.q_proj", "k": "self_attn.k_proj",
             "v": "self_attn.v_proj", "o": "self_attn.o_proj",
             "q_norm": "self_attn.q_norm", "k_norm": "self_attn.k_norm",
             "gate": "mlp.gate_proj", "up": "mlp.up_proj",
             "down": "mlp.down_proj"}
_HF_GEMMA = dict(_HF_LLAMA, post_attn_norm="post_attention_layernorm",
                 mlp_norm="pre_feedforward_layernorm",
                 post_mlp_norm="post_feedforward_layernorm")


def hf_config(arch: str) -> dict:
  a = ARCHS[arch]
  c = {"model_type": "gemma3_text" if arch == "gemma3" else arch,
       "vocab_size": V, "hidden_size": D, "num_hidden_layers": a["L"],
       "num_attention_heads": a["H"], "num_key_value_heads": a["KV"],
       "head_dim": a["HD"], "intermediate_size": F,
       "rms_norm_eps": a["eps"], "rope_theta": a["theta"],
       "max_position_embeddings": 64, "tie_word_embeddings": True}
  if arch == "mistral":
    c["sliding_window"] = a["window"]
  if arch.startswith("gemma"):
    c.update(hidden_activation="gelu_pytorch_tanh",
             query_pre_attn_scalar=a["qscale"], sliding_window=a["window"],
             attn_logit_softcapping=a.get("attn_cap"),
             final_logit_softcapping=a.get("final_cap"))
  if arch == "gemma3":
    c.update(rope_local_base_freq=a["local_theta"], sliding_window_pattern=6)
  return c


def write_hf(folder: str, arch: str, w: dict, config=None) -> dict:
  gemma = arch.startswith("gemma")
  names, offset = (_HF_GEMMA, 1.0) if gemma else (_HF_LLAMA, 0.0)
  tensors = {"model.embed_tokens.weight": w["embed"],
             "model.norm.weight": w["norm"] - offset}
  for key, value in w.items():
    if key[0].isdigit():
      i, name = key.split(".", 1)
      base, bias = (name[:-2], True) if name.endswith("_b") else (name, False)
      stored = value - offset if base.endswith("norm") else value
      tensors[f"model.layers.{i}.{names[base]}."
              f"{'bias' if bias else 'weight'}"] = stored
  save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
            os.path.join(folder, "model.safetensors"))
  config = config or hf_config(arch)
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(config, f)
  return config


# -- GGUF files --------------------------------------------------------------

_GGUF = {"attn_norm": "attn_norm", "mlp_norm": "ffn_norm",
         "post_attn_norm": "post_attention_norm",
         "post_mlp_norm": "post_ffw_norm", "q": "attn_q", "k": "attn_k",
         "v": "attn_v", "o": "attn_output", "q_norm": "attn_q_norm",
         "k_norm": "attn_k_norm", "gate": "ffn_gate", "up": "ffn_up",
         "down": "ffn_down"}


def permute(w, n_head: int):
  """llama.cpp convert_hf_to_gguf.py's LlamaModel.permute (HF -> GGUF)."""
  return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
          .swapaxes(1, 2).reshape(w.shape))


def bpe_vocab():
  """A byte-level BPE: the 256 byte symbols, 10 merges, padding tokens."""
  from tokenizers import pre_tokenizers  # pylint: disable=g-import-not-at-top
  symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
  merges = [("t", "h"), ("th", "e"), ("a", "n"), ("i", "n"), ("o", "n"),
            ("e", "r"), ("Ġ", "t"), ("Ġt", "h"), ("Ġth", "e"), ("a", "t")]
  tokens = symbols + ["".join(m) for m in merges]
  tokens += [f"<extra_{i}>" for i in range(V - len(tokens))]
  return tokens, [" ".join(m) for m in merges]


def _gguf_type(value):
  """(GGUFValueType, array subtype) of a Python value (ints as uint32,
  negative ones int32; floats float32)."""
  t = gguf.GGUFValueType
  if isinstance(value, bool):
    return t.BOOL, None
  if isinstance(value, int):
    return (t.INT32 if value < 0 else t.UINT32), None
  if isinstance(value, float):
    return t.FLOAT32, None
  if isinstance(value, str):
    return t.STRING, None
  return t.ARRAY, _gguf_type(value[0])[0] if value else t.UINT32


def write_gguf(path: str, arch: str, w: dict, quantize_embedding=False,
               rope_freqs=None, tokenizer=None, meta=None,
               tensors=None) -> None:
  """`w` as llama.cpp writes it; `tokenizer(writer)` adds tokenizer
  metadata (default: the byte-level BPE of bpe_vocab). `meta`: keys to set
  (any Python value, its GGUF type inferred) or drop (None) after the
  defaults, e.g. {'llama.block_count': 10**9}; `tensors`: name -> array
  replacing or adding tensors (None drops one)."""
  a = ARCHS[arch]
  gguf_arch = "llama" if arch == "mistral" else arch
  writer = gguf.GGUFWriter(path, gguf_arch)
  kv = {}
  for key, value in (("block_count", a["L"]), ("context_length", 64),
                     ("embedding_length", D), ("feed_forward_length", F),
                     ("attention.head_count", a["H"]),
                     ("attention.head_count_kv", a["KV"]),
                     ("attention.key_length", a["HD"]),
                     ("attention.value_length", a["HD"])):
    kv[f"{gguf_arch}.{key}"] = value
  kv[f"{gguf_arch}.rope.freq_base"] = float(a["theta"])
  kv[f"{gguf_arch}.attention.layer_norm_rms_epsilon"] = float(a["eps"])
  if arch.startswith("gemma"):
    kv[f"{gguf_arch}.attention.sliding_window"] = a["window"]
  if arch == "gemma2":
    kv[f"{gguf_arch}.attn_logit_softcapping"] = float(a["attn_cap"])
    kv[f"{gguf_arch}.final_logit_softcapping"] = float(a["final_cap"])
  if tokenizer is None:
    tokens, merges = bpe_vocab()
    kv.update({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre":
               "default", "tokenizer.ggml.tokens": tokens,
               "tokenizer.ggml.merges": merges,
               "tokenizer.ggml.eos_token_id": 2})
  else:
    tokenizer(writer)
  for key, value in {**kv, **(meta or {})}.items():
    if value is not None:
      writer.add_key_value(key, value, *_gguf_type(value))
  stored = {}
  if quantize_embedding:
    stored["token_embd.weight"] = (gguf.quants.quantize(
        w["embed"], gguf.GGMLQuantizationType.Q8_0),
                                   gguf.GGMLQuantizationType.Q8_0)
  else:
    stored["token_embd.weight"] = w["embed"]
  stored["output_norm.weight"] = w["norm"]
  if rope_freqs is not None:  # llama.cpp's Llama-3 frequency divisors.
    stored["rope_freqs.weight"] = rope_freqs
  for key, value in w.items():
    if key[0].isdigit():
      i, name = key.split(".", 1)
      base, bias = (name[:-2], True) if name.endswith("_b") else (name, False)
      if gguf_arch == "llama" and base in ("q", "k"):
        value = permute(value, a["H"] if base == "q" else a["KV"])
      stored[f"blk.{i}.{_GGUF[base]}.{'bias' if bias else 'weight'}"] = (
          np.ascontiguousarray(value))
  stored.update(tensors or {})
  for name, value in stored.items():
    if isinstance(value, tuple):  # (raw blocks, quantisation type name)
      kind = value[1]
      writer.add_tensor(name, value[0], raw_dtype=kind if not isinstance(
          kind, str) else gguf.GGMLQuantizationType[kind])
    elif value is not None:
      writer.add_tensor(name, value)
  writer.write_header_to_file()
  writer.write_kv_data_to_file()
  writer.write_tensors_to_file()
  writer.close()


def forward(params, cfg, ids):
  return np.asarray(cfg.module().apply(params, ids[None])[0], np.float64)

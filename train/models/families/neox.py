"""GPT-NeoX (Pythia): LayerNorm with bias, the parallel residual
x + Attn(LN_1 x) + MLP(LN_2 x) (or sequential), rotary embeddings on the
first rotary_pct of each head, an ungated exact-GELU MLP with biases, biases
on every projection, an untied head `embed_out`. HF's fused
query_key_value rows are ordered per head as (q, k, v) blocks of head_dim;
they are split into q, k, v here."""

from __future__ import annotations

from train.models import transformer
from train.models.families import llamalike

NAME = "neox"
HF_MODEL_TYPES = ("gpt_neox",)
GGUF_ARCHS = ()
_LAYER = {"input_layernorm": "attn_norm",
          "post_attention_layernorm": "mlp_norm",
          "attention.dense": "attn/o", "mlp.dense_h_to_4h": "up",
          "mlp.dense_4h_to_h": "down"}


def config_from_hf(c: dict, where: str):
  llamalike.require_int_fields(c, where)
  if c.get("rope_scaling"):
    raise ValueError(f"{where}: rope_scaling={c['rope_scaling']!r} is not "
                     "supported for gpt_neox.")
  if c.get("hidden_act", "gelu") != "gelu":
    raise ValueError(f"{where}: hidden_act={c['hidden_act']!r}; only "
                     "'gelu' (exact) is supported for gpt_neox.")
  if c.get("tie_word_embeddings"):
    raise ValueError(f"{where}: tie_word_embeddings=true is not supported "
                     "for gpt_neox (Pythia heads are untied).")
  pct = float(c.get("rotary_pct", 0.25))
  head_dim = c["hidden_size"] // c["num_attention_heads"]
  if not 0 < pct <= 1 or int(head_dim * pct) % 2 or head_dim * pct < 2:
    raise ValueError(f"{where}: rotary_pct={pct} must be in (0, 1] and "
                     f"rotate an even number >= 2 of the {head_dim} head "
                     "dimensions.")
  context = int(c.get("max_position_embeddings") or 2048)
  return transformer.TransformerConfig(
      vocab_size=c["vocab_size"], n_layer=c["num_hidden_layers"],
      n_head=c["num_attention_heads"], n_kv_head=c["num_attention_heads"],
      n_embd=c["hidden_size"], ffn_dim=c["intermediate_size"],
      rotary_fraction=pct,
      rope_theta=float(c.get("rotary_emb_base", c.get("rope_theta", 1e4))),
      norm="layer", norm_eps=float(c.get("layer_norm_eps", 1e-5)),
      parallel_residual=bool(c.get("use_parallel_residual", True)),
      mlp="gelu", mlp_bias=True, qkv_bias=True, o_bias=True, tied=False,
      context_length=context, block_size=min(context, 2048), family=NAME)


def config_from_gguf(meta, where: str):
  raise ValueError(f"{where}: GPT-NeoX loads from HF folders only.")


def hf_tensors(name: str, w, cfg):
  name = name.removeprefix("gpt_neox.")
  if name == "embed_in.weight":
    yield "embed/embedding", w
  elif name == "embed_out.weight":
    yield "lm_head/kernel", w.T
  elif name.startswith("final_layer_norm."):
    yield llamalike.leaf("norm", name.rsplit(".", 1)[1], w)
  elif name.startswith("layers."):
    _, i, rest = name.split(".", 2)
    stem, _, kind = rest.rpartition(".")
    if stem == "attention.query_key_value":
      per_head = w.reshape(cfg.n_head, 3, cfg.head_dim, *w.shape[1:])
      for j, part in enumerate("qkv"):
        yield llamalike.leaf(f"layer_{i}/attn/{part}", kind, per_head[:, j]
                             .reshape(cfg.n_head * cfg.head_dim,
                                      *w.shape[1:]))
    elif stem in _LAYER:
      yield llamalike.leaf(f"layer_{i}/{_LAYER[stem]}", kind, w)
    elif not any(b in rest for b in llamalike.HF_BUFFERS):
      raise llamalike.UnknownTensor(name)
  else:
    raise llamalike.UnknownTensor(name)


def gguf_tensors(name: str, w, cfg):
  raise llamalike.UnknownTensor(name)

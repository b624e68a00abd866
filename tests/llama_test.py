"""train.llama and train.gguf_llama against an independent float64 forward.

The test writes a small random Llama checkpoint as a GGUF file the way
llama.cpp's converter does (Q/K rows permuted per head, one tensor in Q8_0,
BPE vocabulary and merges in the metadata), loads it back and compares the
Flax forward with a numpy float64 forward of the HF-layout weights.
"""

import json
import os

from absl.testing import absltest
import gguf
import jax
import numpy as np
from safetensors.numpy import save_file

from train import gguf_llama, hf_llama, llama

V, D, L, H, KV, F = 300, 32, 2, 4, 2, 48
HD = D // H


def _permute(w, n_head):
  """llama.cpp convert_hf_to_gguf.py's LlamaModel.permute (HF -> GGUF)."""
  return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
          .swapaxes(1, 2).reshape(w.shape))


def _weights(seed=0):
  """HF-layout weights: {name: [out, in] or [n]}, float32."""
  rng = np.random.default_rng(seed)
  g = lambda *s: (0.2 * rng.standard_normal(s)).astype(np.float32)
  w = {"embed": g(V, D), "norm": 1 + g(D)}
  for i in range(L):
    w.update({f"{i}.q": g(H * HD, D), f"{i}.k": g(KV * HD, D),
              f"{i}.v": g(KV * HD, D), f"{i}.o": g(D, H * HD),
              f"{i}.gate": g(F, D), f"{i}.up": g(F, D), f"{i}.down": g(D, F),
              f"{i}.attn_norm": 1 + g(D), f"{i}.mlp_norm": 1 + g(D)})
  return w


def _vocab():
  """A byte-level BPE: the 256 byte symbols, 10 merges, padding tokens."""
  from tokenizers import pre_tokenizers  # pylint: disable=g-import-not-at-top
  symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
  merges = [("t", "h"), ("th", "e"), ("a", "n"), ("i", "n"), ("o", "n"),
            ("e", "r"), ("Ġ", "t"), ("Ġt", "h"), ("Ġth", "e"), ("a", "t")]
  tokens = symbols + ["".join(m) for m in merges]
  tokens += [f"<extra_{i}>" for i in range(V - len(tokens))]
  return tokens, [" ".join(m) for m in merges]


def write_gguf(path, w, quantize_embedding=True, rope_freqs=None):
  writer = gguf.GGUFWriter(path, "llama")
  writer.add_block_count(L)
  writer.add_context_length(64)
  writer.add_embedding_length(D)
  writer.add_feed_forward_length(F)
  writer.add_head_count(H)
  writer.add_head_count_kv(KV)
  writer.add_rope_freq_base(10000.0)
  writer.add_layer_norm_rms_eps(1e-5)
  writer.add_vocab_size(V)
  tokens, merges = _vocab()
  writer.add_tokenizer_model("gpt2")
  writer.add_tokenizer_pre("default")
  writer.add_token_list(tokens)
  writer.add_token_merges(merges)
  writer.add_eos_token_id(2)
  emb = w["embed"]
  if quantize_embedding:
    q = gguf.quants.quantize(emb, gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", q,
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
  else:
    writer.add_tensor("token_embd.weight", emb)
  writer.add_tensor("output_norm.weight", w["norm"])
  if rope_freqs is not None:  # llama.cpp's Llama-3 frequency divisors.
    writer.add_tensor("rope_freqs.weight", rope_freqs)
  names = {"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
           "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down",
           "attn_norm": "attn_norm", "mlp_norm": "ffn_norm"}
  for i in range(L):
    for key, name in names.items():
      t = w[f"{i}.{key}"]
      if key in ("q", "k"):
        t = _permute(t, H if key == "q" else KV)
      writer.add_tensor(f"blk.{i}.{name}.weight", np.ascontiguousarray(t))
  writer.write_header_to_file()
  writer.write_kv_data_to_file()
  writer.write_tensors_to_file()
  writer.close()


def numpy_llama(w, ids, inv=None):
  """HF Llama in float64: RMSNorm, half-split RoPE (inverse frequencies
  `inv`, default theta = 1e4 unscaled), GQA, SwiGLU, tied head."""
  w = {k: v.astype(np.float64) for k, v in w.items()}
  t = len(ids)
  rms = lambda x, s: x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-5) * s
  if inv is None:
    inv = 1.0 / 10000.0 ** (np.arange(0, HD, 2) / HD)
  ang = np.arange(t)[:, None] * inv[None]
  cos, sin = np.cos(ang)[:, None], np.sin(ang)[:, None]

  def rot(x):  # [T, heads, HD]
    x1, x2 = x[..., :HD // 2], x[..., HD // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

  x = w["embed"][ids]
  for i in range(L):
    h = rms(x, w[f"{i}.attn_norm"])
    q = rot((h @ w[f"{i}.q"].T).reshape(t, H, HD))
    k = rot((h @ w[f"{i}.k"].T).reshape(t, KV, HD))
    v = (h @ w[f"{i}.v"].T).reshape(t, KV, HD)
    out = np.zeros((t, H, HD))
    for head in range(H):
      kv = head // (H // KV)
      s = q[:, head] @ k[:, kv].T / np.sqrt(HD)
      s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
      p = np.exp(s - s.max(1, keepdims=True))
      out[:, head] = (p / p.sum(1, keepdims=True)) @ v[:, kv]
    x = x + out.reshape(t, D) @ w[f"{i}.o"].T
    h = rms(x, w[f"{i}.mlp_norm"])
    gate = h @ w[f"{i}.gate"].T
    x = x + (gate / (1 + np.exp(-gate)) * (h @ w[f"{i}.up"].T)) @ \
        w[f"{i}.down"].T
  return rms(x, w["norm"]) @ w["embed"].T


def write_hf_folder(folder, w, rope_scaling=None):
  """The weights as an HF Llama folder (model.safetensors + config.json)."""
  names = {"q": "self_attn.q_proj", "k": "self_attn.k_proj",
           "v": "self_attn.v_proj", "o": "self_attn.o_proj",
           "gate": "mlp.gate_proj", "up": "mlp.up_proj",
           "down": "mlp.down_proj", "attn_norm": "input_layernorm",
           "mlp_norm": "post_attention_layernorm"}
  tensors = {"model.embed_tokens.weight": w["embed"],
             "model.norm.weight": w["norm"]}
  for i in range(L):
    for key, name in names.items():
      tensors[f"model.layers.{i}.{name}.weight"] = w[f"{i}.{key}"]
  save_file(tensors, os.path.join(folder, "model.safetensors"))
  config = {"model_type": "llama", "vocab_size": V, "hidden_size": D,
            "num_hidden_layers": L, "num_attention_heads": H,
            "num_key_value_heads": KV, "intermediate_size": F,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "tie_word_embeddings": True, "rope_scaling": rope_scaling}
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(config, f)
  return config


class GGUFLlamaTest(absltest.TestCase):

  def _load(self, w, **kw):
    path = os.path.join(self.create_tempdir().full_path, "tiny.gguf")
    write_gguf(path, w, **kw)
    return gguf_llama.load(path)

  def test_forward_matches_numpy_float64(self):
    w = _weights()
    params, cfg, _ = self._load(w, quantize_embedding=False)
    self.assertEqual((cfg.n_layer, cfg.n_head, cfg.n_kv_head, cfg.tied),
                     (L, H, KV, True))
    ids = np.array([5, 17, 3, 96, 0, 44, 8, 250, 12, 7])
    got = llama.Llama(cfg).apply(params, ids[None])[0]
    np.testing.assert_allclose(got, numpy_llama(w, ids), rtol=2e-4,
                               atol=2e-4)

  def test_quantized_embedding_and_pairing(self):
    w = _weights(1)
    params, cfg, _ = self._load(w, quantize_embedding=True)
    emb = np.asarray(llama.head_matrix(params, cfg))
    # Q8_0 keeps 8 bits per weight with one scale per 32: error < 1%.
    self.assertLess(np.abs(emb - w["embed"]).max(), 0.01 * np.abs(
        w["embed"]).max())
    w_q = dict(w, embed=emb)
    ids = np.arange(12)
    got = llama.Llama(cfg).apply(params, ids[None])[0]
    np.testing.assert_allclose(got, numpy_llama(w_q, ids), rtol=2e-4,
                               atol=2e-4)
    # Without undoing llama.cpp's permutation the forward is wrong.
    p = jax.tree.map(np.asarray, params)
    p["params"]["layer_0"]["attn"]["q"]["kernel"] = _permute(
        w["0.q"], H).T
    p["params"]["layer_0"]["attn"]["k"]["kernel"] = _permute(
        w["0.k"], KV).T
    wrong = llama.Llama(cfg).apply(p, ids[None])[0]
    self.assertGreater(np.abs(wrong - numpy_llama(w_q, ids)).max(), 1e-2)

  def test_tokenizer_equals_tokenizers_bpe(self):
    from tokenizers import Tokenizer, models, pre_tokenizers  # pylint: disable=g-import-not-at-top
    _, _, tok = self._load(_weights())
    tokens, merges = _vocab()
    ref = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)},
                               [tuple(m.split()) for m in merges]))
    ref.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    for text in ("the theory then", "in an internet, on the rate",
                 "Hello, World! 123"):
      self.assertEqual(tok.encode(text), ref.encode(text).ids)
      self.assertEqual(tok.decode(tok.encode(text)), text)
    self.assertIn(tokens.index("the"), tok.encode("in the"))  # Merged.

  def test_gguf_as_probe_subject_and_lp_matrix(self):
    from bottleneck.io import matrices  # pylint: disable=g-import-not-at-top
    from train.probes import registry  # pylint: disable=g-import-not-at-top
    path = os.path.join(self.create_tempdir().full_path, "tiny.gguf")
    w = _weights(2)
    write_gguf(path, w, quantize_embedding=False)
    mat = matrices.load(f"gguf:{path}")
    np.testing.assert_array_equal(mat.array, w["embed"])  # Tied head.
    text = os.path.join(os.path.dirname(path), "book.txt")
    with open(text, "w") as f:
      f.write("the theory then, in an internet on the rate. " * 400)
    numbers, figures = registry.run("gradient", data=f"text:{text}",
                                    n_windows=2, model=f"gguf:{path}")
    self.assertTrue(0.0 < numbers["norm_ratio"] < 1.0)
    self.assertEqual(numbers["D_over_V"], D / V)
    self.assertNotEmpty(figures)
    with self.assertRaisesRegex(ValueError, "`model` must be smollm2"):
      registry.run("gradient", model="llama:x")

  def test_hf_folder_matches_numpy_float64(self):
    folder = self.create_tempdir().full_path
    w = _weights(3)
    config = write_hf_folder(folder, w)
    params, cfg = hf_llama.load(folder)
    ids = np.array([3, 1, 4, 1, 5, 9, 2, 6])
    got = llama.Llama(cfg).apply(params, ids[None])[0]
    np.testing.assert_allclose(got, numpy_llama(w, ids), rtol=2e-4,
                               atol=2e-4)
    for bad, message in ((dict(config, model_type="gpt_neox"), "model_type"),
                         (dict(config, rope_scaling={"rope_type": "yarn",
                                                     "factor": 2.0}),
                          "rope_scaling"),
                         (dict(config, hidden_size=2 * D), "shape")):
      with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(bad, f)
      with self.assertRaisesRegex(ValueError, message):
        hf_llama.load(folder)

  def test_bad_files(self):
    tmp = self.create_tempdir().full_path
    with self.assertRaisesRegex(ValueError, "not found"):
      gguf_llama.load(os.path.join(tmp, "none.gguf"))
    junk = os.path.join(tmp, "junk.gguf")
    with open(junk, "wb") as f:
      f.write(b"GGUF" + b"\0" * 20)
    with self.assertRaisesRegex(ValueError, "GGUF"):
      gguf_llama.load(junk)
    w = _weights()
    w["0.up"] = w["0.up"][:, :-1]  # Width disagrees with the metadata.
    with self.assertRaisesRegex(ValueError, "shape"):
      self._load(w, quantize_embedding=False)


if __name__ == "__main__":
  absltest.main()

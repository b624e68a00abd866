"""GPT-NeoX (Pythia), Llama-3 RoPE scaling, memory estimates, bf16 and the
sharded one-forward Pass, each against an independent reference.

References: a float64 numpy forward of the HF layout written here (NeoX),
families_reference's reference forward with the inverse frequencies HF's llama3
code computes (re-derived in numpy from its formula), the unsharded Pass
and a float64 numpy head.
"""

import json
import math
import os
import subprocess
import sys

from absl.testing import absltest
import jax
import numpy as np
from safetensors.numpy import save_file

from bottleneck import sharding
from tests import families_reference
from train.models import layers, loaders
from train.models.families import llamalike
from train.probes import forward, subjects
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V, D, L, H, F = 97, 32, 2, 4, 64
HD = D // H


def _neox_weights(seed=0):
  """HF gpt_neox tensors ([out, in] weights), float32."""
  rng = np.random.default_rng(seed)
  g = lambda *s: (0.2 * rng.standard_normal(s)).astype(np.float32)
  w = {"gpt_neox.embed_in.weight": g(V, D), "embed_out.weight": g(V, D),
       "gpt_neox.final_layer_norm.weight": 1 + g(D),
       "gpt_neox.final_layer_norm.bias": g(D)}
  for i in range(L):
    pre = f"gpt_neox.layers.{i}."
    w.update({pre + "input_layernorm.weight": 1 + g(D),
              pre + "input_layernorm.bias": g(D),
              pre + "post_attention_layernorm.weight": 1 + g(D),
              pre + "post_attention_layernorm.bias": g(D),
              pre + "attention.query_key_value.weight": g(3 * D, D),
              pre + "attention.query_key_value.bias": g(3 * D),
              pre + "attention.dense.weight": g(D, D),
              pre + "attention.dense.bias": g(D),
              pre + "mlp.dense_h_to_4h.weight": g(F, D),
              pre + "mlp.dense_h_to_4h.bias": g(F),
              pre + "mlp.dense_4h_to_h.weight": g(D, F),
              pre + "mlp.dense_4h_to_h.bias": g(D),
              pre + "attention.rotary_emb.inv_freq": g(2)})  # A buffer.
  return w


def _neox_config(parallel=True, rotary_pct=0.5):
  return {"model_type": "gpt_neox", "vocab_size": V, "hidden_size": D,
          "num_hidden_layers": L, "num_attention_heads": H,
          "intermediate_size": F, "rotary_pct": rotary_pct,
          "rotary_emb_base": 10000, "layer_norm_eps": 1e-5,
          "use_parallel_residual": parallel, "hidden_act": "gelu",
          "tie_word_embeddings": False, "max_position_embeddings": 64}


def numpy_neox(w, ids, parallel=True, rotary_pct=0.5):
  """HF GPTNeoXForCausalLM in float64 (eval mode)."""
  w = {k: v.astype(np.float64) for k, v in w.items()}
  t, r = len(ids), int(HD * rotary_pct)

  def ln(x, name):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w[name + ".weight"] + w[
        name + ".bias"]

  lin = lambda x, name: x @ w[name + ".weight"].T + w[name + ".bias"]
  inv = 1.0 / 10000 ** (np.arange(0, r, 2) / r)
  ang = np.arange(t)[:, None] * inv[None]
  cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None]  # [T, 1, r]
  sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None]

  def rotary(x):  # HF: x * cos + rotate_half(x) * sin on the first r dims.
    xr, rest = x[..., :r], x[..., r:]
    half = np.concatenate([-xr[..., r // 2:], xr[..., :r // 2]], -1)
    return np.concatenate([xr * cos + half * sin, rest], -1)

  gelu = lambda z: 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
  x = w["gpt_neox.embed_in.weight"][ids]
  for i in range(L):
    pre = f"gpt_neox.layers.{i}."
    qkv = lin(ln(x, pre + "input_layernorm"),
              pre + "attention.query_key_value").reshape(t, H, 3 * HD)
    q, k, v = rotary(qkv[..., :HD]), rotary(qkv[..., HD:2 * HD]), qkv[
        ..., 2 * HD:]
    out = np.zeros((t, H, HD))
    for h in range(H):
      s = q[:, h] @ k[:, h].T / math.sqrt(HD)
      s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
      p = np.exp(s - s.max(1, keepdims=True))
      out[:, h] = p / p.sum(1, keepdims=True) @ v[:, h]
    attn = lin(out.reshape(t, D), pre + "attention.dense")
    mlp = lambda z: lin(gelu(lin(z, pre + "mlp.dense_h_to_4h")),
                        pre + "mlp.dense_4h_to_h")
    if parallel:
      x = x + attn + mlp(ln(x, pre + "post_attention_layernorm"))
    else:
      x = x + attn
      x = x + mlp(ln(x, pre + "post_attention_layernorm"))
  x = ln(x, "gpt_neox.final_layer_norm")
  return x @ w["embed_out.weight"].T


def _hf_folder(test, tensors, config):
  """An HF folder: weights, config.json and a word-level tokenizer.json
  whose vocabulary holds the special tokens GPT-NeoX's tokenizer class
  adds (absent, they would take ids past the embedding's rows)."""
  from tokenizers import Tokenizer, models, pre_tokenizers  # pylint: disable=g-import-not-at-top
  folder = test.create_tempdir().full_path
  tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(V - 3)} | {
      "<|endoftext|>": V - 3, "<|padding|>": V - 2, "[UNK]": V - 1},
                                   unk_token="[UNK]"))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  tok.save(os.path.join(folder, "tokenizer.json"))
  save_file(tensors, os.path.join(folder, "model.safetensors"))
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(config, f)
  return folder


def llama3_inverse_frequencies(head_dim, theta, factor, low, high, old):
  """HF modeling_rope_utils._compute_llama3_parameters, in numpy."""
  inv = 1.0 / theta ** (np.arange(0, head_dim, 2) / head_dim)
  wavelen = 2 * np.pi / inv
  out = np.where(wavelen > old / low, inv / factor, inv)
  smooth = (old / wavelen - low) / (high - low)
  smoothed = (1 - smooth) * out / factor + smooth * out
  medium = ~(wavelen < old / high) & ~(wavelen > old / low)
  return np.where(medium, smoothed, out)


class NeoXTest(absltest.TestCase):

  def test_forward_matches_numpy_float64(self):
    w = _neox_weights()
    ids = np.array([5, 17, 3, 96, 0, 44, 8, 50, 12, 7])
    for parallel, pct in ((True, 0.5), (False, 0.25), (True, 1.0)):
      folder = _hf_folder(self, w, _neox_config(parallel, pct))
      params, cfg = loaders.load_hf(folder)
      self.assertEqual((cfg.parallel_residual, cfg.rotary_dim),
                       (parallel, int(HD * pct)))
      got = cfg.module().apply(params, ids[None])[0]
      np.testing.assert_allclose(got, numpy_neox(w, ids, parallel, pct),
                                 rtol=2e-4, atol=2e-4)
    # A swapped q/k block order inside the fused weight is detected.
    bad = dict(w)
    qkv = bad["gpt_neox.layers.0.attention.query_key_value.weight"]
    bad["gpt_neox.layers.0.attention.query_key_value.weight"] = (
        qkv.reshape(H, 3, HD, D)[:, [1, 0, 2]].reshape(3 * D, D))
    params, cfg = loaders.load_hf(_hf_folder(self, bad, _neox_config()))
    wrong = cfg.module().apply(params, ids[None])[0]
    self.assertGreater(np.abs(wrong - numpy_neox(w, ids)).max(), 1e-2)

  def test_subject_and_bad_configs(self):
    folder = _hf_folder(self, _neox_weights(1), _neox_config())
    subject = subjects.load_subject(model=f"hf:{folder}")
    np.testing.assert_array_equal(
        subject.head()[0], _neox_weights(1)["embed_out.weight"])
    self.assertEqual(subject.input_embeddings().shape, (V, D))
    for change, message in (({"hidden_act": "relu"}, "hidden_act"),
                            ({"tie_word_embeddings": True}, "tie_word"),
                            ({"hidden_size": 2 * D}, "shape"),
                            ({"rotary_pct": 0.1}, "rotary_pct"),
                            ({"model_type": "bloom"}, "model_type")):
      with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(_neox_config(), **change), f)
      with self.assertRaisesRegex(ValueError, message):
        subjects.load_subject(model=f"hf:{folder}")


class RopeScalingTest(absltest.TestCase):

  SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
             "high_freq_factor": 4.0, "original_max_position_embeddings": 64}

  def test_llama3_frequencies_match_hf_formula(self):
    for head_dim, theta, old in ((8, 10000.0, 64), (128, 500000.0, 8192)):
      s = dict(self.SCALING, original_max_position_embeddings=old)
      got = layers.inverse_frequencies(
          head_dim, theta, llamalike.rope_divisors(s, head_dim, theta, "x"))
      want = llama3_inverse_frequencies(head_dim, theta, 8.0, 1.0, 4.0, old)
      np.testing.assert_allclose(got, want, rtol=1e-6)
      self.assertTrue(np.any(np.asarray(got) != layers.inverse_frequencies(
          head_dim, theta)))  # The scaling changes something here.
    self.assertEqual(llamalike.rope_divisors(
        {"type": "linear", "factor": 2.0}, 8, 1e4, "x"), (2.0,) * 4)
    with self.assertRaisesRegex(ValueError, "rope_type='yarn'"):
      llamalike.rope_divisors({"rope_type": "yarn", "factor": 2.0}, 8, 1e4,
                              "x")

  def test_scaled_forward_hf_and_gguf(self):
    w = families_reference.weights("llama", 4)
    a = families_reference.ARCHS["llama"]
    ids = np.arange(1, 40, 3)
    want = scaled_reference(a, w, ids, self.SCALING)
    folder = self.create_tempdir().full_path
    families_reference.write_hf(folder, "llama", w, dict(
        families_reference.hf_config("llama"), rope_scaling=self.SCALING))
    params, cfg = loaders.load_hf(folder)
    got = cfg.module().apply(params, ids[None])[0]
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    self.assertGreater(np.abs(families_reference.reference(a, w, ids) - want).max(),
                       1e-3)  # Positions are long enough to tell.
    path = os.path.join(folder, "scaled.gguf")  # llama.cpp: rope_freqs.
    families_reference.write_gguf(path, "llama", w, rope_freqs=np.asarray(
        cfg.rope_divisors, np.float32))
    params_g, cfg_g, _ = loaders.load_gguf(path)
    np.testing.assert_allclose(cfg_g.rope_divisors, cfg.rope_divisors,
                               rtol=1e-6)
    got_g = cfg_g.module().apply(params_g, ids[None])[0]
    np.testing.assert_allclose(got_g, want, rtol=2e-4, atol=2e-4)


def scaled_reference(a, w, ids, scaling):
  """families_reference.reference with HF's llama3 inverse frequencies."""
  inv = llama3_inverse_frequencies(
      a["HD"], a["theta"], scaling["factor"], scaling["low_freq_factor"],
      scaling["high_freq_factor"], scaling["original_max_position_embeddings"])
  return families_reference.reference(a, w, ids, inv)


class LoadingTest(absltest.TestCase):

  def test_seven_billion_fails_before_loading(self):
    folder = self.create_tempdir().full_path
    with open(os.path.join(folder, "config.json"), "w") as f:
      json.dump({"model_type": "llama", "vocab_size": 32000,
                 "hidden_size": 4096, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "intermediate_size": 11008}, f)
    # No weight file at all: the estimate must come first.
    with self.assertRaisesRegex(ValueError, r"6\.74B parameters in float32 "
                                r"needs about 50\.\d GiB; this machine has"):
      with absltest.mock.patch("bottleneck.checks.memory_bytes",
                               return_value=24 * 2**30):
        loaders.load_hf(folder)
    with absltest.mock.patch("bottleneck.checks.memory_bytes",
                             return_value=24 * 2**30):
      with self.assertRaisesRegex(ValueError, "in bfloat16 needs about 25"):
        loaders.load_hf(folder, "bfloat16")
    with self.assertRaisesRegex(ValueError, "`dtype` must be float32 or "
                                "bfloat16"):
      loaders.load_hf(folder, "float16")

  def test_bfloat16_close_to_float32(self):
    w = families_reference.weights("gemma3", 5)
    folder = self.create_tempdir().full_path
    families_reference.write_hf(folder, "gemma3", w)
    ids = np.arange(2, 30, 2)
    p32, c32 = loaders.load_hf(folder)
    p16, c16 = loaders.load_hf(folder, "bfloat16")
    self.assertEqual(jax.tree.leaves(p16)[0].dtype, np.dtype("bfloat16"))
    f32 = np.asarray(c32.module().apply(p32, ids[None])[0])
    f16 = np.asarray(c16.module().apply(p16, ids[None])[0], np.float32)
    self.assertTrue(np.isfinite(f16).all())
    # bf16 keeps ~3 significant digits: close, but not equal.
    self.assertLess(np.abs(f16 - f32).max(), 0.05 * np.abs(f32).max())
    self.assertGreater(np.abs(f16 - f32).max(), 0.0)


class ZooTest(absltest.TestCase):
  """The two offline LLMs as shipped (bottleneck/io/zoo.py: GGUF files in
  PyPI packages) load and predict modern English (colab 06 probes SmolLM2
  in the tests' small setting, and both at full scale)."""

  def test_offline_llms_load_and_predict_english(self):
    code = """if True:
      import json
      from train.probes import head, subjects
      out = {}
      for spec in ("smollm2", "gemma3"):
        subject = subjects.load_subject(model=spec)
        out[spec] = (head.prose_perplexity(subject), head.continuation(
            subject, "The capital of France is", 3))
        del subject
      print(json.dumps(out))"""
    # One device: Gemma 3 held once, not 8 times.
    env = tests.one_device_env()
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # Loaded right: 5.9 and 7.4 (colab 06); a wrong layout, norm or RoPE
    # gives hundreds or more.
    for spec, (perplexity, _) in got.items():
      self.assertLess(perplexity, 12.0, spec)
    self.assertIn("Paris", got["smollm2"][1])  # Gemma 3 270M: "the capital
    # of the country of France".


class ShardedForwardTest(absltest.TestCase):

  def test_eight_devices_equal_one_and_numpy(self):
    self.assertEqual(jax.device_count(), 8)
    folder = _hf_folder(self, _neox_weights(2), _neox_config())
    subject = subjects.load_subject(model=f"hf:{folder}")
    x = np.random.default_rng(0).integers(0, V, (11, 16))  # 11: padded.
    y = np.roll(x, -1, 1)
    one = sharding.batch_mesh(jax.devices()[:1])
    p1 = forward.run(subject, x, y, batch=4, mesh=one)
    p8 = forward.run(subject, x, y, batch=4)
    self.assertEqual(p8.h.shape, (11 * 16, D))
    np.testing.assert_allclose(p8.h, p1.h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p8.nll, p1.nll, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p8.alpha, p1.alpha, rtol=1e-5)
    for key in ("grad_sq", "visible_sq", "cos_sum"):
      self.assertAlmostEqual(p8.gradient[key], p1.gradient[key], delta=1e-4 *
                             abs(p1.gradient[key]))
    # Against a float64 numpy head on the same hidden states.
    w, _ = subject.head()
    logits = p1.h.astype(np.float64) @ w.T.astype(np.float64)
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    np.testing.assert_allclose(p1.nll, -logp[np.arange(len(logp)), y.ravel()],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p1.alpha, np.exp(logp).mean(0), rtol=1e-4)
    np.testing.assert_array_equal(p1.top1, logits.argmax(1) == y.ravel())
    g = np.exp(logp)
    g[np.arange(len(g)), y.ravel()] -= 1.0
    q = np.linalg.qr(w.astype(np.float64))[0]
    self.assertAlmostEqual(p1.gradient["visible_sq"] / p1.gradient["grad_sq"],
                           np.sum((g @ q) ** 2) / np.sum(g * g), places=5)
    # The same windows through the model's own __call__ (HF semantics).
    full = np.asarray(subject.model.apply(subject.params, x[:2]))
    np.testing.assert_allclose(p1.h[:32] @ w.T, full.reshape(32, V),
                               rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
  absltest.main()

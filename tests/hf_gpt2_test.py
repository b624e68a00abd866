"""HF GPT-2-format weights load (through the family registry) and match a
float64 numpy GPT-2."""

import json
import os

from absl.testing import absltest
import numpy as np
from safetensors.numpy import save_file

from train.models import loaders

CFG = {"model_type": "gpt2", "vocab_size": 97, "n_positions": 16,
       "n_embd": 32, "n_layer": 2, "n_head": 4, "layer_norm_epsilon": 1e-5,
       "activation_function": "gelu_new"}


def random_gpt2(seed=0):
  rng = np.random.default_rng(seed)
  n, v = CFG["n_embd"], CFG["vocab_size"]
  w = {"transformer.wte.weight": rng.normal(0, 0.2, (v, n)),
       "transformer.wpe.weight": rng.normal(0, 0.2, (CFG["n_positions"], n)),
       "transformer.ln_f.weight": 1 + rng.normal(0, 0.1, n),
       "transformer.ln_f.bias": rng.normal(0, 0.1, n)}
  for i in range(CFG["n_layer"]):
    p = f"transformer.h.{i}"
    for ln in ("ln_1", "ln_2"):
      w[f"{p}.{ln}.weight"] = 1 + rng.normal(0, 0.1, n)
      w[f"{p}.{ln}.bias"] = rng.normal(0, 0.1, n)
    for name, shape in (("attn.c_attn", (n, 3 * n)), ("attn.c_proj", (n, n)),
                        ("mlp.c_fc", (n, 4 * n)), ("mlp.c_proj", (4 * n, n))):
      w[f"{p}.{name}.weight"] = rng.normal(0, 0.2, shape)
      w[f"{p}.{name}.bias"] = rng.normal(0, 0.1, shape[1])
  return {k: v.astype(np.float32) for k, v in w.items()}


def numpy_gpt2(w, ids):
  """GPT-2 forward in float64 numpy (the reference)."""
  g = lambda k: w["transformer." + k].astype(np.float64)
  n, h = CFG["n_embd"], CFG["n_head"]

  def ln(x, p):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g(p + ".weight") + g(p + ".bias")

  gelu = lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (
      x + 0.044715 * x**3)))
  t = len(ids)
  x = g("wte.weight")[ids] + g("wpe.weight")[:t]
  mask = np.triu(np.full((t, t), -np.inf), 1)
  for i in range(CFG["n_layer"]):
    p = f"h.{i}"
    a = ln(x, p + ".ln_1") @ g(p + ".attn.c_attn.weight") + g(
        p + ".attn.c_attn.bias")
    q, k, v = (m.reshape(t, h, n // h).transpose(1, 0, 2)
               for m in np.split(a, 3, axis=-1))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(n // h) + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    y = (s / s.sum(-1, keepdims=True)) @ v
    y = y.transpose(1, 0, 2).reshape(t, n)
    x = x + y @ g(p + ".attn.c_proj.weight") + g(p + ".attn.c_proj.bias")
    m = gelu(ln(x, p + ".ln_2") @ g(p + ".mlp.c_fc.weight") + g(
        p + ".mlp.c_fc.bias"))
    x = x + m @ g(p + ".mlp.c_proj.weight") + g(p + ".mlp.c_proj.bias")
  return ln(x, "ln_f") @ g("wte.weight").T


class HFGPT2Test(absltest.TestCase):

  def test_logits_match_numpy_reference(self):
    folder = self.create_tempdir().full_path
    w = random_gpt2()
    save_file(w, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
      json.dump(CFG, f)
    params, cfg = loaders.load_hf(folder)
    from train.models import gpt as model_lib  # pylint: disable=g-import-not-at-top
    ids = np.array([5, 17, 3, 96, 0, 44, 8])
    got = model_lib.GPT(cfg).apply(params, ids[None])[0]
    np.testing.assert_allclose(got, numpy_gpt2(w, ids), rtol=2e-4, atol=2e-4)
    np.testing.assert_array_equal(model_lib.head_matrix(params, cfg),
                                  w["transformer.wte.weight"])

  def test_bad_folders(self):
    folder = self.create_tempdir().full_path
    with self.assertRaisesRegex(ValueError, "config.json"):
      loaders.load_hf(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
      json.dump(dict(CFG, model_type="bloom"), f)
    with self.assertRaisesRegex(ValueError, "model_type='bloom' is not "
                                "supported; supported: llama"):
      loaders.load_hf(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
      json.dump(CFG, f)
    with self.assertRaisesRegex(ValueError, "model.safetensors"):
      loaders.load_hf(folder)
    save_file(random_gpt2(), os.path.join(folder, "model.safetensors"))
    loaders.load_hf(folder)  # Consistent: loads.
    for key, value in (("n_embd", CFG["n_embd"] * 2),
                       ("vocab_size", CFG["vocab_size"] + 1)):
      with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(CFG, **{key: value}), f)
      with self.assertRaisesRegex(ValueError, "has shape .* implies"):
        loaders.load_hf(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
      json.dump({k: v for k, v in CFG.items() if k != "n_layer"}, f)
    with self.assertRaisesRegex(ValueError, "lacks the integer field"):
      loaders.load_hf(folder)


if __name__ == "__main__":
  absltest.main()

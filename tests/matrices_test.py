"""Loading OPMs from files that the tests write in the real formats."""

import json
import os

from absl.testing import absltest
import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

from bottleneck.io import matrices


class MatricesTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = self.create_tempdir().full_path
    self.w = np.random.default_rng(0).standard_normal((50, 8)).astype(
        np.float32)

  def _path(self, name):
    return os.path.join(self.dir, name)

  def test_random_is_seeded(self):
    a = matrices.load("random", 20, 4, seed=3).array
    np.testing.assert_array_equal(a, matrices.load("random", 20, 4, 3).array)
    self.assertEqual(a.shape, (20, 4))

  def test_npy_and_npz(self):
    np.save(self._path("w.npy"), self.w)
    np.testing.assert_array_equal(
        matrices.load("npy:" + self._path("w.npy")).array, self.w)
    np.savez(self._path("w.npz"), head=self.w, other=self.w[:3])
    np.testing.assert_array_equal(
        matrices.load(f"npy:{self._path('w.npz')}:head").array, self.w)
    with self.assertRaisesRegex(ValueError, "KEY"):
      matrices.load("npy:" + self._path("w.npz"))

  def test_never_unpickles(self):
    np.save(self._path("obj.npy"), np.array([{"a": 1}], dtype=object),
            allow_pickle=True)
    with self.assertRaises(ValueError):
      matrices.load("npy:" + self._path("obj.npy"))

  def test_safetensors_layouts(self):
    save_file({"transformer.wte.weight": self.w,
               "transformer.h.0.attn.c_attn.weight": self.w[:8]},
              self._path("tied.safetensors"))
    got = matrices.load("safetensors:" + self._path("tied.safetensors"))
    np.testing.assert_array_equal(got.array, self.w)
    self.assertIn("transformer.wte.weight", got.name)
    head = self.w[::-1].copy()
    save_file({"lm_head.weight": head, "transformer.wte.weight": self.w},
              self._path("untied.safetensors"))
    np.testing.assert_array_equal(
        matrices.load("safetensors:" + self._path("untied.safetensors")).array,
        head)
    np.testing.assert_array_equal(matrices.load(
        f"safetensors:{self._path('untied.safetensors')}:"
        "transformer.wte.weight").array, self.w)
    save_file({"x": self.w.astype(ml_dtypes.bfloat16)},
              self._path("bf16.safetensors"))
    got = matrices.load(f"safetensors:{self._path('bf16.safetensors')}:x")
    self.assertEqual(got.array.dtype, np.float32)
    np.testing.assert_allclose(got.array, self.w, rtol=1e-2)

  def test_hf_dirs(self):
    tied = self._path("gpt2")
    os.makedirs(tied)
    with open(os.path.join(tied, "config.json"), "w") as f:
      json.dump({"model_type": "gpt2"}, f)  # tie_word_embeddings default.
    save_file({"transformer.wte.weight": self.w},
              os.path.join(tied, "model.safetensors"))
    np.testing.assert_array_equal(matrices.load("hf:" + tied).array, self.w)
    sharded = self._path("llama")
    os.makedirs(sharded)
    with open(os.path.join(sharded, "config.json"), "w") as f:
      json.dump({"tie_word_embeddings": False}, f)
    head = 2 * self.w
    save_file({"model.embed_tokens.weight": self.w},
              os.path.join(sharded, "a.safetensors"))
    save_file({"lm_head.weight": head}, os.path.join(sharded,
                                                     "b.safetensors"))
    with open(os.path.join(sharded, "model.safetensors.index.json"), "w") as f:
      json.dump({"weight_map": {"model.embed_tokens.weight": "a.safetensors",
                                "lm_head.weight": "b.safetensors"}}, f)
    np.testing.assert_array_equal(matrices.load("hf:" + sharded).array, head)

  def test_minilm_package_matrix(self):
    got = matrices.load("minilm")
    self.assertEqual(got.array.shape, (30522, 384))
    self.assertTrue(np.isfinite(got.array).all())

  def test_bad_specs(self):
    for spec, pattern in [("npy:/nope.npy", "not found"),
                          ("safetensors:/nope.st", "not found"),
                          ("hf:/nope", "config.json"),
                          ("gguf:/x", "GGUF file not found"),
                          ("onnx:/x", "must be"), ("random", "`N`")]:
      with self.assertRaisesRegex(ValueError, pattern):
        matrices.load(spec)
    np.save(self._path("nan.npy"), np.full((4, 3), np.nan))
    with self.assertRaisesRegex(ValueError, "finite"):
      matrices.load("npy:" + self._path("nan.npy"))
    save_file({"foo": self.w}, self._path("odd.safetensors"))
    with self.assertRaisesRegex(ValueError, "known LM-head"):
      matrices.load("safetensors:" + self._path("odd.safetensors"))


if __name__ == "__main__":
  absltest.main()

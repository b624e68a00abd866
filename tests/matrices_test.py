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



class GGUFReaderTest(absltest.TestCase):
  """bottleneck.io.gguf_file.Reader against the gguf package's own reader on
  a file holding every metadata value type and float / quantised tensors."""

  def _write(self, path):
    import gguf  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_uint8("k.u8", 200)
    writer.add_int8("k.i8", -3)
    writer.add_uint16("k.u16", 60000)
    writer.add_int16("k.i16", -300)
    writer.add_uint32("k.u32", 4_000_000_000)
    writer.add_int32("k.i32", -70000)
    writer.add_float32("k.f32", 0.1)
    writer.add_bool("k.bool", True)
    writer.add_uint64("k.u64", 2**60)
    writer.add_int64("k.i64", -2**60)
    writer.add_float64("k.f64", 1 / 3)
    writer.add_string("k.str", "héllo ▁wörld")
    writer.add_array("k.strs", ["a", "", "▁b", "<0x0A>"] * 50)
    writer.add_array("k.ints", list(range(-5, 300)))
    writer.add_array("k.floats", [0.5, -1.25, 3.0])
    writer.add_array("k.bools", [True, False, True])
    writer.add_array("k.nested", [[1, 2], [3]])
    writer.add_tensor("f32", rng.standard_normal((3, 5, 8)).astype(
        np.float32))
    writer.add_tensor("f16", rng.standard_normal((4, 6)).astype(np.float16))
    writer.add_tensor("q8", gguf.quants.quantize(
        rng.standard_normal((6, 64)).astype(np.float32),
        gguf.GGMLQuantizationType.Q8_0),
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

  def test_the_head_is_output_weight_else_the_tied_embedding(self):
    import gguf  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(1)
    q8 = gguf.GGMLQuantizationType.Q8_0
    blocks = {name: gguf.quants.quantize(rng.standard_normal(
        (5, 64)).astype(np.float32), q8)
              for name in ("token_embd.weight", "output.weight")}
    tmp = self.create_tempdir().full_path
    for names, want in ((["token_embd.weight"], "token_embd.weight"),
                        (["token_embd.weight", "output.weight"],
                         "output.weight"), ([], None)):
      path = os.path.join(tmp, f"{len(names)}.gguf")
      writer = gguf.GGUFWriter(path, "llama")
      writer.add_tensor("blk.0.other", np.ones((2, 3), np.float32))
      for name in names:
        writer.add_tensor(name, blocks[name], raw_dtype=q8)
      writer.write_header_to_file()
      writer.write_kv_data_to_file()
      writer.write_tensors_to_file()
      writer.close()
      if want is None:
        with self.assertRaisesRegex(ValueError, "neither output.weight"):
          matrices.load(f"gguf:{path}")
        continue
      got = matrices.load(f"gguf:{path}")
      self.assertEqual(got.name, f"{len(names)}.gguf:{want} (5x64)")
      np.testing.assert_array_equal(
          got.array, gguf.quants.dequantize(blocks[want], q8))

  def test_same_fields_and_tensors_as_the_gguf_package(self):
    import gguf  # pylint: disable=g-import-not-at-top
    from bottleneck.io import gguf_file  # pylint: disable=g-import-not-at-top
    path = os.path.join(self.create_tempdir().full_path, "m.gguf")
    self._write(path)
    ours, ref = gguf_file.reader(path), gguf.GGUFReader(path)
    keys = [k for k in ref.fields if not k.startswith("GGUF.")]
    self.assertEqual(list(ours.fields), keys)
    for k in keys:
      self.assertEqual(ours.fields[k].contents(), ref.fields[k].contents(), k)
    self.assertEqual(ours.fields["k.strs"].contents()[2], "▁b")
    self.assertEqual([t.name for t in ours.tensors],
                     [t.name for t in ref.tensors])
    for a, b in zip(ours.tensors, ref.tensors):
      self.assertEqual(a.tensor_type, b.tensor_type)
      np.testing.assert_array_equal(a.shape, b.shape)
      self.assertEqual((a.data.shape, a.data.dtype), (b.data.shape,
                                                      b.data.dtype))
      np.testing.assert_array_equal(a.data, b.data)
      np.testing.assert_array_equal(gguf_file.tensor(a, path),
                                    gguf_file.tensor(b, path))

  def test_truncated_file_is_a_clear_error(self):
    from bottleneck.io import gguf_file  # pylint: disable=g-import-not-at-top
    path = os.path.join(self.create_tempdir().full_path, "m.gguf")
    self._write(path)
    with open(path, "rb") as f:
      head = f.read(300)
    with open(path, "wb") as f:
      f.write(head)
    with self.assertRaisesRegex(ValueError, "not a readable GGUF file"):
      gguf_file.reader(path)

if __name__ == "__main__":
  absltest.main()

"""What Q8_0 storage can do to a head's rows (issue 60's caveat for the
row-norm findings on SmolLM2 and Gemma 3, both stored as Q8_0): the bound
and the noise of bottleneck.io.gguf_file against a numpy quantiser written
here after llama.cpp's, and gguf's own dequantiser."""

import types

from absl.testing import absltest
import gguf
import numpy as np

from bottleneck.io import gguf_file


def quantise_q8_0(w):
  """llama.cpp's quantize_row_q8_0: per 32 values d = max|x| / 127 (float32),
  q = round(x / d), d stored as float16. Returns the stored bytes [n, 34 B]."""
  n, cols = w.shape
  x = w.reshape(n, cols // 32, 32).astype(np.float32)
  d = np.abs(x).max(-1) / 127
  inv = np.where(d > 0, 1 / np.where(d > 0, d, 1), 0).astype(np.float32)
  q = np.round(x * inv[..., None]).astype(np.int8)
  blocks = np.empty((n, cols // 32, 34), np.uint8)
  blocks[..., :2] = d.astype("<f2")[..., None].view(np.uint8)
  blocks[..., 2:] = q.view(np.uint8)
  return blocks.reshape(n, -1)


class Q8Test(absltest.TestCase):

  def test_bound_and_noise_against_a_quantiser(self):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4000, 64)) * rng.uniform(0.5, 2, (4000, 1))
    raw = quantise_q8_0(w)
    t = types.SimpleNamespace(tensor_type=gguf.GGMLQuantizationType.Q8_0,
                              shape=[64, 4000], data=raw)
    stored = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0)
    stored = np.asarray(stored, np.float64).reshape(4000, 64)
    err = np.linalg.norm(stored - w, axis=1)
    bound = gguf_file.row_error_bounds(t)
    self.assertTrue(np.all(err <= bound))
    self.assertGreater(np.median(err / bound), 0.2)  # Not vacuous.
    # The relative change of each row's norm: spread as predicted.
    moved = (np.linalg.norm(stored, axis=1) - np.linalg.norm(w, axis=1)) \
        / np.linalg.norm(w, axis=1)
    noise = gguf_file.row_norm_noise(t, stored)
    self.assertAlmostEqual(np.std(moved) / np.sqrt(np.mean(noise**2)), 1.0,
                           delta=0.1)
    other = types.SimpleNamespace(
        tensor_type=gguf.GGMLQuantizationType.F32, shape=[64, 4000], data=w)
    self.assertIsNone(gguf_file.row_error_bounds(other))


if __name__ == "__main__":
  absltest.main()

"""Every model family through the registry, against an independent float64
numpy forward written here from the HF modeling code's semantics.

Small random checkpoints are written the way each ecosystem stores them:
HF folders (config.json + model.safetensors; Gemma norms stored as w with
1 + w applied) and llama.cpp GGUF files (metadata, `blk.N.*` names, q/k
rows permuted for the `llama` architecture only, Gemma norms stored as
1 + w). A wrong sliding window, a swapped local/global RoPE base, a missing
post-norm, QK-norm or sqrt(d) scaling each make the loaded forward disagree
with the reference (test_the_reference_catches_*): the comparison would
catch those bugs.
"""

import dataclasses
import os
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import gguf
import numpy as np
from safetensors.numpy import save_file

from train.models import layers, loaders, registry
from tests import families_reference as ref


class FamiliesTest(parameterized.TestCase):

  def _hf(self, arch, w):
    folder = self.create_tempdir().full_path
    ref.write_hf(folder, arch, w)
    return loaders.load_hf(folder)

  def _gguf(self, arch, w, **kw):
    path = os.path.join(self.create_tempdir().full_path, "m.gguf")
    ref.write_gguf(path, arch, w, **kw)
    return loaders.load_gguf(path)[:2]

  @parameterized.parameters("llama", "mistral", "qwen2", "qwen3", "gemma2",
                            "gemma3")
  def test_hf_folder_matches_reference(self, arch):
    w = ref.weights(arch)
    params, cfg = self._hf(arch, w)
    np.testing.assert_allclose(ref.forward(params, cfg, ref.IDS),
                               ref.reference(ref.ARCHS[arch], w, ref.IDS), rtol=2e-4,
                               atol=2e-4)

  @parameterized.parameters("llama", "mistral", "gemma2", "gemma3")
  def test_query_blocks_match_reference(self, arch):
    # Queries 4 at a time (14 tokens: 3 blocks + 2): each block reads only
    # the keys it may see, across block edges and sliding windows of 5.
    w = ref.weights(arch)
    params, cfg = self._hf(arch, w)
    with mock.patch.object(layers, "QUERY_BLOCK", 4):
      got = ref.forward(params, cfg, ref.IDS)
    np.testing.assert_allclose(got, ref.reference(ref.ARCHS[arch], w, ref.IDS),
                               rtol=2e-4, atol=2e-4)

  @parameterized.parameters("llama", "mistral", "qwen3", "gemma3")
  def test_fused_attention_matches_reference(self, arch):
    # jax.nn.dot_product_attention's XLA implementation, called as the
    # cuDNN one would be (GQA head order, scale, causal sliding windows).
    w = ref.weights(arch)
    params, cfg = self._hf(arch, w)
    with mock.patch.dict(os.environ, {"BOTTLENECK_ATTENTION": "xla"}):
      got = ref.forward(params, cfg, ref.IDS)
    np.testing.assert_allclose(got, ref.reference(ref.ARCHS[arch], w, ref.IDS),
                               rtol=2e-4, atol=2e-4)

  def test_fused_attention_refuses_softcapping_and_unknown_names(self):
    params, cfg = self._hf("gemma2", ref.weights("gemma2"))
    for name, words in (("xla", "soft-capping"), ("flash", "blocks, xla")):
      with mock.patch.dict(os.environ, {"BOTTLENECK_ATTENTION": name}):
        with self.assertRaisesRegex(ValueError, words):
          ref.forward(params, cfg, ref.IDS)

  @parameterized.parameters("llama", "qwen2", "qwen3", "gemma2", "gemma3")
  def test_gguf_matches_reference(self, arch):
    w = ref.weights(arch, 1)
    params, cfg = self._gguf(arch, w)
    a = dict(ref.ARCHS[arch])
    if arch == "gemma2":  # GGUF has no query_pre_attn_scalar: llama.cpp
      a["qscale"] = a["HD"]  # scales by the head size (but 27B).
    np.testing.assert_allclose(ref.forward(params, cfg, ref.IDS),
                               ref.reference(a, w, ref.IDS), rtol=2e-4, atol=2e-4)

  def test_llama_gguf_pairing_is_undone_and_qwen_is_not_permuted(self):
    w = ref.weights("llama", 2)
    params, cfg = self._gguf("llama", w)
    p = {"params": dict(params["params"])}
    layer = dict(p["params"]["layer_0"])
    layer["attn"] = dict(layer["attn"], q={"kernel": ref.permute(w["0.q"], 4).T})
    p["params"]["layer_0"] = layer
    self.assertGreater(np.abs(ref.forward(p, cfg, ref.IDS) - ref.reference(
        ref.ARCHS["llama"], w, ref.IDS)).max(), 1e-2)  # Wrong pairing: loud.
    w = ref.weights("qwen2", 2)  # llama.cpp writes Qwen q/k unpermuted.
    params, cfg = self._gguf("qwen2", w)
    np.testing.assert_allclose(ref.forward(params, cfg, ref.IDS),
                               ref.reference(ref.ARCHS["qwen2"], w, ref.IDS), rtol=2e-4,
                               atol=2e-4)

  @parameterized.named_parameters(
      ("no_sliding_window", dict(layer_types=())),
      ("window_off_by_one", dict(sliding_window=6)),
      ("local_base_for_global", dict(rope_theta=1e4)),
      ("global_base_for_local", dict(rope_local_theta=1e6)),
      ("no_post_attn_norm", dict(post_attn_norm=False)),
      ("no_post_mlp_norm", dict(post_mlp_norm=False)),
      ("no_qk_norm", dict(qk_norm=False)),
      ("no_sqrt_d_scaling", dict(embed_scale=1.0)),
      ("default_query_scale", dict(query_scale=0.0, head_dim=16)))
  def test_the_reference_catches_gemma3_mistakes(self, change):
    arch = "gemma3"
    w = ref.weights(arch, 3)
    params, cfg = self._hf(arch, w)
    want = ref.reference(ref.ARCHS[arch], w, ref.IDS)
    np.testing.assert_allclose(ref.forward(params, cfg, ref.IDS), want, rtol=2e-4,
                               atol=2e-4)
    if "query_scale" in change:  # Gemma's own scale equals the default at
      cfg = dataclasses.replace(cfg, query_scale=0.0)  # qscale = head_dim;
      want = ref.reference(dict(ref.ARCHS[arch], qscale=12.0), w, ref.IDS)  # test 12.
    else:
      cfg = dataclasses.replace(cfg, **change)
    self.assertGreater(np.abs(ref.forward(params, cfg, ref.IDS) - want).max(), 1e-3)

  def test_gemma2_softcaps_matter(self):
    w = ref.weights("gemma2", 4)
    params, cfg = self._hf("gemma2", w)
    self.assertEqual((cfg.attn_softcap, cfg.final_softcap), (5.0, 3.0))
    want = ref.reference(ref.ARCHS["gemma2"], w, ref.IDS)
    for change in (dict(attn_softcap=0.0), dict(final_softcap=0.0)):
      wrong = ref.forward(params, dataclasses.replace(cfg, **change), ref.IDS)
      self.assertGreater(np.abs(wrong - want).max(), 1e-3)

  def test_registry_names_the_supported_lists(self):
    folder = self.create_tempdir().full_path
    w = ref.weights("llama")
    ref.write_hf(folder, "llama", w, dict(ref.hf_config("llama"), model_type="bloom"))
    with self.assertRaisesRegex(ValueError, r"model_type='bloom' is not "
                                r"supported; supported: llama, mistral"):
      loaders.load_hf(folder)
    self.assertIn("gemma3", registry.gguf_archs())
    self.assertIn("gpt_neox", registry.hf_model_types())
    path = os.path.join(folder, "x.gguf")
    writer = gguf.GGUFWriter(path, "mamba")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with self.assertRaisesRegex(ValueError, r"architecture='mamba' is not "
                                r"supported; supported: llama, qwen2"):
      loaders.load_gguf(path)

  def test_config_that_disagrees_with_the_weights_names_the_field(self):
    folder = self.create_tempdir().full_path
    w = ref.weights("qwen3")
    for change, message in (
        ({"head_dim": 8}, r"attn/k/kernel has shape \(32, 32\); the config "
         r"implies \(32, 16\) from n_embd=32, n_kv_head=2, head_dim=8"),
        ({"intermediate_size": 40}, r"ffn_dim=40"),
        ({"num_hidden_layers": 1},
         r"num_hidden_layers = 1, but the weights hold 2 block"),
        ({"num_hidden_layers": 3},
         r"num_hidden_layers = 3, but the weights hold 2 block"),
        ({"vocab_size": 301}, r"vocab_size=301")):
      ref.write_hf(folder, "qwen3", w, dict(ref.hf_config("qwen3"), **change))
      with self.assertRaisesRegex(ValueError, message):
        loaders.load_hf(folder)

  def test_unknown_tensor_is_named(self):
    folder = self.create_tempdir().full_path
    ref.write_hf(folder, "llama", ref.weights("llama"))
    from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    tensors["model.layers.0.self_attn.rel_bias.weight"] = np.zeros(3, np.float32)
    save_file(tensors, os.path.join(folder, "model.safetensors"))
    with self.assertRaisesRegex(ValueError, r"rel_bias.*no place in a llama"):
      loaders.load_hf(folder)

  def test_bad_files(self):
    tmp = self.create_tempdir().full_path
    with self.assertRaisesRegex(ValueError, "not found"):
      loaders.load_gguf(os.path.join(tmp, "none.gguf"))
    junk = os.path.join(tmp, "junk.gguf")
    with open(junk, "wb") as f:
      f.write(b"GGUF" + b"\0" * 20)
    with self.assertRaisesRegex(ValueError, "GGUF"):
      loaders.load_gguf(junk)
    w = ref.weights("llama")
    w["0.up"] = w["0.up"][:, :-1]  # Width disagrees with the metadata.
    with self.assertRaisesRegex(ValueError, "shape"):
      self._gguf("llama", w)


if __name__ == "__main__":
  absltest.main()

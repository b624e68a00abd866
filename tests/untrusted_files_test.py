"""Nothing silently wrong from a file (issue 58): caches keyed by what they
hold, model files validated before use (zero rows in a head, recoverable
state recovered and output folders refused when taken: recovery_test.py).

Each crafted file is written here in its real format (GGUF through llama.cpp's
writer, HF folders, .npy/.npz, orbax checkpoints, metrics.jsonl); what a user
sees of a binary is checked in a subprocess (one `error:` line, no
traceback).
"""

import json
import os
import subprocess
import sys
import time

from absl.testing import absltest, parameterized
import numpy as np
from ml_collections import config_dict

from bottleneck.io import matrices
from train.models import loaders
from train.probes import subjects
from train.text import data, tokenizers, vocab
import tests
from tests import families_reference as fam

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT_A = "the cat sat on the mat. " * 40
TEXT_B = "then there was one more thing to see. " * 25


def text_config(path: str, cache: str, tokenizer: str = "byte"):
  return config_dict.ConfigDict(dict(
      source="text", path=path, online=False, val_fraction=0.1,
      cache_dir=cache, synthetic_stories=4000, spamlang_vocab=0, seed=0,
      tokenizer=tokenizer))


def tokens_of(meta) -> np.ndarray:
  return np.concatenate([np.fromfile(meta[s], meta["dtype"])
                         for s in ("train", "val")])


def encoded(tok, text: str) -> list[int]:
  return tok.encode(text) + [tok.eot_id]


class CacheTest(absltest.TestCase):
  """Token caches keyed by the text's bytes and the tokenizer's definition."""

  def setUp(self):
    super().setUp()
    self.tmp = self.create_tempdir().full_path
    self.cache = os.path.join(self.tmp, "cache")
    self.text = os.path.join(self.tmp, "a.txt")
    with open(self.text, "w") as f:
      f.write(TEXT_A)

  def test_two_tokenizers_with_one_name_never_share_a_cache(self):
    tokens, merges = fam.bpe_vocab()
    name = "gguf:model.gguf"  # Two different files, both called model.gguf.
    with_merges = vocab.bpe_tokenizer(name, tokens, merges, 2)
    bytes_only = vocab.bpe_tokenizer(name, tokens, [], 2)
    cfg = text_config(self.text, self.cache)
    first = data.build_shards(cfg, with_merges)
    second = data.build_shards(cfg, bytes_only)
    self.assertNotEqual(first["train"], second["train"])
    self.assertEqual(tokens_of(first).tolist(), encoded(with_merges, TEXT_A))
    self.assertEqual(tokens_of(second).tolist(), encoded(bytes_only, TEXT_A))
    self.assertNotEqual(len(tokens_of(first)), len(tokens_of(second)))

  def test_text_replaced_with_the_same_size_and_mtime_is_tokenised_again(self):
    cfg, tok = text_config(self.text, self.cache), tokenizers.load("byte")
    before = tokens_of(data.build_shards(cfg, tok))
    stat = os.stat(self.text)
    other = TEXT_B[:len(TEXT_A)].ljust(len(TEXT_A), ".")
    with open(self.text, "w") as f:  # As cp -p / rsync -t leave it:
      f.write(other)  # same size, same mtime.
    os.utime(self.text, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    self.assertEqual(os.stat(self.text).st_size, stat.st_size)
    after = tokens_of(data.build_shards(cfg, tok))
    self.assertEqual(after.tolist(), encoded(tok, other))
    self.assertNotEqual(after.tolist(), before.tolist())

  def test_a_broken_entry_is_rebuilt_never_trusted(self):
    cfg, tok = text_config(self.text, self.cache), tokenizers.load("byte")
    meta = data.build_shards(cfg, tok)
    want = tokens_of(meta).tolist()
    with open(meta["train"], "r+b") as f:  # A split cut short.
      f.truncate(10)
    self.assertEqual(tokens_of(data.build_shards(cfg, tok)).tolist(), want)
    meta_json = os.path.join(os.path.dirname(meta["train"]), "meta.json")
    with open(meta_json, "w") as f:
      f.write("{")  # Unreadable.
    self.assertEqual(tokens_of(data.build_shards(cfg, tok)).tolist(), want)
    with open(meta_json) as f:
      saved = json.load(f)
    with open(meta_json, "w") as f:  # Built for another key.
      json.dump(dict(saved, key="0" * 64), f)
    self.assertEqual(tokens_of(data.build_shards(cfg, tok)).tolist(), want)

  def test_a_corrupt_cached_bpe_is_trained_again(self):
    cfg = text_config(self.text, self.cache, "bpe:300")
    tok = data.tokenizer_for(cfg)
    path = os.path.join(self.cache, "tokenizers",
                        f"{tok.name.split('@')[1]}-300.json")
    with open(path, "w") as f:
      f.write("not json")
    again = data.tokenizer_for(cfg)
    self.assertEqual(again.encode(TEXT_A[:60]), tok.encode(TEXT_A[:60]))
    self.assertEqual(again.digest, tok.digest)

  def test_digest_follows_the_definition(self):
    tokens, merges = fam.bpe_vocab()
    a = vocab.bpe_tokenizer("x", tokens, merges, 2)
    self.assertEqual(a.digest, vocab.bpe_tokenizer("y", tokens, merges, 2)
                     .digest)  # The name is not the key.
    for other in (vocab.bpe_tokenizer("x", tokens, merges[:-1], 2),
                  vocab.bpe_tokenizer("x", tokens, merges, 3),
                  vocab.bpe_tokenizer("x", tokens, merges, 2, bos=1),
                  vocab.bpe_tokenizer("x", tokens, merges, 2, pre="smollm")):
      self.assertNotEqual(a.digest, other.digest)


def _gguf(tmp, name="m.gguf", **kw) -> str:
  path = os.path.join(tmp, name)
  fam.write_gguf(path, "llama", fam.weights("llama"), **kw)
  return path


def _hf(tmp, arch="llama", config=None, w=None) -> str:
  folder = os.path.join(tmp, "hf")
  os.makedirs(folder, exist_ok=True)
  fam.write_hf(folder, arch, w or fam.weights(arch),
               dict(fam.hf_config(arch), **(config or {})))
  return folder


def _with(w: dict, key: str, index, value) -> dict:
  w = {k: v.copy() for k, v in w.items()}
  w[key][index] = value
  return w


NAN, INF = float("nan"), float("inf")


def _nan_scale(w):
  """`w` quantised to Q8_0 (34-byte blocks: a float16 scale, 32 int8),
  with one block's scale set to a float16 NaN (0x7E00)."""
  import gguf  # pylint: disable=g-import-not-at-top
  q = gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0).copy()
  q[3, 0:2] = (0x00, 0x7E)  # Row 3 (D = 32: one block per row).
  return q


class ModelFileTest(parameterized.TestCase):
  """One validation before use: the file, the field and its value."""

  def setUp(self):
    super().setUp()
    self.tmp = self.create_tempdir().full_path

  @parameterized.named_parameters(
      ("nan_weight", {}, {"blk.1.ffn_up.weight": _with(
          fam.weights("llama"), "1.up", (3, 4), NAN)["1.up"]},
       r"tensor blk.1.ffn_up.weight holds 1 NaN/inf"),
      ("inf_embedding", {}, {"token_embd.weight": _with(
          fam.weights("llama"), "embed", (7, 0), INF)["embed"]},
       r"token_embd.weight holds 1 NaN/inf"),
      ("nan_quantisation_scale", {}, {"token_embd.weight": (
          _nan_scale(fam.weights("llama")["embed"]), "Q8_0")},
       r"token_embd.weight holds 32 NaN/inf value\(s\) of 9600"),
      ("eps_zero", {"llama.attention.layer_norm_rms_epsilon": 0.0}, {},
       r"llama.attention.layer_norm_rms_epsilon: `norm_eps` must be a number "
       r"in \(0.0, inf\); got 0.0"),
      ("eps_nan", {"llama.attention.layer_norm_rms_epsilon": NAN}, {},
       r"layer_norm_rms_epsilon: `norm_eps` .* got nan"),
      ("rope_zero", {"llama.rope.freq_base": 0.0}, {},
       r"llama.rope.freq_base: `rope_theta` must be"),
      ("rope_nan", {"llama.rope.freq_base": NAN}, {}, r"rope.freq_base"),
      ("bos_past_vocab", {"tokenizer.ggml.bos_token_id": 10**6,
                          "tokenizer.ggml.add_bos_token": True}, {},
       r"bos_token_id = 1000000 must be a token id in \[0, 299\]"),
      ("eos_negative", {"tokenizer.ggml.eos_token_id": -1}, {},
       r"eos_token_id = -1 must be a token id"),
      ("tokenizer_over_embedding", {
          "llama.vocab_size": fam.V,
          "tokenizer.ggml.tokens": fam.bpe_vocab()[0] + [
              f"<more_{i}>" for i in range(50)]}, {},
       r"the tokenizer has 350 tokens, more than the embedding's 300 rows"),
      ("head_count_zero", {"llama.attention.head_count": 0}, {},
       r"llama.attention.head_count = 0 must be an integer >= 1"),
      ("billion_blocks", {"llama.block_count": 10**9}, {},
       r"block_count = 1000000000, but the weights hold 2 block"),
      ("tokens_not_an_array", {"tokenizer.ggml.tokens": 5}, {},
       r"tokenizer.ggml.tokens must be an array of str; got a int"),
      ("merges_not_strings", {"tokenizer.ggml.merges": [1, 2]}, {},
       r"tokenizer.ggml.merges must be an array of str"),
      ("alignment_string", {"general.alignment": "x"}, {},
       r"general.alignment = 'x' is not a power of two"),
  )
  def test_gguf(self, meta, tensors, message):
    path = _gguf(self.tmp, meta=meta, tensors=tensors)
    start = time.perf_counter()
    with self.assertRaisesRegex(ValueError, message):
      loaders.load_gguf(path)
    self.assertLess(time.perf_counter() - start, 30)

  def test_a_valid_gguf_still_loads(self):
    _, cfg, tok = loaders.load_gguf(_gguf(self.tmp))
    self.assertEqual((cfg.n_layer, tok.vocab_size), (2, fam.V))

  def test_a_forward_that_gives_nan_is_an_error_not_a_null(self):
    from train.probes import forward  # pylint: disable=g-import-not-at-top
    path = _gguf(self.tmp)
    x = np.arange(16, dtype=np.int32).reshape(2, 8)
    healthy = subjects.load_subject(model="gguf:" + path)
    self.assertTrue(np.isfinite(forward.run(healthy, x, x).perplexity()))
    subject = subjects.load_subject(model="gguf:" + path)
    norm = subject.params["params"]["norm"]
    norm["scale"] = norm["scale"].at[0].set(np.nan)  # Broken after loading.
    with self.assertRaisesRegex(ValueError, r"the forward pass gave 16 "
                                "non-finite log-likelihood"):
      forward.run(subject, x, x)

  @parameterized.named_parameters(
      ("no_model_type", "llama", {"model_type": None}, None,
       r"config.json has no model_type; supported: llama"),
      ("layer_types_int", "qwen3", {"layer_types": 5}, None,
       r"a field of the model's metadata is malformed \(TypeError"),
      ("rope_scaling_list", "llama", {"rope_scaling": [1, 2]}, None,
       r"malformed \(AttributeError"),
      ("layers_claimed", "llama", {"num_hidden_layers": 100000}, None,
       r"num_hidden_layers = 100000, but the weights hold 2 block"),
      ("eps_negative", "llama", {"rms_norm_eps": -1e-6}, None,
       r"config.json rms_norm_eps \(layer_norm_eps\): `norm_eps` must be"),
      ("heads_zero", "llama", {"num_attention_heads": 0}, None,
       r"num_attention_heads = 0 must be an integer >= 1"),
      ("nan_weight", "llama", {}, "nan",
       r"tensor model.layers.0.self_attn.q_proj.weight holds 1 NaN"),
  )
  def test_hf_folder(self, arch, change, weights, message):
    w = fam.weights(arch)
    if weights == "nan":
      w = _with(w, "0.q", (0, 0), NAN)
    config = dict(fam.hf_config(arch), **change)
    config = {k: v for k, v in config.items() if v is not None}
    folder = os.path.join(self.tmp, "hf")
    os.makedirs(folder)
    fam.write_hf(folder, arch, w, config)
    with self.assertRaisesRegex(ValueError, message):
      loaders.load_hf(folder)

  def test_hf_tokenizer_files_are_named(self):
    folder = _hf(self.tmp)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
      f.write("")
    with self.assertRaisesRegex(ValueError, r"tokenizer.json is not valid "
                                r"JSON \(Expecting value"):
      subjects.load_subject(model="hf:" + folder)

  def test_hf_tokenizer_larger_than_the_embedding(self):
    folder = _hf(self.tmp, config={"vocab_size": 200},
                 w=dict(fam.weights("llama"),
                        embed=fam.weights("llama")["embed"][:200]))
    tok = tokenizers.Tokenizer("t", 250, 0, list, str)
    with self.assertRaisesRegex(ValueError, r"the tokenizer has 250 tokens, "
                                r"more than the embedding's 200 rows"):
      loaders.load_hf(folder, tokenizer=tok)

  def test_crafted_files_cost_under_a_gigabyte_and_a_minute(self):
    gguf_1e9 = _gguf(self.tmp, "1e9.gguf", meta={"llama.block_count": 10**9},
                     quantize_embedding=True)
    gguf_1e5 = _gguf(self.tmp, "1e5.gguf", meta={"llama.block_count": 10**5},
                     quantize_embedding=True)
    hf_1e5 = _hf(self.tmp, config={"num_hidden_layers": 10**5})
    for path in (gguf_1e9, gguf_1e5):
      self.assertLess(os.path.getsize(path), 100_000)
    script = (
        "import sys, time\n"
        "from train.models import loaders\n"
        "for kind, path in [('gguf', sys.argv[1]), ('gguf', sys.argv[2]),"
        " ('hf', sys.argv[3])]:\n"
        "  start = time.perf_counter()\n"
        "  try:\n"
        "    (loaders.load_gguf if kind == 'gguf' else loaders.load_hf)(path)\n"
        "  except ValueError as e:\n"
        "    print('refused', round(time.perf_counter() - start, 2))\n"
        # VmHWM: this program's own peak (ru_maxrss would count the pytest
        # worker's pages at the fork, carried over exec).
        "print('peak_kb', next(l.split()[1] for l in open("
        "'/proc/self/status') if l.startswith('VmHWM')))\n")
    out = subprocess.run([sys.executable, "-c", script, gguf_1e9, gguf_1e5,
                          hf_1e5], cwd=ROOT, env=tests.one_device_env(),
                         capture_output=True, text=True, timeout=300)
    lines = out.stdout.split("\n")
    refused = [float(l.split()[1]) for l in lines if l.startswith("refused")]
    self.assertLen(refused, 3, out.stdout + out.stderr[-2000:])
    self.assertLess(max(refused), 60)
    peak_kb = int(next(l for l in lines if l.startswith("peak_kb")).split()[1])
    self.assertLess(peak_kb, 2**20)  # 1 GiB, the whole process included.


class NpyTest(absltest.TestCase):

  def test_a_header_claiming_a_trillion_entries_is_refused(self):
    tmp = self.create_tempdir().full_path
    header = {"descr": "<f4", "fortran_order": False,
              "shape": (10**6, 10**6)}
    path = os.path.join(tmp, "huge.npy")
    with open(path, "wb") as f:
      np.lib.format.write_array_header_1_0(f, header)
      f.write(b"\0" * 4000)
    with self.assertRaisesRegex(ValueError, "mmap length is greater"):
      matrices.load(f"npy:{path}")
    import io, zipfile  # pylint: disable=g-import-not-at-top,multiple-imports
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, header)
    member.write(b"\0" * 4000)
    npz = os.path.join(tmp, "huge.npz")
    with zipfile.ZipFile(npz, "w") as z:
      z.writestr("w.npy", member.getvalue())
    with self.assertRaisesRegex(ValueError, r"claims shape \(1000000, "
                                r"1000000\) \(4000000000000 bytes\), but "
                                "holds 4000 bytes"):
      matrices.load(f"npy:{npz}")
    np.save(path, np.arange(6.0).reshape(3, 2))  # Honest files still load.
    np.testing.assert_array_equal(matrices.read_npy(path, "m"),
                                  np.arange(6.0).reshape(3, 2))


if __name__ == "__main__":
  absltest.main()

"""python -m train.prepare on hostile input (links, glob characters, huge
documents, broken .jsonl / .parquet files) and shard meta.json that
disagrees with its shards. Every input is generated here."""

import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
from unittest import mock

from absl.testing import absltest
from ml_collections import config_dict
import numpy as np

from train.text import data, prepare, tokenizers
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EOT = tokenizers.EOT


def stories(n: int, start: int = 0) -> list[str]:
  """n documents of even byte-tokenizer length (odd text + end-of-text)."""
  return [f"Story {i:04d}: the cat sat on mat." for i in
          range(start, start + n)]


def write(path: str, text: str) -> str:
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return path


class PrepareTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.tok = tokenizers.load("byte")
    self.tmp = self.create_tempdir().full_path

  def out(self) -> str:
    return self.create_tempdir().full_path

  def prepare(self, spec: str, **kw) -> tuple[dict, str]:
    """(meta, what went to stderr) of prepare.prepare into a new folder."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
      meta = prepare.prepare(spec, kw.pop("tok", self.tok), self.out(),
                             val_every=kw.pop("val_every", 4), **kw)
    return meta, err.getvalue()

  def test_links_are_followed_once(self):
    folder = os.path.join(self.tmp, "in")
    os.makedirs(os.path.join(folder, "sub"))
    write(os.path.join(folder, "a.txt"), EOT.join(stories(60)))
    write(os.path.join(folder, "sub", "b.txt"), EOT.join(stories(40, 60)))
    os.symlink(".", os.path.join(folder, "loop"))
    meta, err = self.prepare(folder)
    self.assertEqual(meta["documents"], 100)
    self.assertEqual(err.count("\n"), 1)  # One line names the link.
    self.assertIn("loop", err)
    os.symlink("..", os.path.join(folder, "sub", "up"))  # Two loops,
    os.symlink("a.txt", os.path.join(folder, "same.txt"))  # a file twice,
    os.symlink("sub", os.path.join(folder, "zsub"))  # a folder twice,
    os.symlink("nowhere.txt", os.path.join(folder, "dangling.txt"))
    meta, err = self.prepare(folder)
    self.assertEqual((meta["documents"], meta["files"]), (100, 2))
    self.assertEqual(err.count("\n"), 1)
    for name in ("loop", "up", "same.txt", "zsub", "dangling.txt"):
      self.assertIn(name, err)

  def test_input_is_a_literal_path(self):
    write(os.path.join(self.tmp, "x[1].txt"), EOT.join(stories(8)))
    write(os.path.join(self.tmp, "x1.txt"), EOT.join(stories(40, 100)))
    meta, _ = self.prepare(os.path.join(self.tmp, "x[1].txt"))
    self.assertEqual(meta["documents"], 8)  # Not the sibling x1.txt's 40.
    folder = os.path.join(self.tmp, "in[1]")
    os.makedirs(folder)
    write(os.path.join(folder, "a.txt"), EOT.join(stories(8)))
    self.assertEqual(self.prepare(folder)[0]["documents"], 8)
    with self.assertRaisesRegex(ValueError, r"`input` .*x\*.txt' is not a "
                                "file or folder .*no glob"):
      self.prepare(os.path.join(self.tmp, "x*.txt"))

  def test_a_huge_document_is_encoded_in_bounded_pieces(self):
    words = [f"w{i % 997}" + ("\n" if i % 13 == 0 else "") for i in
             range(300_000)]
    doc = " ".join(words)  # 1.6 M characters, one document.
    write(os.path.join(self.tmp, "big.txt"), f"  {doc}\n{EOT}" +
          EOT.join(stories(3)))
    seen = []
    gpt2 = tokenizers.load("gpt2")
    tok = dataclasses.replace(gpt2, encode_batch=lambda texts: seen.append(
        max(map(len, texts))) or gpt2.encode_batch(texts))
    meta, _ = self.prepare(os.path.join(self.tmp, "big.txt"), tok=tok,
                           val_every=2)
    self.assertLessEqual(max(seen), 1 << 18)  # documents.PIECE_CHARS
    self.assertEqual(meta["documents"], 4)
    got = np.fromfile(meta["train"], meta["dtype"]).tolist()
    want = gpt2.encode(doc) + [gpt2.eot_id] + gpt2.encode(stories(3)[1]) + [
        gpt2.eot_id]  # The pieces encode as the whole document does.
    self.assertEqual(got, want)

  def test_split_text_bounds_every_piece(self):
    from train.text import documents  # pylint: disable=g-import-not-at-top
    text = "ab cd\n\n  ef " * 500 + "x" * 5000 + " é" * 700
    for limit in (7, 64, 1000):
      parts = list(documents.split_text(text, limit))
      self.assertEqual("".join(parts), text)
      self.assertLessEqual(max(map(len, parts)), limit)
      self.assertTrue(all(parts))
    gpt2 = tokenizers.load("gpt2")
    text = text[:6000]
    self.assertEqual(sum((gpt2.encode(p) for p in documents.split_text(
        text, 100)), []), gpt2.encode(text))

  def test_txt_streams_across_block_boundaries(self):
    from train.text import documents  # pylint: disable=g-import-not-at-top
    docs = (["  é café  ", "\n", "naïve\u2028 text"] + stories(9) +
            ["日本語 " * 50])
    text = EOT.join(docs) + "  "
    path = write(os.path.join(self.tmp, "a.txt"), text)
    want = [d.strip() for d in text.split(EOT) if d.strip()]
    for block, piece in ((3, 40), (7, 64), (1 << 20, 1 << 18)):
      with mock.patch.multiple(documents, BLOCK_BYTES=block,
                               PIECE_CHARS=piece):
        got, cur = [], ""
        for part, last in documents.pieces(path):
          self.assertLessEqual(len(part), piece)
          cur += part
          if last:
            got.append(cur)
            cur = ""
      self.assertEqual(got, want, (block, piece))

  def test_jsonl_defects_are_one_error_naming_the_line(self):
    cases = {
        "not JSON": (b"{\"text\": \"a\"}\n{oops\n", "line 2 is not JSON"),
        "a list": (b"[1, 2]\n", "line 1 is a JSON list; a line must be an "
                   "object with a string field 'text'"),
        "deep": (b"[" * 200_000 + b"]" * 200_000 + b"\n",
                 "line 1 nests JSON too deeply"),
        "deep inside": (b'{"text": "a", "m": ' + b"[" * 200_000 +
                        b"]" * 200_000 + b"}\n", "line 1 nests JSON"),
        "number": (b"\n{\"text\": 5}\n", "line 2 has no string field 'text'"
                   " .*its 'text' is int"),
        "not UTF-8": (b"{\"text\": \"\xff\"}\n", "line 1 is not UTF-8"),
        "surrogate": (b"{\"text\": \"a\\ud800\"}\n",
                      "line 1: field 'text' holds an unpaired surrogate"),
    }
    for name, (line, message) in cases.items():
      path = os.path.join(self.out(), "x.jsonl")
      with open(path, "wb") as f:
        f.write(line)
      with self.assertRaisesRegex(ValueError, f"`input` '{path}' {message}",
                                  msg=name):
        self.prepare(path)
    from train.text import documents  # pylint: disable=g-import-not-at-top
    with mock.patch.object(documents, "MAX_LINE_BYTES", 100):
      with open(path, "w") as f:
        f.write(json.dumps({"text": "x" * 200}) + "\n")
      with self.assertRaisesRegex(ValueError, "line 1 is longer than"):
        self.prepare(path)

  def test_parquet_defects_are_one_error_naming_the_file(self):
    import pyarrow as pa  # pylint: disable=g-import-not-at-top
    import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
    good = os.path.join(self.tmp, "good.parquet")
    pq.write_table(pa.table({"text": stories(40)}), good, compression="none")
    tables = {
        "no text column": (pa.table({"body": ["a"]}),
                           "has 0 columns named 'text'"),
        "binary": (pa.table({"text": pa.array([b"\xff\x00"], pa.binary())}),
                   "column 'text' .* holds binary; a column of strings"),
        "ints": (pa.table({"text": [1, 2]}), "column .* holds int64"),
    }
    for name, (table, message) in tables.items():
      path = os.path.join(self.out(), "x.parquet")
      pq.write_table(table, path)
      with self.assertRaisesRegex(ValueError, f"`input` '{path}' {message}",
                                  msg=name):
        self.prepare(path)
    with open(good, "rb") as f:
      raw = f.read()
    corrupt = {"random": os.urandom(3000), "cut short": raw[:len(raw) // 2],
               "no footer": raw[:-9] + b"PAR1",
               "pages zeroed": raw[:4] + bytes(len(raw) - 200) + raw[-196:],
               "not UTF-8": raw.replace(b"Story 0003", b"Story \xff003")}
    for name, blob in corrupt.items():
      path = os.path.join(self.out(), "x.parquet")
      with open(path, "wb") as f:
        f.write(blob)
      with self.assertRaisesRegex(ValueError, f"`input` '{path}' is not a "
                                  "readable parquet file", msg=name):
        self.prepare(path)

  def test_the_binary_says_one_error_line(self):
    import pyarrow as pa  # pylint: disable=g-import-not-at-top
    import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
    path = os.path.join(self.tmp, "x.parquet")
    pq.write_table(pa.table({"text": pa.array([b"ab"], pa.binary())}), path)
    out = self.out()
    run = subprocess.run(
        [sys.executable, "-m", "train.prepare", f"--input={path}",
         "--tokenizer=byte", f"--outdir={out}"], cwd=ROOT,
        env=tests.one_device_env(), capture_output=True, text=True,
        timeout=300)
    self.assertEqual(run.returncode, 2, run.stderr[-2000:])
    self.assertEqual(run.stderr.count("\n"), 1, run.stderr[-2000:])
    self.assertRegex(run.stderr, f"^error: `input` '{path}' column 'text'")
    self.assertEqual(os.listdir(out), [])  # No half shard left behind.

  def test_meta_that_disagrees_with_its_shards_is_refused(self):
    folder = os.path.join(self.tmp, "in")
    os.makedirs(folder)
    write(os.path.join(folder, "a.txt"), EOT.join(stories(40)))
    meta, _ = self.prepare(folder)
    out = os.path.dirname(meta["train"])
    self.assertEqual(prepare.read(out, self.tok)["tokens"], meta["tokens"])
    meta_json = os.path.join(out, "meta.json")

    def edited(**fields):
      with open(meta_json, "w") as f:
        json.dump({**meta, **fields}, f)
      return out

    half = {s: n // 2 for s, n in meta["tokens"].items()}  # Sizes match.
    for fields, message in (
        (dict(dtype="uint32", tokens=half), "`dtype` is 'uint32'; shards of "
         "a 257-token vocabulary are uint16"),
        (dict(dtype="float64", tokens=half), "`dtype` is 'float64'"),
        (dict(tokens={**meta["tokens"], "val": 3}), r"`tokens.val` is 3 \(6 "
         "bytes of uint16\\); val.bin holds"),
        (dict(tokens={**meta["tokens"], "val": 1.5}), "`tokens.val` is 1.5"),
        (dict(vocab_size=70000), "`vocab_size` is 70000"),
        (dict(sha256=None), "`sha256.train` is missing")):
      with self.assertRaisesRegex(ValueError, f"{meta_json}'s {message}",
                                  msg=str(fields)):
        prepare.read(edited(**fields), self.tok)
    edited()
    with open(meta["val"], "r+b") as f:  # Other bytes, the same size.
      f.write(b"\x01\x00")
    with self.assertRaisesRegex(ValueError, "`sha256.val` disagrees with "
                                "val.bin's bytes"):
      prepare.read(out, self.tok)

  def test_a_wide_vocabulary_is_uint32_and_checked(self):
    big = dataclasses.replace(self.tok, vocab_size=70000, name="byte70k")
    folder = os.path.join(self.tmp, "in")
    os.makedirs(folder)
    write(os.path.join(folder, "a.txt"), EOT.join(stories(40)))
    meta, _ = self.prepare(folder, tok=big)
    self.assertEqual(meta["dtype"], "uint32")
    out = os.path.dirname(meta["train"])
    with open(os.path.join(out, "meta.json"), "w") as f:
      json.dump(dict(meta, dtype="uint16", tokens={
          s: 2 * n for s, n in meta["tokens"].items()}), f)
    with self.assertRaisesRegex(ValueError, "`dtype` is 'uint16'; shards of "
                                "a 70000-token vocabulary are uint32"):
      prepare.read(out, big)

  def test_a_cache_whose_meta_dtype_was_edited_is_rebuilt(self):
    path = write(os.path.join(self.tmp, "a.txt"), "the cat sat. " * 55)
    cfg = config_dict.ConfigDict(dict(
        source="text", path=path, online=False, val_fraction=0.1,
        cache_dir=os.path.join(self.tmp, "cache"), synthetic_stories=0,
        spamlang_vocab=0, seed=0, tokenizer="byte"))
    tokens = lambda m: np.concatenate([np.fromfile(m[s], m["dtype"]) for s in
                                       ("train", "val")]).tolist()
    meta = data.build_shards(cfg, self.tok)
    want = tokens(meta)
    meta_json = os.path.join(os.path.dirname(meta["train"]), "meta.json")
    with open(meta_json, "w") as f:
      json.dump(dict(meta, dtype="uint32", tokens={  # Sizes match.
          s: n // 2 for s, n in meta["tokens"].items()}), f)
    self.assertEqual(tokens(data.build_shards(cfg, self.tok)), want)


if __name__ == "__main__":
  absltest.main()

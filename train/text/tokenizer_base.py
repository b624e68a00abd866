"""What every tokenizer is: the `Tokenizer` record, the end-of-text token,
the encoding version its cache digest carries.

The base of train/text's tokenizer modules: `tokenizers` (the named ones,
`load`) and `vocab` (rebuilt from a model's vocabulary) both import it, it
imports neither, so the two never import each other back.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import Callable

EOT = "<|endoftext|>"
# Bump when this module, train/text/tokenizers.py or train/text/vocab.py
# changes how a definition becomes token ids: every token cache keyed by the
# old digests is dropped.
ENCODING_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Tokenizer:
  name: str  # What a report calls it (not a cache key: see `digest`).
  vocab_size: int
  eot_id: int  # Separates documents.
  encode: Callable[[str], list[int]]  # Never adds BOS.
  decode: Callable[[list[int]], str]
  bos_id: int | None = None  # Prepended to windows / prompts when set.
  # The full definition as text (vocabulary, merges or scores, normalizer,
  # pre-tokenizer, special tokens, flags): `tokenizers.Tokenizer.to_str()`
  # for the BPEs, called only when a cache needs the digest.
  definition: Callable[[], str] = dataclasses.field(
      default=lambda: "", repr=False, compare=False)
  # Many texts at once (the `tokenizers` library's threads); None: one
  # `encode` per text.
  encode_batch: Callable[[list[str]], list[list[int]]] | None = (
      dataclasses.field(default=None, repr=False, compare=False))

  def encode_many(self, texts: list[str]) -> list[list[int]]:
    if self.encode_batch is None:
      return [self.encode(t) for t in texts]
    return self.encode_batch(texts)

  @functools.cached_property
  def digest(self) -> str:
    """sha256 of what decides the ids: the definition, the wrapper's flags
    and ENCODING_VERSION. Token caches are keyed by it, so two tokenizers
    that share a name (two files called model.gguf) never share a cache."""
    text = self.definition()
    if not text:
      raise ValueError(f"tokenizer {self.name!r} has no definition to key "
                       "a token cache by.")
    flags = (f"v{ENCODING_VERSION}|{self.vocab_size}|{self.eot_id}|"
             f"{self.bos_id}|")
    return hashlib.sha256((flags + text).encode()).hexdigest()

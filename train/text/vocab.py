"""Tokenizers rebuilt from a model's own vocabulary (GGUF metadata), with
the `tokenizers` library doing the encoding.

  bpe_tokenizer  byte-level BPE (`tokenizer.ggml.model = gpt2`): tokens and
                 merges; the pre-tokenizer of `tokenizer.ggml.pre`.
  spm_tokenizer  SentencePiece-style BPE (`tokenizer.ggml.model = llama`,
                 Gemma): tokens with scores and types. Encoding is
                 SentencePiece's: spaces become U+2581 ('▁', plus one in
                 front with add_space_prefix), then adjacent symbols merge,
                 the pair whose merged piece has the highest score first
                 (leftmost on ties), and characters outside the vocabulary
                 fall back to their UTF-8 bytes <0xXX>. The same greedy order
                 is a BPE whose merge (l, r) ranks by the score of l + r, so
                 the merges are derived from the scores (as HF's converters
                 do). User-defined tokens (type 4, e.g. Gemma's '\\n\\n') match
                 as whole strings first (llama.cpp); control tokens do not
                 match text.
`bos_id` is set when the model expects BOS first (the file's add_bos flag);
the probes and the sampler prepend it, `encode` never does.
"""

from __future__ import annotations

import os

from train.text.tokenizer_base import Tokenizer

SPACE = "\u2581"
# GGUF token types (llama.cpp's llama_token_type).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# tokenizer.ggml.pre -> split regex before byte-level BPE (None: GPT-2's).
_GPT2 = None
_PRE = {
    "default": _GPT2, "gpt2": _GPT2, "smollm": "digits",
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
                 r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|"
                 r"\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}


def _wrap(tok, name: str, *, eos: int, bos: int | None,
          space_prefix: bool = False) -> Tokenizer:
  """`space_prefix`: SentencePiece's dummy prefix, one space before the
  text (add_space_prefix)."""
  prefix = " " if space_prefix else ""
  return Tokenizer(
      name, tok.get_vocab_size(), eos, lambda text: tok.encode(
          prefix + text, add_special_tokens=False).ids,
      lambda ids: tok.decode(list(ids), skip_special_tokens=False),
      bos_id=bos, definition=lambda: f"gguf|prefix={prefix!r}|{tok.to_str()}",
      encode_batch=lambda texts: [e.ids for e in tok.encode_batch(
          [prefix + t for t in texts], add_special_tokens=False)])


def bpe_tokenizer(name: str, tokens, merges, eos: int, *,
                  bos: int | None = None, pre: str = "default",
                  where: str = "`model`") -> Tokenizer:
  """Byte-level BPE from a vocabulary and 'a b' merge strings."""
  from tokenizers import (Regex, Tokenizer, decoders, models,  # pylint: disable=g-import-not-at-top
                          pre_tokenizers)
  if pre not in _PRE:
    raise ValueError(f"{where}: tokenizer.ggml.pre={pre!r} is not "
                     f"supported; supported: {sorted(_PRE)}.")
  bpe = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)},
                             [tuple(m.split(" ", 1)) for m in merges],
                             fuse_unk=False))
  byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
  split = _PRE[pre]
  if split == "digits":  # SmolLM: every digit is its own pre-token.
    byte_level = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), byte_level])
  elif split is not None:
    byte_level = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
  bpe.pre_tokenizer = byte_level
  bpe.decoder = decoders.ByteLevel()
  return _wrap(bpe, name, eos=eos, bos=bos)


def spm_merges(tokens, scores, types) -> list[tuple[str, str]]:
  """BPE merges equivalent to SentencePiece's score order: for every normal
  piece, each split into two normal pieces, ranked by the piece's score
  (higher first), then by the ids of the parts."""
  mergeable = {t: i for i, (t, k) in enumerate(zip(tokens, types))
               if k in (NORMAL, USER_DEFINED)}
  ranked = []
  for piece, i in mergeable.items():
    if types[i] != NORMAL:
      continue
    for cut in range(1, len(piece)):
      left, right = piece[:cut], piece[cut:]
      if left in mergeable and right in mergeable:
        ranked.append((-scores[i], mergeable[left], mergeable[right], left,
                       right))
  ranked.sort()
  return [(left, right) for *_, left, right in ranked]


def spm_tokenizer(name: str, tokens, scores, types, *, eos: int,
                  bos: int | None = None, unk: int | None = None,
                  add_space_prefix: bool = False) -> Tokenizer:
  """SentencePiece-style BPE with byte fallback (see the module docstring)."""
  from tokenizers import (AddedToken, Tokenizer, decoders, models,  # pylint: disable=g-import-not-at-top
                          normalizers)
  if not len(tokens) == len(scores) == len(types):
    raise ValueError("`tokens`, `scores` and `types` must have one entry "
                     f"per token; got {len(tokens)}, {len(scores)}, "
                     f"{len(types)}.")
  vocab = {}
  for i, t in enumerate(tokens):
    vocab.setdefault(t, i)
  unk_token = tokens[unk] if unk is not None else None
  tok = Tokenizer(models.BPE(vocab, spm_merges(tokens, scores, types),
                             unk_token=unk_token, fuse_unk=True,
                             byte_fallback=True))
  tok.normalizer = normalizers.Replace(" ", SPACE)
  decode = [decoders.Replace(SPACE, " "), decoders.ByteFallback(),
            decoders.Fuse()]
  if add_space_prefix:
    decode.append(decoders.Strip(" ", 1, 0))
  tok.decoder = decoders.Sequence(decode)
  user = [t for t, k in zip(tokens, types) if k == USER_DEFINED]
  if user:  # Matched on the raw text, before the normalizer.
    tok.add_tokens([AddedToken(t, normalized=False, special=False)
                    for t in user])
  return _wrap(tok, name, eos=eos, bos=bos, space_prefix=add_space_prefix)


def from_gguf(meta) -> Tokenizer:
  """The tokenizer a GGUF file describes (bottleneck.io.gguf_file.Metadata):
  byte-level BPE ('gpt2') or SentencePiece-style ('llama'), with its BOS
  convention; every special id within the vocabulary."""
  kind = meta.raw("tokenizer.ggml.model")
  name = f"gguf:{os.path.basename(meta.path)}"
  tokens = meta.raw_list("tokenizer.ggml.tokens")
  eos = meta.token_id("tokenizer.ggml.eos_token_id", len(tokens), 0)
  bos = meta.token_id("tokenizer.ggml.bos_token_id", len(tokens), None)
  add_bos = bool(meta.raw("tokenizer.ggml.add_bos_token", kind == "llama"))
  bos = bos if add_bos else None
  if kind == "gpt2":
    return bpe_tokenizer(name, tokens, meta.raw_list("tokenizer.ggml.merges"),
                         eos, bos=bos,
                         pre=meta.raw("tokenizer.ggml.pre", "default"),
                         where=f"`model` {meta.path!r}")
  if kind == "llama":
    unk = meta.token_id("tokenizer.ggml.unknown_token_id", len(tokens), None)
    return spm_tokenizer(
        name, tokens, meta.raw_list("tokenizer.ggml.scores", float),
        meta.raw_list("tokenizer.ggml.token_type", int), eos=eos, bos=bos,
        unk=unk, add_space_prefix=bool(
            meta.raw("tokenizer.ggml.add_space_prefix", True)))
  raise ValueError(f"`model` {meta.path!r}: tokenizer.ggml.model={kind!r} is "
                   "not supported (gpt2: byte-level BPE; llama: "
                   "SentencePiece-style).")

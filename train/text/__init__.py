"""Text: corpora that install offline, tokenizers (GPT-2 BPE, byte, HF
folders, trained BPE, and vocabularies rebuilt from GGUF metadata in
`vocab`) and token shards / window loaders (`data`). Imports nothing of
train's other packages."""

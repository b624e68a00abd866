"""Output-layer sizes (vocabulary N, width d) of the models in the papers.

`TABLE1` is Table 1 (Appendix C) of Basri & Jacobs (seed 001), in the paper's
order, with the paper's m* (largest m whose Corollary 1 probability is still
>= 0.99). Labels are the paper's; two are known typos, recorded in `note`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ModelSize:
  key: str  # Unique lookup key (lower case).
  label: str  # Name as printed in the paper.
  N: int  # Vocabulary size (rows of the output projection matrix).
  d: int  # Embedding width (columns).
  m_paper: int | None = None  # m* printed in Table 1, if the row is there.
  note: str = ""


TABLE1: tuple[ModelSize, ...] = (
    ModelSize("gpt2", "GPT2", 50257, 768, 26),
    ModelSize("bert-base", "BERT-Base", 30522, 768, 26),
    ModelSize("t5-base", "T5 Base", 32128, 768, 26),
    ModelSize("xlnet-base", "XLNet-Base", 32000, 768, 26),
    ModelSize("bert-large", "BERT-Large", 30522, 1024, 35),
    ModelSize("t5-large", "T5-Large", 32128, 1024, 35),
    ModelSize("xlnet-large", "XLNet-Large", 32000, 1024, 35),
    ModelSize("gpt2-xl", "GPT2-XL", 50257, 1600, 54),
    ModelSize("olmo2-1b", "Olmo2-1B", 100352, 2048, 66),
    ModelSize("gemma2-2b", "Gamma2-2B", 256000, 2304, 70,
              note="printed 'Gamma2-2B' in the paper (Gemma2-2B)"),
    ModelSize("tinyllama", "TinyLLaMA", 32000, 2048, 71),
    ModelSize("phi3-mini", "Phi3-Mini", 32064, 3072, 107),
    ModelSize("qwen3", "Qwen3", 152064, 3584, 113),
    ModelSize("llama3-8b", "LLaMA3-8B", 128256, 4096, 131),
    ModelSize("mpt-7b", "MPT-7B", 50176, 4096, 139),
    ModelSize("llama2-7b", "LLaMA2-7B", 32000, 4096, 143),
    ModelSize("falcon-40b-d4544", "Falcon-40B", 65024, 4544, 152,
              note="printed 'Falcon-40B' in the paper; d=4544 is Falcon-7B's "
              "width"),
    ModelSize("llama2-13b", "LLaMA2-13B", 32000, 5120, 179),
    ModelSize("deepseek-v3", "DeepSeek-V3", 129280, 7168, 230),
    ModelSize("falcon-40b", "Falcon-40B", 65024, 8192, 274),
    ModelSize("llama2-70b", "LLaMA2-70B", 32000, 8192, 287),
    ModelSize("gpt3-175b", "GPT3-175B", 50257, 12288, 418),
)

# Figure 2 draws a subset of Table 1 (the text names GPT-2 to GPT3-175B).
FIGURE2_KEYS = ("gpt2", "bert-large", "gpt2-xl", "tinyllama", "llama2-7b",
                "llama2-13b", "llama2-70b", "gpt3-175b")

_BY_KEY = {row.key: row for row in TABLE1}


def lookup(names: str) -> tuple[ModelSize, ...]:
  """Rows of Table 1 for 'all' or a comma-separated list of keys."""
  if names.strip() == "all":
    return TABLE1
  rows = []
  for name in names.split(","):
    key = name.strip().lower()
    if key not in _BY_KEY:
      raise ValueError(f"`models` entry {name!r} is not in Table 1; allowed: "
                       f"'all' or a comma list of {sorted(_BY_KEY)}.")
    rows.append(_BY_KEY[key])
  return tuple(rows)

"""Completions from run folders (seed 004, Tables 5.1 / 5.2)."""

from __future__ import annotations

import os

from train.models import generate
from train.text import data
from train.training import runs


def load_run(workdir: str):
  """(params, model, GPTConfig, tokenizer, config) of a run folder."""
  params, cfg, tok, config = runs.load(workdir)
  return params, cfg.module(), cfg, tok, config


def continue_text(workdir: str, prompt: str, tokens: int, **sampling) -> str:
  params, model, cfg, tok, _ = load_run(workdir)
  out = generate.complete(params, model, cfg, [tok.encode(prompt)], tokens,
                          **sampling)
  return tok.decode(out[0])


def _cell(text: str) -> str:
  return text.replace("|", "\\|").replace("\n", " ").strip()


def story_table(workdirs, n: int, token_counts, seed: int = 0,
                labels=None, **sampling) -> str:
  """Markdown: one table per completion length, a column per model
  (`labels`: the columns' names; default the workdirs' folder names)."""
  labels = labels or [os.path.basename(os.path.normpath(wd))
                      for wd in workdirs]
  runs = [load_run(wd) for wd in workdirs]
  _, _, cfg0, tok0, config0 = runs[0]
  stories = data.heldout_documents(config0.data, tok0)
  parts = []
  for count in token_counts:
    pairs = generate.split_stories(stories, tok0, n, count, seed)
    columns = {}
    for label, (params, model, cfg, tok, _) in zip(labels, runs):
      if tok.name != tok0.name:
        raise ValueError("`workdir` runs must share one tokenizer; got "
                         f"{tok0.name} and {tok.name}.")
      columns[label] = generate.complete(
          params, model, cfg, [p for p, _ in pairs], count, seed, **sampling)
    head = ["prompt", "original"] + list(columns)
    lines = [f"**Story completions ({count} tokens)**", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, (prompt, original) in enumerate(pairs):
      cells = [tok0.decode(prompt)[-300:], tok0.decode(original)]
      cells += [tok0.decode(col[i]) for col in columns.values()]
      lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    parts.append("\n".join(lines))
  del cfg0
  return "\n\n".join(parts)

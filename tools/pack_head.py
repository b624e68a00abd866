"""A model's head alone, as stored, in a small GGUF (for a lent machine).

  PYTHONPATH=. .venv/bin/python tools/pack_head.py --model=smollm2 \
      --out=.gpu/smollm2_head.gguf

A lent GPU machine reaches no package registry, so the trained heads that
PyPI packages ship (bottleneck.io.zoo) cannot be installed there. This
copies the head tensor (output.weight, else the tied token_embd.weight)
of a zoo model's GGUF into a GGUF holding only that tensor, its blocks
byte for byte (no requantisation), and prints the sha256 of the float32
matrix that `bottleneck.io.matrices.load("gguf:OUT")` then gives, to
check on the other machine (`--check=OUT --sha256=...`). `--chunks=k`
also splits the file into k parts (OUT.0, OUT.1, ...) that each fit one
call's transfer, and OUT.sha256, the whole file's hash and the number of
parts, which on_gpu.sh checks before it joins them.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np


def matrix_sha256(path: str) -> str:
  from bottleneck.io import matrices  # pylint: disable=g-import-not-at-top
  a = np.ascontiguousarray(matrices.load(f"gguf:{path}").array, np.float32)
  return f"{hashlib.sha256(a.tobytes()).hexdigest()} {a.shape}"


def pack(model: str, out: str) -> str:
  """Writes the GGUF; returns `matrix_sha256` of it, checked against the
  zoo's head."""
  import gguf  # pylint: disable=g-import-not-at-top
  from bottleneck.io import gguf_file, zoo  # pylint: disable=g-import-not-at-top
  source = zoo.path(model)
  t = gguf_file.head_tensor(source)
  writer = gguf.GGUFWriter(out, arch="head")
  rows = int(t.shape[-1])  # GGUF lists shapes innermost first.
  writer.add_tensor(t.name, np.asarray(t.data).reshape(rows, -1),
                    raw_dtype=t.tensor_type)  # Its bytes, row by row.
  writer.write_header_to_file()
  writer.write_kv_data_to_file()
  writer.write_tensors_to_file()
  writer.close()
  original = np.ascontiguousarray(gguf_file.tensor(t, source), np.float32)
  packed = matrix_sha256(out)
  if packed.split()[0] != hashlib.sha256(original.tobytes()).hexdigest():
    raise SystemExit(f"error: {out} does not decode to {model}'s head")
  return packed


def main():
  args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
  if "check" in args:
    got = matrix_sha256(args["check"])
    print(got)
    if "sha256" in args and got.split()[0] != args["sha256"]:
      raise SystemExit(f"error: {args['check']} decodes to {got}, not "
                       f"{args['sha256']}")
    return
  chunks = int(args.get("chunks", 1))
  if not 1 <= chunks <= 10:
    raise SystemExit(f"error: --chunks={chunks}: allowed 1..10 (one digit "
                     "per part, as on_gpu.sh globs them)")
  print(pack(args["model"], args["out"]))
  if chunks > 1:
    split(args["out"], chunks)


def split(out: str, chunks: int) -> None:
  """OUT.0 .. OUT.{chunks-1}, and OUT.sha256 ("SHA256 NAME CHUNKS"):
  what tools/on_gpu.sh checks before it joins them."""
  data = open(out, "rb").read()
  step = -(-len(data) // chunks)
  for k in range(chunks):
    with open(f"{out}.{k}", "wb") as f:
      f.write(data[k * step:(k + 1) * step])
  name = out.rsplit("/", 1)[-1]
  with open(f"{out}.sha256", "w") as f:
    f.write(f"{hashlib.sha256(data).hexdigest()} {name} {chunks}\n")


if __name__ == "__main__":
  main()

"""A model's head alone, as stored, in a small GGUF (for a lent machine).

  PYTHONPATH=. .venv/bin/python benchmarks/pack_head.py --model=smollm2 \
      --out=.gpu/smollm2_head.gguf

A lent GPU machine reaches no package registry, so the trained heads that
PyPI packages ship (bottleneck.io.zoo) cannot be installed there. This
copies the head tensor (output.weight, else the tied token_embd.weight)
of a zoo model's GGUF into a GGUF holding only that tensor, its blocks
byte for byte (no requantisation), and prints the sha256 of the float32
matrix that `bottleneck.io.matrices.load("gguf:OUT")` then gives, to
check on the other machine (`--check=OUT --sha256=...`). `--chunks=k`
also splits the file into k parts (OUT.0, OUT.1, ...) that each fit one
call's transfer; `cat OUT.* > OUT` joins them.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np


def matrix_sha256(path: str) -> str:
  from bottleneck.io import matrices  # pylint: disable=g-import-not-at-top
  a = np.ascontiguousarray(matrices.load(f"gguf:{path}").array, np.float32)
  return f"{hashlib.sha256(a.tobytes()).hexdigest()} {a.shape}"


def pack(model: str, out: str) -> None:
  import gguf  # pylint: disable=g-import-not-at-top
  from bottleneck.io import gguf_file, zoo  # pylint: disable=g-import-not-at-top
  source = zoo.path(model)
  by_name = {t.name: t for t in gguf_file.reader(source).tensors}
  name = next(n for n in ("output.weight", "token_embd.weight")
              if n in by_name)
  t = by_name[name]
  writer = gguf.GGUFWriter(out, arch="head")
  rows = int(t.shape[-1])  # GGUF lists shapes innermost first.
  writer.add_tensor(name, np.asarray(t.data).reshape(rows, -1),
                    raw_dtype=t.tensor_type)  # Its bytes, row by row.
  writer.write_header_to_file()
  writer.write_kv_data_to_file()
  writer.write_tensors_to_file()
  writer.close()
  original = np.ascontiguousarray(gguf_file.head_matrix(source)[0])
  if matrix_sha256(out).split()[0] != hashlib.sha256(
      original.tobytes()).hexdigest():
    raise SystemExit(f"error: {out} does not decode to {model}'s head")


def main():
  args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
  if "check" in args:
    got = matrix_sha256(args["check"])
    print(got)
    if "sha256" in args and got.split()[0] != args["sha256"]:
      raise SystemExit(f"error: {args['check']} decodes to {got}, not "
                       f"{args['sha256']}")
    return
  pack(args["model"], args["out"])
  print(matrix_sha256(args["out"]))
  chunks = int(args.get("chunks", 1))
  if chunks > 1:
    data = open(args["out"], "rb").read()
    step = -(-len(data) // chunks)
    for k in range(chunks):
      with open(f"{args['out']}.{k}", "wb") as f:
        f.write(data[k * step:(k + 1) * step])


if __name__ == "__main__":
  main()

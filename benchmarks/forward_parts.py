"""Where a real LLM's Pass spends its time: the model body (hidden states)
and the head statistics (gradient.head_statistics), each with the blocking
the code uses and without it, in one process (an A/B on the same machine
state).

  BOTTLENECK_CACHE=... PYTHONPATH=. .venv/bin/python \
      benchmarks/forward_parts.py --model=gemma3 --out=parts.json

Body: 4 windows of 1024 tokens, attention in query blocks of
layers.QUERY_BLOCK against one block of all T queries (the unblocked
core). Head: the Pass's chunk (forward.PASS_CHUNK_BYTES) with blocks of
gradient.VOCAB_BLOCK rows of W against one block of all V rows (z, then
softmax, then g W: two reads of W), and the old chunk of 32 MiB of
logits. Each timing is the best of 2 after a compile.
"""

import argparse
import json
import platform
import time
from unittest import mock

import jax
import jax.numpy as jnp

from bottleneck import gradient, sharding
from train.models import layers
from train.probes import forward, subjects


def best_of(fn, *args, repeats: int = 2) -> float:
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append(time.perf_counter() - t0)
  return min(times)


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--model", default="gemma3")
  ap.add_argument("--windows", type=int, default=4)
  ap.add_argument("--out", default=None)
  args = ap.parse_args()
  subject = subjects.load_subject(model=args.model, dtype="float32")
  x, y = subjects.windows(subject, "", args.windows, "val", 0, 1024)
  mesh = sharding.batch_mesh()
  params, w, b = forward._placed(subject, mesh)  # pylint: disable=protected-access
  m = forward.head_whitener(subject, mesh)
  x, y = jnp.asarray(x, jnp.int32), jnp.asarray(y, jnp.int32)
  model, cap = subject.model, float(subject.cfg.logit_softcap)
  out = {"model": args.model, "tokens": int(x.size),
         "machine": f"{platform.machine()} {jax.device_count()} device(s)",
         "date": time.strftime("%Y-%m-%d"), "seconds": {}}

  def hidden(p, ids):
    return model.apply(p, ids, method=type(model).hidden)

  for name, block in (("body, query blocks", layers.QUERY_BLOCK),
                      ("body, unblocked", x.shape[1])):
    with mock.patch.object(layers, "QUERY_BLOCK", block):
      out["seconds"][name] = best_of(jax.jit(hidden), params, x)
  h = jax.jit(hidden)(params, x)
  v = w.shape[0]
  chunk = forward.rows_per_step(v, x.shape[0], forward.PASS_CHUNK_BYTES)
  old_chunk = forward.rows_per_step(v, x.shape[0], 1 << 25)
  for name, c, vb in (("head, W blocks", chunk, gradient.VOCAB_BLOCK),
                      ("head, one block of W", chunk, v),
                      ("head, one block of W, 32 MiB chunk", old_chunk, v)):
    fn = jax.jit(lambda h, y, w, b, m, c=c, vb=vb: gradient.head_statistics(
        h, y, w, b, m, c, cap, vocab_block=vb))
    out["seconds"][name] = best_of(fn, h, y, w, b, m)
  out["chunk"], out["old_chunk"] = chunk, old_chunk
  print(json.dumps(out, indent=1))
  if args.out:
    with open(args.out, "w") as f:
      json.dump(out, f, indent=1)


if __name__ == "__main__":
  main()

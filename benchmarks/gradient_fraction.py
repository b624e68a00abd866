"""Seed 002 eq. (10) over many tokens: bottleneck.gradient.destroyed_fraction.

  python benchmarks/gradient_fraction.py --tokens=1000000 --V=50257 --D=768 \
      --out=benchmarks/gradient_fraction.json

Random hidden states and head (the cost does not depend on the values): two
T x V x D products in chunks (logits, then G Q), ~4 T V D FLOPs. One warm-up
on one chunk compiles; the timed call covers every token.
"""

from __future__ import annotations

import json
import platform
import sys
import time

import jax
import numpy as np

from bottleneck import gradient


def main():
  args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
  t, v, d = (int(args.get(k, dflt)) for k, dflt in
             (("tokens", 1_000_000), ("V", 50257), ("D", 768)))
  chunk = int(args.get("chunk", 2048))
  rng = np.random.default_rng(0)
  h = rng.standard_normal((t, d), dtype=np.float32) / np.sqrt(d)
  w = rng.standard_normal((v, d), dtype=np.float32)
  y = rng.integers(0, v, t)
  gradient.destroyed_fraction(h[:chunk], w, None, y[:chunk], chunk)  # Warm.
  start = time.perf_counter()
  out = gradient.destroyed_fraction(h, w, None, y, chunk)
  seconds = time.perf_counter() - start
  result = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.node()} {platform.machine()}",
            "device": jax.devices()[0].device_kind, "tokens": t, "V": v,
            "D": d, "chunk": chunk, "seconds": seconds,
            "tflops_per_s": 4.0 * t * v * d / seconds / 1e12, **out}
  print(json.dumps(result))
  if "out" in args:
    with open(args["out"], "w") as f:
      json.dump(result, f, indent=1)


if __name__ == "__main__":
  main()

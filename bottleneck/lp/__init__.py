"""The top-m selectability LP of seed 001, Section 6, as small modules.

  instances     token subsets, targets and thresholds; padding to a batch
  admm          the batched first-order solver (device arrays only)
  stream        continuous batching of many instances over a fixed batch
  certificates  float64 checks of every verdict (and their policy)
  exact         HiGHS, the exact reference and fallback

`bottleneck.topm` composes them (solve, sweep, m_star_search) and is the
binary `python -m bottleneck.topm`.
"""

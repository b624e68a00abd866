"""Probes of trained LM heads (seeds 002, 003; seed 001 App. A, D, E).

  subjects   what is probed: a run folder, an HF folder or a GGUF model,
             its head's rank D, text windows
  forward    one jitted pass per subject and text (hidden states H,
             probabilities, gradient sums)
  spec       what a probe declares: name, inputs, run, figures, table rows
  compare    every compared probe on several models (train.compare)
  gradient   seed 002: eq. (10), App. D cosine, Figs. 2, 7, 8
  encoding   seed 003: Table 1, Fig. 3, Algorithm 1, Fig. 6, Fig. 7
  head       seed 001 App. A (top-m mass) and App. E (row statistics)
  pruning    seed 003 Fig. 6: dimensions removed by saliency
  frequency  seed 003 Fig. 7: the frequency probe along a run's checkpoints
  registry   the probes by name, as `python -m train.probe` runs them
  hooks      training-time probes (config.probes = 'name:every')
  plots      their figures

Each probe returns (numbers: dict, figures: {name: matplotlib Figure}); the
statistics themselves are pure functions in `bottleneck`. This file imports
nothing, so the trainer can import `hooks` without pulling in the probes.
"""

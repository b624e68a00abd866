"""The trainer: config -> sharded jitted train step, checkpoints, exact
resume, metrics; `runs` reads run folders back (no Trainer built);
`experiments` trains what the report and the colabs need. Imports
train.models and train.text, never train.probes: training-time probes
are registered by the caller (`hooks=` of trainer.train_and_evaluate)."""

"""The trainer: config -> sharded jitted train step, checkpoints, exact
resume, metrics; `runs` reads run folders back (no Trainer built). What
the report trains is the report's (train/report/training_runs.py and one
module per experiment). Imports train.models and train.text, never
train.probes nor configs/: training-time probes are registered by the
caller (`hooks=` of trainer.train_and_evaluate)."""

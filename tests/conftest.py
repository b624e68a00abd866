"""pytest runs the absltest cases: absl flags must count as parsed."""

from absl import flags
from absl.testing import absltest  # noqa: F401  (defines --test_tmpdir)

if not flags.FLAGS.is_parsed():
  flags.FLAGS.mark_as_parsed()

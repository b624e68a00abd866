"""configs/common.parse_arg and the experiment files that use it."""

from absl.testing import absltest, parameterized

from configs import common, lowrank, report, spamlang, thesis


class ParseArgTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("empty", "", {"V": 1024, "D": 0, "cpu": False}),
      ("typed", "V=32,D=2", {"V": 32, "D": 2, "cpu": False}),
      ("bare_bool", "V=32,cpu", {"V": 32, "D": 0, "cpu": True}),
      ("explicit_bool", "cpu=false", {"V": 1024, "D": 0, "cpu": False}),
      ("spaces", " V=8 , cpu ", {"V": 8, "D": 0, "cpu": True}),
  )
  def test_values_take_the_default_types(self, arg, want):
    got = common.parse_arg(arg, V=1024, D=0, cpu=False).to_dict()
    self.assertEqual(got, want)
    self.assertEqual({k: type(v) for k, v in got.items()},
                     {k: type(v) for k, v in want.items()})

  @parameterized.named_parameters(
      ("unknown_key", "d=32", "allowed keys: D, V, cpu"),
      ("unknown_flag", "gpu", "allowed keys"),
      ("bad_int", "V=abc", "`V` must be of type int"),
      ("bad_bool", "cpu=maybe", "`cpu` must be true or false"),
      ("twice", "V=1,V=2", "given twice"),
  )
  def test_bad_arguments_are_errors(self, arg, message):
    with self.assertRaisesRegex(ValueError, message):
      common.parse_arg(arg, V=1024, D=0, cpu=False)

  def test_positional(self):
    args = common.parse_arg("model3,cpu", positional="model", model="model1",
                            cpu=False)
    self.assertEqual((args.model, args.cpu), ("model3", True))
    with self.assertRaisesRegex(ValueError, "not understood"):
      common.parse_arg("model3,model4", positional="model", model="model1")

  def test_experiment_files_reject_typos(self):
    # Before parse_arg, `lowrank.py:d=32` silently ran with D = 64.
    self.assertEqual(lowrank.get_config("D=32").model.head_rank, 32)
    for get_config, arg in ((lowrank.get_config, "d=32"),
                            (spamlang.get_config, "v=64"),
                            (thesis.get_config, "model1,cpus"),
                            (thesis.get_config, "model9")):
      with self.assertRaises(ValueError):
        get_config(arg)

  def test_report_scales_are_tables(self):
    tiny, quick, full, paper = (report.get_config(s) for s in report.SCALES)
    self.assertEqual((tiny.figure5.N, quick.figure5.N), (2000, 50257))
    # `full` is quick's where a field does not set its own.
    self.assertEqual(full.figure5.N, quick.figure5.N)
    self.assertEqual((quick.spamlang.vocabs[-1], full.spamlang.vocabs[-1]),
                     (4096, 16384))
    self.assertEqual((quick.figure3.N_fixed, full.figure3.N_fixed),
                     (2000, 32000))
    self.assertEqual((quick.figure1.batch, paper.figure1.batch), (32, 64))
    self.assertEqual(paper.figure5.method, "matrix")
    self.assertLen(paper.training.runs, 8)


if __name__ == "__main__":
  absltest.main()

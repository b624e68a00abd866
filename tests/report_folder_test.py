"""A report folder is never emptied or overwritten by accident (issue: a
hostile-input review of train/report/runner.py): every case runs the runner
on fake sections of a few milliseconds each, in a temp dir."""

import json
import os
from unittest import mock

from absl.testing import absltest

from configs import report as report_config
from train.report import runner
from train.report import section as section_lib

TABLE1 = {"rows": [{}] * 22, "rows_matching_paper": {"gumbel": 22}}


class ReportFolderTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.calls = []  # The sections run, in order.
    patch = mock.patch.dict(runner.SECTIONS, {
        n: self.fake(n) for n in runner.SECTIONS})
    patch.start()
    self.addCleanup(patch.stop)
    trim = mock.patch.object(runner.cli, "release_memory", lambda: None)
    trim.start()  # A full heap trim per fake section: seconds.
    self.addCleanup(trim.stop)
    self.tiny = report_config.get_config("tiny")

  def fake(self, name, interrupt=False):
    def fn(config, outdir):
      del config, outdir
      self.calls.append(name)
      if interrupt:
        raise KeyboardInterrupt
      return section_lib.Section(f"Fake {name}", f"{name} body",
                                 dict(TABLE1) if name == "table1" else {})
    return runner.Spec(fn, 1.0)

  def files(self, outdir):
    out = {}
    for name in ("results.json", "report.md"):
      path = os.path.join(outdir, name)
      if os.path.exists(path):
        with open(path, "rb") as f:
          out[name] = f.read()
    return out

  def saved(self, outdir):
    with open(os.path.join(outdir, "results.json")) as f:
      return json.load(f)

  def two_sections(self):
    out = self.create_tempdir().full_path
    runner.run(self.tiny, out, ["table1", "signrank"])
    self.calls.clear()
    return out

  def test_ctrl_c_before_the_first_section_keeps_the_report(self):
    out = self.two_sections()
    before = self.files(out)
    runner.SECTIONS["table1"] = self.fake("table1", interrupt=True)
    with self.assertRaises(SystemExit) as stop:
      runner.run(self.tiny, out)  # No --sections: every section.
    self.assertEqual(stop.exception.code, 130)
    self.assertEqual(self.files(out), before)
    # Interrupted after one section: the new one merged with the others.
    runner.SECTIONS["table1"] = self.fake("table1")
    runner.SECTIONS["figure5"] = self.fake("figure5", interrupt=True)
    with self.assertRaises(SystemExit):
      runner.run(self.tiny, out)
    saved = self.saved(out)
    self.assertEqual(sorted(saved["sections"]), ["signrank", "table1"])
    self.assertStartsWith(saved["state"], "interrupted; sections run: table1;"
                          " still to run: figure5")

  def test_a_full_rerun_merges_and_ends_complete(self):
    out = self.two_sections()
    runner.run(self.tiny, out)
    self.assertEqual(self.calls, list(runner.SECTIONS))
    saved = self.saved(out)
    self.assertEqual(saved["state"], "complete")
    self.assertEqual(list(saved["sections"]), list(runner.SECTIONS))

  def test_foreign_files_are_refused_with_or_without_sections(self):
    theirs = {"results.json": b'{"model": "x", "accuracy": 0.9}\n',
              "report.md": b"# My experiment\n\nNotes.\n"}
    ours_json = None
    for case in ("both", "report.md alone", "foreign report.md",
                 "not JSON", "not UTF-8"):
      out = self.create_tempdir().full_path
      files = dict(theirs)
      if case == "report.md alone":
        del files["results.json"]
      elif case == "foreign report.md":
        ours_json = ours_json or self.files(self.two_sections())[
            "results.json"]
        files["results.json"] = ours_json
      elif case == "not JSON":
        files["results.json"] = b"{not json"
      elif case == "not UTF-8":
        files["results.json"] = b"\xff\xfe{}"
      for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
          f.write(data)
      self.calls.clear()
      for only in (None, ["table1"]):
        with self.assertRaisesRegex(ValueError, r"`outdir` .*--overwrite",
                                    msg=case) as refused:
          runner.run(self.tiny, out, only)
        self.assertNotIn("\n", str(refused.exception))  # One error line.
      self.assertEqual(self.calls, [], case)  # Before any work.
      self.assertEqual(self.files(out), files, case)
    runner.run(self.tiny, out, ["table1"], overwrite=True)
    self.assertEqual(list(self.saved(out)["sections"]), ["table1"])

  def test_a_report_of_another_scale_is_refused_not_dropped(self):
    out = self.two_sections()
    before = self.files(out)
    quick = report_config.get_config("quick")
    with self.assertRaisesRegex(ValueError, r"scale 'tiny', not 'quick'.*"
                                r"--overwrite"):
      runner.run(quick, out, ["table1"])
    self.assertEqual((self.calls, self.files(out)), ([], before))
    runner.run(quick, out, ["table1"], overwrite=True)
    saved = self.saved(out)
    self.assertEqual((saved["config"]["scale"], list(saved["sections"])),
                     ("quick", ["table1"]))

  def test_a_section_of_another_config_is_refused_not_merged(self):
    out = self.two_sections()
    before = self.files(out)
    other = report_config.get_config("tiny")
    other.signrank.subsets += 1  # A field signrank reads, table1 does not.
    with self.assertRaisesRegex(ValueError, r"section 'signrank' was "
                                r"computed with another config \(signrank"
                                r"\.subsets: 5 -> 6\).*--sections=signrank"):
      runner.run(other, out, ["table1"])
    self.assertEqual((self.calls, self.files(out)), ([], before))
    runner.run(other, out, ["signrank"])  # Re-run: replaced, table1 kept.
    self.assertEqual(self.calls, ["signrank"])
    self.assertEqual(self.saved(out)["config"]["signrank"]["subsets"], 6)
    self.calls.clear()
    other.figure1.trials += 1  # Read by no section in the folder.
    runner.run(other, out, ["table1"])
    self.assertEqual(self.calls, ["table1"])
    other.seed += 1  # Read by every section.
    with self.assertRaisesRegex(ValueError, r"seed: 0 -> 1"):
      runner.run(other, out, ["table1"])

  def test_a_lock_holding_json_not_an_object_is_one_error(self):
    out = self.create_tempdir().full_path
    for content in (b"[1, 2]", b"null", b'"me"', b'{"pid": [1]}',
                    b"\xff\xfe"):
      with open(os.path.join(out, "report.lock"), "wb") as f:
        f.write(content)
      with self.assertRaisesRegex(ValueError, r"report\.lock", msg=content):
        runner.run(self.tiny, out, ["table1"])
    self.assertEqual(self.calls, [])

  def test_a_planted_section_of_wrong_types_is_refused_before_work(self):
    for name, numbers, field in (
        ("signrank", {"peak_rss_gb_so_far": "big"}, "peak_rss_gb_so_far"),
        ("real_llm", {"models": {"m": {"seconds": {"forward": "slow"}}}},
         "models.m"),
        ("appendices", {"cumulative": {
            "tokens_for_0.9_of_mean_curve": 200, "V": 64, "positions": 8,
            "tokens_for_0.9_median": "many"}}, "tokens_for_0.9_median"),
        ("table1", {"rows_matching_paper": {"gumbel": "22"}},
         "rows_matching_paper.gumbel")):
      out = self.two_sections()
      saved = self.saved(out)
      planted = saved["sections"].setdefault(name, {
          "title": name, "markdown": "x", "seconds": 1.0})
      planted.update(numbers)
      with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(saved, f)
      before = self.files(out)
      with self.assertRaisesRegex(
          ValueError, rf"section '{name}' .*{field}.*--sections={name}"):
        runner.run(self.tiny, out, ["figure5"])
      self.assertEqual((self.calls, self.files(out)), ([], before))
      runner.run(self.tiny, out, [name])  # Re-running it replaces it.
      self.assertEqual(self.saved(out)["sections"][name]["markdown"],
                       f"{name} body")


if __name__ == "__main__":
  absltest.main()

"""Tests of the pytest plugin (python/opcontract/pytest_plugin.py) against a fake opcontract CLI.

Each test writes contract files into pytester's folder, gives the fake CLI the results to
report for them (conftest.py), runs pytest with the plugin and checks the items' outcomes
and texts, and what the CLI was asked.

Run: .venv/bin/python -m pytest tests/python_package -q
"""

from __future__ import annotations

import pytest
from conftest import entry, env_without_opcontract, finding, mode, write_contract

CASE = {"rows": 0, "args": {"x": {"dtype": "float32", "shape": [0, 1], "layout": "contiguous"}}}


def outcomes_of(result: pytest.RunResult) -> dict[str, str]:
    """nodeid -> PASSED/FAILED/SKIPPED/XFAIL/ERROR, from `-rA`'s short summary."""
    seen = {}
    for line in result.outlines:
        for word in ("PASSED", "FAILED", "SKIPPED", "XFAIL", "ERROR", "XPASS"):
            if line.startswith(word + " "):
                rest = line[len(word) + 1:]
                if word == "SKIPPED":  # "SKIPPED [1] path: reason" names no node
                    continue
                seen[rest.split(" - ")[0].strip()] = word
    return seen


def test_a_holding_contract_gives_one_item_per_mode_and_one_for_the_contract(pytester, fake_cli, run_plugin):
    write_contract(pytester.path / "contracts", "holds.yaml", op="t::holds")
    fake_cli.answer("holds.yaml", [entry("contracts/holds.yaml", op="t::holds")])
    result = run_plugin("--opcontract", "contracts", "-rA")
    assert outcomes_of(result) == {
        "contracts/holds.yaml::t.holds[contract]": "PASSED",
        "contracts/holds.yaml::t.holds[fake]": "PASSED",
        "contracts/holds.yaml::t.holds[eager]": "PASSED",
        "contracts/holds.yaml::t.holds[compiled]": "PASSED",
    }
    result.assert_outcomes(passed=4, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] contracts/holds.yaml:2: cudagraph not run: no CUDA device"])
    assert result.ret == 0
    assert len(fake_cli.calls()) == 1, "one CLI run serves the contract's five items"


def test_only_known_findings_are_an_xfail_with_their_reasons(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "known.yaml", op="t::known_bug")
    fake_cli.answer("known.yaml", [entry(
        "known.yaml", op="t::known_bug", modes={"eager": mode("fail")},
        findings=[finding("write", "eager", "row 3 unwritten", known="upstream skips padded rows", case=CASE)])])
    result = run_plugin("--opcontract", "known.yaml", "-rA")
    assert outcomes_of(result)["known.yaml::t.known_bug[eager]"] == "XFAIL"
    # pytest 8.0 writes "- reason: known: ...", 9 "- known: ..."
    result.stdout.fnmatch_lines(["XFAIL known.yaml::t.known_bug[[]eager[]] - *known: write (eager): upstream skips padded rows"])
    result.assert_outcomes(passed=3, skipped=1, xfailed=1)
    assert result.ret == 0


def test_a_new_finding_fails_its_mode_with_the_clause_message_case_and_replay(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "broken.yaml", op="t::broken")
    fake_cli.answer("broken.yaml", [entry(
        "broken.yaml", op="t::broken", verdict="fail", modes={"eager": mode("fail")},
        findings=[finding("alias", "eager", "return 0 shares storage with argument 'x'\nsecond line", case=CASE),
                  finding("write", "eager", "known one", known="a reason")])])
    result = run_plugin("--opcontract", "broken.yaml", "-rA")
    outcomes = outcomes_of(result)
    assert outcomes["broken.yaml::t.broken[eager]"] == "FAILED"
    assert outcomes["broken.yaml::t.broken[contract]"] == "PASSED"
    assert outcomes["broken.yaml::t.broken[compiled]"] == "PASSED"
    result.stdout.fnmatch_lines([
        "*alias (eager), first in case 3, shrunk in 5 steps:",
        "*return 0 shares storage with argument 'x'",
        "*second line",
        '*minimal case: {"rows": 0, "args": {"x": {"dtype": "float32", "shape": [[]0, 1[]], "layout": "contiguous"}}}',
        "*replay: opcontract check c.yaml --target t --seed 20261202 --cases 3",
        "*(and 1 known finding)",
    ])
    assert "Traceback" not in result.stdout.str()
    assert result.ret == 1


def test_a_mode_not_run_is_skipped_with_the_reason(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "skips.yaml", op="t::skips")
    fake_cli.answer("skips.yaml", [entry("skips.yaml", op="t::skips", modes={
        "compiled": mode("not_run", "skipped by the contract: the op is never compiled")})])
    result = run_plugin("--opcontract", "skips.yaml", "-rs")
    result.assert_outcomes(passed=3, skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] skips.yaml:2: compiled not run: skipped by the contract: the op is never compiled"])


def test_a_check_error_fails_every_item_with_the_error(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "errs.yaml", op="t::errs")
    fake_cli.answer("errs.yaml", [entry("errs.yaml", op="t::errs", verdict="error",
                                        error="errs.yaml, target t::errs, in the eager mode: boom")], exit=2)
    result = run_plugin("--opcontract", "errs.yaml")
    result.assert_outcomes(failed=5)
    assert result.stdout.str().count("opcontract error: errs.yaml, target t::errs, in the eager mode: boom") == 5


def test_a_contract_the_cli_cannot_load_fails_with_its_message(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "bad.yaml", op="t::bad")
    fake_cli.answer("bad.yaml", exit=2, stderr="bad.yaml:3:1: unknown key 'shcema' (did you mean 'schema'?)\n")
    result = run_plugin("--opcontract", "bad.yaml")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(["*opcontract exited 2 without writing results:",
                                 "*bad.yaml:3:1: unknown key 'shcema' (did you mean 'schema'?)"])


def test_results_that_do_not_parse_fail_saying_so(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "garbled.yaml", op="t::garbled")
    fake_cli.answer("garbled.yaml", raw='{"version": 2, "contracts": [', exit=0)
    result = run_plugin("--opcontract", "garbled.yaml")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(["*opcontract's results (exit 0) does not parse as JSON: *"])


def test_results_of_another_format_fail_saying_so(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "other.yaml", op="t::other")
    fake_cli.answer("other.yaml", raw='{"version": 1, "contracts": []}')
    result = run_plugin("--opcontract", "other.yaml")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(["*version 1, but this opcontract reads version 2*"])


def test_a_finding_of_no_mode_fails_the_contract_item_with_the_cli_text_attached(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "schema.yaml", op="t::schema")
    fake_cli.answer("schema.yaml", [entry("schema.yaml", op="t::schema", verdict="fail", findings=[
        finding("schema", "", "registered f(Tensor x) -> Tensor, contract f(Tensor! x) -> ()")])],
        exit=1, stdout="== t::schema  ->  t::schema: FAIL (the CLI's table)\n")
    result = run_plugin("--opcontract", "schema.yaml", "-rA")
    outcomes = outcomes_of(result)
    assert outcomes["schema.yaml::t.schema[contract]"] == "FAILED"
    assert outcomes["schema.yaml::t.schema[eager]"] == "PASSED"
    result.stdout.fnmatch_lines(["*schema:", "*registered f(Tensor x) -> Tensor, contract f(Tensor! x) -> ()",
                                 "*Captured opcontract call*", "== t::schema  ->  t::schema: FAIL (the CLI's table)"])


def test_a_listed_known_finding_that_no_longer_occurs_fails_its_mode(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "fixed.yaml", op="t::fixed")
    fake_cli.answer("fixed.yaml", [entry("fixed.yaml", op="t::fixed", verdict="fail", findings=[
        finding("write", "eager", "listed under known_findings (fixed.yaml:9:5: a reason) but not found in "
                "100 cases: if the op was fixed, remove the entry")])], exit=1)
    result = run_plugin("--opcontract", "fixed.yaml", "-rA")
    assert outcomes_of(result)["fixed.yaml::t.fixed[eager]"] == "FAILED"
    result.stdout.fnmatch_lines(["*if the op was fixed, remove the entry"])


def test_a_fail_verdict_no_finding_explains_fails_the_contract_item(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "odd.yaml", op="t::odd")
    fake_cli.answer("odd.yaml", [entry("odd.yaml", op="t::odd", verdict="fail")], exit=1)
    result = run_plugin("--opcontract", "odd.yaml", "-rA")
    assert outcomes_of(result)["odd.yaml::t.odd[contract]"] == "FAILED"
    result.stdout.fnmatch_lines(["*opcontract's verdict is fail, yet every finding is known"])


def test_check_options_reach_the_cli_once_per_contract(pytester, fake_cli, run_plugin):
    for name in ("a.yaml", "b.yaml"):
        write_contract(pytester.path, name, op="t::" + name[0])
        fake_cli.answer(name, [entry(name, op="t::" + name[0])])
    run_plugin("--opcontract", "a.yaml", "b.yaml", "--opcontract-cases", "7", "--opcontract-seed", "3",
               "--opcontract-load", "libx.so", "--opcontract-load", "liby.so", "--opcontract-import", "my_ops",
               "--opcontract-no-python", "--opcontract-modes", "fake")
    calls = fake_cli.calls()
    assert [c[:2] for c in calls] == [["check", "a.yaml"], ["check", "b.yaml"]]
    for call in calls:
        json_at = call.index("--json")
        assert call[2:json_at] == ["--cases", "7", "--seed", "3", "--load", "libx.so", "--load", "liby.so",
                                   "--import", "my_ops", "--no-python", "--modes", "fake"]


@pytest.mark.parametrize("selection, items, modes", [
    ("compiled", ["compiled"], "compiled"),
    ("eager", ["eager"], "eager"),
    ("contract", ["contract"], "eager"),
    ("fake or cudagraph", ["fake", "cudagraph"], "fake,cudagraph"),
])
def test_k_selects_modes_and_the_run_asks_only_for_those(pytester, fake_cli, run_plugin, selection, items, modes):
    write_contract(pytester.path, "sel.yaml", op="t::sel")
    fake_cli.answer("sel.yaml", [entry("sel.yaml", op="t::sel")])
    result = run_plugin("--opcontract", "sel.yaml", "-k", selection, "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"sel.yaml::t.sel[[]{i}[]]" for i in items])
    run_plugin("--opcontract", "sel.yaml", "-k", selection)
    (call,) = fake_cli.calls()
    assert call[call.index("--modes") + 1] == modes


def test_k_selects_ops_and_only_their_contracts_run(pytester, fake_cli, run_plugin):
    for name, op in (("rms_norm.yaml", "_C::rms_norm"), ("silu_and_mul.yaml", "_C::silu_and_mul")):
        write_contract(pytester.path, name, op=op)
        fake_cli.answer(name, [entry(name, op=op)])
    result = run_plugin("--opcontract", ".", "-k", "rms_norm")
    result.assert_outcomes(passed=4, skipped=1)
    assert [c[1] for c in fake_cli.calls()] == ["rms_norm.yaml"]
    assert "--modes" not in fake_cli.calls()[0], "every mode selected: the contract's own modes"


def test_a_node_id_selects_an_op_or_one_mode(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "rms_norm.yaml", op="_C::rms_norm")
    fake_cli.answer("rms_norm.yaml", [entry("rms_norm.yaml", op="_C::rms_norm")])
    run_plugin("--opcontract", "rms_norm.yaml::_C.rms_norm[fake]").assert_outcomes(passed=1)
    run_plugin("--opcontract", "rms_norm.yaml::_C.rms_norm").assert_outcomes(passed=4, skipped=1)


def test_regressions_item_passes_when_each_is_caught_as_expected_and_fails_otherwise(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "reg.yaml", op="t::reg")
    fake_cli.answer("reg.yaml", [entry("reg.yaml", op="t::reg")])
    caught = entry("reg.yaml", op="t::reg", target="bug::one", verdict="fail",
                   regression={"expect": ["alias"], "upstream": "PR 1", "caught_as_expected": True},
                   findings=[finding("alias", "eager", "aliases")])
    missed = entry("reg.yaml", op="t::reg", target="bug::two",
                   regression={"expect": ["write"], "upstream": "PR 2", "caught_as_expected": False})
    fake_cli.answer("reg.yaml", [caught], exit=0, regressions=True)
    result = run_plugin("--opcontract", "reg.yaml", "--opcontract-regressions", "-rA")
    assert outcomes_of(result)["reg.yaml::t.reg[regressions]"] == "PASSED"
    assert fake_cli.calls()[-1][-3:-2] == ["--regressions"]
    fake_cli.answer("reg.yaml", [caught, missed], exit=1, regressions=True)
    result = run_plugin("--opcontract", "reg.yaml", "-k", "regressions", "--opcontract-regressions", "-rA")
    assert outcomes_of(result) == {"reg.yaml::t.reg[regressions]": "FAILED"}
    result.stdout.fnmatch_lines(["*bug::two: NOT CAUGHT (expected: write)"])
    assert "bug::one" not in result.stdout.str()


def test_regressions_none_of_which_can_be_judged_skip(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "gpu.yaml", op="t::gpu")
    fake_cli.answer("gpu.yaml", [entry("gpu.yaml", op="t::gpu", target="bug::g", regression={
        "expect": ["cudagraph"], "upstream": "", "caught_as_expected": False, "not_run": "cudagraph: no CUDA device"})],
        regressions=True)
    result = run_plugin("--opcontract", "gpu.yaml", "--opcontract-regressions", "-k", "regressions", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no regression could be judged: bug::g: cudagraph: no CUDA device"])


def test_check_warnings_become_pytest_warnings(pytester, fake_cli, run_plugin):
    write_contract(pytester.path, "warns.yaml", op="t::warns")
    fake_cli.answer("warns.yaml", [entry("warns.yaml", op="t::warns", warnings=["branch 'empty' was never reached"])])
    result = run_plugin("--opcontract", "warns.yaml")
    result.stdout.fnmatch_lines(["*OpcontractWarning: warns.yaml: branch 'empty' was never reached"])


def test_yaml_without_an_op_is_not_a_contract_unless_named(pytester, fake_cli, run_plugin):
    write_contract(pytester.path / "d", "real.yaml", op="t::real")
    write_contract(pytester.path / "d", "config.yml", op=None)
    fake_cli.answer("real.yaml", [entry("d/real.yaml", op="t::real")])
    run_plugin("--opcontract", "d").assert_outcomes(passed=4, skipped=1)
    result = run_plugin("--opcontract", "d/config.yml")
    result.assert_outcomes(failed=5)  # named on the command line: the CLI says what is wrong
    result.stdout.fnmatch_lines(["*d/config.yml::config[[]eager[]]*"])


def test_without_the_flag_nothing_is_collected_and_no_binary_is_needed(pytester, fake_cli, run_plugin, monkeypatch,
                                                                     tmp_path):
    write_contract(pytester.path, "x.yaml", op="t::x")
    env_without_opcontract(monkeypatch, tmp_path)
    result = run_plugin(".")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert fake_cli.calls() == []


def test_no_binary_anywhere_is_a_usage_error(pytester, fake_cli, run_plugin, monkeypatch, tmp_path):
    write_contract(pytester.path, "x.yaml", op="t::x")
    env_without_opcontract(monkeypatch, tmp_path)
    result = run_plugin("--opcontract", "x.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--opcontract: no opcontract binary found*--opcontract-binary PATH*"])


def test_a_given_binary_that_is_not_there_is_a_usage_error(pytester, fake_cli, run_plugin, tmp_path):
    write_contract(pytester.path, "x.yaml", op="t::x")
    result = run_plugin("--opcontract", "x.yaml", "--opcontract-binary", str(tmp_path / "nope"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--opcontract-binary: {tmp_path / 'nope'} is not an executable file"])


def test_the_binary_beside_this_python_is_the_default(pytester, fake_cli, run_plugin, monkeypatch, tmp_path):
    write_contract(pytester.path, "x.yaml", op="t::x")
    fake_cli.answer("x.yaml", [entry("x.yaml", op="t::x")])
    env_without_opcontract(monkeypatch, tmp_path)
    monkeypatch.setattr("sys.executable", str(fake_cli.path.parent / "python"))
    run_plugin("--opcontract", "x.yaml").assert_outcomes(passed=4, skipped=1)


def test_a_contract_path_that_does_not_exist_is_an_error(pytester, fake_cli, run_plugin):
    result = run_plugin("--opcontract", "contracts/nope/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*file or directory not found: contracts/nope/*"])


def test_contracts_listed_in_a_conftest_are_collected_with_its_folder(pytester, fake_cli, run_plugin):
    write_contract(pytester.path / "contracts", "listed.yaml", op="t::listed")
    write_contract(pytester.path / "contracts", "other.yaml", op="t::other")
    fake_cli.answer("listed.yaml", [entry("contracts/listed.yaml", op="t::listed")])
    suite = pytester.mkdir("suite")
    (suite / "conftest.py").write_text('opcontract_contracts = ["../contracts/listed.yaml"]\n')
    result = run_plugin("--opcontract", "suite", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["contracts/listed.yaml::t.listed[[]contract[]]", "*5 tests collected*"])
    run_plugin("--opcontract", "suite").assert_outcomes(passed=4, skipped=1)
    assert run_plugin("suite").ret == pytest.ExitCode.NO_TESTS_COLLECTED  # inert without --opcontract


def test_a_conftest_listing_a_missing_contract_is_a_collection_error(pytester, fake_cli, run_plugin):
    suite = pytester.mkdir("suite")
    (suite / "conftest.py").write_text('opcontract_contracts = ["../contracts/gone.yaml"]\n')
    result = run_plugin("--opcontract", "suite")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*suite/conftest.py: opcontract_contracts lists */contracts/gone.yaml, "
                                 "which does not exist"])


def test_a_conftest_listing_something_else_is_a_collection_error(pytester, fake_cli, run_plugin):
    suite = pytester.mkdir("suite")
    (suite / "conftest.py").write_text('opcontract_contracts = "../contracts"\n')
    result = run_plugin("--opcontract", "suite")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*suite/conftest.py: opcontract_contracts must be a list of paths, not '../contracts'"])


def test_contracts_listed_in_the_ini_file_are_collected_with_its_folder(pytester, fake_cli, run_plugin):
    write_contract(pytester.path / "contracts", "ini.yaml", op="t::ini")
    fake_cli.answer("ini.yaml", [entry("contracts/ini.yaml", op="t::ini")])
    pytester.makeini("[pytest]\nopcontract_contracts = contracts\n")
    pytester.mkdir("elsewhere")
    result = run_plugin("--opcontract", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["contracts/ini.yaml::t.ini[[]contract[]]", "*5/10 tests collected (5 deselected)*"])
    assert result.stdout.str().count("contracts/ini.yaml::t.ini[contract]") == 1, "listed and found: once"
    pytester.makeini("[pytest]\nopcontract_contracts = contracts\nnorecursedirs = contracts\n")
    result = run_plugin("--opcontract", "-rA")  # found through the list alone
    result.assert_outcomes(passed=4, skipped=1)


def test_a_finding_of_a_deselected_mode_does_not_fail_the_selected_items(pytester, fake_cli, run_plugin):
    # As the CLI reports a listed known compiled finding "not found" when --modes leaves
    # the compiled mode out: that finding belongs to the deselected compiled item.
    write_contract(pytester.path, "weak.yaml", op="t::weak")
    fake_cli.answer("weak.yaml", [entry("weak.yaml", op="t::weak", verdict="fail", findings=[
        finding("compiled", "compiled", "listed under known_findings (...) but not found in 100 cases")])], exit=1)
    result = run_plugin("--opcontract", "weak.yaml", "-k", "eager or contract]", "-rA")
    assert outcomes_of(result) == {"weak.yaml::t.weak[eager]": "PASSED", "weak.yaml::t.weak[contract]": "PASSED"}
    (call,) = fake_cli.calls()
    assert call[call.index("--modes") + 1] == "eager"

"""What one ``opcontract check --json`` entry means for each pytest item of its contract.

The pytest plugin runs the CLI and maps its JSON (docs/format.md, "Results") onto
items, one per contract and mode plus one for the contract as a whole. This module is that
mapping, with no pytest in it:

- ``mode_outcome(entry, mode)``: the mode's findings decide first: one not marked ``known``
  fails the item (its text: clause, mode, message, minimal case, replay command); only
  known ones make it an xfail with their reasons. Without findings, the mode's status
  decides: ``pass`` passes, ``not_run`` skips with the reason, ``fail`` fails.
- ``contract_outcome(entry)``: the same for the findings of no mode (``schema``,
  ``branches``, a listed known finding of no mode that was not found), plus a guard: if
  opcontract's verdict is ``fail`` and no finding of any mode accounts for it, this item
  fails, so pytest never passes what the CLI fails.
- ``regressions_outcome(entries)``: the ``--regressions`` entries of one contract: passes
  when each is caught by exactly the clauses it expects, skips when none could be judged.
- A contract whose check errored fails every item with the error text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

# The modes in the order opcontract's text table lists them.
MODES: tuple[str, ...] = ("fake", "eager", "compiled", "cudagraph")
# The results format this module reads (docs/format.md, "Results").
VERSION = 2

Entry = dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    kind: Literal["pass", "fail", "xfail", "skip"]
    text: str = ""


class ResultsError(Exception):
    """The CLI's JSON is missing, unreadable or not what docs/format.md describes."""


def parse_results(text: str, where: str) -> list[Entry]:
    """The ``contracts`` entries of a ``check --json`` file's text; ResultsError if malformed.

    Holds each entry to docs/format.md's "Results" (version 2): the fields it marks "always",
    with their types, and each finding's identity (clause, mode) and replay command.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{where} does not parse as JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("contracts"), list):
        raise ResultsError(f"{where} is not opcontract's results format (an object with a 'contracts' list)")
    if doc.get("version") != VERSION:
        raise ResultsError(f"{where}: version {doc.get('version')!r}, but this opcontract reads version {VERSION}")
    for i, entry in enumerate(doc["contracts"]):
        _check_entry(entry, f"{where}: contracts[{i}]")
    return doc["contracts"]


def _need(obj: Any, key: str, kind: type | tuple[type, ...], at: str) -> Any:
    if not isinstance(obj, dict) or not isinstance(obj.get(key), kind) or isinstance(obj.get(key), bool) != (kind is bool):
        raise ResultsError(f"{at}: no '{key}' of the documented type")
    return obj[key]


def _check_entry(entry: Any, at: str) -> None:
    for key in ("file", "op", "target"):
        _need(entry, key, str, at)
    if _need(entry, "verdict", str, at) not in ("pass", "fail", "error"):
        raise ResultsError(f"{at}: verdict {entry['verdict']!r} is none of pass, fail, error")
    if entry["verdict"] == "error":
        _need(entry, "errors", list, at)
    modes = _need(entry, "modes", dict, at)
    for mode in MODES:
        m = _need(modes, mode, dict, f"{at}.modes")
        if _need(m, "status", str, f"{at}.modes.{mode}") not in ("pass", "fail", "not_run"):
            raise ResultsError(f"{at}.modes.{mode}: status {m['status']!r} is none of pass, fail, not_run")
        _need(m, "clauses", list, f"{at}.modes.{mode}")
    for i, f in enumerate(_need(entry, "findings", list, at)):
        here = f"{at}.findings[{i}]"
        _need(f, "clause", str, here)
        if not isinstance(f, dict) or "mode" not in f or not (f["mode"] is None or f["mode"] in MODES):
            raise ResultsError(f"{here}: mode is neither null nor one of {', '.join(MODES)}")
        for key in ("message", "replay"):
            _need(f, key, str, here)


def describe_finding(f: Entry) -> str:
    """A finding as the CLI's text report gives it: clause (mode), message, case, replay."""
    mode = f.get("mode") or ""
    head = f"{'known: ' if f.get('known') else ''}{f.get('clause', '?')}" + (f" ({mode})" if mode else "")
    if f.get("mistake"):  # a misuse finding: the caller's mistake the op accepted
        head += f" {f['mistake'].get('arg', '?')} {f['mistake'].get('kind', '?')}"
    if f.get("from_file"):
        head += f", replaying the corpus case {f['from_file']}"
    elif "case" in f:
        head += f", first in case {f.get('cases_tried', '?')}, shrunk in {f.get('shrink_steps', '?')} steps"
    lines = [head + ":"]
    lines += ["    " + line for line in str(f.get("message", "")).splitlines() or [""]]
    if "case" in f:
        lines.append("    minimal case: " + json.dumps(f["case"], separators=(", ", ": ")))
    if f.get("known"):
        lines.append("    known because: " + str(f["known"]))
    if f.get("replay"):
        lines.append("    replay: " + str(f["replay"]))
    return "\n".join(lines)


def _checked(entry: Entry) -> str:
    """The closing line of a failure's text: what was checked, how."""
    checked = f" ({entry['checked']})" if entry.get("checked") else ""
    return (f"checked: {entry.get('file', '?')}, {entry.get('op', '?')} as {entry.get('target', '?')}{checked}, "
            f"{entry.get('cases', '?')} cases, seed {entry.get('seed', '?')}")


def _errors(entry: Entry) -> str:
    return "; ".join(entry.get("errors") or []) or "the check errored"


def _error_outcome(entry: Entry) -> Outcome:
    return Outcome("fail", f"opcontract error: {_errors(entry)}\n{_checked(entry)}")


def _findings_outcome(entry: Entry, findings: list[Entry]) -> Outcome | None:
    """fail if any finding is not known, xfail if all are known, None if there are none."""
    if not findings:
        return None
    new = [f for f in findings if not f.get("known")]
    if new:
        known = len(findings) - len(new)
        text = "\n".join(describe_finding(f) for f in new)
        if known:
            text += f"\n(and {known} known finding{'s' if known > 1 else ''})"
        return Outcome("fail", f"{text}\n{_checked(entry)}")
    reasons = "; ".join(f"{f.get('clause', '?')}" + (f" ({f['mode']})" if f.get("mode") else "") + f": {f['known']}"
                        for f in findings)
    return Outcome("xfail", "known: " + reasons)


def mode_outcome(entry: Entry, mode: str) -> Outcome:
    """The outcome of ``mode``'s item."""
    if entry.get("verdict") == "error":
        return _error_outcome(entry)
    decided = _findings_outcome(entry, [f for f in entry.get("findings", []) if f.get("mode") == mode])
    if decided:
        return decided
    status = entry.get("modes", {}).get(mode, {})
    if not status:
        return Outcome("fail", f"opcontract's results have no '{mode}' mode\n{_checked(entry)}")
    if status.get("status") == "pass":
        return Outcome("pass")
    if status.get("status") == "not_run":
        return Outcome("skip", f"{mode} not run: {status.get('reason') or 'no reason given'}")
    return Outcome("fail", f"the {mode} mode's status is {status.get('status')!r} without a finding\n{_checked(entry)}")


def contract_outcome(entry: Entry) -> Outcome:
    """The outcome of the contract-level item: findings of no mode, and the verdict's guard."""
    if entry.get("verdict") == "error":
        return _error_outcome(entry)
    findings = entry.get("findings", [])
    decided = _findings_outcome(entry, [f for f in findings if f.get("mode") not in MODES])
    if decided:
        return decided
    verdict = entry.get("verdict")
    if verdict == "fail" and all(f.get("known") for f in findings):
        return Outcome("fail", f"opcontract's verdict is fail, yet every finding is known\n{_checked(entry)}")
    if verdict not in ("pass", "fail"):
        return Outcome("fail", f"opcontract's verdict is {verdict!r}\n{_checked(entry)}")
    return Outcome("pass")


def regressions_outcome(entries: list[Entry]) -> Outcome:
    """The outcome of a contract's ``--regressions`` entries, one per listed regression."""
    if not entries:
        return Outcome("skip", "the contract lists no regressions")
    failed, not_run = [], []
    for e in entries:
        reg = e.get("regression") or {}
        target = e.get("target", "?")
        if e.get("verdict") == "error":
            failed.append(f"{target}: opcontract error: {_errors(e)}")
        elif reg.get("not_run"):
            not_run.append(f"{target}: {reg['not_run']}")
        elif not reg.get("caught_as_expected"):
            found = sorted({f.get("clause", "?") for f in e.get("findings", [])})
            expect = ", ".join(reg.get("expect", []))
            head = (f"{target}: NOT CAUGHT (expected: {expect})" if not found else
                    f"{target}: caught by {', '.join(found)}, but expected exactly {expect}")
            failed.append("\n".join([head] + [describe_finding(f) for f in e.get("findings", [])]))
    if failed:
        return Outcome("fail", "\n".join(failed))
    if len(not_run) == len(entries):
        return Outcome("skip", "no regression could be judged: " + "; ".join(not_run))
    return Outcome("pass")

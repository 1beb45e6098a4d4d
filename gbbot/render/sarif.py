"""Report → SARIF 2.1.0 for `github/codeql-action/upload-sarif`. Pure.

One rule per GB id (breaks without an id get a rule named after their gb_type), with the break's
documentation as the help link. Code scanning tracks an alert across commits by
`partialFingerprints`: gbbot's own fingerprint is stable across unrelated edits (no line numbers),
so it is the one given. Code scanning needs a location on every result, so a break without a safe
repo-relative path is counted in the run's properties instead.

Recompilations come after the breaks: one rule per guard kind (`recompile/int_argument`) and one
for the recompile limit (`recompile/limit`), one result per problem — what `gbbot diff` compares —
at the frame's line, fingerprinted by the problem's own fingerprint. Automatic dynamic shapes at
work has nothing to fix and gives no result (see render/recompile_findings.py).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from gbbot.analysis import recompile
from gbbot.analysis.policy import DEFAULT, Policy
from gbbot.core import counts
from gbbot.core.doc_links import graph_break_doc
from gbbot.core.model import GraphBreak, Report
from gbbot.render.findings import Finding, Level, findings
from gbbot.render.recompile_findings import Problem, RecompileFinding, kind_words, message, recompile_findings

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/gbbot/gbbot"
FINGERPRINT_KEY = "gbbotFingerprint/v1"
SARIF_LEVEL = {Level.NOTICE: "note", Level.WARNING: "warning", Level.FAILURE: "error"}
NOT_A_WORD = re.compile(r"[^a-z0-9]+")
LIBRARY_BASE = "PYTHON_SITE_PACKAGES"  # where installed packages (and torch) live


def rule_id(brk: GraphBreak) -> str:
    if brk.gb_id:
        return brk.gb_id
    slug = NOT_A_WORD.sub("-", brk.gb_type.lower()).strip("-")[:64] or "unknown"
    return f"gb-type/{slug}"


def rule(brk: GraphBreak) -> dict[str, Any]:
    gb_type = " ".join(brk.gb_type.split())
    help_lines = [brk.explanation, *(f"Hint: {h}" for h in brk.hints)]
    described: dict[str, Any] = {
        "id": rule_id(brk),
        "name": rule_id(brk).replace("/", "-"),
        "shortDescription": {"text": f"torch.compile graph break: {gb_type}"},
        "fullDescription": {"text": brk.explanation or gb_type},
        "help": {"text": "\n".join(line for line in help_lines if line) or gb_type},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["torch.compile", "graph-break", brk.category.value]},
    }
    if graph_break_doc(brk.gb_id):
        described["helpUri"] = graph_break_doc(brk.gb_id)
    return described


def result(finding: Finding, rule_index: int) -> dict[str, Any]:
    brk = finding.brk
    region: dict[str, Any] = {"startLine": finding.line}
    if brk.code:
        region["snippet"] = {"text": brk.code}
    return {
        "ruleId": rule_id(brk),
        "ruleIndex": rule_index,
        "level": SARIF_LEVEL[finding.level],
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": quote(finding.path or "", safe="/")},
                    "region": region,
                }
            }
        ],
        **_related(brk),
        "partialFingerprints": {FINGERPRINT_KEY: brk.fingerprint},
        "properties": {
            "state": finding.state.value,
            "category": brk.category.value,
            "entrypoints": list(finding.entrypoints),
            "count": finding.total,
            "frameSkipped": finding.frame_eager,
            "fullgraphFailure": brk.fullgraph_failure,
        },
    }


def _related(brk: GraphBreak) -> dict[str, Any]:
    """The library site of a break reported at the repository line that called into it: outside
    the repository, so relative to the install root (`uriBaseId`), not to the checkout."""
    site = brk.library_site
    if site is None:
        return {}
    region: dict[str, Any] = {"startLine": max(site.line, 1)}
    if site.code:
        region["snippet"] = {"text": site.code}
    location = {
        "id": 1,
        "message": {"text": f"inside {site.package}" + (f", in {site.function}" if site.function else "")},
        "physicalLocation": {
            "artifactLocation": {"uri": quote(site.path, safe="/"), "uriBaseId": LIBRARY_BASE},
            "region": region,
        },
    }
    return {"relatedLocations": [location]}


def recompile_rule_id(problem: Problem) -> str:
    return f"recompile/{problem.kind}"


def recompile_rule(problem: Problem, doc_url: str) -> dict[str, Any]:
    if problem.reason is None:
        rules = recompile.load_rules()
        what, cause, advice = "hit the recompile limit", rules.limit_cause, rules.limit_advice
    else:
        what, cause, advice = f"{kind_words(problem.kind)} guard", problem.reason.cause, problem.reason.advice
    described: dict[str, Any] = {
        "id": recompile_rule_id(problem),
        "name": recompile_rule_id(problem).replace("/", "-"),
        "shortDescription": {"text": f"torch.compile recompilation: {what}"},
        "fullDescription": {"text": cause},
        "help": {"text": f"{cause}\nHint: {advice}"},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["torch.compile", "recompilation"]},
    }
    if doc_url.startswith("https://"):
        described["helpUri"] = doc_url
    return described


def recompile_result(finding: RecompileFinding, problem: Problem, rule_index: int) -> dict[str, Any]:
    rc = finding.rc
    return {
        "ruleId": recompile_rule_id(problem),
        "ruleIndex": rule_index,
        "level": SARIF_LEVEL[problem.level],
        "message": {"text": message(finding, (problem,))},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": quote(finding.path or "", safe="/")},
                    "region": {"startLine": finding.line},
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: problem.fingerprint},
        "properties": {
            "state": problem.state.value,
            "entrypoints": list(finding.entrypoints),
            "compilations": rc.compilations,
            "count": problem.reason.count if problem.reason else rc.compilations,
            "limitHit": rc.limit_hit,
        },
    }


def _recompile_results(
    report: Report, policy: Policy, described: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """Results after the breaks' (their rules appended to `described`), and how many frames had
    no safe path to put them at."""
    found = recompile_findings(report, policy)
    rules: dict[str, int] = {}
    results = []
    for finding in (f for f in found if f.path is not None):
        for problem in finding.problems:
            if recompile_rule_id(problem) not in rules:
                rules[recompile_rule_id(problem)] = len(described)
                described.append(recompile_rule(problem, recompile.load_rules().doc_url))
            results.append(recompile_result(finding, problem, rules[recompile_rule_id(problem)]))
    return results, sum(1 for f in found if f.path is None)


def sarif(report: Report, policy: Policy = DEFAULT) -> dict[str, Any]:
    """Levels from the policy: what it counts is an error."""
    found = findings(report, policy)
    located = [f for f in found if f.path is not None]
    rules: dict[str, int] = {}
    described: list[dict[str, Any]] = []
    for finding in located:
        if rule_id(finding.brk) not in rules:
            rules[rule_id(finding.brk)] = len(described)
            described.append(rule(finding.brk))
    recompiled, unlocated_recompiles = _recompile_results(report, policy, described)
    driver = {"name": "gbbot", "informationUri": INFORMATION_URI, "rules": described}
    if report.tool.version:
        driver["version"] = report.tool.version
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "results": [*(result(f, rules[rule_id(f.brk)]) for f in located), *recompiled],
        "properties": {
            "torchVersion": report.torch_version,
            "mode": report.mode.value if report.mode else None,
            "commit": report.commit,
            "unlocatedBreaks": len(found) - len(located),
            # An entrypoint that did not run cleanly or compiled nothing: its breaks are unknown,
            # so an empty result list is no all-clear.
            "entrypointsNotClean": list(counts.counts(report).not_clean),
            **({"unlocatedRecompiles": unlocated_recompiles} if unlocated_recompiles else {}),
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(report: Report, policy: Policy = DEFAULT) -> str:
    return json.dumps(sarif(report, policy), indent=2, ensure_ascii=False) + "\n"

"""The check run on the PR's head commit: conclusion from the policy's verdict, the report as its summary,
an annotation at each break's file and line, then one at each frame with a recompilation problem.

GitHub takes at most 50 annotations per request and appends those of each update to the run, so
the first 50 go with the create and the rest in follow-up updates of 50.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gbbot.analysis.policy import Policy
from gbbot.core import counts, limits, words
from gbbot.core.model import Report
from gbbot.publish import retry
from gbbot.publish.content import Texts, fitted
from gbbot.render.annotations import changed_findings, every_finding
from gbbot.render.findings import FailureFinding, Finding
from gbbot.render.markdown import Options
from gbbot.render.recompile_findings import RecompileFinding


@dataclass(frozen=True)
class CheckRunPosted:
    id: int
    url: str
    conclusion: str
    annotations: int
    requests: int  # create + updates that carried annotations


def title(report: Report) -> str:
    return words.check_run_title(counts.counts(report), report.diff is not None)


def annotation(finding: FailureFinding | Finding | RecompileFinding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "start_line": finding.line,
        "end_line": finding.line,
        "annotation_level": finding.level.value,
        "title": finding.title[: limits.ANNOTATION_TITLE_MAX],
        "message": limits.fit(finding.message, limits.ANNOTATION_MESSAGE_MAX),
    }


def annotations(report: Report, policy: Policy, every: bool = False) -> list[dict[str, Any]]:
    """What the PR changed (render/annotations.py's `changed_findings`), or with `every` every
    failure, break and recompilation problem; the others are in the check run's text."""
    found = every_finding(report, policy) if every else changed_findings(report, policy)
    return [annotation(f) for f in found if f.path is not None]


def batches(items: Sequence[dict[str, Any]], size: int = limits.ANNOTATIONS_PER_REQUEST) -> list[list[dict[str, Any]]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)] or [[]]


@dataclass(frozen=True)
class CheckRunRequest:
    """Everything the check run says, computed before any request."""

    name: str
    head_sha: str
    external_id: str  # unique per workflow run attempt: how a retry finds a create that went through
    conclusion: str
    title: str
    summary: str
    batches: list[list[dict[str, Any]]]
    details_url: str | None = None


def capped(notes: list[dict[str, Any]], content: Options) -> tuple[list[dict[str, Any]], Options]:
    """At most CHECK_RUN_ANNOTATIONS_MAX annotations (each 50 is a request); the summary counts the rest."""
    sent = notes[: limits.CHECK_RUN_ANNOTATIONS_MAX]
    more = len(notes) - len(sent)
    if not more:
        return sent, content
    findings_ = f"{words.plural(more, 'more finding')} {'are' if more != 1 else 'is'}"
    where = "the report artifact" if content.pointer else "the report"  # an artifact only if one was uploaded
    note = f"_{findings_} in {where} (annotated here: the first {len(sent)})._"
    return sent, content.noted(note)


def request(
    texts: Texts,
    policy: Policy,
    content: Options,
    name: str,
    head_sha: str,
    external_id: str,
    details_url: str | None = None,
    annotate_all: bool = False,
) -> CheckRunRequest:
    """The conclusion is the policy's verdict; the annotations are what the PR changed, or every
    finding with `annotate_all`."""
    report = texts.report
    notes, content = capped(annotations(report, policy, annotate_all), content)
    return CheckRunRequest(
        name=name,
        head_sha=head_sha,
        external_id=external_id,
        conclusion=policy.verdict(report).conclusion,
        title=title(report)[: limits.CHECK_RUN_TITLE_MAX],
        summary=fitted(texts, content, limits.CHECK_RUN_TEXT_MAX),
        batches=batches(notes),
        details_url=details_url,
    )


def _existing(repo: Any, wanted: CheckRunRequest) -> Any | None:
    runs = repo.get_commit(wanted.head_sha).get_check_runs(check_name=wanted.name)
    return next((r for r in runs if r.external_id == wanted.external_id), None)


def _create(repo: Any, wanted: CheckRunRequest) -> Any:
    extra = {"details_url": wanted.details_url} if wanted.details_url else {}
    return repo.create_check_run(
        name=wanted.name,
        head_sha=wanted.head_sha,
        external_id=wanted.external_id,
        status="completed",
        conclusion=wanted.conclusion,
        output={"title": wanted.title, "summary": wanted.summary, "annotations": wanted.batches[0]},
        **extra,
    )


def _append(
    run: Any,
    wanted: CheckRunRequest,
    batch: list[dict[str, Any]],
    before: int,
    retries: retry.Retries,
    log: retry.Log,
) -> None:
    """One follow-up update; a retry first counts the run's annotations, so a batch that went
    through is not appended twice."""
    output = {"title": wanted.title, "summary": wanted.summary, "annotations": batch}
    retry.write(
        lambda: run.edit(output=output) or True,
        lambda: True if sum(1 for _ in run.get_annotations()) >= before + len(batch) else None,
        f"check run annotations {before + 1}-{before + len(batch)}",
        retries,
        log,
    )


def publish(repo: Any, wanted: CheckRunRequest, retries: retry.Retries, log: retry.Log) -> CheckRunPosted:
    run = retry.write(lambda: _create(repo, wanted), lambda: _existing(repo, wanted), "check run", retries, log)
    sent = len(wanted.batches[0])
    for batch in wanted.batches[1:]:
        _append(run, wanted, batch, sent, retries, log)
        sent += len(batch)
    return CheckRunPosted(run.id, run.html_url, wanted.conclusion, sent, len(wanted.batches))

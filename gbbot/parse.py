"""Graph-break messages → RawBreak records; a trace or log path → TraceLog.

Message format (torch 2.13):

    Graph break in user code at FILE:LINE
    Graph Break Reason: <gb_type, or a header ending in ':' followed by the gb_type>
      Explanation: …
      Hint: …
      Developer debug context: …
     For more details about this graph break, please visit: …/gb/gbNNNN.html
    *** While handling this graph break, another graph break occurred: ***   (optional chain)
    User code traceback:
      File "…", line N, in fn
        source line
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from gbbot import trace
from gbbot.model import BreakMessage, Frame, FrameMetrics, RawBreak, TraceLog

CHAIN_SEPARATOR = "*** While handling this graph break, another graph break occurred: ***"
EAGER_FALLBACK_MARKER = "Skipping the function and falling back to eager"
TestAt = Callable[[int], str | None]  # a trace file's line number → the test that wrote it
GB_URL_RE = re.compile(r"https?://\S+/gb/(gb\d+)\.html", re.IGNORECASE)
URL_RE = re.compile(r"https?://\S+")
LOCATION_RE = re.compile(r"^Graph break.* at (?P<file>.+):(?P<line>\d+)\s*$")
FRAME_RE = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<fn>.+)$')
RESUME_RE = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_\d+$")
SECTION_ENDS = ("Stack variable source attribution:", "User code traceback:")
FIELD_RE = re.compile(r"^\s*(Explanation|Hint|Developer debug context):\s?(?P<text>.*)$")


def original_function(name: str) -> str:
    """`torch_dynamo_resume_in_forward_at_12` is Dynamo's resume function for `forward`."""
    match = RESUME_RE.match(name)
    return match["fn"] if match else name


def _link(section: list[str]) -> BreakMessage | None:
    """One link of a (possibly chained) message → BreakMessage."""
    start = next((i for i, line in enumerate(section) if line.strip()), None)
    if start is None:
        return None
    gb_type = section[start].strip()
    explanation: list[str] = []
    hints: list[str] = []
    current: list[str] | None = None  # a field that continues on the next lines
    doc_url = None
    for line in section[start + 1 :]:
        if not line.strip():
            current = None  # a paragraph ends a field: what follows is debug detail
            continue
        if "please visit:" in line or GB_URL_RE.search(line):
            found = URL_RE.search(line)
            doc_url = found.group(0) if found else doc_url
            current = None
            continue
        field = FIELD_RE.match(line)
        if field:
            kind, text = field.group(1), field["text"].strip()
            if kind == "Explanation":
                explanation.append(text)
                current = explanation
            elif kind == "Hint":
                hints.append(text)
                current = None
            else:
                current = None
        elif current is not None:
            current.append(line.strip())
    gb_id_match = GB_URL_RE.search(doc_url or "")
    return BreakMessage(
        gb_type=gb_type,
        gb_id=gb_id_match.group(1).upper() if gb_id_match else None,
        explanation=" ".join(t for t in explanation if t).strip(),
        hints=tuple(hints),
        doc_url=doc_url,
    )


def _user_stack(lines: list[str]) -> tuple[Frame, ...]:
    frames: list[Frame] = []
    for i, line in enumerate(lines):
        if not line.strip():
            if frames:
                break
            continue
        match = FRAME_RE.match(line)
        if match is None:
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        code = "" if FRAME_RE.match(following) or not following.startswith("    ") else following.strip()
        function = original_function(match["fn"].strip())
        frames.append(Frame(match["file"], int(match["line"]), function, code))
    return tuple(frames)


def _reason_sections(head: list[str]) -> tuple[list[list[str]], bool]:
    """Split the text between 'Graph Break Reason:' and the traceback into chain links."""
    eager = any(EAGER_FALLBACK_MARKER in line for line in head)
    body: list[str] = []
    for line in head:
        if line.startswith("Graph Break Reason:"):
            inline = line[len("Graph Break Reason:") :].strip()
            if inline and not inline.endswith(":"):
                body.append(inline)  # the gb_type itself, e.g. "Data-dependent branching"
            continue
        if line.startswith("Graph break"):
            continue
        body.append(line)
    sections: list[list[str]] = [[]]
    for line in body:
        if line.strip() == CHAIN_SEPARATOR:
            sections.append([])
        else:
            sections[-1].append(line)
    return sections, eager


def parse_break_message(text: str) -> RawBreak | None:
    """Pure: one graph-break message → RawBreak, or None when it is not one."""
    if not text.startswith("Graph break") and "Graph Break Reason:" not in text and not GB_URL_RE.search(text):
        return None
    lines = text.split("\n")
    location = None
    if lines and (match := LOCATION_RE.match(lines[0])):
        location = Frame(match["file"], int(match["line"]), "")
    cut = next((i for i, line in enumerate(lines) if line.startswith(SECTION_ENDS)), len(lines))
    stack_start = next((i for i, line in enumerate(lines) if line.startswith("User code traceback:")), None)
    stack = _user_stack(lines[stack_start + 1 :]) if stack_start is not None else ()
    sections, eager = _reason_sections(lines[:cut])
    links = [link for link in (_link(s) for s in sections) if link is not None]
    if not links:
        return None
    if not stack and location is not None:
        stack = (location,)
    return RawBreak(
        root=links[0],
        consequences=tuple(links[1:]),
        stack=stack,
        frame_skipped=eager,
        location=location,
    )


def _metrics(envelope: dict) -> FrameMetrics:
    data = envelope.get("compilation_metrics") or {}
    return FrameMetrics(
        co_name=str(data.get("co_name") or ""),
        co_filename=str(data.get("co_filename") or ""),
        graph_op_count=data.get("graph_op_count"),
        fail_type=data.get("fail_type"),
        fail_reason=data.get("fail_reason"),
    )


def read_trace_lines(lines: Iterable[str], source: str = "trace", test_at: TestAt | None = None) -> TraceLog:
    """Pure over lines: a TORCH_TRACE file's text → TraceLog. Damaged records are kept when
    their text still parses; every damaged or unusable record is named in `problems`. `test_at`
    names the test that wrote the record starting at a line number (gbbot/attribution.py)."""
    breaks: list[RawBreak] = []
    metrics: list[FrameMetrics] = []
    problems: list[str] = []
    version = None
    for item in trace.iter_trace_records(lines, source):
        if isinstance(item, trace.TraceProblem):
            problems.append(item.message)
        elif item.kind == "metrics":
            metrics.append(_metrics(item.envelope))
        elif item.kind == "torch_version":
            version = _torch_version(item.payload) or version
        else:
            raw = parse_break_message(item.payload or "")
            if raw is None:
                problems.append(f"{source}:{item.lineno}: graph break record without a reason, skipped")
            else:
                breaks.append(replace(raw, test=test_at(item.lineno)) if test_at else raw)
    return TraceLog(tuple(breaks), tuple(metrics), version, tuple(problems))


def _torch_version(payload: str | None) -> str | None:
    match = re.search(r'"pytorch_version":\s*"([^"]+)"', payload or "")
    return match.group(1) if match else None


def read_log_lines(lines: Iterable[str]) -> TraceLog:
    """Pure over lines: saved TORCH_LOGS=graph_breaks text → TraceLog (no frame metrics)."""
    breaks: list[RawBreak] = []
    problems: list[str] = []
    for n, message in enumerate(trace.iter_log_breaks(lines), 1):
        raw = parse_break_message(message)
        if raw is None:
            problems.append(f"graph break message {n} has no reason, skipped")
        else:
            breaks.append(raw)
    return TraceLog(tuple(breaks), (), None, tuple(problems))


def merge_logs(logs: Iterable[TraceLog]) -> TraceLog:
    logs = list(logs)
    return TraceLog(
        breaks=tuple(b for log in logs for b in log.breaks),
        metrics=tuple(m for log in logs for m in log.metrics),
        torch_version=next((log.torch_version for log in logs if log.torch_version), None),
        problems=tuple(p for log in logs for p in log.problems),
    )


def read_path(path: Path, tests: Callable[[Path], TestAt | None] = lambda _file: None) -> TraceLog:
    """A TORCH_TRACE directory or file, or a saved TORCH_LOGS text file → TraceLog. `tests` gives
    a trace file's line → test mapping, when a pytest run recorded one."""
    files = trace.trace_files(path)
    if not files and path.is_dir():
        return TraceLog((), (), None, (f"{path}: no trace files (*.log) found",))
    logs = []
    for file in files:
        if trace.looks_like_trace(file):
            logs.append(read_trace_lines(trace.open_lines(file), file.name, tests(file)))
        else:
            logs.append(read_log_lines(trace.open_lines(file)))
    return merge_logs(logs)

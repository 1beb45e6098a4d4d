"""Graph-break messages → RawBreak records; a trace or log path → TraceLog.

Message format (torch 2.13; the markers come from gbbot/trace/wording.py, per torch release):

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

from gbbot.core.model import BreakMessage, DynamicSymbol, Frame, FrameMetrics, FrameStart, RawBreak, TraceLog
from gbbot.trace import logfiles, wording
from gbbot.trace.wording import FORMAT

TestAt = Callable[[int], str | None]  # a trace file's line number → the test that wrote it
URL_RE = re.compile(r"https?://\S+")
LOCATION_RE = re.compile(r"^Graph break.* at (?P<file>.+):(?P<line>\d+)\s*$")
FRAME_RE = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<fn>.+)$')
RESUME_RE = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")
# One trace per rank under torchrun: dedicated_log_torch_trace_rank_1_abc.log
RANK_FILE_RE = re.compile(r"_rank_(?P<rank>\d+)_")
FIELD_RE = re.compile(r"^\s*(Explanation|Hint|Developer debug context):\s?(?P<text>.*)$")


def original_function(name: str) -> str:
    """`torch_dynamo_resume_in_forward_at_12` is Dynamo's resume function for `forward`."""
    match = RESUME_RE.match(name)
    return match["fn"] if match else name


def resumed_at(name: str) -> int | None:
    """The line of the break a resume function resumes after: 12 for `…_forward_at_12`."""
    match = RESUME_RE.match(name)
    return int(match["line"]) if match else None


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
        if FORMAT.doc_link_marker in line or FORMAT.doc_url_re.search(line):
            found = URL_RE.search(line)
            doc_url = found.group(0) if found else doc_url
            current = None
            continue
        field = FIELD_RE.match(line)
        if field:
            kind, text = field.group(1), field["text"].strip()
            if kind == "Explanation":
                explanation.append(text)
            elif kind == "Hint":
                hints.append(text)
            current = explanation if kind == "Explanation" else None  # only an explanation goes on
        elif current is not None:
            current.append(line.strip())
    gb_id_match = FORMAT.doc_url_re.search(doc_url or "")
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
    """Split the text between the reason header and the traceback into chain links."""
    eager = any(FORMAT.eager_fallback_marker in line for line in head)
    body: list[str] = []
    for line in head:
        if line.startswith(FORMAT.reason_header):
            inline = line[len(FORMAT.reason_header) :].strip()
            if inline and not inline.endswith(":"):
                body.append(inline)  # the gb_type itself, e.g. "Data-dependent branching"
            continue
        if line.startswith("Graph break"):
            continue
        body.append(line)
    sections: list[list[str]] = [[]]
    for line in body:
        if line.strip() == FORMAT.chain_separator:
            sections.append([])
        else:
            sections[-1].append(line)
    return sections, eager


def parse_break_message(text: str, rank: int | None = None) -> RawBreak | None:
    """Pure: one graph-break message → RawBreak, or None when it is not one."""
    if not text.startswith("Graph break") and FORMAT.reason_header not in text and not FORMAT.doc_url_re.search(text):
        return None
    lines = text.split("\n")
    location = None
    if lines and (match := LOCATION_RE.match(lines[0])):
        location = Frame(match["file"], int(match["line"]), "")
    cut = next((i for i, line in enumerate(lines) if line.startswith(FORMAT.section_ends)), len(lines))
    stack_start = next((i for i, line in enumerate(lines) if line.startswith(FORMAT.traceback_header)), None)
    stack = _user_stack(lines[stack_start + 1 :]) if stack_start is not None else ()
    sections, eager = _reason_sections(lines[:cut])
    unresumable = any(FORMAT.unresumable_marker in line for line in lines[:cut])
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
        rank=rank,
        ends_frame=eager or unresumable,
    )


def _metrics(envelope: dict, log: str) -> FrameMetrics:
    data = envelope.get("compilation_metrics") or {}
    return FrameMetrics(
        co_name=str(data.get("co_name") or ""),
        co_filename=str(data.get("co_filename") or ""),
        graph_op_count=data.get("graph_op_count"),
        fail_type=data.get("fail_type"),
        fail_reason=data.get("fail_reason"),
        **_compile_of(envelope),
        co_firstlineno=_int(data.get("co_firstlineno")),
        recompile_reason=data.get("recompile_reason") if isinstance(data.get("recompile_reason"), str) else None,
        fail_file=data.get("fail_user_frame_filename") or None,
        fail_line=data.get("fail_user_frame_lineno") if isinstance(data.get("fail_user_frame_lineno"), int) else None,
        log=log,
        compile_time_s=_seconds(data.get("entire_frame_compile_time_s")),
    )


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _start(envelope: dict, strings: dict[int, str], log: str) -> FrameStart | None:
    """A dynamo_start record → FrameStart; its frames name files by `str` record ids."""
    frame_id, index = _int(envelope.get("frame_id")), _int(envelope.get("frame_compile_id"))
    stack = (envelope.get("dynamo_start") or {}).get("stack")
    if frame_id is None or index is None or not isinstance(stack, list):
        return None
    frames = tuple(
        Frame(
            strings.get(f.get("filename"), str(f.get("filename"))),
            int(f.get("line") or 0),
            str(f.get("name") or ""),
            str(f.get("loc") or ""),
        )
        for f in stack
        if isinstance(f, dict)
    )
    return FrameStart(frame_id, index, frames, log)


def _symbol(envelope: dict, log: str) -> DynamicSymbol | None:
    frame_id, index = _int(envelope.get("frame_id")), _int(envelope.get("frame_compile_id"))
    source = (envelope.get("create_symbol") or {}).get("source")
    if frame_id is None or index is None or not isinstance(source, str):
        return None
    return DynamicSymbol(frame_id, index, source, log)


def _string(envelope: dict) -> tuple[int, str] | None:
    value = envelope.get("str")
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and _int(value[1]) is not None:
        return value[1], value[0]
    return None


def _site(raw: RawBreak) -> tuple[str, int] | None:
    frame = raw.stack[-1] if raw.stack else raw.location
    return (frame.file, frame.line) if frame else None


def fullgraph_failures(breaks: Iterable[RawBreak], metrics: Iterable[FrameMetrics]) -> tuple[RawBreak, ...]:
    """Pure: the breaks only a frame's failed compilation tells of. Under fullgraph=True Dynamo
    raises at the first break instead of logging it, so no break record exists; the frame's
    compilation_metrics still carry the break's message and the user frame it happened in. A
    failure at a place a break record already names is that break (a frame that fell back to
    eager), not a second one. A failure that is no graph break (its fail_type says an error was
    raised, not Unsupported) is marked `compile_error`: the run stopped there."""
    logged = {site for site in map(_site, breaks) if site}
    found: dict[tuple[str, int, str], RawBreak] = {}
    for m in metrics:
        if not (m.fail_type and m.fail_reason and m.fail_file and m.fail_line) or (m.fail_file, m.fail_line) in logged:
            continue
        raw = parse_break_message(m.fail_reason)
        if raw is None:
            continue
        function = m.co_name if m.co_filename == m.fail_file else ""
        frame = Frame(m.fail_file, m.fail_line, function)
        found.setdefault(
            (m.fail_file, m.fail_line, raw.root.gb_type),
            RawBreak(
                raw.root,
                raw.consequences,
                (frame,),
                False,
                frame,
                fullgraph_failure=m.fail_type in FORMAT.graph_break_fail_types,
                frame_id=m.frame_id,
                compile_index=m.compile_index,
                log=m.log,
                ends_frame=True,
                compile_error=m.fail_type not in FORMAT.graph_break_fail_types,
            ),
        )
    return tuple(found.values())


def read_trace_lines(
    lines: Iterable[str], source: str = "trace", rank: int | None = None, test_at: TestAt | None = None
) -> TraceLog:
    """Pure over lines: a TORCH_TRACE file's text → TraceLog. Damaged records are kept when
    their text still parses; every damaged or unusable record is named in `problems`, and so is
    a torch release whose message format gbbot was not checked against. `test_at` names the test
    that wrote the record starting at a line number (gbbot/trace/attribution.py)."""
    breaks: list[RawBreak] = []
    metrics: list[FrameMetrics] = []
    problems: list[str] = []
    version = None
    strings: dict[int, str] = {}
    starts: list[FrameStart] = []
    symbols: list[DynamicSymbol] = []
    for item in logfiles.iter_trace_records(lines, source):
        if isinstance(item, logfiles.TraceProblem):
            problems.append(item.message)
        elif item.kind == "metrics":
            metrics.append(_metrics(item.envelope, source))
        elif item.kind == "str":
            if entry := _string(item.envelope):
                strings[entry[0]] = entry[1]
        elif item.kind == "start":
            starts.extend(filter(None, [_start(item.envelope, strings, source)]))
        elif item.kind == "symbol":
            symbols.extend(filter(None, [_symbol(item.envelope, source)]))
        elif item.kind == "torch_version":
            version = _torch_version(item.payload) or version
        elif (raw := _break(item, rank, source, test_at)) is not None:
            breaks.append(raw)
        else:
            problems.append(f"{source}:{item.lineno}: graph break record without a reason, skipped")
    breaks.extend(fullgraph_failures(breaks, metrics))
    note = wording.support_note(version)
    problems.extend([f"{source}: {note}"] if note else [])
    return TraceLog(tuple(breaks), tuple(metrics), version, tuple(problems), tuple(starts), tuple(symbols))


def _break(item: logfiles.TraceRecord, rank: int | None, source: str, test_at: TestAt | None) -> RawBreak | None:
    """A graph-break record → RawBreak, with its rank, compile, log and test (None: no reason)."""
    from_rank = rank if rank is not None else _envelope_rank(item.envelope)
    raw = parse_break_message(item.payload or "", from_rank)
    if raw is None:
        return None
    raw = replace(raw, **_compile_of(item.envelope), log=source)
    return replace(raw, test=test_at(item.lineno)) if test_at else raw


def _compile_of(envelope: dict) -> dict[str, int | None]:
    """The compile a record was written in, as RawBreak's fields."""
    return {"frame_id": _int(envelope.get("frame_id")), "compile_index": _int(envelope.get("frame_compile_id"))}


def _envelope_rank(envelope: dict) -> int | None:
    rank = envelope.get("rank")
    return rank if isinstance(rank, int) else None


def rank_of(file_name: str) -> int | None:
    match = RANK_FILE_RE.search(file_name)
    return int(match["rank"]) if match else None


def _torch_version(payload: str | None) -> str | None:
    match = re.search(r'"pytorch_version":\s*"([^"]+)"', payload or "")
    return match.group(1) if match else None


def read_log_lines(lines: Iterable[str]) -> TraceLog:
    """Pure over lines: saved TORCH_LOGS=graph_breaks text → TraceLog (no frame metrics)."""
    breaks: list[RawBreak] = []
    problems: list[str] = []
    for n, message in enumerate(logfiles.iter_log_breaks(lines), 1):
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
        starts=tuple(s for log in logs for s in log.starts),
        symbols=tuple(s for log in logs for s in log.symbols),
    )


def read_path(path: Path, tests: Callable[[Path], TestAt | None] = lambda _file: None) -> TraceLog:
    """A TORCH_TRACE directory or file, or a saved TORCH_LOGS text file → TraceLog. `tests` gives
    a trace file's line → test mapping, when a pytest run recorded one."""
    files = logfiles.trace_files(path)
    if not files and path.is_dir():
        return TraceLog((), (), None, (f"{path}: no trace files (*.log) found",))
    logs = []
    for file in files:
        if logfiles.looks_like_trace(file):
            logs.append(read_trace_lines(logfiles.open_lines(file), file.name, rank_of(file.name), tests(file)))
        else:
            logs.append(read_log_lines(logfiles.open_lines(file)))
    return merge_logs(logs)

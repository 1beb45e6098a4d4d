"""GitHub's limits as named constants, and the one way gbbot fits text under them: cut at a line
boundary and say where the whole report is. Never a 422.

Plain data and pure functions with no gbbot imports, so that every package that produces text
for GitHub (render, fix, publish, action) can share them without depending on one another."""

from __future__ import annotations

COMMENT_BODY_MAX = 65_536  # characters; over it: 422 "Body is too long"
CHECK_RUN_TEXT_MAX = 65_535  # characters, for each of output.summary and output.text
CHECK_RUN_TITLE_MAX = 255
ANNOTATIONS_PER_REQUEST = 50  # per create/update of a check run; more is a 422
ANNOTATION_MESSAGE_MAX = 4_096
ANNOTATION_TITLE_MAX = 255
STEP_SUMMARY_MAX_BYTES = 1_048_576  # $GITHUB_STEP_SUMMARY, per step: 1 MiB
REVIEW_COMMENTS_MAX = 30  # suggestion comments in one review
# Workflow-command annotations the UI shows per step, per severity (warning, error); the rest are
# dropped silently, so gbbot lists them in the job summary instead.
WORKFLOW_ANNOTATIONS_SHOWN = 10
# An untrusted report.json (from a fork's run) is refused over these, before anything is built
# from it: 50 entrypoints with 100 distinct breaks each, stacks and verified fixes, is about 4 MB.
REPORT_FILE_MAX_BYTES = 10 * 1024 * 1024
REPORT_BREAKS_MAX = 5_000  # in all entrypoints together (and in the diff's fixed breaks)
REPORT_ENTRYPOINT_BREAKS_MAX = 2_000
REPORT_JSON_DEPTH_MAX = 32  # a real report nests 8 deep
REPORT_NUMBER_CHARS_MAX = 32  # digits of one JSON number
REPORT_JSON_VALUES_MAX = 400_000  # strings, arrays and objects: 5,000 breaks need about 150,000
CHECK_RUN_ANNOTATIONS_MAX = 1_000  # 20 requests; the rest are counted in the summary
# What the workflow_run publisher re-derives fixes on: the PR's files, fetched as data.
PR_SOURCE_MAX_BYTES = 512 * 1024
REDERIVED_FIXES_MAX = 100

TRUNCATED = "\n\n… (truncated)"


def fit(text: str, limit: int, pointer: str = "") -> str:
    """`text` when it is within `limit` characters; else its longest prefix that ends at a line
    break and leaves room for the truncation note and `pointer` (where the full report is)."""
    if len(text) <= limit:
        return text
    tail = TRUNCATED + (f"\n\n{pointer}" if pointer else "")
    room = max(limit - len(tail), 0)
    cut = text.rfind("\n", 0, room + 1)
    head = text[: cut if cut > 0 else room]
    return (head + tail)[:limit]


def fit_bytes(text: str, limit: int, pointer: str = "") -> str:
    """Like `fit`, for limits counted in UTF-8 bytes (the step summary): the most characters
    whose encoding fits, found by bisection."""
    if len(text.encode("utf-8")) <= limit:
        return text
    low, high = 0, min(limit, len(text))  # fit(text, low) fits; a character is at least one byte
    while low < high:
        middle = (low + high + 1) // 2
        if len(fit(text, middle, pointer).encode("utf-8")) <= limit:
            low = middle
        else:
            high = middle - 1
    return fit(text, low, pointer)

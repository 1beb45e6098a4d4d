"""`python tests/render_count.py OUT REPORT_JSON ARGS...`: the `gbbot ARGS...` program with every
markdown render counted, one JSON line per render in OUT (the text's hash and its options' item
budget); after it, a last line saying whether REPORT_JSON reads back equal to the report the run
rendered (the same report the workflow_run half would publish). Only counts: it changes nothing."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from gbbot import main as gbbot_main
from gbbot.analysis import report as report_
from gbbot.core.model import Report
from gbbot.render import markdown


def main() -> int:
    out, saved, args = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    real = markdown.render
    rendered: list[Report] = []

    def counted(report: Report, options: markdown.Options | None = None) -> str:
        options = options or markdown.Options()
        text = real(report, options)
        rendered.append(report)
        line = {"text": hashlib.sha256(text.encode()).hexdigest(), "max_items": options.max_items}
        with out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
        return text

    markdown.render = counted  # type: ignore[assignment]
    sys.argv = ["gbbot", *args]
    try:
        return gbbot_main.main()
    finally:
        published = [r for r in rendered if r.commit is not None]  # the content hash's has none
        same = bool(published) and all(r == report_.load(saved) for r in published)
        with out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"report_json_reads_back_equal": same}) + "\n")


if __name__ == "__main__":
    sys.exit(main())

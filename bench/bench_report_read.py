"""Reading an untrusted report.json: gbbot's bounded reader vs the old one, side by side.

    python bench/bench_report_read.py

Writes the largest report the bounded reader accepts in practice (5,000 breaks, each with a
three-frame stack, in 10 entrypoints) and a hostile one (156,000 breaks, the size the old
50 MB cap let through), then in fresh processes measures wall time and peak memory (tracemalloc) of
  bounded   gbbot.analysis.report.load_untrusted: size, nesting, numbers and breaks bounded, then the schema
  old       json.loads + the schema on whatever is there (gbbot.analysis.report.load)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

READ = """
import json, sys, time, tracemalloc
from pathlib import Path
from gbbot.analysis import report
from gbbot.core.errors import ReportError
read = report.load_untrusted if sys.argv[2] == "bounded" else report.load
tracemalloc.start()
start = time.perf_counter()
try:
    outcome = f"{len(read(Path(sys.argv[1])).breaks)} breaks read"
except ReportError as exc:
    outcome = "refused: " + str(exc).split(": ", 1)[1][:60]
print(json.dumps({"seconds": time.perf_counter() - start, "outcome": outcome,
                  "peak_mb": tracemalloc.get_traced_memory()[1] / 1e6}))
"""


def report_text(entrypoints: int, per_entrypoint: int, frames: int = 3, indent: int | None = 2) -> str:
    from gbbot.analysis import report as report_io
    from gbbot.core.model import Frame
    from tests import reports

    stack = tuple(Frame(f"pkg/layer_{i}.py", 10 + i, "forward", "x = self.block(x)") for i in range(frames))
    made = reports.report(
        *(
            reports.entrypoint(
                f"entry-{e}",
                [reports.graph_break(e * per_entrypoint + n, user_stack=stack) for n in range(per_entrypoint)],
            )
            for e in range(entrypoints)
        )
    )
    return json.dumps(report_io.to_json(made), indent=indent)


def measure(path: Path, how: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", READ, str(path), how], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(done.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        cases = {"largest accepted (5,000 breaks)": report_text(10, 500)}
        data = json.loads(report_text(1, 1, frames=0, indent=None))
        data["entrypoints"][0]["breaks"] *= 156_000
        cases["hostile (156,000 breaks)"] = json.dumps(data)
        print(f"{'report':34} {'MB':>6} {'reader':8} {'seconds':>8} {'peak MB':>8}  outcome")
        for name, text in cases.items():
            path = Path(scratch) / "report.json"
            path.write_text(text)
            for how in ("bounded", "old"):
                got = measure(path, how)
                size = len(text.encode()) / 1e6
                print(f"{name:34} {size:6.1f} {how:8} {got['seconds']:8.2f} {got['peak_mb']:8.0f}  {got['outcome']}")


if __name__ == "__main__":
    main()

"""Parsing a large TORCH_TRACE: gbbot's streaming reader vs reading every record, side by side.

    python bench/bench_parse.py [--copies N]

Builds a trace of N copies of the real fixture (tests/fixtures/small.trace.log, ~250 KB each), then
in fresh processes measures wall time and peak memory of
  gbbot     gbbot.trace.tracelog.read_path: streams lines, decodes only the 3 record kinds it needs
  naive     read the whole file, json-decode every record header, keep every payload
and prints the ratios (and that gbbot found every break: 3 per copy).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "small.trace.log"

GBBOT = """
import json, resource, sys, time
from pathlib import Path
from gbbot.trace import tracelog
start = time.perf_counter()
log = tracelog.read_path(Path(sys.argv[1]))
print(json.dumps({"seconds": time.perf_counter() - start, "breaks": len(log.breaks),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
NAIVE = """
import json, resource, sys, time
start = time.perf_counter()
records, payload = [], None
for line in open(sys.argv[1]).read().split("\\n"):
    if line.startswith("\\t"):
        payload.append(line[1:])
    elif "] {" in line:
        payload = []
        records.append((json.loads(line[line.index("] {") + 2:]), payload))
breaks = sum(1 for header, _ in records if header.get("artifact", {}).get("name") == "dynamo_graph_break_reason")
print(json.dumps({"seconds": time.perf_counter() - start, "breaks": breaks,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(program: str, trace: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", program, str(trace)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=400)
    args = parser.parse_args()
    text = FIXTURE.read_text()
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-parse-") as tmp:
        trace = Path(tmp) / "big.log"
        with trace.open("w") as handle:
            for _ in range(args.copies):
                handle.write(text)
        size_mb = trace.stat().st_size / 1e6
        gbbot, naive = measure(GBBOT, trace), measure(NAIVE, trace)
    print(f"trace: {size_mb:.0f} MB ({args.copies} copies of the fixture, {3 * args.copies} breaks)")
    for name, m in (("gbbot", gbbot), ("naive", naive)):
        print(
            f"  {name:6s} {m['seconds']:6.2f} s  {size_mb / m['seconds']:6.0f} MB/s  peak RSS {m['rss_mb']:6.0f} MB"
            f"  breaks {m['breaks']}"
        )
    print(f"  naive / gbbot time   {naive['seconds'] / gbbot['seconds']:.1f}x")
    print(f"  naive / gbbot memory {naive['rss_mb'] / gbbot['rss_mb']:.1f}x")
    return 0 if gbbot["breaks"] == 3 * args.copies else 1


if __name__ == "__main__":
    raise SystemExit(main())

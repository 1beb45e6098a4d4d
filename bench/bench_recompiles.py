"""Reading recompilations from a large TORCH_TRACE: what it adds to reading breaks, side by side.

    python bench/bench_recompiles.py [--copies N]

Builds bench_parse.py's trace (N copies of tests/fixtures/small.trace.log) with a copy of a real
recompiling run after each (tests/fixtures/recompile.trace.log, its metrics, start, string and
symbol records: a frame at the recompile limit, a type guard), frame ids renumbered so that every
copy is its own frames. Then in fresh
processes measures wall time and peak memory of
  breaks      gbbot.trace.tracelog.read_path decoding only the records breaks need
  recompiles  gbbot.trace.tracelog.read_path (every record kind) + gbbot.analysis.recompile.analyse
and prints the ratio, and that every copy's breaks and recompiling frames were found.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from bench_parse import FIXTURE, ROOT, measure

RECOMPILES = ROOT / "tests" / "fixtures" / "recompile.trace.log"
FRAMES_PER_COPY = 2  # recompiling frames in the fixture
FRAME_ID_RE = re.compile(r'"frame_id": (\d+)')

BREAKS = """
import json, resource, sys, time
from pathlib import Path
from gbbot.trace import tracelog, logfiles
logfiles.iter_trace_records.__defaults__ = ("trace", logfiles.BREAK_WANTED)  # as before recompiles
start = time.perf_counter()
log = tracelog.read_path(Path(sys.argv[1]))
print(json.dumps({"seconds": time.perf_counter() - start, "breaks": len(log.breaks), "frames": 0,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
RECOMPILE = """
import json, resource, sys, time
from pathlib import Path
from gbbot.trace import tracelog
from gbbot.analysis import recompile
start = time.perf_counter()
log = tracelog.read_path(Path(sys.argv[1]))
frames = recompile.analyse(log, "/tmp")
print(json.dumps({"seconds": time.perf_counter() - start, "breaks": len(log.breaks), "frames": len(frames),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def renumbered(text: str, offset: int) -> str:
    return FRAME_ID_RE.sub(lambda m: f'"frame_id": {int(m.group(1)) + offset}', text)


def build(path: Path, copies: int) -> None:
    breaks, recompiles = FIXTURE.read_text(), RECOMPILES.read_text()
    with path.open("w") as handle:
        for copy in range(copies):
            handle.write(renumbered(breaks, 1000 * copy))
            handle.write(renumbered(recompiles, 1000 * copy + 500))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gbbot-bench-recompiles-") as tmp:
        trace = Path(tmp) / "big.log"
        build(trace, args.copies)
        size_mb = trace.stat().st_size / 1e6
        breaks, recompiles = measure(BREAKS, trace), measure(RECOMPILE, trace)
    print(
        f"trace: {size_mb:.0f} MB ({args.copies} copies: {3 * args.copies} breaks, "
        f"{FRAMES_PER_COPY * args.copies} recompiling frames)"
    )
    for name, m in (("breaks", breaks), ("recompiles", recompiles)):
        print(
            f"  {name:10s} {m['seconds']:6.2f} s  {size_mb / m['seconds']:6.0f} MB/s  peak RSS {m['rss_mb']:6.0f} MB"
            f"  breaks {m['breaks']}  recompiling frames {m['frames']}"
        )
    print(f"  recompiles / breaks time   {recompiles['seconds'] / breaks['seconds']:.2f}x")
    print(f"  recompiles / breaks memory {recompiles['rss_mb'] / breaks['rss_mb']:.2f}x")
    found = recompiles["frames"] == FRAMES_PER_COPY * args.copies and recompiles["breaks"] == 3 * args.copies
    return 0 if found and breaks["breaks"] == 3 * args.copies else 1


if __name__ == "__main__":
    raise SystemExit(main())

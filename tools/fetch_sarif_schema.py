"""Fetch the official SARIF 2.1.0 JSON schema that the tests validate gbbot's SARIF against.

Source: the npm package ``@microsoft/sarif-multitool-linux@5.7.0`` (Microsoft's SARIF SDK, whose
schema is the one the OASIS SARIF TC maintains), file ``package/sarif-2.1.0.json``: "Static
Analysis Results Format (SARIF) Version 2.1.0 JSON Schema", JSON Schema draft 2020-12,
sha256 1c49a0f2b60444c71bb14878e21e0d882198eff4c539861b133093ad89ed798c.

Output (committed, so the tests never need the network): ``tests/data/sarif-schema-2.1.0.json``.

Run from the repository root::

    python tools/fetch_sarif_schema.py
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "@microsoft/sarif-multitool-linux@5.7.0"
MEMBER = "package/sarif-2.1.0.json"
SHA256 = "1c49a0f2b60444c71bb14878e21e0d882198eff4c539861b133093ad89ed798c"
TARGET = Path(__file__).resolve().parent.parent / "tests" / "data" / "sarif-schema-2.1.0.json"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gbbot-sarif-") as scratch:
        packed = subprocess.run(
            ["npm", "pack", PACKAGE, "--silent"], cwd=scratch, check=True, capture_output=True, text=True
        )
        tarball = Path(scratch) / packed.stdout.strip().splitlines()[-1]
        with tarfile.open(tarball) as archive:
            member = archive.extractfile(MEMBER)
            if member is None:
                raise SystemExit(f"{PACKAGE} has no {MEMBER}")
            data = member.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        print(f"warning: {MEMBER} changed upstream (sha256 {digest})", file=sys.stderr)
    TARGET.write_bytes(data)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

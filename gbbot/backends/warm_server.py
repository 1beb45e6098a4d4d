"""The warm server: imports torch (and `torch._dynamo`, and the config's `preload:` modules) once,
then forks a fresh child per entrypoint that gbbot asks for over a socket.

Run by path (`python warm_server.py FD [--learn | MODULE…]`), never as part of the gbbot package:
each child is a copy of this process, so nothing but the standard library and what was preloaded
may be in it. With `--learn` (no `preload:` list in the config) it learns what to preload: each
child leaves the names of the installed modules it imported, and the server imports them once,
after trying them in a probe fork, for the children after it.
It never imports user code: a child's working directory, sys.path, environment and output are set
after the fork, and whatever a child changes (Dynamo config, caches, monkeypatches) dies with it.
Once it has forked its first child, it compiles one tiny module of its own (warm_up) while that
child runs, so that Dynamo's one-time work on a process's first compile is done once for every later
child, then resets Dynamo to a never-compiled state: a child numbers its frames, compile ids and
trace records from zero, as a fresh process does.

A standby child is forked before its turn, while the entrypoint before it runs, when gbbot has a
core to spare: it sets itself up as the entrypoint (directory, environment, output, trace), imports
the installed modules its program imports first (the names come with the request), and waits for
its turn. Whatever it imports, it imports as the entrypoint would, in its own environment; it never
runs the program's own code before its turn.

The protocol is warm_protocol.py's typed messages, one JSON line each, checked on read; this
script loads that file by path (standard library only), under a name no program can import.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import importlib
import importlib.util
import io
import itertools
import json
import os
import re
import select
import signal
import socket
import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterable, Sequence
from importlib.machinery import FileFinder, ModuleSpec, SourceFileLoader
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

HERE = os.path.abspath(__file__)
PROTOCOL_MODULE = "_gbbot_warm_protocol"


def _load_protocol() -> types.ModuleType:
    """warm_protocol.py, beside this file, as a module of its own (dataclasses look their module up
    in sys.modules); a name no program's import can mean."""
    path = os.path.join(os.path.dirname(HERE), "warm_protocol.py")
    spec = importlib.util.spec_from_file_location(PROTOCOL_MODULE, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PROTOCOL_MODULE] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from gbbot.backends import warm_protocol as protocol
    from gbbot.backends.warm_protocol import ChildSpec, Fork, Reply
else:
    protocol = _load_protocol()


def fork_unsafe() -> str | None:
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

# The releases whose state the list in _forget_compiling was checked against (2.13 read from its
# source; 2.14 by the same tests run under 2.14.1: compile ids, trace records and reports equal to
# a fresh process's). Another release may number or remember things elsewhere, and a child must
# report what a fresh process reports: there the server skips the warm-up and its children pay the
# first compile's one-time cost themselves.
WARMED_RELEASES = ("2.13.", "2.14.")


def _warm_up_compile() -> None:
    """Compile and run a tiny module with a graph break, once, beside the first child: Dynamo's first
    compile in a process does ~0.3 s of one-time work (lazy imports of sympy, fake tensors and the
    guard builders, trace_rules' maps, polyfills) that every child would otherwise repeat. The
    "eager" backend generates no code and starts no compile workers; the module is built without
    torch's RNG, and warnings are captured so that none is marked as already shown. Inductor's
    compiler is imported too (2.5 s here, no thread started): every faithful child would import it
    again (`gbbot fix` confirms its settings with it)."""
    import warnings

    import torch
    import torch._inductor.compile_fx  # imported once, for the children

    class WarmUp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(4, 4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(x @ self.weight)
            torch._dynamo.graph_break()
            return (y + 1).sum()

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        torch.compile(WarmUp(), backend="eager")(torch.ones(2, 4))


def _forget_compiling() -> None:
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


def warm_up() -> str | None:
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
WATCHED = SPAWNS | {"open", "os.listdir", "os.scandir", "ctypes.dlopen"}
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

    def __init__(self, skip: Iterable[str]) -> None:
        self.skip = tuple(p.rstrip(os.sep) + os.sep for p in skip)
        self.files: set[str] = set()
        self.directories: set[str] = set()
        self.metadata: set[str] = set()
        self.searched: dict[str, set[str]] = {}  # directory → the names the import system looked for there
        self.spawned: str | None = None
        self.overflow = False

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in WATCHED:  # most events (Dynamo calls id() some 150,000 times a model): at once
            return
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

    def _listed(self, path: object, caller: str) -> None:
        if caller == IMPORT_SYSTEM:  # its lookups are recorded name by name
            return
        reader = caller.replace(os.sep, "/").endswith(METADATA_READERS)
        self._add(self.metadata if reader else self.directories, path)

    def looked_up(self, directory: str, name: str) -> None:
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

    def _add(self, found: set[str], path: object) -> None:
        if isinstance(path, int):  # a file descriptor: opened (and recorded) before
            return
        path = os.path.abspath(os.fsdecode(path))  # type: ignore[arg-type]  # str, bytes or PathLike
        if path.startswith(self.skip) or path in found:
            return
        if len(found) >= MAX_PATHS:
            self.overflow = True
        else:
            found.add(path)

    def write(self, path: str) -> None:
        record = {"files": sorted(self.files), "directories": sorted(self.directories),
                  "metadata": sorted(self.metadata), "searched": {d: sorted(n) for d, n in self.searched.items()},
                  "spawned": self.spawned, "overflow": self.overflow}  # fmt: skip
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(record, handle)


# Who called os.listdir: the import system's path finder, or a reader of installed packages'
# metadata (the standard library's, or its backport).
IMPORT_SYSTEM = "<frozen importlib._bootstrap_external>"
METADATA_READERS = ("importlib/metadata/__init__.py", "importlib_metadata/__init__.py")


def watch_imports(reads: ReadRecorder) -> None:
    """Have the import system's directory finder tell `reads` each name it looks for, and where:
    whether an entry a change adds or removes could be found depends on the names looked up."""
    find_spec = FileFinder.find_spec

    def recorded_find_spec(
        self: FileFinder, fullname: str, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
        reads.looked_up(self.path, fullname)
        return find_spec(self, fullname, target)

    FileFinder.find_spec = recorded_find_spec  # type: ignore[method-assign]


def preloaded_lookups(reads: ReadRecorder, loaded: Iterable[str], path: Iterable[str]) -> None:
    """The modules the server imported before forking (torch, what it preloads or learned) are
    found in `sys.modules`, so a child never searches for them; a fresh process would, in every
    directory of the path before the installed one. Record those lookups for each top-level name,
    so that a change adding `transformers.py` to the checkout still sends the base to run again.
    (Directories of the interpreter's installation are not recorded: `looked_up` skips them.)"""
    names = {name.partition(".")[0] for name in loaded} - set(sys.builtin_module_names)
    for directory in path:
        for name in sorted(names):
            reads.looked_up(directory or ".", name)


def _reading(mode: str | None, flags: int) -> bool:
    """`open`'s audit arguments: a mode string (builtins.open, io.open_code) or None and the
    os.open flags."""
    if mode is not None:
        return "r" in mode or "+" in mode
    return flags & os.O_ACCMODE != os.O_WRONLY


def _installation(cwd: str) -> list[str]:
    """Where the interpreter and its packages live: the same files for every checkout. A prefix
    holding the tree being run (a Python installed in `/`) is not skipped: its files are the tree's."""
    import site

    places = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    with contextlib.suppress(AttributeError):
        places.add(site.getusersitepackages())
    inside = os.path.join(os.path.abspath(cwd), "")
    return [p for p in places if p and not inside.startswith(os.path.join(os.path.abspath(p), ""))]


# --- learning what to preload ------------------------------------------------------------------

# A child's list of what it imported is read back by the server, from a file a process that ran PR
# code wrote: bounded, and every name checked before the server looks it up.
MAX_LEARNED_BYTES = 4 << 20
MAX_LEARNED = 20000
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _inside(path: str, places: Iterable[str]) -> bool:
    path = os.path.join(os.path.abspath(path), "")
    return any(path.startswith(os.path.join(os.path.abspath(p), "")) for p in places)


def _installed_file(module: types.ModuleType, roots: Sequence[str], excluded: Sequence[str]) -> str | None:
    """The file `module` was loaded from when that is an installed one: under one of `roots` (the
    import path a fresh interpreter starts with) and outside `excluded` (the checkout, gbbot's
    own files); else None."""
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    return path if _inside(path, roots) and not _inside(path, excluded) else None


def _write_imported(spec: ChildSpec, loaded: set[str], roots: Sequence[str]) -> None:
    """Leave the names of the installed modules this child imported (not the checkout's, not
    gbbot's), in import order, for the server to import once for every later child."""
    if not spec.learned:
        return
    excluded = [spec.cwd, *spec.unrecorded]
    names = [name for name, module in list(sys.modules.items())
             if name not in loaded and _installed_file(module, roots, excluded)]  # fmt: skip
    with open(spec.learned, "w", encoding="utf-8") as handle:
        json.dump(names[:MAX_LEARNED], handle)


def read_learned(spec: ChildSpec) -> list[str]:
    """The module names a child left, checked, or [] when the record is missing or malformed."""
    try:
        if spec.learned is None:
            return []
        with open(spec.learned, "rb") as handle:
            text = handle.read(MAX_LEARNED_BYTES + 1)
        data = json.loads(text) if len(text) <= MAX_LEARNED_BYTES else None
    except (OSError, ValueError):
        return []
    return checked_names(data)


def checked_names(data: object) -> list[str]:
    """The module names in `data` (a child's record, or a standby request's expected imports), at
    most MAX_LEARNED; [] when it is not a list."""
    if not isinstance(data, list):
        return []
    return [n for n in data[:MAX_LEARNED] if isinstance(n, str) and len(n) < 256 and MODULE_NAME.fullmatch(n)]


def learnable(names: Iterable[str], excluded: Sequence[str]) -> list[str]:
    """The names the server may import: not loaded yet, and whose top-level package the server
    itself finds installed (on its own import path, outside the checkout the child ran): a name
    that the server would find in the checkout, or not at all, is never imported."""
    roots = [p for p in sys.path if p]
    found: dict[str, bool] = {}
    wanted = []
    for name in names:
        if name in sys.modules:
            continue
        top = name.partition(".")[0]
        if top not in found:
            found[top] = _installed_spec(top, roots, excluded)
        if found[top]:
            wanted.append(name)
    return wanted


def _installed_spec(top: str, roots: Sequence[str], excluded: Sequence[str]) -> bool:
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is not None and spec.origin in ("built-in", "frozen"):  # the interpreter's own
        return True
    places = [spec.origin] if spec and spec.origin else []
    places += list(spec.submodule_search_locations or []) if spec else []
    return bool(places) and all(_inside(p, roots) and not _inside(p, excluded) for p in places)


def import_all(names: Iterable[str]) -> None:
    """Import each name, skipping those that fail (a module may raise anything at import,
    SystemExit included)."""
    for name in names:
        with contextlib.suppress(BaseException):
            importlib.import_module(name)


def import_expected(names: Iterable[str], roots: Sequence[str], excluded: Sequence[str]) -> None:
    """In a standby child, before its turn: import what the program imports first (gbbot read the
    names in its source, gbbot/backends/expected_imports.py), in the program's order, as long as
    each is installed (found on `roots`, outside `excluded`: the checkout, gbbot's files). Stops at
    the first that is not, and at the first that fails: from there the program would run its own
    code, or fail, itself. `X.a` that is no module is read as an attribute of `X`, as `from X
    import a` does (a lazily loaded class loads its module)."""
    for name in names:
        top = name.partition(".")[0]
        if name in sys.modules:
            continue
        if top not in sys.modules and not _installed_spec(top, roots, excluded):
            return
        try:
            _import_or_read(name)
        except BaseException:  # a module may raise anything at import, SystemExit included
            return


def _import_or_read(name: str) -> None:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        parent, _, attribute = name.rpartition(".")
        if exc.name != name or parent not in sys.modules:
            raise
        getattr(sys.modules[parent], attribute)


# --- in the child ----------------------------------------------------------------------------


def _stream(fd: int, mode: str, unbuffered: bool, errors: str) -> io.TextIOWrapper:
    """A std stream like the interpreter's own: `-u` (PYTHONUNBUFFERED) writes through."""
    raw = io.FileIO(fd, mode, closefd=False)
    if mode == "r":
        return io.TextIOWrapper(io.BufferedReader(raw), encoding=_ENCODING)
    buffer: io.RawIOBase | io.BufferedWriter = raw if unbuffered else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffer, encoding=_ENCODING, errors=errors, write_through=unbuffered)


_ENCODING = (sys.__stdout__.encoding if sys.__stdout__ else None) or "utf-8"


def _redirect(spec: ChildSpec) -> None:
    """stdin from /dev/null, stdout and stderr to the entrypoint's files, as the local runner."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    opened = [os.open(os.devnull, os.O_RDONLY), *(os.open(path, flags, 0o666) for path in (spec.stdout, spec.stderr))]
    for target, fd in enumerate(opened):
        os.dup2(fd, target)
        os.close(fd)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = _stream(0, "r", unbuffered, "strict")
    sys.stdout = sys.__stdout__ = _stream(1, "w", unbuffered, "strict")
    sys.stderr = sys.__stderr__ = _stream(2, "w", unbuffered, "backslashreplace")


def _retrace() -> None:
    """Point torch's structured trace at this child's TORCH_TRACE. torch reads the variable once,
    at import, into a lazily opened handler; the server imported torch without it, so its handler
    has no directory and has written nothing. A new handler, from the child's environment, writes
    every record of this run (the torch_version one included) to the child's own directory."""
    internal = sys.modules.get("torch._logging._internal")
    if internal is None:
        return
    internal.LOG_TRACE_HANDLER = None
    internal._init_logs()


def _fast_mode(shim: str) -> None:
    """The shim (fast mode, or calls timed), as sitecustomize applies it in a fresh process (torch
    already imported, so it patches now); loaded under another name, it does not chain to a
    sitecustomize again."""
    if os.environ.get("GBBOT_MODE") != "fast" and os.environ.get("GBBOT_TIME") != "1":
        return
    loader = SourceFileLoader("_gbbot_fast_mode", shim)
    module = types.ModuleType(loader.name)
    module.__file__ = shim
    loader.exec_module(module)


def _python_path(site_tail: Sequence[str]) -> list[str]:
    """sys.path as a fresh interpreter builds it: PYTHONPATH (absolute), then the site paths."""
    entries = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [*entries, *site_tail]


def _fresh_main() -> types.ModuleType:
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    return main


def _first_path_entry(spec: ChildSpec) -> str:
    """What a fresh interpreter puts first on sys.path: the script's directory, or the working
    directory for `-m` (_child_main puts it there before anything is imported; the preloaded lookups
    name it)."""
    return os.path.dirname(os.path.abspath(spec.target)) if spec.kind != "module" else os.getcwd()


def _run_script(spec: ChildSpec) -> int:
    path = os.path.abspath(spec.target)
    if not os.path.isfile(path):
        sys.stderr.write(f"{spec.program}: can't open file {path!r}: [Errno 2] No such file or directory\n")
        return 2
    sys.argv = [spec.target, *spec.args]
    main = _fresh_main()
    main.__file__, main.__cached__, main.__package__, main.__spec__ = path, None, None, None  # type: ignore[attr-defined]
    main.__loader__ = SourceFileLoader("__main__", path)
    with open(path, "rb") as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    exec(code, main.__dict__)
    return 0


def _run_module(spec: ChildSpec) -> int:
    import runpy

    sys.argv = ["-m", *spec.args]
    _fresh_main()
    runpy._run_module_as_main(spec.target, alter_argv=True)  # type: ignore[attr-defined]
    return 0


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter makes of a SystemExit."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    sys.stderr.write(f"{exc.code}\n")
    return 1


def _report(exc: BaseException) -> None:
    """The traceback a fresh interpreter prints: without this file's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == HERE:
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


def _finish(reads: ReadRecorder, spec: ChildSpec, imported: Callable[[], None]) -> None:
    """What interpreter shutdown does that a child must do by hand before os._exit: wait for
    non-daemon threads, run atexit (logging flushes the trace there), flush the streams; then
    leave the record of what it read, and of the installed modules it imported."""
    steps = (threading._shutdown, atexit._run_exitfuncs, lambda: reads.write(spec.reads), imported)  # type: ignore[attr-defined]
    for step in steps:
        try:
            step()
        except BaseException:
            traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _stand_by(spec: ChildSpec, go: int, roots: Sequence[str]) -> bool:
    """A standby child: import what the program imports first, then wait for its turn. Whether its
    turn came (not when gbbot dropped it or the server is gone: the pipe closed unwritten)."""
    import_expected(checked_names(list(spec.expected)), roots, [spec.cwd, *spec.unrecorded])
    try:
        said = os.read(go, 1)
    except OSError:
        said = b""
    os.close(go)
    return said == GO


def _child_main(spec: ChildSpec, site_tail: Sequence[str], go: int | None = None) -> int:
    _redirect(spec)
    os.chdir(spec.cwd)
    os.environ.clear()
    os.environ.update(spec.env)
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    sys.path[:] = _python_path(site_tail)
    roots = [p for p in sys.path if p]  # where installed modules come from: before the checkout's
    _retrace()
    _fast_mode(spec.shim)
    reads = ReadRecorder([*_installation(spec.cwd), *spec.unrecorded])
    loaded = set(sys.modules)
    imported = lambda: _write_imported(spec, loaded, roots)  # noqa: E731
    sys.addaudithook(reads)  # from here on, what the program reads (audit hooks cannot be removed)
    watch_imports(reads)
    preloaded_lookups(reads, loaded, [_first_path_entry(spec), *sys.path])
    sys.path.insert(0, _first_path_entry(spec))
    if go is not None and not _stand_by(spec, go, roots):
        return 0
    interrupted = False
    try:
        code = (_run_module if spec.kind == "module" else _run_script)(spec)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        _report(exc)
        interrupted, code = isinstance(exc, KeyboardInterrupt), 1
    _finish(reads, spec, imported)
    if interrupted:  # the interpreter dies of SIGINT after an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _child(
    spec: ChildSpec, site_tail: Sequence[str], inherited: Iterable[int], started: int, go: int | None
) -> NoReturn:
    code = 1
    try:
        os.setsid()
        for fd in inherited:
            os.close(fd)
        os.close(started)  # tells the server the child leads its own session
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _child_main(spec, site_tail, go)
    finally:
        os._exit(code)


# --- the server ------------------------------------------------------------------------------


def _send(sock: socket.socket, message: Reply) -> None:
    sock.sendall(protocol.encode(message))


GO = b"g"  # what a standby child reads when its turn comes


class Probe(NamedTuple):
    """A fork of the server trying learned names before the server imports them."""

    pidfd: int
    pid: int
    answer: int  # the pipe it answers on: how many of `names` it imported while fork stayed safe
    names: list[str]


class Children:
    """What the server has forked and waits for: entrypoint children (pidfd → (request, pid)), the
    standby ones among them still waiting for their turn (request id → the pipe that says go), and
    at most one learning probe; and what it learns to preload: the installed modules that finished
    children imported, tried in a probe first, then imported by the server itself, one module
    between two messages, so that an exit or a fork request never waits for a list of imports.
    (gbbot asks a child for its record only where no standby children run: the spare core is
    theirs.)"""

    def __init__(self, learn: bool) -> None:
        self.running: dict[int, tuple[Fork, int]] = {}
        self.standby: dict[int, int] = {}
        self.learn = learn  # whether to import what children imported (no `preload:` list given)
        self.installed: frozenset[str] | None = None  # top-level names installed before any PR code ran
        self.pending: list[str] = []  # names to try, in the order the children imported them
        self.tried: set[str] = set()  # each name is tried once
        self.probe: Probe | None = None
        self.importing: list[str] = []  # names the probe found safe, for the server to import

    def waiting(self) -> list[int]:
        """The pidfds whose process the server waits for."""
        return [*self.running, *([self.probe.pidfd] if self.probe else [])]

    def fds(self) -> list[int]:
        """What a fork of the server closes: the pidfds, the standby children's go pipes, and the
        pipe the probe answers on."""
        return [*self.waiting(), *self.standby.values(), *([self.probe.answer] if self.probe else [])]

    def learned(self, request: Fork) -> None:
        """Note what a finished child imported that the server may import too."""
        if not self.learn:
            return
        names = learnable(read_learned(request.child), [request.child.cwd, *request.child.unrecorded])
        if self.installed is not None:
            names = [n for n in names if n.partition(".")[0] in self.installed]
        fresh = [n for n in names if n not in self.tried]
        self.tried.update(fresh)
        self.pending += fresh

    def go(self, request_id: int, said: bytes = GO) -> None:
        """A standby child's turn: tell it (nothing, when it has ended already); b"" when it ended
        unasked: its pipe is closed."""
        told = self.standby.pop(request_id, None)
        if told is None:
            return
        with contextlib.suppress(OSError):
            os.write(told, said)
        os.close(told)

    def import_next(self) -> str | None:
        """Import one learned name. Why no child may be forked any more, or None."""
        import_all(self.importing[:1])
        del self.importing[:1]
        return fork_unsafe()


def _learn(sock: socket.socket, children: Children, broken: str | None) -> None:
    """Try what the children taught (if there is something new and no probe runs) in a fork of
    the server first: it imports them one by one and says how many it imported before forking
    became unsafe (a module that starts a thread at import), so that the server imports only
    those and stays able to fork."""
    if children.probe is not None or broken:
        return
    names, children.pending = children.pending, []
    if not names or fork_unsafe():
        return
    answer, told = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(answer)
        _probe(names, told, [sock.fileno(), *children.fds()])
    os.close(told)
    children.probe = Probe(os.pidfd_open(pid), pid, answer, names)


def _probe(names: Sequence[str], told: int, inherited: Iterable[int]) -> NoReturn:
    code = 1
    try:
        for fd in inherited:  # gbbot's socket, the pidfds, the go pipes: the server's, not the probe's
            os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        safe = 0
        for name in names:
            import_all([name])
            if fork_unsafe():
                break
            safe += 1
        os.write(told, str(safe).encode())
        code = 0
    finally:
        os._exit(code)


def _probed(children: Children) -> None:
    """The probe ended: the server imports what it found safe, and tries the rest again without the
    name that made forking unsafe (and its submodules)."""
    assert children.probe is not None
    pidfd, pid, answer, names = children.probe
    children.probe = None
    os.close(pidfd)
    os.waitpid(pid, 0)
    with os.fdopen(answer, "rb") as pipe:
        said = pipe.read(16)
    safe = int(said) if said.isdigit() else 0
    children.importing += names[:safe]
    if safe < len(names):
        culprit = names[safe]
        rest = [n for n in names[safe + 1 :] if not n.startswith(culprit + ".")]
        children.pending = rest + children.pending


def _fork(
    sock: socket.socket, request: Fork, children: Children, site_tail: Sequence[str], broken: str | None
) -> Reply:
    """Fork the child `request` asks for; a standby one imports what its program imports first and
    then waits for its Go."""
    reason = broken or fork_unsafe()
    if reason:
        return protocol.Refused(request.id, reason)
    ready, started = os.pipe()
    go, told = os.pipe() if request.child.standby else (None, None)
    pid = os.fork()
    if pid == 0:
        os.close(ready)
        if told is not None:
            os.close(told)
        _child(request.child, site_tail, [sock.fileno(), *children.fds()], started, go)
    os.close(started)
    if go is not None and told is not None:
        os.close(go)
        children.standby[request.id] = told
    os.read(ready, 1)  # EOF once the child called setsid (or died): its group can be killed now
    os.close(ready)
    children.running[os.pidfd_open(pid)] = (request, pid)
    return protocol.Forked(request.id, pid)


def _reap(sock: socket.socket, pidfd: int, children: Children) -> None:
    """A child or the probe ended."""
    if children.probe and pidfd == children.probe.pidfd:
        _probed(children)
        return
    request, pid = children.running.pop(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    children.go(request.id, b"")
    _send(sock, protocol.Exited(request.id, os.waitstatus_to_exitcode(status)))
    children.learned(request)


def _stop(children: Children) -> None:
    """gbbot went away: nothing it started may outlive it."""
    for _, pid in children.running.values():
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    if children.probe:
        with contextlib.suppress(OSError):
            os.kill(children.probe.pid, signal.SIGKILL)


def _request(line: bytes) -> Any:
    """The request on `line`; None for anything else (a bug in gbbot, or not gbbot writing)."""
    try:
        message = protocol.decode(line)
    except protocol.ProtocolError:
        return None
    return message if isinstance(message, protocol.Request) else None


def serve(sock: socket.socket, site_tail: Sequence[str], learn: bool, warm: Callable[[], str | None] = warm_up) -> None:
    """Fork a child per request and report each one's exit; tell a standby child when its turn
    comes. The warm-up runs right after the first fork, beside that child (on another core),
    instead of before it: gbbot waits for no one. What the server learns to preload is tried in a
    probe and imported one module at a time between messages. A line that is not a request ends
    the server as gbbot's going away does: gbbot's runs learn that the server stopped."""
    children = Children(learn)
    pending = b""
    warmed = False
    broken: str | None = None  # why no child may be forked any more
    while True:
        importing = bool(children.importing) and not broken
        readable, _, _ = select.select([sock, *children.waiting()], [], [], 0 if importing else None)
        if not readable:
            broken = children.import_next() or broken
            continue
        for ready in readable:
            if ready is not sock:
                _reap(sock, ready, children)
                _learn(sock, children, broken)
                continue
            data = sock.recv(1 << 16)
            *lines, pending = (pending + data).split(b"\n")
            for message in map(_request, lines) if data else [None]:  # no data: gbbot went away
                if message is None:
                    _stop(children)
                    return
                if isinstance(message, protocol.Go):
                    children.go(message.id)
                elif isinstance(message, protocol.Installed):
                    children.installed = frozenset(message.names)
                else:
                    _send(sock, _fork(sock, message, children, site_tail, broken))
                    if not warmed:
                        warmed, broken = True, warm()


def _site_tail() -> list[str]:
    """sys.path without this file's directory and PYTHONPATH's entries: what every interpreter
    started with the same installation has after them."""
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return sys.path[1 + len(given) :]


def main(
    argv: list[str], required: Sequence[str] = ("torch", "torch._dynamo"), warm: Callable[[], str | None] = warm_up
) -> int:
    """Serve on the socket `argv[0]` names, after importing `required` and the preload list (the
    unit tests, which may not import torch, pass none and no warm-up)."""
    learn = argv[1:2] == ["--learn"]
    argv = [argv[0], *argv[1 + learn :]]
    sock = socket.socket(fileno=int(argv[0]))
    site_tail = _site_tail()
    del sys.path[0]  # this file's directory
    for name in (*required, *argv[1:]):
        try:
            importlib.import_module(name)
        except BaseException as exc:
            _send(sock, protocol.Ready(f"`import {name}` failed: {type(exc).__name__}: {exc}"))
            return 0
    reason = fork_unsafe()
    _send(sock, protocol.Ready(reason))
    if reason is None:
        serve(sock, site_tail, learn, warm)
    # Nothing to flush (no output, no files), and an interpreter that imported torch takes about a
    # second to tear itself down, which gbbot would wait for on its way out.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

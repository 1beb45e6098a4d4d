"""gbbot fast mode, loaded through PYTHONPATH into every Python process an entrypoint starts.

When `torch` is imported, `torch.compile` (and so `nn.Module.compile`, which calls it) is wrapped
to use a backend that captures the FX graph and generates no code. Dynamo's tracing — and so every
graph break — is unchanged; only Inductor's code generation, most of a CPU run's time, is skipped.
Standalone on purpose: it must not import gbbot, and it must cost nothing when torch is not used.

It also counts, cheaply, what the run did with what Dynamo made: how many times each captured
graph ran (by the compile that made it) and how many times each compiled callable was called, and
writes that beside the trace at exit (RUNS_PREFIX + pid + ".json" in TORCH_TRACE's directory).
GBBOT_COUNT=0 in an entrypoint's `env:` turns the counting off (bench/bench_cost.py measures what
it costs that way).

In faithful mode with GBBOT_TIME=1 (`gbbot fix --measure`), torch.compile is left as it is and
only each compiled callable's calls are timed: the wall time of every outermost call during which
Dynamo converted no frame (a steady-state call: nothing compiled, nothing recompiled), CUDA
synchronised around it once torch.cuda is initialised. Written beside the trace at exit
(TIMES_PREFIX + pid + ".json"); read back by gbbot/trace/call_times.py.
"""

import atexit
import functools
import gc
import importlib.abc
import importlib.util
import json
import os
import sys
import time

_ACTIVE = os.environ.get("GBBOT_MODE") == "fast"
_COUNTING = os.environ.get("GBBOT_COUNT") != "0"
_TIMING = os.environ.get("GBBOT_TIME") == "1" and not _ACTIVE
RUNS_PREFIX = "gbbot-runs-"
TIMES_PREFIX = "gbbot-times-"
OP_KINDS = ("call_function", "call_method", "call_module")
_GRAPHS = []  # one record per captured graph, in capture order
_CALLS = {}  # (file, first line, name) of the compiled code -> its record


def _compile_id():
    try:
        from torch._guards import CompileContext

        found = CompileContext.current_compile_id()
    except Exception:
        return None
    return None if found is None else str(found)


def _capture_backend(gm, example_inputs):
    forward = gm.forward
    if not _COUNTING:
        return forward
    nodes = list(gm.graph.nodes)
    graph = {"compile_id": _compile_id(), "ops": sum(n.op in OP_KINDS for n in nodes), "nodes": len(nodes), "runs": 0}
    _GRAPHS.append(graph)

    def run(*args):
        graph["runs"] += 1
        return forward(*args)

    return run


def _code_of(torch, model):
    """The code a compiled callable starts in: a module's forward (also for `nn.Module.compile`,
    which compiles the module's `_call_impl`), else the function's own."""
    owner = getattr(model, "__self__", None)
    if isinstance(owner, torch.nn.Module) and getattr(model, "__name__", "") == "_call_impl":
        model = owner
    if isinstance(model, torch.nn.Module):
        model = type(model).forward
    code = getattr(getattr(model, "__func__", model), "__code__", None)
    return None if code is None else (code.co_filename, code.co_firstlineno, code.co_name)


def _counter(torch, model):
    """A function that counts one call of `model`'s compiled form: outside a compile only, so
    that an outer torch.compile tracing through it sees no side effect."""
    key = _code_of(torch, model)
    if key is None:
        return None
    record = _CALLS.setdefault(key, {"file": key[0], "line": key[1], "name": key[2], "calls": 0})
    compiling = torch.compiler.is_compiling

    def count(*_args):
        if not compiling():
            record["calls"] += 1

    return count


def _counted(torch, model, compiled):
    count = _counter(torch, model)
    return compiled if count is None else _wrapped(torch, compiled, count)


def _wrapped(torch, compiled, before, after=None):
    """`compiled`, calling `before` as each of its calls starts and `after` as it ends (raising
    too): a module's forward hooks, else a wrapper function."""
    if isinstance(compiled, torch.nn.Module):
        compiled.register_forward_pre_hook(before)
        if after is not None:
            compiled.register_forward_hook(after, always_call=True)
        return compiled

    @functools.wraps(compiled)
    def call(*args, **kwargs):
        before()
        try:
            return compiled(*args, **kwargs)
        finally:
            if after is not None:
                after()

    return call


def _trace_log():
    """The file this process's structured trace went to (its name), or None."""
    internal = sys.modules.get("torch._logging._internal")
    stream = getattr(getattr(internal, "LOG_TRACE_HANDLER", None), "stream", None)
    try:
        return os.path.basename(os.readlink(f"/proc/self/fd/{stream.fileno()}"))
    except (AttributeError, OSError, ValueError):
        return None


def _write(prefix, record):
    """`record` beside the trace, in PREFIX + pid + ".json"."""
    directory = os.environ["TORCH_TRACE"]
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{prefix}{os.getpid()}.json"), "w", encoding="utf-8") as handle:
        json.dump(record, handle)


def _write_runs():
    if os.environ.get("TORCH_TRACE") and (_GRAPHS or _CALLS):
        _write(RUNS_PREFIX, {"trace_log": _trace_log(), "graphs": _GRAPHS, "calls": list(_CALLS.values())})


def _patch_compile(torch, fast=True):
    """torch.compile wrapped: in fast mode with the capturing backend and its callables counted,
    else (GBBOT_TIME=1) as it is, its callables timed."""
    original = torch.compile

    @functools.wraps(original)
    def compile(model=None, **kwargs):
        if fast:
            kwargs["backend"] = _capture_backend
            kwargs.pop("mode", None)  # Inductor-only settings
            kwargs.pop("options", None)
        if model is None:  # @torch.compile(...) with arguments: the decorator comes back
            return lambda fn: compile(fn, **kwargs)
        compiled = original(model, **kwargs)
        if not fast:
            return _timed(torch, model, compiled)
        return _counted(torch, model, compiled) if _COUNTING else compiled

    torch.compile = compile
    atexit.register(_write_runs if fast else _write_times)


# --- timing (faithful mode, GBBOT_TIME=1) --------------------------------------------------------

_TIMED = {}  # (file, first line, name) of the compiled code -> its timing record
_DEPTH = [0]  # compiled calls under way: only the outermost is timed


def _frames_converted():
    """How many frames Dynamo has been asked to convert so far: a call that moves it compiled."""
    utils = sys.modules.get("torch._dynamo.utils")
    return utils.counters["frames"]["total"] if utils is not None else 0


def _synchronise(torch):
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()


class _CallTimer:
    """Times the outermost calls of one compiled callable (outside a compile only)."""

    def __init__(self, torch, record):
        self.torch, self.record, self.began, self.frames = torch, record, 0.0, 0

    def start(self, *_args):
        if self.torch.compiler.is_compiling():
            return
        _DEPTH[0] += 1
        if _DEPTH[0] == 1:
            _synchronise(self.torch)
            self.frames, self.began = _frames_converted(), time.perf_counter()

    def stop(self, *_args):
        if self.torch.compiler.is_compiling() or _DEPTH[0] == 0:
            return
        _DEPTH[0] -= 1
        if _DEPTH[0]:
            return
        _synchronise(self.torch)
        elapsed = time.perf_counter() - self.began
        if _frames_converted() != self.frames:
            self.record["compiled_calls"] += 1
        else:
            self.record["steady_calls"] += 1
            self.record["steady_s"] += elapsed


def _timed(torch, model, compiled):
    key = _code_of(torch, model)
    if key is None:
        return compiled
    empty = {"file": key[0], "line": key[1], "name": key[2], "compiled_calls": 0, "steady_calls": 0, "steady_s": 0.0}
    timer = _CallTimer(torch, _TIMED.setdefault(key, empty))
    return _wrapped(torch, compiled, timer.start, timer.stop)


def _write_times():
    if os.environ.get("TORCH_TRACE") and _TIMED:
        cuda = sys.modules.get("torch.cuda")
        device = "cuda" if cuda is not None and cuda.is_initialized() else "cpu"
        _write(TIMES_PREFIX, {"device": device, "calls": list(_TIMED.values())})


def _patch_optimize(dynamo):
    optimize = dynamo.optimize

    @functools.wraps(optimize)
    def optimize_capture(*args, **kwargs):
        if args:
            args = (_capture_backend, *args[1:])
        else:
            kwargs["backend"] = _capture_backend
        return optimize(*args, **kwargs)

    dynamo.optimize = optimize_capture
    _lighter_compiles()


# --- what a check need not pay for (fast mode) ----------------------------------------------------

# Dynamo makes hundreds of thousands of short-lived objects per compile. With the interpreter's
# defaults (a young collection every 700 allocations) the cyclic collector runs thousands of times
# in a check, and now and then walks the whole heap, every object importing torch and a model
# library made included: 1.2-1.6 s of the 12 s three tiny transformers models take to trace. What
# is alive when torch._dynamo has been imported lives as long as the process, so it is moved out of
# the collector's sight (gc.freeze), and young collections wait for 50,000 allocations.
GC_THRESHOLD = (50_000, 10, 10)


def _no_guard_latency(*_args):
    return 0.0


def _lighter_compiles():
    """Fast mode only; neither changes what Dynamo traces, guards or reports as a break.
    - The collector's settings above.
    - Dynamo's guard-latency figure: after building a frame's guards it flushes the CPU caches and
      times one evaluation (torch._dynamo.guards.profile_guard_manager), about 19 ms a compile, for
      a telemetry number gbbot never reads (compilation_metrics' guard_latency_us, 0 here). The
      guards are still built and checked."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    guards = sys.modules.get("torch._dynamo.guards")
    if guards is not None and hasattr(guards, "profile_guard_manager"):
        guards.profile_guard_manager = _no_guard_latency


# Patched when (and only if) the program imports them: importing torch._dynamo eagerly would add
# over a second to every process that imports torch without compiling anything.
_PATCHES = {"torch": _patch_compile, "torch._dynamo": _patch_optimize}


class _ImportHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = _PATCHES.pop(name, None)
        if patch is None:
            return None
        if not _PATCHES:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def _chain_next_sitecustomize():
    """Run the sitecustomize this one shadows (a distribution's or a virtualenv's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or ".") == here:
            continue
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_gbbot_chained_sitecustomize", candidate)
            if spec and spec.loader:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


if _TIMING:
    _PATCHES = {"torch": functools.partial(_patch_compile, fast=False)}
if _ACTIVE or _TIMING:
    for _name in [n for n in _PATCHES if n in sys.modules]:
        _PATCHES.pop(_name)(sys.modules[_name])
    if _PATCHES:
        sys.meta_path.insert(0, _ImportHook())
# Loaded by the warm server's child under another name, after the real sitecustomize already ran.
if __name__ == "sitecustomize":
    _chain_next_sitecustomize()

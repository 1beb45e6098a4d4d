"""The git edge: everything gbbot asks git goes through here, through one runner (`run`).

Entrypoints run the repository's code, as the same user as gbbot, before most of gbbot's git
calls. That code can write the repository's `.git/config` (`core.fsmonitor`, `filter.*`,
`include.path`, …), `.git/info/attributes`, hooks, and the user's `~/.gitconfig`, each of which
makes git run a program of its choosing. So every git call here:

- runs with a minimal environment: no token, no secret-looking variable, none of the caller's
  `GIT_*` except the commit identity; the one credential a call needs is added to that call alone;
- reads the system and global config from private copies made the first time gbbot used git in
  this process (`gbbot` makes them at start, before any entrypoint), not the files PR code can
  write;
- finds the repository's config and attributes as they were when they were first pinned (before
  the first entrypoint ran in that repository, or at gbbot's start), restoring the pinned bytes
  when they changed (and saying so);
- and turns off, on its command line, which outranks every file: hooks, fsmonitor, the pager,
  external diff and text conversion, ssh and proxy commands, credential helpers, askpass, signing,
  and ext:: transports.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from gbbot.core.errors import CalledProcessError, GitError
from gbbot.core.secret_names import looks_secret, matches
from gbbot.edges import process, runas
from gbbot.edges.console import say
from gbbot.edges.interrupt import sigterm_as_interrupt

# On every call's command line: the settings that make git run something else, made inert.
HARDENED = (
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
    "-c", "core.sshCommand=ssh", "-c", "core.gitProxy=", "-c", "core.askPass=", "-c", "credential.helper=",
    "-c", "core.attributesFile=/dev/null", "-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false",
    "-c", "core.editor=false", "-c", "sequence.editor=false", "-c", "protocol.ext.allow=never",
    "--no-pager",
)  # fmt: skip
# Commands that read the working tree or print diffs also get these (external diff, textconv).
_DIFF_FLAGS = {name: ("--no-ext-diff", "--no-textconv") for name in ("diff", "log", "show")}
# What a git call inherits of gbbot's environment: finding programs, a home, the locale, the
# commit identity. Everything else (tokens, GIT_DIR, GIT_SSH_COMMAND, GIT_CONFIG_*, …) stays out.
_PASSED = (
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "SYSTEMROOT",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
)  # fmt: skip
# The repository files that can make git run programs (the rest of .git is data).
PINNED_FILES = ("config", "config.worktree", "info/attributes")


def _environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if matches(k, _PASSED) and not looks_secret(k)}
    user = _user_config()
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_SYSTEM=user.system, GIT_CONFIG_GLOBAL=user.global_)
    env.update(extra or {})
    return env


def _argv(args: Sequence[str]) -> list[str]:
    command = next((a for a in args if not a.startswith("-")), "")
    flags = _DIFF_FLAGS.get(command, ())
    if flags:
        at = list(args).index(command) + 1
        args = [*args[:at], *flags, *args[at:]]
    program = git_program()
    if program is None:
        raise GitError(NO_GIT)
    return [program, *HARDENED, *args]


def run(
    root: Path,
    *args: str,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> tuple[int, bytes, str]:
    """`git ARGS` in `root`, hardened as this module's docstring says, with bytes in and out
    (blobs are not text) and `env` added for this call alone (a temporary index, a credential
    kept out of argv). With check, a failure raises GitError naming the command (never `env`)."""
    _guard(root)
    try:
        finished = process.run(_argv(args), cwd=root, env=_environment(env), stdin=stdin, pass_fds=_user_config().fds)
    except FileNotFoundError as exc:
        raise GitError(f"git is not installed: {exc}") from None
    err = finished.stderr.decode("utf-8", "replace")
    if check and finished.code != 0:
        raise GitError(f"git {' '.join(args[:3])} failed (exit {finished.code}): {err.strip()[-500:]}")
    return finished.code, finished.stdout, err


def _text(root: Path, *args: str, check: bool = False) -> tuple[int, str, str]:
    """`run` with text out; with check, a failure raises CalledProcessError (command, code, output)."""
    code, out, err = run(root, *args, check=False)
    text = out.decode("utf-8", "replace")
    if check and code != 0:
        raise CalledProcessError(["git", *args], code, text, err)
    return code, text, err


# --- what PR code cannot change: the user's config, and each repository's config ----------------


@dataclass(frozen=True)
class UserConfig:
    """Where git reads the system and global config: sealed in-memory copies (`fds`, passed to each
    git process, which opens them as /proc/self/fd/N), or, where Linux's sealed memfd is missing,
    files in a private temporary directory."""

    system: str
    global_: str
    fds: tuple[int, ...] = ()


_LOCK = threading.RLock()
_USER_CONFIG: dict[tuple[str, ...], UserConfig] = {}
_GIT: list[str] = []  # git's absolute path, resolved once ("": none only root could have put there)
_PINS: dict[Path, dict[str, bytes | None]] = {}  # git dir → {file: bytes, None when absent}
_GIT_DIRS: dict[Path, Path] = {}
_PRIVATE: list[Path] = []


def _private_dir() -> Path:
    if not _PRIVATE:
        _PRIVATE.append(Path(tempfile.mkdtemp(prefix="gbbot-git-")))
        atexit.register(shutil.rmtree, _PRIVATE[0], True)
    return _PRIVATE[0]


def _user_config_sources() -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """The system and global config files git would read with this environment."""
    system = Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        return (system,), (Path(os.environ["GIT_CONFIG_GLOBAL"]),)
    home = Path(os.environ.get("HOME") or Path.home())
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git" / "config"
    return (system,), (xdg, home / ".gitconfig")  # git reads the XDG file first, ~/.gitconfig over it


def _user_config() -> UserConfig:
    """Private copies of the system and global config, made the first time these sources were
    seen in this process; later changes to the originals are not read. Sealed in memory where
    Linux allows: a file in a temporary directory is one that code of the same user can append
    `http.proxy` to (the push, Authorization header and all, through its proxy); a sealed memfd
    cannot be written by anyone, root included."""
    systems, globals_ = _user_config_sources()
    key = tuple(str(p) for p in (*systems, *globals_))
    with _LOCK:
        if key not in _USER_CONFIG:
            contents = [b"\n".join(_read(p) or b"" for p in sources) + b"\n" for sources in (systems, globals_)]
            _USER_CONFIG[key] = _sealed_copies(contents) or _file_copies(contents)
        return _USER_CONFIG[key]


def _sealed_copies(contents: Sequence[bytes]) -> UserConfig | None:
    seals = ("F_ADD_SEALS", "F_SEAL_WRITE", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_SEAL")
    if not hasattr(os, "memfd_create") or not all(hasattr(fcntl, name) for name in seals):
        return None
    fds = []
    try:
        for content in contents:
            fd = os.memfd_create("gbbot-git-config", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            fds.append(fd)
            os.write(fd, content)  # a config is small: one write
            sealed = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, sealed)
    except OSError:
        for fd in fds:
            os.close(fd)
        return None
    return UserConfig(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}", tuple(fds))


def _file_copies(contents: Sequence[bytes]) -> UserConfig:
    scratch = Path(tempfile.mkdtemp(prefix="config-", dir=_private_dir()))
    copies = []
    for name, content in zip(("system", "global"), contents, strict=True):
        (scratch / name).write_bytes(content)
        copies.append(str(scratch / name))
    return UserConfig(copies[0], copies[1])


# Where a git that only root can have put there is looked for after PATH.
SYSTEM_DIRECTORIES = ("/usr/bin", "/bin", "/usr/local/bin")
NO_GIT = (
    "no git in a directory that only root can write (on PATH, or /usr/bin): gbbot runs no git that "
    "the repository's code, in this run or an earlier one, could have put in its place"
)


def git_program() -> str | None:
    """git's absolute path, looked up the first time it is asked (gbbot asks at start, before any
    code of the repository ran), and only where root alone could have put it: a file that, with
    every directory above it, root owns and nobody else can write. So an executable named `git`
    planted in a directory of PATH the repository's code can write (gbbot's own virtualenv's
    `bin/`, where gbbot runs as that code's user, on a runner that keeps it from one run to the
    next) is never run. None when there is no such git."""
    with _LOCK:
        if not _GIT:
            directories = [d for d in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(d)]
            found = (Path(d, "git").resolve() for d in (*directories, *SYSTEM_DIRECTORIES))
            _GIT.append(next((str(g) for g in found if _root_only(g) and os.access(g, os.X_OK)), ""))
        return _GIT[0] or None


def _root_only(path: Path) -> bool:
    """`path` exists and it and every directory above it are root's, writable by root alone."""
    try:
        return all((st := p.stat()).st_uid == 0 and not st.st_mode & 0o022 for p in (path, *path.parents))
    except OSError:
        return False


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def _git_dir(root: Path) -> Path | None:
    """The repository's common git directory (where config lives), or None outside one."""
    key = Path(os.path.abspath(root))
    with _LOCK:
        if key not in _GIT_DIRS:
            try:
                argv = _argv(["rev-parse", "--path-format=absolute", "--git-common-dir"])
                finished = process.run(argv, cwd=root, env=_environment(None), pass_fds=_user_config().fds)
            except (FileNotFoundError, NotADirectoryError, GitError):
                return None
            found = finished.stdout.decode("utf-8", "replace").strip()
            if finished.code != 0 or not found:
                return None  # not (yet) a repository: asked again next time
            _GIT_DIRS[key] = Path(found)
        return _GIT_DIRS[key]


def pin(root: Path) -> None:
    """Remember the config and attributes of `root`'s repository as they are now, unless they were
    pinned before (the first pin wins: later code may be what changed them). Called before any
    entrypoint runs there, and by `gbbot` at start for the repository it starts in."""
    git_program()
    _user_config()
    git_dir = _git_dir(root)
    if git_dir is None:
        return
    with _LOCK:
        _PINS.setdefault(git_dir, {name: _read(git_dir / name) for name in PINNED_FILES})


def _guard(root: Path) -> None:
    """Put the pinned config and attributes of `root`'s repository back where they changed."""
    if not _PINS:
        return
    git_dir = _git_dir(root)
    pinned = _PINS.get(git_dir) if git_dir else None
    if not pinned or git_dir is None:
        return
    with _LOCK:
        for name, content in pinned.items():
            path = git_dir / name
            if _read(path) == content and not path.is_symlink():
                continue
            say(f"{path} changed after it was pinned (code that ran since?); restored")
            with contextlib.suppress(FileNotFoundError):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            if content is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)


def _zero_separated(out: str) -> list[str]:
    """git's -z output: the NUL-separated fields, without empty ones."""
    return [p for p in out.split("\0") if p]


def head_sha(root: Path) -> str | None:
    """HEAD's commit, or None outside a git repository (or before the first commit)."""
    code, out, _ = _text(root, "rev-parse", "--verify", "-q", "HEAD")
    return out.strip() if code == 0 and out.strip() else None


def toplevel(path: Path) -> Path | None:
    code, out, _ = _text(path, "rev-parse", "--show-toplevel")
    return Path(out.strip()) if code == 0 else None


# --- diff against the merge-base -------------------------------------------------------------

FETCH_MORE = (
    "fetch more history: `git fetch --unshallow` (or `git fetch origin <branch>`), "
    "or with actions/checkout set `fetch-depth: 0`"
)


def is_shallow(root: Path) -> bool:
    _, out, _ = _text(root, "rev-parse", "--is-shallow-repository")
    return out.strip() == "true"


def branches(root: Path) -> tuple[str, ...]:
    _, out, _ = _text(root, "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/remotes")
    return tuple(line for line in out.splitlines() if line and not line.endswith("/HEAD"))


def resolve(root: Path, ref: str) -> str:
    """The commit `ref` names, or GitError saying why not: a name that does not exist here is a
    typo or a branch not fetched (e.g. `main` where the branch is `master`), not missing history."""
    code, out, _ = _text(root, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}")
    if code == 0 and out.strip():
        return out.strip()
    if _text(root, "rev-parse", "--verify", "-q", ref)[0] == 0:  # it names a branch, tag or object here
        raise GitError(f"git ref {ref!r} names a commit this clone does not have (it is shallow): {FETCH_MORE}")
    if is_shallow(root):
        # actions/checkout's default: one commit of one branch, so the base is simply not here.
        raise GitError(f"unknown git ref {ref!r} (this clone is shallow): {FETCH_MORE}")
    known = branches(root)
    listed = f"; branches here: {', '.join(known[:8])}{', …' if len(known) > 8 else ''}" if known else ""
    raise GitError(f"unknown git ref {ref!r}: no branch, tag or commit has that name here{listed}")


def merge_base(root: Path, ref: str, head: str = "HEAD") -> str:
    """The commit a PR from `head` into `ref` is compared with."""
    base, tip = resolve(root, ref), resolve(root, head)
    code, out, err = _text(root, "merge-base", base, tip)
    if code == 0 and out.strip():
        return out.strip()
    if code == 1 and is_shallow(root):
        raise GitError(f"no merge-base of {ref!r} and {head}: this clone is shallow; {FETCH_MORE}")
    if code == 1:
        raise GitError(f"{ref!r} and {head} have no common history, so there is no merge-base to compare with")
    raise GitError(f"git merge-base {ref} {head} failed: {err.strip()}")


def changed_paths(root: Path) -> tuple[str, ...]:
    """Paths with uncommitted changes (tracked or untracked), as `git status` shows them."""
    _, out, _ = _text(root, "status", "--porcelain", "-z")
    entries = _zero_separated(out)
    paths, skip = [], False
    for entry in entries:
        if skip:  # the origin path of a rename: already counted by its destination
            skip = False
            continue
        paths.append(entry[3:])
        skip = bool({"R", "C"} & set(entry[:2]))
    return tuple(paths)


def renames(root: Path, base: str, head: str | None = None) -> dict[str, str]:
    """{old path: new path} for files git sees as renamed from `base` to `head` (None: the
    working tree), paths relative to the repository's top level."""
    spec = [base] if head is None else [base, head]
    _, out, _ = _text(root, "diff", "-M", "--name-status", "-z", *spec, "--", check=True)
    fields = out.split("\0")
    found: dict[str, str] = {}
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[0] in "RC":
            if status[0] == "R":
                found[fields[i + 1]] = fields[i + 2]
            i += 3
        else:
            i += 2
    return found


def tree_files(root: Path, commit: str) -> tuple[str, ...]:
    """Every file of `commit`, relative to the repository's top level."""
    return tuple(_tree(root, commit))


def _tree(root: Path, commit: str) -> dict[str, tuple[str, str]]:
    """{path: (mode, object id)} of every file of `commit` (a submodule is listed with its own mode)."""
    _, out, _ = _text(root, "ls-tree", "-r", "--full-tree", "-z", commit, check=True)
    found = {}
    for line in _zero_separated(out):
        meta, _, path = line.partition("\t")
        mode, _kind, sha = meta.split()[:3]
        found[path] = (mode, sha)
    return found


def name_status(root: Path, commit: str, head: str | None = None) -> tuple[tuple[str, str], ...]:
    """(status, path) of each tracked file that differs between `commit` and `head` (None: the
    working tree), a rename as the removal and the addition it is made of; paths relative to the
    top level."""
    spec = [commit] if head is None else [commit, head]
    _, out, _ = _text(root, "diff", "--no-renames", "--name-status", "-z", *spec, "--", check=True)
    fields = _zero_separated(out)
    return tuple(zip(fields[0::2], fields[1::2], strict=False))  # a torn last pair is dropped


def untracked(root: Path) -> tuple[str, ...]:
    """Files git would track but does not yet (not ignored), relative to the top level."""
    _, out, _ = _text(root, "ls-files", "-z", "--others", "--exclude-standard", "--full-name", ":/", check=True)
    return tuple(_zero_separated(out))


@dataclass(frozen=True)
class Snapshot:
    """What git says of the working tree and the merge-base of a ref and HEAD, asked once before
    anything runs. Paths are relative to the top level."""

    top: Path
    prefix: str  # the directory asked about below the top level, "" for the top level itself
    head: str | None  # HEAD's commit
    base: str  # the merge-base's
    uncommitted: tuple[str, ...]  # as `git status` lists them
    differ: tuple[tuple[str, str], ...]  # `name_status` against the base
    renames: Mapping[str, str]  # old path → new path, against the base
    untracked: tuple[str, ...]
    lines: str  # `git diff -M -U0 BASE`: the changed lines against the base, without context
    base_files: tuple[str, ...]
    # the base's content of each regular file among the paths that differ below `prefix`, and `also`
    base_blobs: Mapping[str, bytes]


def snapshot(root: Path, ref: str, also: Sequence[Path] = ()) -> Snapshot | None:
    """The working tree at `root` against the merge-base of `ref` and HEAD (GitError when there is
    none); None when `root` is in no git repository."""
    top = toplevel(root)
    if top is None:
        return None
    base, real = merge_base(top, ref), top.resolve()
    prefix = root.resolve().relative_to(real).as_posix()
    prefix = "" if prefix == "." else prefix
    differ, files = name_status(top, base), _tree(top, base)
    inside = f"{prefix}/" if prefix else ""
    wanted = [path for _, path in differ if path.startswith(inside)]
    wanted += [p.resolve().relative_to(real).as_posix() for p in also if p.resolve().is_relative_to(real)]
    wanted = [path for path in dict.fromkeys(wanted) if path in files and files[path][0].startswith("100")]
    blobs = dict(zip(wanted, read_blobs(top, [files[path][1] for path in wanted]), strict=True))
    lines = run(top, "diff", "-M", "-U0", "--no-color", "--no-ext-diff", base)[1].decode("utf-8", "replace")
    found = (changed_paths(top), differ, renames(top, base), untracked(top), lines)
    return Snapshot(top, prefix, head_sha(top), base, *found, tuple(files), blobs)


def _remove_worktree(root: Path, path: Path) -> None:
    run(root, "worktree", "remove", "--force", "--force", str(path), check=False)
    shutil.rmtree(path, ignore_errors=True)
    run(root, "worktree", "prune", check=False)


@contextlib.contextmanager
def worktree(root: Path, commit: str, parent: Path | None = None) -> Iterator[Path]:
    """Check `commit` out in a temporary, detached worktree; removed on the way out, however that
    happens (success, exception, Ctrl-C, SIGTERM). The user's working tree is never touched."""
    scratch = Path(tempfile.mkdtemp(prefix="gbbot-base-", dir=parent))
    path = scratch / "tree"
    with sigterm_as_interrupt():
        try:
            _text(root, "worktree", "add", "--detach", "--quiet", str(path), commit, check=True)
            yield path
        finally:
            _remove_worktree(root, path)
            shutil.rmtree(scratch, ignore_errors=True)


def listed_files(root: Path) -> tuple[str, ...] | None:
    """Files under `root` that git tracks or would track (untracked, not ignored), relative to
    `root`; None when `root` is not in a git repository."""
    code, out, _ = _text(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return tuple(sorted(set(_zero_separated(out)))) if code == 0 else None


def ignored_entries(root: Path) -> tuple[str, ...]:
    """What git ignores under `root` (whole directories as `dir/`), relative to `root`."""
    code, out, _ = _text(root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
    return tuple(sorted(set(_zero_separated(out)))) if code == 0 else ()


# --- plumbing for data branches (the audit's history) -----------------------------------------


def ref_sha(root: Path, ref: str) -> str | None:
    """The commit `ref` points at, or None when there is no such ref."""
    code, out, _ = run(root, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    return out.decode().strip() or None if code == 0 else None


def commit_with_file(root: Path, parent: str | None, path: str, content: bytes, message: str) -> str:
    """A new commit: `parent`'s tree (none: empty) plus one file, made without touching the
    working tree, the index or HEAD (a temporary index); returns its sha."""
    return commit_files(root, parent, {path: ("100644", content)}, message)


def commit_files(
    root: Path,
    parent: str | None,
    files: Mapping[str, tuple[str, bytes]],
    message: str,
    identity: Mapping[str, str] | None = None,
) -> str:
    """A new commit: `parent`'s tree (none: empty) with `files` ({path: (mode, content)}) written
    over it, made without touching the working tree, the index or HEAD (a temporary index), and
    without hooks or content filters (the blobs are hashed as given); returns its sha."""
    with tempfile.TemporaryDirectory(prefix="gbbot-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), **COMMITTER, **(identity or {})}
        run(root, "read-tree", *([parent] if parent else ["--empty"]), env=env)
        for path, (mode, content) in files.items():
            blob = run(root, "hash-object", "-w", "--stdin", stdin=content)[1].decode().strip()
            run(root, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        tree = run(root, "write-tree", env=env)[1].decode().strip()
        parents = ["-p", parent] if parent else []
        return run(root, "commit-tree", tree, *parents, "-m", message, env=env)[1].decode().strip()


def list_tree(root: Path, commit: str, directory: str) -> tuple[tuple[str, str, int], ...]:
    """(path, blob sha, size) of the files directly under `directory` in `commit`."""
    _, out, _ = run(root, "ls-tree", "-z", "-l", commit, f"{directory.rstrip('/')}/")
    entries = []
    for line in out.decode("utf-8", "replace").split("\0"):
        if not line:
            continue
        meta, _, path = line.partition("\t")
        kind, sha, size = meta.split()[1:4]
        if kind == "blob" and size.isdigit():
            entries.append((path, sha, int(size)))
    return tuple(entries)


def read_blobs(root: Path, shas: Sequence[str]) -> tuple[bytes, ...]:
    """The contents of the blobs `shas`, in one `git cat-file --batch`."""
    if not shas:
        return ()
    _, out, _ = run(root, "cat-file", "--batch", stdin="".join(f"{s}\n" for s in shas).encode())
    blobs, at = [], 0
    for _ in shas:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        blobs.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return tuple(blobs)


# Who the data branch's commits are by: gbbot, not whoever's identity the machine has.
COMMITTER = {
    "GIT_AUTHOR_NAME": "gbbot",
    "GIT_AUTHOR_EMAIL": "gbbot@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "gbbot",
    "GIT_COMMITTER_EMAIL": "gbbot@users.noreply.github.com",
}


# --- pushing with a token -----------------------------------------------------------------------


@dataclass(frozen=True)
class Remote:
    """A repository's clone URL and a token that may push to it. The credential travels only in
    the child git's environment (as an `http.<origin>/.extraheader` that first resets any header a
    checkout left for the same origin), never in argv, a URL, the repository's config or a log."""

    url: str
    token: str

    def __repr__(self) -> str:  # never print the token
        return f"Remote(url={self.url!r})"

    @property
    def env(self) -> dict[str, str]:
        """The credential as configuration in the environment: the first entry empties the list
        of headers for this origin (a header a checkout persisted), the second adds ours."""
        parts = urlsplit(self.url)
        key = f"http.{parts.scheme}://{parts.netloc}/.extraheader"
        basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        return {
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": key,
            "GIT_CONFIG_VALUE_0": "",
            "GIT_CONFIG_KEY_1": key,
            "GIT_CONFIG_VALUE_1": f"AUTHORIZATION: basic {basic}",
        }


def push(root: Path, remote: Remote, commit: str, branch: str, replacing: str | None = None) -> str | None:
    """Push `commit` to `branch` without force (git refuses anything but a fast-forward); None
    when it went through, else git's last line saying why not. `replacing`: the tip the caller
    read and judged to be gbbot's own; the branch is then moved even where that is no
    fast-forward, but only while the remote still has exactly that tip (a lease), so a commit
    pushed by someone else in between is never overwritten."""
    ref = f"refs/heads/{branch}"
    lease = [f"--force-with-lease={ref}:{replacing}"] if replacing else []
    args = ["push", "--quiet", *lease, "--", remote.url, f"{commit}:{ref}"]
    runas.end_untrusted()
    code, _, err = run(root, *args, env=remote.env, check=False)
    if code == 0:
        return None
    lines = err.strip().splitlines()
    return lines[-1] if lines else f"exit {code}"


def fetch_branch(root: Path, remote: Remote, branch: str, into: str) -> str | None:
    """The remote branch's tip, fetched into the local ref `into` (never a branch of the clone);
    None when the remote has no such branch."""
    ref = f"refs/heads/{branch}"
    runas.end_untrusted()
    _, out, _ = run(root, "ls-remote", "--", remote.url, ref, env=remote.env)
    if not out.strip():
        return None
    run(root, "fetch", "--no-tags", "--quiet", "--", remote.url, f"+{ref}:{into}", env=remote.env)
    return ref_sha(root, into)


def tree_and_parents(root: Path, commit: str) -> tuple[str, tuple[str, ...]]:
    """`commit`'s tree and its parents."""
    _, out, _ = run(root, "show", "-s", "--format=%T %P", commit)
    tree, *parents = out.decode().split()
    return tree, tuple(parents)


def is_ancestor(root: Path, ancestor: str, commit: str) -> bool:
    code, _, _ = run(root, "merge-base", "--is-ancestor", ancestor, commit, check=False)
    return code == 0


def tree_entries(root: Path, commit: str, paths: Sequence[str]) -> dict[str, tuple[str, str, int]]:
    """{path: (mode, blob sha, size)} for those of `paths` that are in `commit` (a directory or a
    submodule is listed with its own mode, never as a blob)."""
    if not paths:
        return {}
    _, out, _ = run(root, "ls-tree", "-z", "-l", "--full-tree", commit, "--", *paths)
    found: dict[str, tuple[str, str, int]] = {}
    for line in out.decode("utf-8", "replace").split("\0"):
        if not line:
            continue
        meta, _, path = line.partition("\t")
        mode, _kind, sha, size = meta.split()[:4]
        found[path] = (mode, sha, int(size) if size.isdigit() else -1)
    return found


def recent_commits(root: Path, commit: str, count: int) -> tuple[tuple[str, str], ...]:
    """(author email, subject) of `commit` and its first parents, newest first, as far as the
    clone has them (a shallow clone may have fewer than `count`)."""
    code, out, _ = run(root, "log", f"-{count}", "--first-parent", "--format=%ae%x00%s", commit, check=False)
    if code != 0:
        return ()
    rows = [line.split("\0", 1) for line in out.decode("utf-8", "replace").splitlines() if "\0" in line]
    return tuple((email, subject) for email, subject in rows)

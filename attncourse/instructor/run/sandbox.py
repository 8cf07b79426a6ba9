"""Where a submission runs: a kernel inside a bubblewrap sandbox, in a throwaway folder.

Each kernel sees a read-only file system made of the system's programs and libraries,
the Python environment and a read-only copy of ``attncourse``; it can write only to its
own scratch folder. The course's chapters, the other submissions, the report and the
instructor's home are not there at all. It has no network (its own empty network
namespace), a cleared environment, its own process namespace (when the kernel is
stopped, every process it started goes with it) and no capabilities. bubblewrap
(https://github.com/containers/bubblewrap) sets all of this up; it is the sandbox of
Flatpak and needs no daemon.

It also has limits (``Limits``): its working folder, home and temporary folder are one
tmpfs of a fixed size, and util-linux's ``prlimit`` caps each of its processes' address
space (RLIMIT_AS: heap, mmap and memfd alike; RLIMIT_DATA misses the last two) and the
number of its processes and threads (RLIMIT_NPROC). prlimit runs inside the sandbox,
after bubblewrap made its user namespace: the kernel counts RLIMIT_NPROC per user *and
namespace* (Linux 5.14 and later), so each sandbox has its own count, apart from the
instructor's other processes and from the kernels beside it. The sandbox cannot make
user namespaces of its own (bubblewrap's ``--disable-userns``), so it cannot mount a
tmpfs of its own past the disk limit. Linux never applies RLIMIT_NPROC to root, so when
``grade`` runs as root, the kernel runs as ``nobody`` (util-linux's ``setpriv``) in a user
namespace made by a second, unprivileged bubblewrap, with ``--disable-userns`` too; once
the kernel has made its sockets, its one folder on the host's disk (``runtime``) is given
back to root, read-only to the kernel.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import attncourse
from attncourse.checks import TIMEOUT_VARIABLE
from attncourse.instructor.run import cgroups

UNSAFE_MEANS = (
    "Without a sandbox, each notebook still runs in a throwaway folder with a cleared "
    "environment and a read-only copy of attncourse, but as your own user: it can read, "
    "change and delete any file you can (the course's solutions, the other submissions, "
    "the report), use the network, and leave processes running after `grade` ends. "
    "Use --unsafe-no-sandbox only for submissions you trust."
)

_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group",
                 "nsswitch.conf", "fonts")
# Kernels run side by side, and a thread pool per core would make the number of threads a
# kernel needs (RLIMIT_NPROC counts them) grow with the machine.
_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")
# glibc gives each thread an arena of 64 MiB of address space: under RLIMIT_AS, two will do.
_FEW_ARENAS = {"MALLOC_ARENA_MAX": "2"}
MiB = 1024 ** 2
NOBODY = 65534  # the kernel's uid when grade runs as root: the overflow uid, which owns no file
# The kernel's uid in a container (--container): a uid of its own, which no user, file or other
# process has, so that its process limit (counted per uid, outside any user namespace of its
# own) counts its processes alone, not those of other services running as nobody.
LEARNER = 65533
# bubblewrap's --unshare-all less the user namespace: as root, the kernel leaves root by
# setpriv, which needs the real uid 0 that a user namespace of bubblewrap's would map away.
_UNSHARE_AS_ROOT = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try")


@dataclass(frozen=True)
class Limits:
    """What one notebook may use; grade stops it, and says why, when it reaches one.

    The defaults leave a margin over what the course's chapters need in the sandbox (see
    the instructor guide): chapter 7, which loads a real model with transformers, passes
    with 2048 MiB of address space; a kernel runs 15 to 17 threads; the largest
    chapter's outputs come to 0.6 MB."""

    memory: int = 2048 * MiB  # bytes of address space per process (RLIMIT_AS)
    processes: int = 64  # processes and threads of the sandbox (RLIMIT_NPROC)
    disk: int = 256 * MiB  # bytes the working folder, home and temporary folder may hold (a tmpfs)
    output: int = 10 * MiB  # bytes of output kept per notebook; also the largest notebook read

    def __post_init__(self) -> None:
        for name in ("memory", "processes", "disk", "output"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"the {name} limit must be a positive whole number, got {value!r}")

    def prlimit(self, processes: bool) -> list[str]:
        """util-linux's prlimit with these limits, before a command (byte counts: prlimit
        reads "2G" as 2 bytes)."""
        counted = [f"--nproc={self.processes}"] if processes else []
        return [shutil.which("prlimit") or "prlimit", *counted, f"--as={self.memory}", "--"]


DEFAULT_LIMITS = Limits()


def megabytes(size: int) -> str:
    return f"{size / MiB:g} MiB"


class SandboxUnavailable(ValueError):
    """No sandbox can start here (and the instructor did not pass --unsafe-no-sandbox)."""


@dataclass(frozen=True)
class Sandbox:
    """How kernels are started: ``root`` holds the package copy and the scratch folders."""

    root: Path
    isolated: bool  # False: --unsafe-no-sandbox, or a container
    limits: Limits = DEFAULT_LIMITS
    groups: cgroups.Hierarchy | None = None  # where each notebook gets a control group, if anywhere

    def group(self, scratch: Path) -> cgroups.Group | None:
        """A new control group for the notebook in ``scratch``: all its processes together
        hold at most the memory limit plus the files limit (its tmpfs is charged to it), and
        run at most the process limit plus the sandbox's own few (bubblewrap, setpriv)."""
        if self.groups is None:
            return None
        return self.groups.make(f"{self.root.name}-{scratch.name}", self.limits.memory + self.limits.disk,
                                self.limits.processes + 8)
    contained: bool = False  # a throwaway container is the sandbox: the kernel runs as nobody, no bubblewrap
    offline: bool = False  # in a container: the kernel has a network namespace of its own (``no_network``)

    @property
    def owner(self) -> int | None:
        """The uid the kernel runs as when that is not the instructor's (grade run as root)."""
        if self.contained:
            return LEARNER
        return NOBODY if self.isolated and os.geteuid() == 0 else None

    @property
    def package(self) -> Path:
        return self.root / "package"

    def scratch(self, name: str) -> Path:
        """A new scratch folder: ``work`` (the kernel's working folder), ``home``, ``tmp``,
        ``runtime`` (the kernel's connection file and sockets)."""
        scratch = self.root / name
        for part in ("work", "home", "tmp", "runtime"):
            (scratch / part).mkdir(parents=True)
            if self.owner is not None:  # the kernel's sockets in runtime, the probe's home
                os.chown(scratch / part, self.owner, self.owner)
        fonts = self.root / "fonts"
        if fonts.exists() and not self.isolated:  # the sandbox binds the probe's copy instead
            shutil.copytree(fonts, scratch / "home" / ".matplotlib")
        return scratch

    def copy_in(self, scratch: Path, notebook: Path) -> None:
        """Put a copy of ``notebook`` in the kernel's working folder (read-only in the sandbox)."""
        copy = scratch / "work" / notebook.name
        copy.write_bytes(notebook.read_bytes())
        copy.chmod(0o644)  # readable by the kernel when it runs as nobody

    def copy_in_data(self, scratch: Path, name: str, text: str) -> None:
        """Put a data file for the grader's cells in the kernel's working folder (read-only
        in the sandbox, like the notebook)."""
        path = scratch / "work" / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)

    def environment(self, scratch: Path, check_timeout: float | None) -> dict[str, str]:
        """The kernel's whole environment (nothing of the instructor's)."""
        env = {
            "HOME": str(scratch / "home"), "TMPDIR": str(scratch / "tmp"), "LANG": "C.UTF-8",
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "USER": "learner",
            "PYTHONPATH": str(self.package), "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "MPLCONFIGDIR": str(scratch / "home" / ".matplotlib"), "JUPYTER_PLATFORM_DIRS": "1",
            **dict.fromkeys(_ONE_THREAD, "1"), **_FEW_ARENAS,
        }
        if check_timeout is not None:
            env[TIMEOUT_VARIABLE] = str(check_timeout)
        return env

    def command(self, scratch: Path, env: dict[str, str], keep_home: bool = False,
                group: cgroups.Group | None = None) -> list[str]:
        """The sandbox's command line, in ``group`` if given (see ``_sandbox_command``)."""
        return [*(group.join_then() if group else []), *self._sandbox_command(scratch, env, keep_home)]

    def _sandbox_command(self, scratch: Path, env: dict[str, str], keep_home: bool) -> list[str]:
        """What goes before the kernel's own command line: the sandbox and the limits (only
        the memory limit without a sandbox: outside a user namespace of its own, the process
        limit would count every process of the instructor's). ``keep_home``: the kernel's
        home is the host's folder, not the tmpfs (for the probe, which builds the font list)."""
        if self.contained:  # as LEARNER, who can write neither the report nor the results
            setpriv = [shutil.which("setpriv") or "setpriv", f"--reuid={LEARNER}", f"--regid={LEARNER}",
                       "--clear-groups", "--no-new-privs"]
            return [*(NO_NETWORK if self.offline else []), *setpriv, *self.limits.prlimit(processes=True)]
        if not self.isolated:
            return self.limits.prlimit(processes=False)
        as_root = self.owner is not None
        bwrap = shutil.which("bwrap") or "bwrap"
        args = [bwrap, *(_UNSHARE_AS_ROOT if as_root else ["--unshare-all", "--unshare-user", "--disable-userns"]),
                "--die-with-parent",
                "--new-session", "--clearenv", "--cap-drop", "ALL"]
        if as_root:  # kept only for setpriv, which gives them up with uid 0
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        mounts = self._read_only_mounts()
        for folder in _parents([destination for *_, destination in mounts] + [str(scratch)]):
            args += ["--perms", "0755", "--dir", folder]  # bubblewrap would make them 0700: closed to nobody
        for mount in mounts:
            args += mount
        # bubblewrap's /dev is a tmpfs of no set size, writable by a kernel that runs as the
        # instructor's uid: read-only, with /dev/shm a tmpfs of the files limit.
        args += [*self._scratch_mounts(scratch, keep_home), "--proc", "/proc", "--dev", "/dev",
                 "--perms", "01777", "--size", str(self.limits.disk), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
                 "--chdir", str(scratch / "work")]
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += ["--remount-ro", "/"]
        if as_root:  # nobody, in a user namespace of its own that can make no other
            args += [shutil.which("setpriv") or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                     "--clear-groups", bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/"]
        return [*args, *self.limits.prlimit(processes=True)]

    def _read_only_mounts(self) -> list[list[str]]:
        """bubblewrap's options, one list each, for what the kernel sees of the host, all
        read-only: the system's programs and libraries, Python and the package copy."""
        mounts = [["--ro-bind", "/usr", "/usr"]]
        for folder in _SYSTEM_DIRS:
            if os.path.islink(folder):
                mounts.append(["--symlink", os.readlink(folder), folder])
            elif os.path.isdir(folder):
                mounts.append(["--ro-bind", folder, folder])
        mounts += [["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"] for name in _SYSTEM_FILES]
        for prefix in dict.fromkeys(map(os.path.realpath, (sys.base_prefix, sys.prefix))):
            if not prefix.startswith("/usr/"):
                mounts.append(["--ro-bind", prefix, prefix])
        if os.path.realpath(sys.prefix) != sys.prefix:
            mounts.append(["--symlink", os.path.realpath(sys.prefix), sys.prefix])
        return [*mounts, ["--ro-bind", str(self.package), str(self.package)]]

    def _scratch_mounts(self, scratch: Path, keep_home: bool) -> list[str]:
        """The scratch folder as the kernel sees it: a tmpfs of ``limits.disk`` bytes holding
        its working folder (with a read-only copy of its notebook), home and temporary
        folder; and the host's ``runtime`` folder, where the kernel makes the sockets the
        grader connects to (the one place it can write to the host's disk)."""
        args = ["--size", str(self.limits.disk), "--tmpfs", str(scratch)]
        for part in ("work", "home", "tmp"):
            args += ["--perms", "0777", "--dir", str(scratch / part)]  # its uid may be nobody
        args += ["--bind", str(scratch / "runtime"), str(scratch / "runtime")]
        if keep_home:
            args += ["--bind", str(scratch / "home"), str(scratch / "home")]
        for notebook in sorted((scratch / "work").iterdir()):
            args += ["--ro-bind", str(notebook), str(notebook)]
        fonts = self.root / "fonts"
        if fonts.exists() and not keep_home:  # matplotlib's font list, built once by the probe
            fonts_in_home = scratch / "home" / ".matplotlib"
            args += ["--perms", "0777", "--dir", str(fonts_in_home)]
            for font_list in sorted(fonts.iterdir()):
                args += ["--ro-bind", str(font_list), str(fonts_in_home / font_list.name)]
        return args


def _parents(paths: list[str]) -> list[str]:
    """Every folder above ``paths`` but the root and /usr (mounted), the outermost first."""
    parents = {str(parent) for path in paths for parent in Path(path).parents}
    return sorted(parents - {"/", "/usr"}, key=lambda folder: (folder.count("/"), folder))


@contextlib.contextmanager
def prepared_sandbox(unsafe_no_sandbox: bool = False, limits: Limits = DEFAULT_LIMITS,
                     contained: bool = False) -> Iterator[Sandbox]:
    """A sandbox ready to start kernels, removed with everything in it afterwards.

    Raises SandboxUnavailable, saying why, if bubblewrap cannot start one here with these
    limits and ``unsafe_no_sandbox`` is false. ``contained``: the machine is a throwaway
    container (Gradescope's), which is the sandbox: no bubblewrap, the kernel runs as the
    unprivileged uid ``LEARNER`` (grade must run as root), with the limits on memory and
    processes."""
    if contained and os.geteuid() != 0:
        raise SandboxUnavailable("in a container, grade runs as root so that the kernels run as an unprivileged user")
    groups = cgroups.available()
    _remove_abandoned(groups)
    # Short (socket paths are limited to 107 bytes), named after this process (for whoever
    # looks), and marked, locked, as a sandbox while this grader lives (``_remove_abandoned``).
    root = Path(tempfile.mkdtemp(prefix=f"ag-{os.getpid()}-"))
    alive = os.open(root / SANDBOX_MARK, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    fcntl.flock(alive, fcntl.LOCK_EX)
    sandbox = None
    if contained:
        root.chmod(0o711)  # the kernel reaches its scratch folder, and lists nothing
    try:
        package = root / "package" / "attncourse"
        shutil.copytree(Path(attncourse.__file__).parent, package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        _make_read_only(root / "package")
        sandbox = Sandbox(root, isolated=not (unsafe_no_sandbox or contained), limits=limits,
                          groups=groups, contained=contained, offline=contained and no_network())
        _probe(sandbox)
        yield sandbox
    finally:
        _remove(root, groups)
        os.close(alive)


# In a container, the kernel's network: a namespace of its own, which holds only a loopback
# device that is down (the kernel talks to grade through files, ipc sockets, which it
# keeps). Where the container refuses it (no CAP_SYS_ADMIN), the network stays the
# container's: the instructor guide says what that leaves open.
NO_NETWORK = [shutil.which("unshare") or "unshare", "--net", "--"]


def no_network() -> bool:
    """Whether this machine lets ``grade`` give a kernel a network namespace of its own."""
    try:
        return subprocess.run([*NO_NETWORK, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# Every sandbox's folder holds this file from its start, locked (flock) by its grader for
# as long as that grader runs: Linux lets the lock go when the process ends, however it
# ends. The next grader removes only folders that hold it, unlocked: never an instructor's
# own folder that happens to be named alike (``/tmp/ag-2025-fall``, holding the
# submissions), nor the sandbox of a grader that runs in another process namespace (a
# container sharing /tmp: its process number means nothing here) or under a reused number.
SANDBOX_MARK = ".attncourse-grader-sandbox"
# As tempfile.mkdtemp names a sandbox's folder: the grader's process, then 8 random characters.
_SANDBOX_NAME = re.compile(r"ag-\d+-[a-z0-9_]{8}")


def _remove_abandoned(groups: cgroups.Hierarchy | None) -> None:
    """Remove the sandboxes of graders killed before they could (``kill -9``, a machine
    going down): this user's folders named and marked as a sandbox whose mark no process
    holds locked, each removed while holding its lock (two graders starting together
    remove it once)."""
    for folder in Path(tempfile.gettempdir()).glob("ag-*-*"):
        try:
            owned = folder.lstat()
            mark = os.open(folder / SANDBOX_MARK, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:  # no mark (not a sandbox), or removed meanwhile
            continue
        try:
            marked = os.fstat(mark)
            if _SANDBOX_NAME.fullmatch(folder.name) and stat.S_ISDIR(owned.st_mode) and stat.S_ISREG(marked.st_mode) \
                    and owned.st_uid == marked.st_uid == os.geteuid():
                fcntl.flock(mark, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while its grader runs
                _remove(folder, groups)
        except OSError:  # its grader runs, or another grader is removing it
            continue
        finally:
            os.close(mark)


def _remove(root: Path, groups: cgroups.Hierarchy | None) -> None:
    """Remove a sandbox's folder with everything in it, and the control groups named after
    it that its kernels left (a crash can leave them)."""
    if groups is not None:
        for parent in {folder for folder in (groups.memory, groups.pids, groups.cpuacct) if folder is not None}:
            for left in parent.glob(f"{root.name}-*"):
                cgroups.Group((left,), groups.version).remove()
    with contextlib.suppress(FileNotFoundError):  # another grader removed it first
        os.chmod(root, 0o700)
    _make_writable(root)
    shutil.rmtree(root, ignore_errors=True)


# The probe's Python: it must import the package copy, and in the sandbox it must not be
# root (Linux never applies the process limit to root) and must have the limits set.
_PROBE = """\
import attncourse.checks, matplotlib.font_manager, os, pathlib, resource, sys
problems = []
if pathlib.Path(attncourse.__file__).parent != pathlib.Path({package!r}):
    problems.append("the package copy was not imported")
if {isolated} and (os.getuid() == 0 or resource.getrlimit(resource.RLIMIT_NPROC) != ({processes}, {processes})):
    problems.append("the process limit is not in force (uid %d, RLIMIT_NPROC %r)" % (os.getuid(), resource.getrlimit(resource.RLIMIT_NPROC)))
if resource.getrlimit(resource.RLIMIT_AS) != ({memory}, {memory}):
    problems.append("the memory limit is not in force")
if {contained} and os.getuid() != {learner}:
    problems.append("the kernel does not run as uid {learner} (uid %d)" % os.getuid())
if {isolated}:
    import ctypes
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0:  # CLONE_NEWUSER
        problems.append("the sandbox can make user namespaces of its own")
sys.exit("; ".join(problems) or None)
"""


def _probe(sandbox: Sandbox) -> None:
    """Start Python in the sandbox once, with the limits: it must import the package copy,
    not run as root and have its limits set (and it builds matplotlib's font list, which
    every kernel then reuses)."""
    tools = ["prlimit"] + (["bwrap"] if sandbox.isolated else []) + (["setpriv"] if sandbox.owner else [])
    missing = [tool for tool in tools if not shutil.which(tool)]
    if "bwrap" in missing:
        raise SandboxUnavailable(
            "grade runs each notebook in a bubblewrap sandbox, and bubblewrap is not installed: "
            "`make system-packages` in the course's folder installs it (Debian/Ubuntu: apt-get install "
            "bubblewrap; `make book` does not). " + UNSAFE_MEANS
        )
    if missing:
        raise SandboxUnavailable(
            f"grade needs {', '.join(missing)} (util-linux) to start kernels with their limits, and "
            "cannot find it here (Debian/Ubuntu: apt-get install util-linux). " + UNSAFE_MEANS
        )
    scratch = sandbox.scratch("probe")
    env = sandbox.environment(scratch, None)
    limits = sandbox.limits
    code = _PROBE.format(package=str(sandbox.package / "attncourse"), isolated=sandbox.isolated, contained=sandbox.contained, learner=LEARNER,
                         processes=limits.processes, memory=limits.memory)
    group = sandbox.group(scratch)
    command = [*sandbox.command(scratch, env, keep_home=True, group=group), sys.executable, "-c", code]
    try:
        done = subprocess.run(command, check=False, env=env, cwd=scratch / "work", capture_output=True,
                              text=True, timeout=120)
        problem = done.returncode and (done.stderr.strip()[-600:] or f"exit status {done.returncode}")
    except (OSError, subprocess.TimeoutExpired) as error:
        problem = str(error)
    finally:
        if group is not None:
            group.remove()
    if problem:
        what = "Python could not start in a bubblewrap sandbox here" if sandbox.isolated else "Python could not start"
        raise SandboxUnavailable(f"{what} with a memory limit of {limits.memory // MiB} MiB per process: "
                                 f"{problem}. " + (UNSAFE_MEANS if sandbox.isolated else ""))
    if (scratch / "home" / ".matplotlib").exists():
        shutil.copytree(scratch / "home" / ".matplotlib", sandbox.root / "fonts")
        _make_read_only(sandbox.root / "fonts")
    shutil.rmtree(scratch)


def _make_read_only(folder: Path) -> None:
    """Read-only for all, readable by all (the kernel may run as nobody)."""
    for path in [*folder.rglob("*"), folder]:
        path.chmod(0o555 if path.is_dir() else 0o444)


def _make_writable(folder: Path) -> None:
    """Undo _make_read_only, and whatever a learner did to the modes in a scratch folder;
    symbolic links a learner left there are not followed."""
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, os.lstat(path).st_mode | stat.S_IRWXU)

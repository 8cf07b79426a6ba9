"""Where a submission runs: a kernel inside a bubblewrap sandbox, in a throwaway folder.

Each kernel sees a read-only file system made of the system's programs and libraries,
the Python environment and a read-only copy of ``attncourse``; it can write only to its
own scratch folder. The course's chapters, the other submissions, the report and the
instructor's home are not there at all. It has no network (its own empty network
namespace), a cleared environment, its own process namespace (when the kernel is
stopped, every process it started goes with it) and no capabilities. bubblewrap
(https://github.com/containers/bubblewrap) sets all of this up; it is the sandbox of
Flatpak and needs no daemon.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

import attncourse
from attncourse.checks import TIMEOUT_VARIABLE

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
_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # kernels run side by side


class SandboxUnavailable(ValueError):
    """No sandbox can start here (and the instructor did not pass --unsafe-no-sandbox)."""


@dataclass(frozen=True)
class Sandbox:
    """How kernels are started: ``root`` holds the package copy and the scratch folders."""

    root: Path
    isolated: bool  # False: --unsafe-no-sandbox

    @property
    def package(self) -> Path:
        return self.root / "package"

    def scratch(self, name: str) -> Path:
        """A new scratch folder: ``work`` (the kernel's working folder), ``home``, ``tmp``,
        ``runtime`` (the kernel's connection file and sockets)."""
        scratch = self.root / name
        for part in ("work", "home", "tmp", "runtime"):
            (scratch / part).mkdir(parents=True)
        fonts = self.root / "fonts"
        if fonts.exists():  # matplotlib's font list, built once by the probe
            shutil.copytree(fonts, scratch / "home" / ".matplotlib")
        return scratch

    def environment(self, scratch: Path, check_timeout: float | None) -> dict[str, str]:
        """The kernel's whole environment (nothing of the instructor's)."""
        env = {
            "HOME": str(scratch / "home"), "TMPDIR": str(scratch / "tmp"), "LANG": "C.UTF-8",
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "USER": "learner",
            "PYTHONPATH": str(self.package), "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "MPLCONFIGDIR": str(scratch / "home" / ".matplotlib"), "JUPYTER_PLATFORM_DIRS": "1",
            **dict.fromkeys(_ONE_THREAD, "1"),
        }
        if check_timeout is not None:
            env[TIMEOUT_VARIABLE] = str(check_timeout)
        return env

    def command(self, scratch: Path, env: dict[str, str]) -> list[str]:
        """What goes before the kernel's own command line (nothing without a sandbox)."""
        if not self.isolated:
            return []
        bwrap = shutil.which("bwrap") or "bwrap"
        args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
                "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
        for folder in _SYSTEM_DIRS:
            if os.path.islink(folder):
                args += ["--symlink", os.readlink(folder), folder]
            elif os.path.isdir(folder):
                args += ["--ro-bind", folder, folder]
        for name in _SYSTEM_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        for prefix in dict.fromkeys(map(os.path.realpath, (sys.base_prefix, sys.prefix))):
            if not prefix.startswith("/usr/"):
                args += ["--ro-bind", prefix, prefix]
        if os.path.realpath(sys.prefix) != sys.prefix:
            args += ["--symlink", os.path.realpath(sys.prefix), sys.prefix]
        args += ["--ro-bind", str(self.package), str(self.package),
                 "--bind", str(scratch), str(scratch), "--proc", "/proc", "--dev", "/dev",
                 "--chdir", str(scratch / "work")]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return [*args, "--remount-ro", "/"]


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager that starts the kernel behind ``prefix`` (the sandbox's command)."""

    def __init__(self, prefix: list[str], **kwargs):
        super().__init__(**kwargs)
        self.prefix = prefix

        self.process = None

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        return [*self.prefix, *super().format_kernel_cmd(extra_arguments)]

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        await super()._async_launch_kernel(kernel_cmd, **kw)
        self.process = getattr(self.provisioner, "process", None)

    def kill_sandbox(self) -> None:
        """Kill the kernel's process if it still runs: bubblewrap takes the whole sandbox
        (every process in it) down with it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@contextlib.contextmanager
def prepared_sandbox(unsafe_no_sandbox: bool = False) -> Iterator[Sandbox]:
    """A sandbox ready to start kernels, removed with everything in it afterwards.

    Raises SandboxUnavailable, saying why, if bubblewrap cannot start one here and
    ``unsafe_no_sandbox`` is false."""
    root = Path(tempfile.mkdtemp(prefix="ag-"))  # short: socket paths are limited to 107 bytes
    try:
        package = root / "package" / "attncourse"
        shutil.copytree(Path(attncourse.__file__).parent, package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        _make_read_only(root / "package")
        sandbox = Sandbox(root, isolated=not unsafe_no_sandbox)
        _probe(sandbox)
        yield sandbox
    finally:
        os.chmod(root, 0o700)
        _make_writable(root)
        shutil.rmtree(root, ignore_errors=True)


def _probe(sandbox: Sandbox) -> None:
    """Start Python in the sandbox once: it must import the package copy (and build
    matplotlib's font list, which every kernel then reuses)."""
    if sandbox.isolated and not shutil.which("bwrap"):
        raise SandboxUnavailable(
            "grade runs each notebook in a bubblewrap sandbox, and bubblewrap is not installed "
            "(Debian/Ubuntu: apt-get install bubblewrap). " + UNSAFE_MEANS
        )
    scratch = sandbox.scratch("probe")
    env = sandbox.environment(scratch, None)
    code = ("import attncourse.checks, matplotlib.font_manager, pathlib, sys;"
            f"sys.exit(pathlib.Path(attncourse.__file__).parent != pathlib.Path({str(sandbox.package / 'attncourse')!r}))")
    command = [*sandbox.command(scratch, env), sys.executable, "-c", code]
    try:
        done = subprocess.run(command, check=False, env=env, cwd=scratch / "work", capture_output=True,
                              text=True, timeout=120)
        problem = done.returncode and (done.stderr.strip()[-600:] or f"exit status {done.returncode}")
    except (OSError, subprocess.TimeoutExpired) as error:
        problem = str(error)
    if problem:
        what = "bubblewrap could not start a sandbox here" if sandbox.isolated else "Python could not start"
        raise SandboxUnavailable(f"{what}: {problem}. " + (UNSAFE_MEANS if sandbox.isolated else ""))
    if (scratch / "home" / ".matplotlib").exists():
        shutil.copytree(scratch / "home" / ".matplotlib", sandbox.root / "fonts")
    shutil.rmtree(scratch)


def _make_read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _make_writable(folder: Path) -> None:
    """Undo _make_read_only, and whatever a learner did to the modes in a scratch folder;
    symbolic links a learner left there are not followed."""
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, os.lstat(path).st_mode | stat.S_IRWXU)

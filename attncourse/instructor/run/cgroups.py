"""A control group per notebook, where the machine lets ``grade`` make one: a bound on the
memory and the number of processes of the whole sandbox together, and an equal share of
the processor (``cpu``: a learner who runs 48 busy processes gets no more of it than a
neighbour who runs one).

The per-process limits (RLIMIT_AS, RLIMIT_NPROC) miss memory no process maps: files in
``memfd_create`` written with ``write``, System V shared memory detached after use, and
the sum over a notebook's processes. A control group's memory controller charges all of
it (pages, tmpfs, shared memory) to the group of the process that made it, and its
``pids`` controller counts every process and thread of the group. Linux has two kinds:
version 1 (a hierarchy per controller, as on the machines this course is tested on) and
version 2 (one hierarchy; usable here only where the controllers are delegated to
``grade``'s group). Where neither can be written, ``available`` is None and the
per-process limits are all there is (the instructor guide says what that leaves open).

The group also counts the processor time of every process that was ever in it
(``cpuacct`` in version 1, ``cpu.stat`` in version 2): a process's own times, read in
/proc, vanish when it ends, and so do its children's when Linux reaps them for a parent
that ignores SIGCHLD, so a notebook that burns its time in children that end would never
reach its time limit.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_MOUNTS = Path("/proc/self/mounts")
# Every notebook's group gets the same weight (each controller's default, written so that
# no inherited setting changes it): Linux then shares a busy processor equally between the
# groups, however many processes one of them runs.
EQUAL_SHARE = {1: 1024, 2: 100}  # cpu.shares (version 1), cpu.weight (version 2)
_OWN = Path("/proc/self/cgroup")


@dataclass(frozen=True)
class Hierarchy:
    """Where ``grade`` may make groups: one folder per controller (version 1), or one folder
    for both (version 2)."""

    version: int
    memory: Path  # the folder new groups for the memory controller go in
    pids: Path  # the same for the pids controller (the same folder in version 2)
    cpuacct: Path | None = None  # the same for the processor time (version 1; None: not mounted)
    cpu: Path | None = None  # the same for the processor's share (None: no cpu controller here)

    def make(self, name: str, memory: int, processes: int) -> Group:
        """A new group ``name`` holding at most ``memory`` bytes and ``processes`` tasks, with
        the processor share every other notebook's group has (``EQUAL_SHARE``)."""
        counted = (self.cpuacct / name if self.cpuacct else None) if self.version == 1 else self.memory / name
        shared = self.cpu / name if self.cpu else None
        folders = list(dict.fromkeys([self.memory / name, self.pids / name,
                                      *([counted] if counted else []), *([shared] if shared else [])]))
        for folder in folders:
            folder.mkdir()
        if self.version == 1:
            _write(self.memory / name / "memory.limit_in_bytes", memory)
            with contextlib.suppress(OSError):  # without swap accounting there is no memsw
                _write(self.memory / name / "memory.memsw.limit_in_bytes", memory)
            _write(self.pids / name / "pids.max", processes)
        else:
            _write(self.memory / name / "memory.max", memory)
            with contextlib.suppress(OSError):
                _write(self.memory / name / "memory.swap.max", 0)
            _write(self.pids / name / "pids.max", processes)
        if shared:
            _write(shared / ("cpu.shares" if self.version == 1 else "cpu.weight"), EQUAL_SHARE[self.version])
        return Group(tuple(folders), self.version, counted)


@dataclass(frozen=True)
class Group:
    folders: tuple[Path, ...]
    version: int
    cpu: Path | None = None  # the folder that counts its processor time, if any

    def cpu_seconds(self) -> float | None:
        """The processor time every process ever in the group has used, or None if the
        group does not count it."""
        if self.cpu is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            if self.version == 1:
                return int((self.cpu / "cpuacct.usage").read_text()) / 1e9  # nanoseconds
            for line in (self.cpu / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        return None

    def join_then(self) -> list[str]:
        """A command line prefix: the shell puts itself in the group, then becomes the rest
        of the command (so the sandbox and every process it starts are in it)."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(f / 'cgroup.procs'))}" for f in self.folders)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh"]

    def out_of_memory(self) -> bool:
        """Whether the group reached its memory limit and Linux killed a process of it."""
        events = "memory.oom_control" if self.version == 1 else "memory.events"
        with contextlib.suppress(OSError, ValueError):
            for line in (self.folders[0] / events).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1]) > 0
        return False

    def remove(self) -> None:
        """Kill every process left in the group, then remove it. Outside bubblewrap (in a
        container) a process in a session of its own outlives the kernel; the group is
        what still finds it (never its uid, which every contained kernel shares)."""
        self.kill_every_process()
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still holds a process on its way out
                    time.sleep(0.1)


    def kill_every_process(self) -> None:
        """SIGKILL every process listed in the group, again until none is left (one may fork
        while the others die: its child is born in the group)."""
        for _ in range(100):
            found = set()
            for folder in self.folders:
                with contextlib.suppress(OSError, ValueError):
                    found |= {int(pid) for pid in (folder / "cgroup.procs").read_text().split()}
            if not found:
                return
            for pid in found:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)


def _write(path: Path, value: int) -> None:
    path.write_text(f"{value}\n")


def available() -> Hierarchy | None:
    """The hierarchy ``grade`` can make groups in here, with both the memory and the pids
    controllers, or None."""
    try:
        mounts = [line.split() for line in _MOUNTS.read_text().splitlines()]
        own = [line.split(":", 2) for line in _OWN.read_text().splitlines()]
    except OSError:
        return None
    v1 = {controller: Path(fields[1]) for fields in mounts if fields[2] == "cgroup"
          for controller in fields[3].split(",") if controller in ("memory", "pids", "cpuacct", "cpu")}
    where = {controller: path.strip() for _, controllers, path in own for controller in controllers.split(",")}
    if {"memory", "pids"} <= set(v1) and {"memory", "pids"} <= set(where):
        memory = v1["memory"] / where["memory"].lstrip("/")
        pids = v1["pids"] / where["pids"].lstrip("/")
        cpuacct = v1["cpuacct"] / where["cpuacct"].lstrip("/") if {"cpuacct"} <= set(v1) & set(where) else None
        cpu = v1["cpu"] / where["cpu"].lstrip("/") if {"cpu"} <= set(v1) & set(where) else None
        if _usable(memory, "memory.limit_in_bytes") and _usable(pids, "pids.max"):
            return Hierarchy(1, memory, pids, cpuacct if cpuacct and _usable(cpuacct, "cpuacct.usage", 0) else None,
                             cpu if cpu and _usable(cpu, "cpu.shares") else None)
    unified = [Path(fields[1]) for fields in mounts if fields[2] == "cgroup2"]
    if unified and "" in where:
        folder = unified[0] / where[""].lstrip("/")
        with contextlib.suppress(OSError):
            delegated = (folder / "cgroup.subtree_control").read_text().split()
            if {"memory", "pids"} <= set(delegated) and os.access(folder, os.W_OK):
                return Hierarchy(2, folder, folder, cpu=folder if "cpu" in delegated else None)
    return None


def _usable(folder: Path, limit_file: str, mode: int = os.W_OK) -> bool:
    """Whether a group can be made in ``folder`` and limited (tried, then removed); with
    ``mode`` 0, whether its ``limit_file`` (a count) is there to read."""
    trial = folder / f"ag-probe-{os.getpid()}"
    try:
        trial.mkdir()
    except OSError:
        return False
    try:
        return (trial / limit_file).exists() and (not mode or os.access(trial / limit_file, mode))
    finally:
        with contextlib.suppress(OSError):
            trial.rmdir()

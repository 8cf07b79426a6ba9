"""Running one notebook in the sandbox: a kernel behind bubblewrap, nbclient driving it,
its output capped, and why the run stopped when it stopped early."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from attncourse.checks import wire
from attncourse.checks.core import describe
from attncourse.instructor.model import RAISED, Execution
from attncourse.instructor.run.channels import SandboxedKernelManager
from attncourse.instructor.run.sandbox import Limits, Sandbox, megabytes


class _OutOfMemory(Exception):
    """A cell raised MemoryError: the kernel reached its memory limit (or says it did)."""

    def __init__(self, cell_index: int, what: str):
        super().__init__(what)
        self.cell_index = cell_index


def _keep_the_record(cell, cell_index: int, execute_reply: dict) -> None:
    """A grader's cell's record, which came in its execute reply (``wire.RECORD_PAYLOAD``),
    as the cell's last output: where the judge reads it (``judge.recorded``). Only the
    grader's cells: a learner's cell that sends one sends nothing the judge reads."""
    if "attncourse" not in cell.get("metadata", {}):
        return
    content = execute_reply.get("content") if isinstance(execute_reply, dict) else None
    payloads = content.get("payload") if isinstance(content, dict) else None
    records = [p.get("record") for p in payloads if isinstance(p, dict) and p.get("source") == wire.RECORD_PAYLOAD] \
        if isinstance(payloads, list) else []
    if records:
        cell.setdefault("outputs", []).append(nbformat.v4.new_output(
            "display_data", data={wire.RECORD_MIMETYPE: records[-1], "text/plain": "[grade: the record, from the reply]"}))


def _stop_when_out_of_memory(cell, cell_index: int, execute_reply: dict) -> None:
    """nbclient's on_cell_error hook: the run stops at a MemoryError, as at the time limit
    (what the kernel holds then is not worth grading on, nor keeping in memory)."""
    content = execute_reply.get("content", {})
    if content.get("ename") == "MemoryError":
        raise _OutOfMemory(cell_index, f"MemoryError: {content.get('evalue', '')}"[:200])


REPLY_ALLOWANCE = 4096  # bytes of a cell's own execute_reply not counted as output (its usual size is 700)


class _OutputLimitedClient(NotebookClient):
    """An nbclient that receives at most ``output_limit`` bytes of a notebook's messages
    (text, images, widget messages, and messages that claim no cell or another's: counted
    as they arrive, on every channel, but for each cell's one reply). Past it, it keeps nothing more, notes in the cell
    where it cut, and kills the sandbox: the run ends in ``cut_in``, a cell that prints
    without end stops at once instead of at the time limit, and the executed copy and what
    the grader reads stay small."""

    def __init__(self, nb, km: SandboxedKernelManager, output_limit: int, **kwargs):
        super().__init__(nb, km=km, **kwargs)
        self.kill_sandbox = km.kill_sandbox
        self.output_limit = output_limit
        self.received = 0
        self.running = 0  # the cell being run
        self.cut_in: int | None = None
        self.replies_due = 0  # a cell's own reply is no output: a notebook of 15,000 silent cells prints nothing
        km.received = self.count

    def count(self, message: dict, size: int) -> None:
        if message.get("msg_type") in ("status", "execute_input"):  # not output
            return
        if message.get("msg_type") == "execute_reply" and self.replies_due > 0:  # any more are counted
            self.replies_due -= 1
            size = max(0, size - REPLY_ALLOWANCE)  # a payload it carries is counted
        self.received += size
        if self.received > self.output_limit and self.cut_in is None:
            self.cut_in = self.running
            self.kill_sandbox()

    async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
        self.running = cell_index
        self.replies_due += (cell.cell_type == "code" and bool(cell.source.strip())  # as nbclient decides to run it
                             and self.skip_cells_with_tag not in cell.metadata.get("tags", []))
        return await super().async_execute_cell(cell, cell_index, *args, **kwargs)

    def process_message(self, msg, cell, cell_index):
        if self.cut_in is not None:
            return None
        return super().process_message(msg, cell, cell_index)

    def note_the_cut(self) -> None:
        if self.cut_in is not None:
            self.nb.cells[self.cut_in].outputs.append(nbformat.v4.new_output(
                "stream", name="stderr", text=f"[grade: output cut off here, past the limit of {megabytes(self.output_limit)}]\n"))


def _why_it_stopped(error: Exception | None, client: _OutputLimitedClient, running: int, elapsed: float,
                    time_limit: float, limits: Limits, group_out_of_memory: bool = False) -> tuple[int, str]:
    """(the cell where the run stopped, why), after the run raised ``error`` (None: it
    ended, but its output was cut)."""
    if client.cut_in is not None:
        refused = f" (one message larger than {megabytes(2 * limits.output)} or malformed, refused unread)" \
            if isinstance(error, _TooLarge) else ""
        return client.cut_in, (f"its output passed the limit of {megabytes(limits.output)} in cell "
                               f"{client.cut_in + 1}{refused}: the rest was not kept and the notebook was stopped there")
    if isinstance(error, _OutOfMemory):
        return error.cell_index, (f"ran out of memory in cell {error.cell_index + 1} ({error}): the memory "
                                  f"limit is {megabytes(limits.memory)} per process (--memory-limit)")
    where = f"in cell {running + 1}"
    if isinstance(error, _OutOfTime):  # the kernel dies as it is stopped
        waited = "" if error.cpu_seconds >= time_limit else (  # the clock's backstop: asleep, or a busy machine
            f", by the clock after {elapsed:.0f} s, in which it used {error.cpu_seconds:.0f} s of processor time: "
            "it slept or waited, for input or for a busy processor")
        return running, (f"did not finish within the time limit of {time_limit:g} s of processor time "
                         f"(stopped {where}{waited})")
    if isinstance(error, DeadKernelError) and group_out_of_memory:
        return running, (f"ran out of memory {where}: its processes together passed the sandbox's limit of "
                         f"{megabytes(limits.memory + limits.disk)} (--memory-limit, plus the files limit), "
                         f"and Linux stopped the kernel")
    if isinstance(error, DeadKernelError):
        return running, f"the kernel died {where}"
    if isinstance(error, ValueError) and "integer string conversion" in str(error):  # raised reading its message
        return running, (f"sent, {where}, a message the grader cannot read: a whole number of more digits than "
                         f"Python reads ({describe(error)}); shown as text, or as a float, it would be read")
    if isinstance(error, RecursionError):  # raised reading its message: JSON nested past Python's stack
        return running, (f"sent, {where}, a message the grader cannot read: nested deeper than Python reads "
                         f"({describe(error)}); flattened, or shown as text, it would be read")
    return running, f"could not run {where}: {describe(error) if error else 'no reason given'}"


class _TooLarge(Exception):
    """A channel refused a message from the kernel (larger than it takes, or malformed) and
    its connection closed for good."""


class _OutOfTime(Exception):
    """The notebook's processes used their processor time, or the wall-clock backstop ran out."""

    def __init__(self, cpu_seconds: float):
        super().__init__(f"{cpu_seconds:.0f} s of processor time")
        self.cpu_seconds = cpu_seconds


WALL_CLOCK_FACTOR = 3  # a notebook waiting for a busy processor gets up to this many time limits


async def _watch_the_clock(km: SandboxedKernelManager, time_limit: float, started: float) -> None:
    """Return when the sandbox's processes have used ``time_limit`` seconds of processor
    time, or ``WALL_CLOCK_FACTOR`` time limits have passed. Counted in processor time, a
    notebook starved by its neighbours (processes that each start a session of their own
    each get a share of the processor) is not out of time, and an endless one is stopped
    once, at its own limit, and never run again. Raises _TooLarge when a channel refused a
    message and closed for good (``SandboxedKernelManager.refused_a_message``)."""
    used = 0.0
    while used < time_limit and time.monotonic() - started < WALL_CLOCK_FACTOR * time_limit:
        await asyncio.sleep(1.0)
        used = used_seconds(km, used)
        if await km.refused_a_message():  # what it sent after would be lost: stop here
            await asyncio.sleep(0.5)  # unless libzmq was about to say it retries (the kernel closed it)
            if await km.refused_a_message():
                raise _TooLarge()
    raise _OutOfTime(used)


def used_seconds(km: SandboxedKernelManager, last: float = 0.0) -> float:
    """The processor time the sandbox's processes have used: its control group's count
    where it has one (every process that ever ran in it, ended ones included), else the
    processes alive now under the kernel's (``cpu_seconds``); never less than ``last``."""
    group = getattr(km, "group", None)
    counted = group.cpu_seconds() if group is not None else None
    if counted is None and km.process is not None:
        counted = cpu_seconds(km.process.pid)
    return max(last, counted or 0.0)


def cpu_seconds(root: int) -> float:
    """The processor time used so far by process ``root`` and every process below it (read
    from /proc: the sandbox's processes are the grader's descendants), with the time of the
    children they waited for. Not the time of children Linux reaped for a parent that
    ignores SIGCHLD: only a control group counts those (``used_seconds``)."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))  # fields[1]: the parent
        times[int(entry.name)] = sum(map(int, fields[11:15])) / ticks  # utime, stime, cutime, cstime
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        total += times.get(pid, 0.0)
        pending += children.get(pid, [])
    return total


def execute(nb, sandbox: Sandbox, scratch: Path, env: dict[str, str], time_limit: float) -> Execution:
    """Run ``nb`` in a kernel inside ``sandbox`` (working folder ``scratch/work``) for at
    most ``time_limit`` seconds of processor time, kernel start included (see
    ``_watch_the_clock``)."""
    limits = sandbox.limits
    group = sandbox.group(scratch)
    km = SandboxedKernelManager(
        sandbox.command(scratch, env, group=group), owner=sandbox.owner, group=group, kernel_name="python3", transport="ipc",
        ip=str(scratch / "runtime" / "k"), connection_file=str(scratch / "runtime" / "kernel.json"),
        largest_message=2 * limits.output,
    )
    current = {"cell": 0}
    client = _OutputLimitedClient(
        nb, km, limits.output, timeout=None, allow_errors=True, shutdown_kernel="immediate",
        skip_cells_with_tag="",  # Jupyter runs a cell tagged skip-execution (a Jupyter Book tag): so does grade
        # nbclient gives a kernel 60 s to start: on a busy machine a sandboxed kernel can take
        # longer, and the learner would lose every grade. The clock below decides instead.
        startup_timeout=WALL_CLOCK_FACTOR * time_limit,
        on_cell_start=lambda cell, cell_index: current.update(cell=cell_index),
        on_cell_executed=_keep_the_record, on_cell_error=_stop_when_out_of_memory,
        on_notebook_start=lambda notebook: km.lock_runtime(),
    )
    run = Execution(nb)
    started = time.monotonic()

    async def run_against_the_clock():
        running = asyncio.ensure_future(client.async_execute(
            env=env, cwd=str(scratch / "work"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        clock = asyncio.ensure_future(_watch_the_clock(km, time_limit, started))
        done, _ = await asyncio.wait({running, clock}, return_when=asyncio.FIRST_COMPLETED)
        for task in (running, clock):
            task.cancel()
        if clock in done and not clock.cancelled() and clock.exception() is not None:
            km.kill_sandbox()
            with contextlib.suppress(BaseException):
                await running
            raise clock.exception()  # type: ignore[misc]  # checked not None above
        return running.result()

    try:
        asyncio.run(run_against_the_clock())
    except Exception as error:  # the learner's notebook may break the run in any way
        elapsed = time.monotonic() - started
        run.timed_out = isinstance(error, _OutOfTime)
        if isinstance(error, _TooLarge) and client.cut_in is None:  # output past the limit, unread
            client.cut_in = current["cell"]
        run.cpu_seconds = error.cpu_seconds if isinstance(error, _OutOfTime) else 0.0
        run.stopped_in, run.problem = _why_it_stopped(error, client, current["cell"], elapsed, time_limit, limits,
                                                      km.out_of_memory())
    finally:
        if not run.timed_out:
            run.cpu_seconds = used_seconds(km)
        km.kill_sandbox()
        km.close_clients()
        if group is not None:
            group.remove()
    client.note_the_cut()
    if client.cut_in is not None and not run.problem:  # cut in a last cell that had already replied
        run.stopped_in, run.problem = _why_it_stopped(None, client, current["cell"], 0.0, time_limit, limits)
    run.errors = [
        f"cell {index + 1} raised {output.get('ename')}: {output.get('evalue', '')}"[:300]
        for index, cell in enumerate(nb.cells)
        for output in cell.get("outputs", [])
        if output.get("output_type") == RAISED
    ]
    return run

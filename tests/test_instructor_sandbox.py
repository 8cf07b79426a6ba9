"""The grader's side of its sandboxes (``attncourse.instructor.run``): a message too
large is refused and said so, a kernel that closes its sockets is not taken for one, and
what a killed grader left behind is removed by the next. The sandbox itself is attacked by
the hostile classes in tests/test_instructor_grading.py."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session

from attncourse.instructor.run import cgroups, sandbox
from attncourse.instructor.run.channels import SandboxedKernelManager, _CountedChannel
from attncourse.instructor.run.sandbox import prepared_sandbox
from tests.test_instructor_grading import (
    DOUBLING,
    RIGHT_PREDICTION,
    ROOT,
    SOFTMAX,
    run_in_own_thread,
    submission,
)

LARGEST = 1000  # bytes a channel takes in one message


async def _refused_after(tmp_path, kernel_does) -> bool:
    """Whether a channel connected to a kernel's socket says it refused a message, once
    the kernel has done ``kernel_does`` to that socket (and libzmq has had time to act)."""
    address = f"ipc://{tmp_path / 'iopub'}"
    kernel = zmq.Context()
    sender = kernel.socket(zmq.PUB)
    sender.bind(address)
    grader = zmq.asyncio.Context()
    grader.setsockopt(zmq.MAXMSGSIZE, LARGEST)
    receiver = grader.socket(zmq.SUB)
    receiver.setsockopt(zmq.SUBSCRIBE, b"")
    channel = _CountedChannel(receiver, Session())
    receiver.connect(address)
    try:
        await asyncio.sleep(0.3)  # connected
        assert not await channel.refused_a_message()
        kernel_does(sender)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and not await channel.refused_a_message():
            await asyncio.sleep(0.1)
        return await channel.refused_a_message()
    finally:
        grader.destroy(linger=0)
        kernel.destroy(linger=0)


def test_a_message_larger_than_the_channel_takes_is_refused_and_said_so(tmp_path):
    assert run_in_own_thread(_refused_after(tmp_path, lambda sender: sender.send(b"x" * (LARGEST + 1))))


@pytest.mark.parametrize("kernel_does", [lambda sender: sender.send(b"x" * LARGEST), lambda sender: sender.close(0)],
                         ids=["sends a message the channel takes", "closes its socket (exits)"])
def test_a_kernel_that_closes_its_socket_is_not_taken_for_a_refused_message(tmp_path, kernel_does):
    assert not run_in_own_thread(_refused_after(tmp_path, kernel_does))


def _dead_pid() -> int:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(finished.stdout)


def test_a_sandbox_whose_grader_is_gone_is_removed_by_the_next_and_nothing_else(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("the instructor's")
    outside.chmod(0o400)
    abandoned = Path(tempfile.mkdtemp(prefix=f"ag-{_dead_pid()}-"))
    (abandoned / sandbox.SANDBOX_MARK).touch()  # as prepared_sandbox marks its own
    (abandoned / "0001" / "work").mkdir(parents=True)
    (abandoned / "0001" / "work" / "link").symlink_to(outside)  # what a learner may leave in its scratch
    (abandoned / "package").mkdir()
    (abandoned / "package").chmod(0o555)
    running = Path(tempfile.mkdtemp(prefix=f"ag-{os.getpid()}-"))  # a grader still at work
    elsewhere = Path(tempfile.mkdtemp(prefix=f"ag-{_dead_pid()}-"))  # one at work in another process namespace
    locks = [_locked_mark(running), _locked_mark(elsewhere)]
    unnamed = Path(tempfile.mkdtemp(prefix="ag-"))
    try:
        with prepared_sandbox(unsafe_no_sandbox=True):
            pass
        assert not abandoned.exists()
        assert running.is_dir() and elsewhere.is_dir() and unnamed.is_dir()
        assert outside.read_text() == "the instructor's" and stat.S_IMODE(outside.stat().st_mode) == 0o400
    finally:
        for lock in locks:
            os.close(lock)
        for folder in (abandoned, running, elsewhere, unnamed):
            shutil.rmtree(folder, ignore_errors=True)


def _locked_mark(folder: Path) -> int:
    """Mark ``folder`` as a sandbox and hold its lock, as a live grader does (from any
    process namespace: the process number in the name of ``elsewhere`` runs nowhere here)."""
    descriptor = os.open(folder / sandbox.SANDBOX_MARK, os.O_WRONLY | os.O_CREAT)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    return descriptor


@pytest.mark.slow
def test_a_grader_killed_mid_class_leaves_nothing_behind_the_next_one(tmp_path):
    (tmp_path / "subs").mkdir()
    nbformat.write(submission(prediction=RIGHT_PREDICTION, before="import time\ntime.sleep(60)"),
                   tmp_path / "subs" / "slow.ipynb")
    grader = subprocess.Popen([sys.executable, "-m", "attncourse.instructor", "grade", str(tmp_path / "subs"),
                               "--chapters", str(ROOT / "chapters"), "--out", str(tmp_path / "report"),
                               "--assign", f"{SOFTMAX},{DOUBLING}"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    scratch: list[Path] = []
    while not scratch and time.monotonic() < deadline:  # the learner's kernel has started
        time.sleep(0.5)
        scratch = list(Path(tempfile.gettempdir()).glob(f"ag-{grader.pid}-*/0000/runtime/kernel.json"))
    grader.kill()
    grader.wait()
    assert scratch, "the grader never started the learner's kernel"
    left = scratch[0].parents[2]
    groups = cgroups.available()
    with prepared_sandbox(unsafe_no_sandbox=True):
        assert not left.exists()
    if groups is not None:
        for parent in {groups.memory, groups.pids}:
            assert not list(parent.glob(f"{left.name}-*"))


# --- red team D: an instructor's own folder named like a sandbox ---------------------


def test_an_instructors_folder_named_like_a_sandbox_is_never_removed(tmp_path):
    """``/tmp/ag-2025-fall`` holding the submissions (and a folder named exactly as mkdtemp
    names a sandbox, but never marked as one) is not a sandbox: the next grader keeps it,
    and still removes a marked sandbox whose grader is gone."""
    dead = _dead_pid()
    term = Path(tempfile.gettempdir()) / f"ag-{dead}-fall"
    alike = Path(tempfile.mkdtemp(prefix=f"ag-{dead}-"))  # the name a sandbox of that grader would have
    linked = Path(tempfile.mkdtemp(prefix=f"ag-{dead}-"))
    abandoned = Path(tempfile.mkdtemp(prefix=f"ag-{dead}-"))
    (abandoned / sandbox.SANDBOX_MARK).touch()
    (linked / sandbox.SANDBOX_MARK).symlink_to(tmp_path)  # a mark that is not a file of its own
    try:
        for folder in (term, alike):
            (folder / "submissions").mkdir(parents=True)
            (folder / "submissions" / "alice.ipynb").write_text("{}")
        with prepared_sandbox(unsafe_no_sandbox=True):
            pass
        for folder in (term, alike):
            assert (folder / "submissions" / "alice.ipynb").read_text() == "{}"
        assert linked.is_dir() and not abandoned.exists()
    finally:
        for folder in (term, alike, linked, abandoned):
            shutil.rmtree(folder, ignore_errors=True)


def test_the_client_has_no_heartbeat_thread_a_kernel_could_stall(tmp_path):
    """A kernel that writes bytes that are not ZeroMQ's into its sockets broke the heartbeat's
    connection, and jupyter_client's heartbeat thread then waited for ever: stopping the
    client (after every notebook) hung the grader and the class. The grader asks the
    kernel's process whether it lives; its client starts no heartbeat at all."""
    km = SandboxedKernelManager(["true"], kernel_name="python3", transport="ipc", ip=str(tmp_path / "k"),
                                connection_file=str(tmp_path / "kernel.json"))
    client = km.client()
    client.start_channels()
    try:
        assert not client.hb_channel.is_alive() and client.hb_channel.socket is None
    finally:
        km.close_clients()


def test_without_bubblewrap_the_refusal_names_the_command_that_installs_it(tmp_path, monkeypatch):
    which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None if name == "bwrap" else which(name))
    with pytest.raises(sandbox.SandboxUnavailable, match="`make system-packages`"):
        sandbox._probe(sandbox.Sandbox(tmp_path, isolated=True))


def test_each_cell_s_own_reply_is_no_output_but_any_more_are():
    """Red team 8: 15,000 silent cells passed the output limit on their replies alone."""
    from attncourse.instructor.run.execution import _OutputLimitedClient

    class Kernel:
        killed = False

        def kill_sandbox(self):
            Kernel.killed = True

    client = _OutputLimitedClient(nbformat.v4.new_notebook(), Kernel(), output_limit=1000)
    reply, output = {"msg_type": "execute_reply"}, {"msg_type": "stream"}
    for _ in range(3):
        client.replies_due += 1  # as running a code cell does
        client.count(reply, 700)
    assert client.received == 0 and not Kernel.killed
    client.count(reply, 700)  # a reply no cell asked for: counted
    client.count(output, 400)
    assert client.received == 1100 and Kernel.killed and client.cut_in == 0
    client.replies_due += 1
    client.count(reply, 19_000_000)  # a cell's own reply carrying a payload (red team 9): the payload counts
    assert client.received == 1100 + 19_000_000 - 4096


def why_reading_stopped(message: str, running: int) -> tuple[int, str]:
    """Where and why a run stopped once reading the kernel's ``message`` raised."""
    from attncourse.instructor.run.execution import _OutputLimitedClient, _why_it_stopped

    class Kernel:
        def kill_sandbox(self):
            pass

    client = _OutputLimitedClient(nbformat.v4.new_notebook(), Kernel(), output_limit=1000)
    try:
        json.loads(message)
    except (ValueError, RecursionError) as error:
        return _why_it_stopped(error, client, running, 1.0, 60.0, sandbox.DEFAULT_LIMITS)
    raise AssertionError("the message was read")


def test_a_message_holding_a_huge_whole_number_is_named_as_the_grader_s_reading_it():
    """Red team 8: `10**5000` displayed after sys.set_int_max_str_digits(0) read as "could not run: ValueError"."""
    cell, why = why_reading_stopped("1" * 5000, 3)
    assert cell == 3 and why.startswith("sent, in cell 4, a message the grader cannot read: a whole number")


def test_a_message_nested_past_python_s_stack_is_named_as_the_grader_s_reading_it():
    """Red team 12: a display of JSON nested 700 deep read as "could not run in cell 50: RecursionError"."""
    cell, why = why_reading_stopped("[" * 100_000 + "]" * 100_000, 49)
    assert cell == 49 and why.startswith("sent, in cell 50, a message the grader cannot read: nested deeper")


def test_a_cell_nbclient_will_not_run_earns_no_reply_allowance():
    """Red team 9 and 10: a blank cell, or one tagged to be skipped, never replies."""
    from attncourse.instructor.run.execution import _OutputLimitedClient

    class Kernel:
        def kill_sandbox(self):
            pass

    client = _OutputLimitedClient(nbformat.v4.new_notebook(), Kernel(), output_limit=1000)
    client.kc = object()  # nbclient asserts a kernel client; none of these cells reaches it
    tagged = nbformat.v4.new_code_cell("x = 1", metadata={"tags": [client.skip_cells_with_tag]})
    for cell in (nbformat.v4.new_code_cell("  \n"), tagged, nbformat.v4.new_markdown_cell("# notes")):
        run_in_own_thread(client.async_execute_cell(cell, 0))
    assert client.replies_due == 0

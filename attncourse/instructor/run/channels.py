"""The grader's end of a sandboxed kernel: a kernel manager that starts the kernel behind
the sandbox's command, and channels that count every message the kernel sends, refuse
one too large, and need no heartbeat."""

from __future__ import annotations

import os
from pathlib import Path

import zmq
import zmq.asyncio
import zmq.utils.monitor
from jupyter_client.channels import AsyncZMQSocketChannel, HBChannel
from jupyter_client.manager import AsyncKernelManager

from attncourse.instructor.learner_text import cleaned
from attncourse.instructor.run import cgroups
from attncourse.instructor.run.sandbox import MiB


class _CountedChannel(AsyncZMQSocketChannel):
    """A channel to the kernel that hands every message it receives to ``count`` (with its
    size in bytes as it arrived), whichever cell it claims to belong to, or none: nbclient
    reads and drops a message another cell's id, and would count nothing of it."""

    def __init__(self, socket, session, loop=None):
        super().__init__(socket, session, loop)
        self.monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_CONNECT_RETRIED)
        self.cut_off = False

    def count(self, message: dict, size: int) -> None:
        """Replaced per kernel (``SandboxedKernelManager.client``)."""

    async def refused_a_message(self) -> bool:
        """Whether the channel's connection closed for good. libzmq ends a connection and
        never retries it when the channel refuses a message larger than it takes
        (``SandboxedKernelManager``'s ``largest_message``); a connection the kernel closed
        (at its exit or shutdown) it retries at once, and says so in an event of its own."""
        while await self.monitor.poll(0):
            event = zmq.utils.monitor.parse_monitor_message(await self.monitor.recv_multipart())["event"]
            self.cut_off = event == zmq.EVENT_DISCONNECTED
        return self.cut_off

    async def _recv(self, **kwargs) -> dict:  # type: ignore[override]  # async, as its base class's
        frames = await self.socket.recv_multipart(**kwargs)
        _, parts = self.session.feed_identities(frames)
        message = cleaned(self.session.deserialize(parts))  # the kernel's text, safe to write
        self.count(message, sum(len(frame) for frame in frames))
        return message


class _NoHeartbeat(HBChannel):
    """The client's heartbeat channel, which never starts. The grader learns whether the
    kernel lives from its process (the client's kernel manager asks it), not from a
    heartbeat; and jupyter_client's heartbeat thread can wait without end on a socket whose
    connection the kernel broke (a learner who writes bytes that are not ZeroMQ's into its
    sockets): stopping the client would then wait for that thread for ever, and the whole
    class with it."""

    def start(self) -> None:
        """Never connects: no thread, no socket."""


# At most this many messages wait in the grader for each channel (the kernel's side keeps
# its own queue, and its memory limit bounds that): with the largest message a channel takes
# (twice the output limit, ``SandboxedKernelManager.client``) it bounds what a kernel can
# make the grader hold, however fast it sends.
QUEUED_MESSAGES = 16


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager that starts the kernel behind ``prefix`` (the sandbox's command)."""

    def __init__(self, prefix: list[str], owner: int | None = None, group: cgroups.Group | None = None,
                 largest_message: int = 20 * MiB, **kwargs):
        super().__init__(**kwargs)
        self.prefix = prefix
        self.owner = owner  # the kernel's uid, if not ours: it must read the connection file
        self.group = group  # the sandbox's control group, if it has one
        self.process = None
        self.received = lambda message, size: None  # told of every message from the kernel
        # The client's sockets: a message larger than ``largest_message`` closes the connection
        # before it is read (it could never be kept: the output limit is lower), and at most
        # QUEUED_MESSAGES wait in the grader.
        self.client_context = zmq.asyncio.Context()
        self.client_context.setsockopt(zmq.MAXMSGSIZE, largest_message)
        self.client_context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)
        self.clients: list = []

    def client(self, **kwargs):
        """A client whose channels count every message they receive (``received``)."""
        counted = type("Counted", (_CountedChannel,), {"count": lambda _, message, size: self.received(message, size)})
        self.clients.append(super().client(context=self.client_context, shell_channel_class=counted,
                                           iopub_channel_class=counted, stdin_channel_class=counted,
                                           control_channel_class=counted, hb_channel_class=_NoHeartbeat,
                                           **kwargs))
        return self.clients[-1]

    async def refused_a_message(self) -> bool:
        """Whether a channel to the kernel refused a message (too large, or malformed) and
        closed for good."""
        channels = [getattr(client, f"_{name}_channel", None) for client in self.clients
                    for name in ("shell", "iopub", "stdin", "control")]
        return any([await channel.refused_a_message() for channel in channels if isinstance(channel, _CountedChannel)])

    def close_clients(self) -> None:
        """Stop the clients' channels (nbclient leaves them running when it does not own the
        kernel manager), then close their sockets."""
        for client in self.clients:
            client.stop_channels()
        self.client_context.destroy(linger=0)

    def write_connection_file(self, **kwargs) -> None:
        super().write_connection_file(**kwargs)
        if self.owner is not None:
            os.chown(self.connection_file, self.owner, self.owner)

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        return [*self.prefix, *super().format_kernel_cmd(extra_arguments)]

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        await super()._async_launch_kernel(kernel_cmd, **kw)
        self.process = getattr(self.provisioner, "process", None)

    def lock_runtime(self) -> None:
        """Once the kernel has made its sockets: its runtime folder, the one place on the
        host's disk it could write to, goes back to root and is read-only to it (when the
        kernel runs as nobody; as the instructor's own uid it could undo a chmod), and so
        does every file in it: the connection file, the kernel's to read at its start, would
        otherwise take whatever the kernel appends to it, on the host's disk and past every
        limit. The sockets stay usable: the kernel listens on them already, and root connects."""
        if self.owner is not None:
            runtime = Path(self.connection_file).parent
            os.chown(runtime, 0, 0)
            runtime.chmod(0o755)
            for entry in runtime.iterdir():
                os.chown(entry, 0, 0, follow_symlinks=False)
                if not entry.is_symlink() and entry.is_file():
                    entry.chmod(0o644)

    def kill_sandbox(self) -> None:
        """Kill the kernel's process if it still runs: bubblewrap takes the whole sandbox
        (every process in it) down with it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def out_of_memory(self) -> bool:
        """Whether Linux killed a process of the sandbox at its control group's memory limit."""
        return self.group is not None and self.group.out_of_memory()

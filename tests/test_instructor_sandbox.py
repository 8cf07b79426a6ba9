"""The grader's side of a kernel's channels (``attncourse.instructor.sandbox``): a message
too large is refused and said so, a kernel that closes its sockets is not taken for one.
The sandbox itself is attacked by the hostile classes in tests/test_instructor_grading.py."""

from __future__ import annotations

import asyncio
import time

import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session

from attncourse.instructor.sandbox import _CountedChannel

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
    assert asyncio.run(_refused_after(tmp_path, lambda sender: sender.send(b"x" * (LARGEST + 1))))


@pytest.mark.parametrize("kernel_does", [lambda sender: sender.send(b"x" * LARGEST), lambda sender: sender.close(0)],
                         ids=["sends a message the channel takes", "closes its socket (exits)"])
def test_a_kernel_that_closes_its_socket_is_not_taken_for_a_refused_message(tmp_path, kernel_does):
    assert not asyncio.run(_refused_after(tmp_path, kernel_does))

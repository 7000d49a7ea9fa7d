"""The stdio relay's own descriptors: pipes become transports, files stay plain, modes come back."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

from mcpsniff.relay.stdio_io import Input, Output, blocking_modes, forward, restore_blocking


def read_all(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 1 << 16):
        into += chunk


def test_a_pipe_output_writes_in_order_and_close_waits_for_a_slow_reader() -> None:
    async def scenario() -> bytes:
        read_fd, write_fd = os.pipe()
        output = Output(write_fd)
        await output.open()
        assert output.writer is not None  # a pipe: an asyncio transport
        got = bytearray()
        await output.write(b"first ")
        output.write_nowait(b"x" * (1 << 20))  # more than the pipe holds
        reader = threading.Thread(target=read_all, args=(read_fd, got))
        reader.start()
        await output.close(stall=5.0)
        os.close(write_fd)
        await asyncio.get_running_loop().run_in_executor(None, reader.join)
        os.close(read_fd)
        return bytes(got)

    assert asyncio.run(scenario()) == b"first " + b"x" * (1 << 20)


def test_a_file_output_is_written_plainly_and_text_goes_through_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        with open(tmp_path / "out", "wb") as file:
            output = Output(file.fileno())
            await output.open()
            assert output.writer is None
            await output.write(b"bytes\n")
            stream = output.text_stream(sys.stderr)
            stream.write("text \u2603\n")
            stream.flush()

    asyncio.run(scenario())
    assert (tmp_path / "out").read_bytes() == "bytes\ntext \u2603\n".encode()


def test_a_pipe_input_reads_until_eof() -> None:
    async def scenario() -> list[bytes]:
        read_fd, write_fd = os.pipe()
        source = Input(read_fd)
        await source.open()
        os.write(write_fd, b"hello")
        os.close(write_fd)
        chunks = [await source.read(), await source.read()]
        source.close()
        os.close(read_fd)
        return chunks

    assert asyncio.run(scenario()) == [b"hello", b""]


def test_blocking_modes_are_put_back() -> None:
    before = blocking_modes()
    read_fd, write_fd = os.pipe()
    try:
        saved = {fd: os.get_blocking(fd) for fd in (read_fd, write_fd)}
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        restore_blocking(saved)
        assert {fd: os.get_blocking(fd) for fd in (read_fd, write_fd)} == saved
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert blocking_modes() == before


def test_forward_writes_to_a_child_and_says_false_once_its_stdin_is_closed() -> None:
    """A real child's stdin: bytes reach it; after it closed stdin, forward says False."""

    async def scenario() -> tuple[bool, bytes, bool]:
        # The child echoes one line and exits, closing its stdin.
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys; sys.stdout.write(sys.stdin.readline()); sys.stdout.flush()",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None
        first = await forward(proc.stdin, b"hello\n")
        echoed = await proc.stdout.readline()
        await proc.wait()
        later = True
        for _ in range(50):  # the first write after the exit may still land in the pipe
            later = await forward(proc.stdin, b"x" * 65536)
            if not later:
                break
        return first, echoed, later

    first, echoed, later = asyncio.run(scenario())
    assert first is True
    assert echoed == b"hello\n"
    assert later is False

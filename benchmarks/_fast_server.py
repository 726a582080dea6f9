"""A fake OpenAI-compatible chat server on asyncio, for benchmarks of many calls at once.

``tests.fakes``' threaded server answers some tens of calls a second with 200 held open
at once: it would be what a benchmark of 100,000 calls measures. This one answers every
``POST .../chat/completions`` after ``latency`` seconds on one event loop, over
keep-alive HTTP/1.1 connections, with the same answer each time.

    python benchmarks/_fast_server.py LATENCY   # prints its URL, serves until stdin closes
"""

from __future__ import annotations

import asyncio
import json
import sys

BODY = json.dumps(
    {
        "id": "bench",
        "object": "chat.completion",
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "The total is 1,204."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }
).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
    + BODY
)


async def serve(latency: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                await asyncio.sleep(latency)
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
    server.close()


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1])))

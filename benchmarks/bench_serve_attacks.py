"""`oxy serve` under the attacks its limits are for: how fast each is refused or stopped,
how much memory it takes, and whether ``/healthz`` still answers meanwhile.

Builds a history of 40 prompts x 40 cases, starts ``oxy serve`` on it (its own process,
as users run it) and measures:

* a 3.7 KB query nesting ``prompts -> testCases -> prompt`` 25 times (depth 7, 175 fields):
  refused before it runs; then, with ``--max-cost`` raised so it runs, what stops it (the
  bound on an answer's values) and the server's memory;
* the same query from a client that leaves after 0.5 s: the server's CPU after it left;
* SIGTERM while such a query runs: seconds until the server has exited;
* 30,000 trivial operations in one 0.8 MB document;
* 300 sockets held open silently from other client addresses (127.0.0.2-3);

each with the worst ``/healthz`` latency seen while it lasts.

    python benchmarks/bench_serve_attacks.py
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from oxyeval.store import open_store  # noqa: E402

NESTED = "prompts { testCases { prompt { testCases { prompt { testCases { id } } } } } }"
ATTACK = "{ " + " ".join(f"a{i}: {NESTED}" for i in range(25)) + " }"
OPERATIONS = " ".join(f"query Q{i}{{__typename}}" for i in range(30_000))


def build(root: Path, prompts: int = 40, cases: int = 40) -> None:
    (root / "config.yml").write_text("models:\n  - {name: m, vendor: mock, outputs: [ok]}\n")
    store = open_store(root / ".oxy" / "oxyeval.db")
    for p in range(prompts):
        store.prompts.upsert(f"p{p}", f"prompt {p}", "api")
        store.prompts.ensure_version(f"p{p}", {"template": "{{ q }}", "model": "m"})
        for c in range(cases):
            store.cases.create(f"p{p}", f"case {c}", {"q": c}, "ok")
    store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: Path, *options: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "oxyeval", "serve", "--project", str(root)]
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port), *options],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        with httpx.Client(base_url=self.url, timeout=5) as client:
            for _ in range(200):
                try:
                    if client.get("/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    time.sleep(0.05)
        raise SystemExit("the server did not start: " + self.process.stderr.read().decode())

    def rss_mb(self) -> float:
        pages = int(Path(f"/proc/{self.process.pid}/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)


def watch_health(server: Server, during: Callable[[], object]) -> tuple[object, float, int]:
    """``during()``'s result, the worst /healthz latency (ms) and how many failed, polled
    every 50 ms while it runs."""
    worst, failed = 0.0, 0
    done = threading.Event()

    def poll() -> None:
        nonlocal worst, failed
        with httpx.Client(base_url=server.url, timeout=30) as client:
            while not done.is_set():
                t = time.perf_counter()
                try:
                    ok = client.get("/healthz").status_code == 200
                except httpx.TransportError:
                    ok = False
                worst = max(worst, (time.perf_counter() - t) * 1000)
                failed += not ok
                time.sleep(0.05)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        result = during()
    finally:
        done.set()
        poller.join()
    return result, worst, failed


def post(server: Server, query: str, timeout: float = 120) -> tuple[int, str, float]:
    t = time.perf_counter()
    with httpx.Client(base_url=server.url, timeout=timeout) as client:
        response = client.post("/graphql", json={"query": query})
    message = response.json().get("errors", [{}])[0].get("message", "")[:90]
    return response.status_code, message, time.perf_counter() - t


def report(name: str, detail: str, worst: float, failed: int) -> None:
    print(f"{name}\n    {detail}\n    /healthz meanwhile: worst {worst:.0f} ms, {failed} failed")


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="oxy-bench-attacks-"))
    try:
        build(root)
        print(f"history: 40 prompts x 40 cases; query {len(ATTACK):,} bytes\n")

        server = Server(root)
        try:
            (status, message, took), worst, failed = watch_health(
                server, lambda: post(server, ATTACK)
            )
            report(
                "nested query, default limits",
                f"HTTP {status} in {took * 1000:.0f} ms: {message}",
                worst,
                failed,
            )
            (status, message, took), worst, failed = watch_health(
                server, lambda: post(server, OPERATIONS)
            )
            report(
                f"30,000 operations ({len(OPERATIONS) / 1e6:.2f} MB)",
                f"HTTP {status} in {took * 1000:.0f} ms: {message}",
                worst,
                failed,
            )

            def hold() -> str:
                held = []
                for n in range(300):
                    sock = socket.socket()
                    sock.bind((f"127.0.0.{2 + n % 2}", 0))
                    try:
                        sock.connect(("127.0.0.1", server.port))
                    except OSError:
                        sock.close()
                        continue
                    held.append(sock)
                time.sleep(1)
                with httpx.Client(base_url=server.url, timeout=5) as client:
                    served = client.get("/healthz").status_code
                refused = 0
                for sock in held:
                    sock.setblocking(False)
                    with contextlib.suppress(BlockingIOError, ConnectionError):
                        refused += sock.recv(64).startswith(b"HTTP/1.1 503")
                    sock.close()
                return (
                    f"{len(held)} sockets opened, {refused} refused at once (503); a request "
                    f"from 127.0.0.1 meanwhile: {served}"
                )

            detail, worst, failed = watch_health(server, hold)
            report("300 silent sockets from 127.0.0.2-3", detail, worst, failed)
        finally:
            server.stop()

        server = Server(root, "--max-cost", str(10**15))
        try:
            before = server.rss_mb()
            (status, message, took), worst, failed = watch_health(
                server, lambda: post(server, ATTACK)
            )
            report(
                "nested query, --max-cost raised (runs until a bound stops it)",
                f"HTTP {status} in {took:.1f} s: {message}; server memory "
                f"{before:.0f} -> {server.rss_mb():.0f} MB",
                worst,
                failed,
            )

            def leave() -> str:
                with contextlib.suppress(httpx.TimeoutException):
                    post(server, ATTACK, timeout=0.5)
                time.sleep(0.5)
                start = server.cpu_s()
                time.sleep(2)
                return (
                    f"server CPU in the 2 s after the client left: {server.cpu_s() - start:.2f} s"
                )

            detail, worst, failed = watch_health(server, leave)
            report("nested query, client leaves after 0.5 s", detail, worst, failed)

            runner = threading.Thread(target=lambda: _quietly(post, server, ATTACK))
            runner.start()
            time.sleep(1)
            t = time.perf_counter()
            server.process.send_signal(signal.SIGTERM)
            server.process.wait(timeout=60)
            print(f"SIGTERM during the nested query\n    exited in {time.perf_counter() - t:.2f} s")
            runner.join()
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _quietly(fn: Callable[..., object], *args: object) -> None:
    with contextlib.suppress(httpx.HTTPError, ValueError):
        fn(*args)


if __name__ == "__main__":
    main()

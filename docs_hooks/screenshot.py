"""Retake docs/images/dashboard.png: the dashboard's test-cases page over the examples.

Copies examples/ to a temporary folder, runs its test cases three times and a
consistency test there (offline, mock models), serves it, and photographs the page with
Debian's headless chromium through its chromedriver (never a downloaded browser):

    python docs_hooks/screenshot.py [OUT.png]

Needs the dev extra (selenium, the serve dependencies) and `apt-get install chromium
chromium-driver`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main(out: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    oxy = [sys.executable, "-m", "oxyeval"]
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "oxyeval" / "examples"
        shutil.copytree(ROOT / "examples", project, ignore=shutil.ignore_patterns(".oxy"))
        for _ in range(3):
            subprocess.run([*oxy, "cases", "run", "-q"], cwd=project, capture_output=True)
        subprocess.run(
            [*oxy, "test", "agents/users.agent.yml", "-q"], cwd=project, capture_output=True
        )
        port = _free_port()
        server = subprocess.Popen(
            [*oxy, "serve", "--project", str(project), "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/"
            for _ in range(100):
                try:
                    urllib.request.urlopen(url, timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            os.environ["SE_OFFLINE"] = "true"  # selenium-manager must never download
            options = webdriver.ChromeOptions()
            options.binary_location = "/usr/bin/chromium"
            for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                        "--window-size=1280,620", "--hide-scrollbars"):  # fmt: skip
                options.add_argument(arg)
            driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
            try:
                driver.get(url + "#/cases")
                for _ in range(100):
                    if not driver.execute_script("return document.getElementById('view').ariaBusy"):
                        break
                    time.sleep(0.1)
                time.sleep(0.5)  # the bars' transition
                driver.save_screenshot(str(out))
            finally:
                driver.quit()
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "dashboard.png")

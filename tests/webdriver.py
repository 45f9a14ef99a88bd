"""A headless Chromium driven over the W3C WebDriver protocol by chromedriver, with the standard
library only (urllib): open a page, find elements by XPath, click, enter frames, read the text
the browser renders (WebDriver's element text is the *visible* text), take screenshots.

Used by tests/test_report_browser.py (``scripts/check_report_browser.sh`` installs Debian's
chromium and chromium-driver and runs it)."""
from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"      # the W3C key of an element reference
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000"]


def find_chromium() -> tuple[str | None, str | None]:
    """(chromium binary, chromedriver binary) on PATH, or None for each one missing."""
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    return browser, shutil.which("chromedriver")


class WebDriverError(RuntimeError):
    pass


class Chromium:
    """``with Chromium() as browser: browser.open(url); el = browser.find("//a"); browser.click(el)``."""

    def __init__(self, browser: str | None = None, driver: str | None = None, timeout: float = 30.0):
        found_browser, found_driver = find_chromium()
        self.browser, self.driver = browser or found_browser, driver or found_driver
        if not (self.browser and self.driver):
            raise WebDriverError("chromium and chromedriver are needed (Debian: apt-get install -y chromium chromium-driver)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="fedrepro-chromium-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = open(Path(self.profile) / "chromedriver.log", "w")
        self.proc = subprocess.Popen([self.driver, f"--port={self.port}"], stdout=self.log, stderr=subprocess.STDOUT)
        self.session = None
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._request("GET", "/status")["value"].get("ready"):
                    break
            except (OSError, WebDriverError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.log.flush()
                log = Path(self.log.name).read_text()[-2000:]
                self.close()
                raise WebDriverError(f"chromedriver did not start within {timeout} s; its log ends:\n{log}")
            time.sleep(0.2)
        caps = {"browserName": "chrome", "goog:chromeOptions": {
            "binary": self.browser, "args": [*CHROMIUM_ARGS, f"--user-data-dir={self.profile}/profile"]}}
        try:
            self.session = self._request("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["value"]["sessionId"]
        except Exception:
            self.close()
            raise

    # -- protocol -------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + 30) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            detail = json.loads(err.read() or b"{}").get("value", {})
            raise WebDriverError(f"{method} {path}: {detail.get('error')}: {detail.get('message', '')[:300]}") from None

    def _call(self, method: str, path: str, body: dict | None = None):
        return self._request(method, f"/session/{self.session}{path}", body).get("value")

    # -- browsing -------------------------------------------------------------------------------
    def open(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    def find(self, xpath: str, timeout: float | None = None) -> str:
        """The first element matching ``xpath`` (waiting up to ``timeout`` s for it to appear)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            try:
                return self._call("POST", "/element", {"using": "xpath", "value": xpath})[ELEMENT]
            except WebDriverError as err:
                if "no such element" not in str(err) or time.monotonic() > deadline:
                    raise WebDriverError(f"no element {xpath!r} appeared: {err}") from None
            time.sleep(0.2)

    def click(self, element: str) -> None:
        self._call("POST", f"/element/{element}/click", {})

    def text(self, element: str) -> str:
        """The element's rendered text (what a user sees: hidden elements contribute nothing)."""
        return self._call("GET", f"/element/{element}/text")

    def displayed(self, element: str) -> bool:
        return bool(self._call("GET", f"/element/{element}/displayed"))

    def attribute(self, element: str, name: str):
        return self._call("GET", f"/element/{element}/property/{name}")

    def enter_frame(self, element: str) -> None:
        self._call("POST", "/frame", {"id": {ELEMENT: element}})

    def leave_frames(self) -> None:
        self._call("POST", "/frame", {"id": None})

    def screenshot(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_bytes(base64.b64decode(self._call("GET", "/screenshot")))
        return path

    def close(self) -> None:
        if self.session:
            try:
                self._request("DELETE", f"/session/{self.session}")
            except (OSError, WebDriverError):
                pass
            self.session = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

"""A headless Chromium driven through the DevTools protocol (over `websockets`): load, type, click, drop files, screenshot.

Used by tests/test_web_browser.py and bench/web.py. Only the system browser is used (nothing is
downloaded); `find_chromium()` is None where there is none, and the tests skip.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

__all__ = ["Chromium", "find_chromium", "free_port", "wait_for_http"]

# Without the background-networking flags Chromium keeps trying Google's hosts, which a closed
# network refuses many times a start.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
    "--disable-extensions", "--mute-audio", "--hide-scrollbars",
]


def find_chromium() -> str | None:
    for name in (os.environ.get("KG_TEST_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, timeout: float = 60.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


class Chromium:
    """One headless browser with one page; `evaluate` runs JavaScript in it and returns the value."""

    def __init__(self, executable: str, width: int = 1440, height: int = 900) -> None:
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="kg-chromium-")
        port = free_port()
        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", f"--remote-debugging-port={port}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        page = None
        while page is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as response:
                    page = next((t for t in json.load(response) if t["type"] == "page"), None)
            except OSError:
                pass
            if page is None:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError("Chromium did not start its DevTools endpoint")
                time.sleep(0.2)
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=64 * 2**20, open_timeout=10)
        self._id = 0
        self.events: list[dict] = []
        self.console: list[str] = []
        for domain in ("Page", "Runtime", "DOM"):
            self.send(f"{domain}.enable")
        self.resize(width, height)

    def send(self, method: str, params: dict | None = None, timeout: float = 30.0) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict) -> None:
        self.events.append(message)
        if message.get("method") == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            self.console.append("exception: " + details.get("exception", {}).get("description", details.get("text", "")))
        elif message.get("method") == "Runtime.consoleAPICalled":
            args = message["params"]["args"]
            self.console.append(message["params"]["type"] + ": " + " ".join(str(a.get("value", a.get("description"))) for a in args))
        elif message.get("method") == "Page.javascriptDialogOpening":
            self.ws.send(json.dumps({"id": 0, "method": "Page.handleJavaScriptDialog", "params": {"accept": True}}))

    def resize(self, width: int, height: int) -> None:
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})

    def goto(self, url: str, timeout: float = 30.0, headers: dict | None = None) -> None:
        if headers:
            self.send("Network.enable")
            self.send("Network.setExtraHTTPHeaders", {"headers": headers})
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete' && document.body && document.body.dataset.ready === '1'", timeout)

    def evaluate(self, expression: str, await_promise: bool = False):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": await_promise})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def wait_for(self, condition: str, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(f"(function(){{ try {{ var v = ({condition}); return typeof v === 'object' && v !== null ? true : v; }} catch (e) {{ return false; }} }})()")
            except RuntimeError:
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"waited {timeout} s for: {condition}\nconsole: {self.console[-10:]}")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (scrolled into view first)."""
        box = self.evaluate(
            f"(function(){{ var e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise LookupError(f"no element {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def type_text(self, selector: str, text: str) -> None:
        self.click(selector)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        self.send("Input.insertText", {"text": text})

    def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": "Enter", "code": "Enter",
                                                 "windowsVirtualKeyCode": 13, "text": "\r" if kind == "keyDown" else ""})

    def set_files(self, selector: str, paths: list[Path]) -> None:
        """What choosing files in the file dialog does (the input's change event fires)."""
        node = self.send("DOM.querySelector", {"nodeId": self.send("DOM.getDocument")["root"]["nodeId"], "selector": selector})
        self.send("DOM.setFileInputFiles", {"nodeId": node["nodeId"], "files": [str(p) for p in paths]})

    def drop_files(self, selector: str, paths: list[Path]) -> None:
        """Drag files from the desktop and drop them on the element (the drop carries real files)."""
        box = self.evaluate(
            f"(function(){{ var e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
            " var r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        data = {"items": [], "files": [str(p) for p in paths], "dragOperationsMask": 1}
        for kind in ("dragEnter", "dragOver", "drop"):
            self.send("Input.dispatchDragEvent", {"type": kind, "x": box[0], "y": box[1], "data": data})

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        params: dict = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            metrics = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": metrics["width"], "height": min(metrics["height"], 6000), "scale": 1}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))
        return path

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

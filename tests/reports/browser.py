"""A headless Chromium driven over the DevTools protocol, for the page tests.

`Browser(tmp_dir)` starts Chromium with `--remote-debugging-pipe` (commands on fd 3, answers
on fd 4, each a JSON text ended by a NUL byte: no websocket library needed) and a fresh
profile in `tmp_dir`; `open(url)` makes a page and returns a `Page` whose `call(method,
**params)` sends one command and waits for its answer, `eval(js)` returns a value,
`move`/`click` send real mouse events and `screenshot(path)` writes a PNG. `chromium()` is the
browser's path, or None when it is not installed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, tmp_dir: str, width: int = 1400, height: int = 1000):
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        profile = os.path.join(tmp_dir, "chromium-profile")
        os.makedirs(profile, exist_ok=True)
        args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--no-first-run", "--mute-audio",
                f"--user-data-dir={profile}", f"--window-size={width},{height}",
                "--remote-debugging-pipe", "about:blank"]

        # The protocol's pipes must be fds 3 (commands in) and 4 (answers out) in the browser:
        # a small Python program moves them there and then becomes the browser (exec).
        move = ("import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
                "os.execv(sys.argv[3], sys.argv[3:])")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", move, str(to_browser_r), str(from_browser_w), *args],
            pass_fds=(to_browser_r, from_browser_w), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.out, self.inp = to_browser_w, from_browser_r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, session: str | None = None, timeout: float = 60, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.inp], [], [], left)[0]:
                raise BrowserError("no answer from Chromium in time")
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the pipe")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\0", 1)
        return json.loads(line)

    def open(self, url: str) -> Page:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Page.navigate", url=url)
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.out)
        os.close(self.inp)


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def call(self, method: str, **params):
        return self.browser.send(method, session=self.session, **params)

    def eval(self, js: str):
        result = self.call("Runtime.evaluate", expression=js, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{js[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, js: str, timeout: float = 60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(js)
            if value:
                return value
            time.sleep(0.05)
        raise BrowserError(f"waited {timeout}s for {js}")

    def move(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def click(self, x: float, y: float) -> None:
        self.move(x, y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def click_element(self, selector: str) -> None:
        """A real click at the middle of the element (scrolled into view first)."""
        box = self.eval(f"""(function () {{
            var el = document.querySelector({json.dumps(selector)});
            el.scrollIntoView({{block: "center"}});
            var r = el.getBoundingClientRect();
            return {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
        }})()""")
        self.click(box["x"], box["y"])

    def screenshot(self, path: str) -> str:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
        return path

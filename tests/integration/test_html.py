"""Integration test of the HTML dashboard: `interopcheck report` on a real run, opened and driven
in a real headless browser (Debian's chromium) over the Chrome DevTools Protocol.

It checks what a person sees (versions at the top, one matrix per protocol and device, passed/total
in a known cell, the legend), what they do (open a cell's cases, each filter, a gap's reason), that
the page fetches nothing, and that hostile library text (tests/probes/hostile.py, and a report
edited to carry megabytes and broken UTF-8) stays text: no script of it runs, and it is shown.
A screenshot goes to BUILD/test-artifacts/dashboard.png.

The DevTools client is the few lines below (HTTP for the target list, a minimal WebSocket), so
the test needs nothing beyond the standard library and the browser.

Usage: test_html.py INTEROPCHECK_BINARY
"""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import taplib

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")

# Runs before the page's own script: any alert, confirm or prompt, any handler that fires, and
# any blocked attempt to load or run something leaves a trace the test reads back.
SENTINEL = """
window.__alerts = [];
for (const name of ['alert', 'confirm', 'prompt']) {
  window[name] = (...args) => { window.__alerts.push(name + ':' + args.join(' ')); };
}
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__violations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


# --- a minimal Chrome DevTools Protocol client ------------------------------------------------

class WebSocket:
    """Just enough RFC 6455 for DevTools: text frames out (masked), frames in (unmasked)."""

    def __init__(self, url, timeout=30):
        assert url.startswith("ws://")
        hostport, _, path = url[len("ws://"):].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            response += chunk
        head, _, self.pending = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"WebSocket handshake refused: {head[:200]!r}")

    def _exact(self, n):
        while len(self.pending) < n:
            chunk = self.sock.recv(max(65536, n - len(self.pending)))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.pending += chunk
        data, self.pending = self.pending[:n], self.pending[n:]
        return data

    def _send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, text):
        self._send_frame(0x1, text.encode())

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else None
            payload = self._exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Browser:
    """A headless chromium with one page, driven over DevTools."""

    def __init__(self, executable, workdir):
        self.profile = os.path.join(workdir, "chromium-profile")
        os.makedirs(self.profile, exist_ok=True)
        self.log = open(os.path.join(workdir, "chromium.log"), "wb")
        args = [executable, "--headless=new", "--disable-gpu", "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--hide-scrollbars",
                "--window-size=1400,1000", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # chromium refuses to run as root with its sandbox
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            targets = json.load(r)
        page = next(t for t in targets if t["type"] == "page")
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []

    def call(self, method, timeout=60, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        self.ws.sock.settimeout(timeout)
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def js(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.js(expression):
                return True
            time.sleep(0.05)
        return False

    def open(self, path):
        # The page marks itself ready when drawn; marking the old page first keeps its mark
        # from being read as the new one's while the navigation is under way.
        self.js("document.documentElement && (document.documentElement.dataset.ready = 'old')")
        self.events.clear()
        self.call("Page.navigate", url="file://" + path)
        if not self.wait_for("!!document.documentElement && "
                             "document.documentElement.dataset.ready === '1'", timeout=60):
            raise RuntimeError(f"the dashboard did not finish drawing: {path}")

    def click(self, selector):
        """A real mouse click at the middle of the element the selector finds."""
        box = self.js(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            if (!node) return null;
            node.scrollIntoView({{block: 'center', inline: 'center'}});
            const r = node.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + Math.min(r.height / 2, 10)];
        }})()""")
        if box is None:
            raise RuntimeError(f"nothing to click: {selector}")
        x, y = box
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)
        self.js("0")  # the click's handlers have run once this returns

    def choose(self, name, label):
        """Picks the option `label` of the filter <select name=name>, as a change would."""
        ok = self.js(f"""(() => {{
            const s = document.querySelector('select[name={name}]');
            const o = [...s.options].find((o) => o.textContent === {json.dumps(label)});
            if (!o) return false;
            s.value = o.value;
            s.dispatchEvent(new Event('change', {{bubbles: true}}));
            return true;
        }})()""")
        if not ok:
            raise RuntimeError(f"filter {name} has no option {label}")

    def shown(self):
        return int(self.js("document.getElementById('status').dataset.shown"))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (OSError, RuntimeError, ConnectionError):
            pass
        self.ws.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# --- expectations computed from the JSON report -----------------------------------------------

def count(report, **where):
    return sum(all(c.get(k) == v for k, v in where.items()) for c in report["cases"])


def cell_cases(report, protocol, producer, consumer, device="cpu"):
    return [c for c in report["cases"] if c["protocol"] == protocol and c["producer"] == producer
            and c["consumer"] == consumer and c["device"] == device]


def find_chromium():
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def section(protocol, device="cpu"):
    return f"section.matrix[data-protocol={protocol}][data-device={device}]"


def cell_button(protocol, producer, consumer, device="cpu"):
    return (f"{section(protocol, device)} button.cell[data-producer={producer}]"
            f"[data-consumer={consumer}]")


# --- the checks ---------------------------------------------------------------------------------

def without_nonce(path):
    with open(path, encoding="utf-8") as handle:
        return re.sub(r"nonce(-|=\")[0-9a-f]{32}", "nonce", handle.read())


def check_command(tap, binary, workdir, run_json):
    html = run_json[:-len(".json")] + ".html"
    from_run = without_nonce(html) if os.path.exists(html) else None
    proc = taplib.run(binary, "report", run_json)
    tap.ok(proc.returncode == 0 and os.path.exists(html) and f"html: {html}" in proc.stdout,
           "report RUN.json writes RUN.html next to it and says so", proc.stdout + proc.stderr)
    # The run fills its dashboard during the JSON's pass over the cases; `report` reads them
    # from the JSON in a pass of its own: the same page either way, bar the nonce.
    tap.ok(from_run is not None and from_run == without_nonce(html),
           "the dashboard a run writes is the one `report` makes from its JSON")
    other = os.path.join(workdir, "elsewhere.html")
    proc = taplib.run(binary, "report", run_json, "--html", other)
    tap.ok(proc.returncode == 0 and os.path.exists(other), "--html FILE writes there",
           proc.stdout + proc.stderr)
    proc = taplib.run(binary, "report", os.path.join(workdir, "missing.json"))
    tap.ok(proc.returncode == 2 and "missing.json" in proc.stderr,
           "a missing report is exit status 2 with the path in the message", proc.stderr)
    not_report = os.path.join(workdir, "other.json")
    with open(not_report, "w") as handle:
        json.dump({"hello": 1}, handle)
    proc = taplib.run(binary, "report", not_report)
    tap.ok(proc.returncode == 2 and "not an interopcheck report" in proc.stderr,
           "a JSON file that is not a report is refused with exit status 2", proc.stderr)
    proc = taplib.run(binary, "report", run_json, "--html", "/nonexistent-dir/x.html")
    tap.ok(proc.returncode == 2 and "/nonexistent-dir/x.html" in proc.stderr,
           "an unwritable --html path is exit status 2 with the path in the message",
           proc.stderr)
    return html


def check_file(tap, html_path):
    raw = open(html_path, "rb").read()
    try:
        raw.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    tap.ok(valid, "the dashboard is valid UTF-8")
    lowered = raw.lower()
    tap.ok(lowered.count(b"</script") == 2 and lowered.count(b"<script") == 2,
           "the file has exactly its two script elements: library text closes none",
           f"{lowered.count(b'<script')} openers, {lowered.count(b'</script')} closers")
    # Everything but the data element is the page's own: it must name nothing to fetch.
    start = raw.index(b'<script type="application/json"')
    own = raw[:start] + raw[raw.index(b"</script>", start):]
    fetches = [word for word in (b"http:", b"https:", b" src=", b" href=", b"<link",
                                 b"@import", b"url(") if word in own]
    tap.ok(not fetches, "the page's own markup, style and script name nothing to fetch",
           fetches)
    tap.ok(b"Content-Security-Policy" in raw and b"default-src 'none'" in raw,
           "a Content-Security-Policy forbids every fetch")


def check_content(tap, browser, report):
    closed = browser.js("[...document.querySelectorAll('details.env')].map((d) => d.open)")
    tap.ok(closed and not any(closed), "the environment block starts closed: the page opens on "
           "the totals, the findings and the matrices", closed)
    browser.js("document.querySelectorAll('details.env').forEach((d) => { d.open = true; })")
    body = browser.js("document.body.innerText")
    libraries = {lib["name"]: lib for lib in report["environment"]["libraries"]}
    tap.ok(f"interopcheck {report['tool']['version']}" in body,
           "the header names the tool version", body[:300])
    for name in ("numpy", "torch"):
        tap.ok(libraries[name]["version"] in body, f"the {name} version is at the top",
               libraries[name])
    tap.ok(report["environment"]["python"]["version"] in body and
           report["environment"]["platform"]["machine"] in body,
           "the Python version and the platform are shown")
    cuda = report["environment"]["devices"]["cuda"]
    tap.ok(cuda["detail"] in body, "the CUDA device line says why (or what) it is", cuda)
    tap.ok(f"seed {report['run']['seed']}" in body, "the seed is shown")

    expected = set()
    for protocol, summary in report["summary"]["protocols"].items():
        for item in summary["cells"] + summary["gaps"]:
            expected.add((protocol, item["device"]))
    drawn = browser.js("[...document.querySelectorAll('section.matrix')]"
                       ".map((s) => [s.dataset.protocol, s.dataset.device])")
    tap.ok(expected == {tuple(d) for d in drawn} and len(drawn) == len(expected),
           "one matrix per protocol and device of the report", f"{drawn} vs {expected}")

    known = cell_cases(report, "dlpack", "numpy", "torch")
    passed = sum(c["outcome"] in ("pass", "xpass") for c in known)
    cell = browser.js(f"""(() => {{
        const b = document.querySelector({json.dumps(cell_button('dlpack', 'numpy', 'torch'))});
        return b && [b.dataset.passed, b.dataset.total, b.innerText, b.title];
    }})()""")
    tap.ok(cell and cell[0] == str(passed) and cell[1] == str(len(known)) and
           f"{passed}/{len(known)}" in cell[2],
           f"the dlpack numpy -> torch cell shows {passed}/{len(known)}", cell)

    browser.js("document.querySelector('details.legend-box').open = true")
    legend = browser.js("[...document.querySelectorAll('ul.legend li')].map((l) => l.innerText)")
    tap.ok(legend and len(legend) >= 8 and any("every case passed" in e for e in legend) and
           any("no cases" in e for e in legend) and any("failed" in e for e in legend),
           "the legend explains every colour, each with a mark", legend)


def check_cell_click(tap, browser, report):
    failing = next(((p, pr, co) for p in report["summary"]["protocols"]
                    for pr in ("numpy", "torch") for co in ("numpy", "torch", "interopcheck")
                    if any(c["outcome"] == "fail" for c in cell_cases(report, p, pr, co))), None)
    if not tap.ok(failing, "the run has a failing numpy/torch cell to open"):
        return
    protocol, producer, consumer = failing
    expected = cell_cases(report, protocol, producer, consumer)
    browser.click(cell_button(protocol, producer, consumer))
    listed = browser.js("[...document.querySelectorAll('#panel details.case')]"
                        ".map((d) => [d.dataset.id, d.dataset.outcome])")
    tap.ok(listed and len(listed) == min(len(expected), 200) and
           {i for i, _ in listed} <= {c["id"] for c in expected},
           f"a click on {protocol} {producer} -> {consumer} lists its {len(expected)} cases",
           f"{len(listed or [])} listed")
    first = listed[0] if listed else (None, None)
    tap.ok(first[1] == "fail", "failures come first", listed[:3])
    case = next((c for c in expected if c["id"] == first[0]), None)
    if case:
        rows = browser.js(f"""(() => {{
            const d = document.querySelector('#panel details.case[data-id="{case['id']}"]');
            return d.open && [...d.querySelectorAll('table.checks tbody tr')]
                .map((r) => [r.dataset.check, r.cells[1].innerText.replace(/^\\S+ /, ''),
                             r.cells[2].innerText, r.cells[3].innerText]);
        }})()""")
        want = [[name, check["status"], check.get("rule", ""), check.get("note", "")]
                for name, check in case["checks"].items()]
        tap.ok(rows and sorted(rows) == sorted(want),
               "the first failure is open with every check: status, rule and note",
               f"{rows}\nvs\n{want}")
        panel = browser.js("document.getElementById('panel').innerText")
        tap.ok(case["diagnostic"] in panel and case["rule"] in panel and
               case.get("request", "") in panel,
               "its diagnostic, rule and request are shown", case)

    listed_ids = {i for i, _ in listed}
    passing = next((c for c in expected if c["outcome"] == "pass" and c["id"] in listed_ids),
                   None)
    if passing:
        browser.click(f"#panel details.case[data-id=\"{passing['id']}\"] > summary")
        rows = browser.js(f"""[...document.querySelectorAll(
            '#panel details.case[data-id="{passing['id']}"] table.checks tbody tr')]
            .map((r) => r.dataset.check)""")
        tap.ok(rows and sorted(rows) == sorted(passing["checks"]),
               "a click on a passing case opens it with its checks", rows)
    browser.click("#panel header button")
    tap.ok(browser.js("!document.getElementById('panel')"), "Close closes the list")


def check_filters(tap, browser, report):
    total = len(report["cases"])
    tap.ok(browser.shown() == total, f"unfiltered, all {total} cases count")

    browser.choose("outcome", "fail")
    fails = count(report, outcome="fail")
    categories = browser.js("[...new Set([...document.querySelectorAll('button.cell')]"
                            ".map((b) => b.dataset.category))]")
    tap.ok(browser.shown() == fails and set(categories) <= {"fail", "none"},
           f"outcome=fail: {fails} cases, every cell drawn is a failing one", categories)
    cell_sum = browser.js("[...document.querySelectorAll('button.cell')]"
                          ".reduce((n, b) => n + Number(b.dataset.total || 0), 0)")
    tap.ok(cell_sum == fails, "... and the cells' counts add up to them", cell_sum)
    browser.click("button.cell[data-category=fail]")
    outcomes = browser.js("[...document.querySelectorAll('#panel details.case')]"
                          ".map((d) => d.dataset.outcome)")
    tap.ok(outcomes and set(outcomes) == {"fail"}, "... and a cell lists only failing cases",
           outcomes)
    browser.choose("outcome", "all")

    for name, field, value in (("producer", "producer", "numpy"),
                               ("consumer", "consumer", "torch"),
                               ("protocol", "protocol", "buffer"),
                               ("device", "device", "cpu"),
                               ("dtype", "dtype", "float32"),
                               ("layout", "layout", "flat")):
        browser.choose(name, value)
        want = count(report, **{field: value})
        tap.ok(browser.shown() == want, f"{name}={value} leaves its {want} cases",
               browser.js("document.getElementById('status').innerText"))
        browser.choose(name, "all")
    browser.choose("producer", "numpy")
    rows = browser.js("[...new Set([...document.querySelectorAll('table.grid tbody th')]"
                      ".map((t) => t.textContent))]")
    tap.ok(rows == ["numpy"], "producer=numpy leaves numpy's rows only", rows)
    browser.choose("protocol", "buffer")
    protocols = browser.js("[...document.querySelectorAll('section.matrix')]"
                           ".map((s) => s.dataset.protocol)")
    tap.ok(protocols == ["buffer"], "protocol=buffer leaves the buffer matrix only", protocols)
    want = count(report, producer="numpy", protocol="buffer")
    tap.ok(browser.shown() == want, "filters combine", want)

    browser.click("form[role=search] button")
    tap.ok(browser.shown() == total, "Reset filters shows everything again")

    browser.click("input[name=id]")
    browser.call("Input.insertText", text="contiguous")
    want = sum("contiguous" in c["id"] for c in report["cases"])
    tap.ok(browser.wait_for(f"document.getElementById('status').dataset.shown === '{want}'"),
           f"typing in 'Case id contains' leaves the {want} matching cases")
    tap.ok("contiguous" in browser.js("location.hash"), "the filters are kept in the address")
    browser.click("form[role=search] button")


def check_gap(tap, browser, report):
    gaps = report["summary"]["protocols"]["dlpack_capsule"]["gaps"]
    gap = next((g for g in gaps if g["producer"] == "numpy" and g["consumer"] == "torch"), None)
    if not tap.ok(gap, "the run has a dlpack_capsule gap numpy -> torch"):
        return
    selector = json.dumps(cell_button("dlpack_capsule", "numpy", "torch"))
    hidden = browser.js(f"!document.querySelector({selector})")
    browser.click("input[name=all]")
    title = browser.js(f"(document.querySelector({selector}) || {{}}).title")
    tap.ok(hidden and title and gap["reason"] in title,
           "a library without cases is hidden until asked; then the gap's hover says why",
           title)
    browser.click(cell_button("dlpack_capsule", "numpy", "torch"))
    panel = browser.js("document.getElementById('panel').innerText")
    tap.ok(gap["reason"] in panel, "a click on a gap shows its reason", panel[:300])
    browser.click("input[name=all]")


def check_hostile(tap, browser, report):
    browser.js("document.querySelectorAll('details.env').forEach((d) => { d.open = true; })")
    body = browser.js("document.body.innerText")
    hostile = next(lib for lib in report["environment"]["libraries"] if lib["name"] == "hostile")
    tap.ok(hostile["version"] in body, "a version with markup is shown as text", hostile["version"])
    browser.choose("producer", "hostile")
    browser.click(cell_button("dlpack", "hostile", "numpy"))
    case_id = "dlpack.hostile.numpy.cpu.int8.contiguous"
    browser.click(f"#panel details.case[data-id=\"{case_id}\"] > summary")
    diagnostic = report_case(report, case_id)["diagnostic"]
    shown = browser.js(f"document.querySelector('#panel details.case[data-id=\"{case_id}\"] "
                       "pre').innerText")
    pictures = "".join(chr(0x2400 + ord(ch)) if ord(ch) < 0x20 and ch not in "\n\t" else
                       ("\u2421" if ch == "\x7f" else ch) for ch in diagnostic)
    tap.ok(shown == pictures and "<script>alert(1)</script>" in shown and "onerror=" in shown,
           "the hostile refusal is shown as text, control characters as their pictures",
           f"{shown!r}\nvs\n{pictures!r}")
    browser.click(f"#panel details.case[data-id=\"dlpack.hostile.numpy.cpu.bool.contiguous\"]"
                  " > summary")
    browser.choose("producer", "all")
    check_nothing_ran(tap, browser, "the hostile run")


def report_case(report, case_id):
    return next(c for c in report["cases"] if c["id"] == case_id)


def check_nothing_ran(tap, browser, what):
    state = browser.js("""({alerts: window.__alerts, pwned: window.__pwned,
        violations: window.__violations,
        imgs: document.getElementsByTagName('img').length,
        scripts: document.getElementsByTagName('script').length,
        iframes: document.getElementsByTagName('iframe').length})""")
    tap.ok(state["alerts"] == [] and state.get("pwned") is None,
           f"{what}: no library text ran as script (no alert, no handler)", state)
    tap.ok(state["imgs"] == 0 and state["iframes"] == 0 and state["scripts"] == 2,
           f"{what}: no library text became an element", state)
    tap.ok(state["violations"] == [],
           f"{what}: the page never tried what its security policy forbids", state)
    dialogs = [e for e in browser.events if e["method"] == "Page.javascriptDialogOpening"]
    errors = [e["params"] for e in browser.events if e["method"] == "Runtime.exceptionThrown"]
    tap.ok(not dialogs and not errors, f"{what}: no dialog opened and the page raised nothing",
           json.dumps(dialogs + errors)[:2000])
    requests = [e["params"]["request"]["url"] for e in browser.events
                if e["method"] == "Network.requestWillBeSent"]
    tap.ok(requests and all(url.startswith("file://") and url.endswith(".html")
                            for url in requests),
           f"{what}: the only request was the page itself", requests)


def open_anew(browser, url):
    """Opens url as a new page: a navigation that only changes the fragment would not reload."""
    browser.call("Page.navigate", url="about:blank")
    browser.wait_for("location.href === 'about:blank'")
    browser.open(url)


def check_first_screen(tap, browser, html, report, artifacts):
    """What a person sees first, on a desktop (1280x800) and a phone (390x844): the totals and
    the findings, and on the desktop the first matrix's rows too; nothing wider than the
    screen. A screenshot of each goes to the test's artifacts."""
    for width, height, mobile in ((1280, 800, False), (390, 844, True)):
        browser.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                     deviceScaleFactor=1, mobile=mobile)
        browser.open(html)
        seen = browser.js("""(() => {
          const top = (q) => { const e = document.querySelector(q);
            return e ? Math.round(e.getBoundingClientRect().top) : null; };
          return {findings: top('#findings h2'), row: top('section.matrix tbody tr'),
                  wide: document.documentElement.scrollWidth};
        })()""")
        what = f"{width}x{height}"
        tap.ok(seen["findings"] is not None and seen["findings"] < height / 2 and
               seen["wide"] <= width,
               f"{what}: the findings start in the top half of the first screen, and the page "
               "is no wider than the screen", seen)
        if not mobile:
            tap.ok(seen["row"] is not None and seen["row"] < height - 40,
                   f"{what}: the first matrix's first row is on the first screen", seen)
        shot = browser.call("Page.captureScreenshot", format="png")
        png = os.path.join(artifacts, f"dashboard-{what}.png")
        with open(png, "wb") as handle:
            handle.write(base64.b64decode(shot["data"]))
        tap.diag(f"screenshot: {png}")
    browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=1000,
                 deviceScaleFactor=1, mobile=False)


def check_severity_and_library(tap, browser, html, report):
    """The Severity filter keeps the failing cases of that severity; the Library filter the
    cells with that library on either side."""
    browser.open(html)
    severities = sorted({c["severity"] for c in report["cases"] if c.get("severity")})
    for severity in severities:
        browser.choose("severity", severity)
        want = sum(c.get("severity") == severity for c in report["cases"])
        tap.ok(browser.shown() == want, f"Severity {severity}: its {want} cases", browser.shown())
    browser.choose("severity", "all")
    browser.choose("library", "torch")
    want = sum("torch" in (c["producer"], c["consumer"]) for c in report["cases"])
    tap.ok(browser.shown() == want, f"Library torch: the {want} cases with torch on either side",
           browser.shown())
    browser.choose("library", "all")


def check_permalinks(tap, browser, html, report):
    """A link per finding (#finding=ID: shown, opened, scrolled to, also beyond the first few)
    and per cell (its panel's Link: the cell open again from the address alone)."""
    findings = report.get("findings", [])
    if not tap.ok(len(findings) > 3, "the run has more findings than the first screen lists",
                  len(findings)):
        return
    target = findings[-1]["id"]
    open_anew(browser, html + "#finding=" + urllib.parse.quote(target))
    state = browser.js(f"""(() => {{
      const d = document.getElementById({json.dumps('finding-' + target)});
      if (!d) return null;
      const r = d.getBoundingClientRect();
      return [d.hidden, d.open, Math.round(r.top), window.innerHeight,
              d.querySelector('a.permalink').getAttribute('href')];
    }})()""")
    tap.ok(state and state[0] is False and state[1] is True and 0 <= state[2] < state[3] and
           state[4] == "#finding=" + urllib.parse.quote(target),
           "#finding=ID shows that finding open on the screen (the last of the list), and its "
           "# link is that address", state)
    browser.open(html)
    browser.click(cell_button("dlpack", "numpy", "torch"))
    link = browser.js("document.querySelector('#panel a.permalink').getAttribute('href')")
    open_anew(browser, html + link)
    heading = browser.js("(() => { const h = document.querySelector('#panel h3'); "
                         "return h ? h.textContent : null; })()")
    tap.ok(link and link.startswith("#cell=") and heading and "numpy" in heading and
           "torch" in heading, "a cell's Link opens the same cell from the address alone",
           (link, heading))


def check_merged(tap, binary, browser, workdir):
    """A merged report: one matrix per protocol and device, the environments side by side in
    each cell (a button each), and a mark on the cells whose environments differ: here a pair
    that only the first environment ran."""
    paths = [os.path.join(workdir, name) for name in ("env-a.json", "env-b.json", "both.json")]
    for producers, path in (("numpy,torch", paths[0]), ("numpy", paths[1])):
        taplib.run(binary, "--producer", producers, "--consumer", "numpy", "--protocol", "dlpack",
                   "--dtype", "float32", "--layout", "contiguous", "-q", "-o", path)
    proc = taplib.run(binary, "merge", paths[0], paths[1], "-o", paths[2])
    taplib.run(binary, "report", paths[2])
    html = paths[2][:-len(".json")] + ".html"
    if not tap.ok(proc.returncode == 0 and os.path.exists(html),
                  "two runs merged, and the merged report's dashboard written", proc.stderr):
        return
    envs = [e["id"] for e in taplib.load_report(paths[2])["environments"]]
    browser.open(html)
    seen = browser.js("""(() => {
      const sections = document.querySelectorAll(
        'section.matrix[data-protocol=dlpack][data-device=cpu]');
      const td = (p) => { const b = document.querySelector(
        'section.matrix[data-protocol=dlpack] button.cell[data-producer=' + p +
        '][data-consumer=numpy]'); return b ? b.closest('td') : null; };
      const envs = (cell) => cell ? [...cell.querySelectorAll('button.cell')]
        .map((b) => b.dataset.env) : null;
      const mark = (cell) => !!(cell && cell.querySelector('span.differs'));
      return {sections: sections.length, same: envs(td('numpy')), sameMarked: mark(td('numpy')),
              only: envs(td('torch')), onlyMarked: mark(td('torch'))};
    })()""")
    tap.ok(seen == {"sections": 1, "same": envs, "sameMarked": False, "only": envs[:1],
                    "onlyMarked": True},
           "merged: one matrix for both environments, a line per environment in each cell, "
           "the pair only one of them ran marked as differing", (seen, envs))
    browser.click("section.matrix[data-protocol=dlpack] button.cell[data-producer=numpy]"
                  f"[data-env='{envs[1]}']")
    browser.wait_for("!!document.querySelector('#panel h3')")
    heading = browser.js("(() => { const h = document.querySelector('#panel h3'); "
                         "return h ? h.textContent : null; })()")
    tap.ok(heading and envs[1] in heading and "numpy" in heading,
           "merged: a cell's line opens that environment's cases", heading)


def check_edited_report(tap, binary, browser, run_json, workdir):
    """Megabytes and broken UTF-8 cannot come through the driver (it caps and repairs what
    libraries say), so they go straight into a report, as a damaged or foreign file would."""
    raw = open(run_json, "rb").read()
    report = json.loads(raw)
    target = next(c for c in report["cases"] if c["id"] == "dlpack.numpy.torch.cpu.float32.flat")
    big = "<script>window.__pwned=4</script>\u2028\u2029" + "y" * (3 * 1024 * 1024)
    target["diagnostic"] = big
    target["rule"] = "]]></script><script>window.__pwned=5</script> BROKEN-UTF-8"
    text = json.dumps(report, ensure_ascii=False).encode()
    # Raw bytes no JSON encoder writes: an invalid byte, a surrogate's three bytes and a cut
    # sequence.
    text = text.replace(b"BROKEN-UTF-8", b"\xff \xed\xa0\x80 \xe2\x82", 1)
    edited = os.path.join(workdir, "edited.json")
    with open(edited, "wb") as handle:
        handle.write(text)
    proc = taplib.run(binary, "report", edited)
    html = edited[:-len(".json")] + ".html"
    tap.ok(proc.returncode == 0, "an edited report with megabytes and broken UTF-8 renders",
           proc.stderr)
    check_file(tap, html)
    size = os.path.getsize(html)
    tap.ok(size < len(text), f"the page ({size} bytes) is smaller than its report "
           f"({len(text)} bytes) even with megabytes in one message")
    started = time.monotonic()
    browser.open(html)
    tap.diag(f"edited report drawn in {time.monotonic() - started:.2f} s")
    browser.click(cell_button("dlpack", "numpy", "torch"))
    selector = '#panel details.case[data-id="dlpack.numpy.torch.cpu.float32.flat"]'
    # the cell's cases come a page at a time: show pages until the case is there
    browser.js(f"""(() => {{
        for (let i = 0; i < 100 && !document.querySelector({json.dumps(selector)}); i++) {{
            const more = document.querySelector('#panel button.more');
            if (!more) break;
            more.click();
        }}
    }})()""")
    browser.click(selector + " > summary")
    state = browser.js(f"""(() => {{
        const d = document.querySelector({json.dumps(selector)});
        const pre = d.querySelector('pre');
        return {{length: pre.innerText.length, more: !!d.querySelector('button.more'),
                 text: d.innerText}};
    }})()""")
    tap.ok(state["more"] and state["length"] < 10000,
           "a message of megabytes shows its start and a button for the rest", state["length"])
    browser.click(selector + " button.more")
    shown = browser.js(f"document.querySelector({json.dumps(selector)} + ' pre').innerText")
    # A report file's strings are capped where it is read (IC_TEXT_FIELD_CAP, src/core/ic_text.h).
    tap.ok(len(shown.encode()) <= 8 * 1024 and shown.startswith(big[:200]) and
           re.search(r" \u2026 \[\d+ bytes cut\]$", shown),
           "... which shows what a report keeps of it: 8 KiB, ending with the cut marker",
           (len(shown.encode()), shown[-80:]))
    tap.ok("\ufffd \ufffd" in state["text"] and "window.__pwned=5" in state["text"],
           "broken UTF-8 arrives as U+FFFD, next to the text around it")
    check_nothing_ran(tap, browser, "the edited report")


def check_expectations(tap, binary, browser, run_json, report, workdir):
    """`report --expect` shows known failures as such, and says which entries went stale."""
    failing = sorted({(c["protocol"], c["producer"], c["consumer"]) for c in report["cases"]
                      if c["outcome"] == "fail" and c["producer"] in ("numpy", "torch")})
    if not tap.ok(failing, "the run has a failing numpy/torch cell to expect"):
        return
    protocol, producer, consumer = failing[0]
    ids = [c["id"] for c in cell_cases(report, protocol, producer, consumer)
           if c["outcome"] == "fail"]
    expect = os.path.join(workdir, "expected.txt")
    with open(expect, "w") as handle:
        handle.write("# known failures\nnothing.matches.this.id.at.all.ever  stale entry\n")
        for case_id in ids:
            handle.write(f"{case_id}  known <b>upstream</b> bug  https://example.invalid/1\n")
    html = os.path.join(workdir, "expected.html")
    junit = os.path.join(workdir, "expected.xml")
    markdown = os.path.join(workdir, "expected.md")
    proc = taplib.run(binary, "report", run_json, "--expect", expect, "--html", html,
                      "--junit", junit, "--markdown", markdown)
    tap.ok(proc.returncode == 0 and "nothing.matches.this.id.at.all.ever" in proc.stderr and
           "expected.txt:2" in proc.stderr,
           "report --expect warns about the entry that matches no case, by file and line",
           proc.stdout + proc.stderr)
    tap.ok(all(os.path.exists(p) and f"{p}" in proc.stdout for p in (html, junit, markdown)),
           "--html, --junit and --markdown are written and named", proc.stdout)
    browser.open(html)
    selector = cell_button(protocol, producer, consumer)
    category = browser.js(f"document.querySelector({json.dumps(selector)}).dataset.category")
    tap.ok(category == "xfail", "a cell whose failures are all expected is drawn as such",
           category)
    browser.click(selector)
    panel = browser.js("document.getElementById('panel').innerText")
    tap.ok("known <b>upstream</b> bug" in panel and "xfail" in panel,
           "its cases say why they are expected, as text", panel[:500])


def check_script_source(tap):
    """The dashboard's script is a real file (src/report/dashboard.js): node checks its syntax
    before any browser runs it."""
    node = shutil.which("node") or shutil.which("nodejs")
    script = os.path.join(taplib.source_root(), "src", "report", "dashboard.js")
    if not tap.ok(node, "node is installed (scripts/setup installs it)"):
        return
    proc = subprocess.run([node, "--check", script], capture_output=True, text=True)
    tap.ok(proc.returncode == 0, "node --check src/report/dashboard.js", proc.stderr)


def main(tap, args):
    binary = os.path.abspath(args[0])
    build_dir = os.path.dirname(os.path.dirname(binary))
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    check_script_source(tap)
    chromium = find_chromium()
    if not tap.ok(chromium, "chromium is installed (scripts/setup installs it)"):
        return
    with tempfile.TemporaryDirectory(prefix="ic-html-") as workdir:
        run_json = os.path.join(workdir, "run.json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy,torch,hostile",
                          "--consumer", "numpy,torch,hostile,interopcheck", "-o", run_json, "-q")
        if not tap.ok(os.path.exists(run_json), "a run with the hostile probe writes a report",
                      proc.stdout + proc.stderr):
            return
        report = taplib.load_report(run_json)
        html = check_command(tap, binary, workdir, run_json)
        check_file(tap, html)

        browser = Browser(chromium, workdir)
        try:
            browser.call("Page.enable")
            browser.call("Runtime.enable")
            browser.call("Network.enable")
            browser.call("Page.addScriptToEvaluateOnNewDocument", source=SENTINEL)
            browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=1000,
                         deviceScaleFactor=1, mobile=False)
            started = time.monotonic()
            browser.open(html)
            tap.diag(f"{len(report['cases'])} cases drawn in "
                     f"{browser.js('document.documentElement.dataset.renderMs')} ms of script, "
                     f"{time.monotonic() - started:.2f} s in all")
            check_content(tap, browser, report)
            check_cell_click(tap, browser, report)
            check_filters(tap, browser, report)
            check_gap(tap, browser, report)
            check_hostile(tap, browser, report)

            # The screenshot a person would see first: the matrices with a failing cell open.
            browser.open(html)
            failing = browser.js("(() => { const b = document.querySelector("
                                 "'button.cell[data-category=fail]'); return !!b; })()")
            if failing:
                browser.click("button.cell[data-category=fail]")
            browser.js("window.scrollTo(0, 0)")
            shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                                clip={"x": 0, "y": 0, "width": 1400, "scale": 1,
                                      "height": browser.js("document.documentElement"
                                                           ".scrollHeight")})
            artifacts = os.path.join(build_dir, "test-artifacts")
            os.makedirs(artifacts, exist_ok=True)
            png = os.path.join(artifacts, "dashboard.png")
            with open(png, "wb") as handle:
                handle.write(base64.b64decode(shot["data"]))
            tap.ok(os.path.getsize(png) > 10000, "a screenshot of the dashboard was saved")
            tap.diag(f"screenshot: {png}")

            check_expectations(tap, binary, browser, run_json, report, workdir)
            check_edited_report(tap, binary, browser, run_json, workdir)
            check_merged(tap, binary, browser, workdir)
            check_severity_and_library(tap, browser, html, report)
            check_permalinks(tap, browser, html, report)
            check_first_screen(tap, browser, html, report, artifacts)
        finally:
            browser.close()


if __name__ == "__main__":
    taplib.main(main)

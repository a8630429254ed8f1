"""A real headless browser for the tests of HTML reports: Debian's chromium through
Selenium, with the network off.

`browser` is the session's driver (import it into a test module as a fixture).
`load` opens a local file and returns a `Page`: what the page wrote to the console
(`errors`: the error-level entries, uncaught exceptions and failed loads among them)
and every request it made that is not for a file:// or data: URL (`external`).
`screenshot` saves a full-page PNG and `not_blank` tells whether it shows anything,
decoding the PNG with the standard library alone (`decode_png`).

Chromium and chromedriver come from apt (`apt-get install chromium chromium-driver`;
`.ci/run` installs them). Without them the tests that use `browser` are skipped,
except where `SKILLOPT_REQUIRE_BROWSER=1` (CI) makes that a failure. Selenium Manager
is never asked for anything, so nothing is downloaded.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# read when the module is imported: the autouse `isolated` fixture clears every
# SKILLOPT_* variable before each test runs
REQUIRE_BROWSER = os.environ.get("SKILLOPT_REQUIRE_BROWSER") == "1"
INSTALL = "apt-get install chromium chromium-driver"
WINDOW = (1280, 2000)
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in a container
    "--disable-dev-shm-usage",  # a small /dev/shm in a container
    "--disable-gpu",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
    "--hide-scrollbars",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# the schemes of requests that never leave the machine
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


def missing() -> str | None:
    """What is missing to run the browser tests (and how to install it), or None."""
    absent = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    if absent:
        return f"{' and '.join(absent)} not on PATH: run `{INSTALL}` (Debian's packages)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return 'selenium is not installed: run `pip install -e ".[dev]"`'
    return None


def require_browser(required: bool = REQUIRE_BROWSER) -> None:
    """Skip the test when the browser is missing, or fail it where it is required."""
    reason = missing()
    if reason is None:
        return
    if required:
        pytest.fail(f"SKILLOPT_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def start() -> Any:
    """Start headless chromium through chromedriver, both from PATH, with the
    console and the network logged, the network off and a 1280x2000 viewport."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    # the driver's path is given, so Selenium Manager is skipped; offline in case
    # anything still reaches it
    saved = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"
    try:
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    finally:
        if saved is None:
            del os.environ["SE_OFFLINE"]
        else:
            os.environ["SE_OFFLINE"] = saved
    try:
        # the page gets the whole window (not the window less the browser's own bars)
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1, "mobile": False},
        )
        go_offline(driver)
    except BaseException:
        driver.quit()
        raise
    return driver


def go_offline(driver: Any) -> None:
    """Every network request of the page fails (file:// and data: URLs still load)."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """The session's headless chromium (a Selenium WebDriver), network off,
    a 1280x2000 viewport."""
    require_browser()
    driver = start()
    try:
        yield driver
    finally:
        driver.quit()


@dataclass
class Page:
    """A page `load` opened. `console`, `errors` and `external` include what the page
    did since it loaded (after a click, say) each time they are read, until the
    driver loads another page."""

    driver: Any
    url: str
    _console: list[dict] = field(default_factory=list)
    _external: list[str] = field(default_factory=list)

    @property
    def console(self) -> list[dict]:
        """Every console entry: dicts with `level` (SEVERE, WARNING, INFO, …),
        `message` and `source` (console-api, javascript, network, …)."""
        self.poll()
        return list(self._console)

    @property
    def errors(self) -> list[str]:
        """The messages of the error-level console entries: console.error calls,
        uncaught exceptions ("… Uncaught Error: …") and resources that failed to load."""
        return [entry["message"] for entry in self.console if entry["level"] == "SEVERE"]

    @property
    def external(self) -> list[str]:
        """The URL of every request the page made that was not for a local
        (file:, data:, blob:, about:) URL, in order; with the network off, none loaded."""
        self.poll()
        return list(self._external)

    def poll(self) -> None:
        """Collect what the browser logged since the last time."""
        self._console.extend(self.driver.get_log("browser"))
        self._external.extend(requested(self.driver.get_log("performance")))


def requested(performance_log: list[dict]) -> list[str]:
    """The non-local URLs requested in chromedriver's performance log entries."""
    urls = []
    for entry in performance_log:
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.requestWillBeSent":
            url = event["params"]["request"]["url"]
        elif event["method"] == "Network.webSocketCreated":
            url = event["params"]["url"]
        else:
            continue
        if not url.startswith(LOCAL_SCHEMES):
            urls.append(url)
    return urls


def load(driver: Any, path: str | Path) -> Page:
    """Open a local file (network off) and return the page once it has loaded, its
    scripts have run and a frame has been drawn."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(path)
    # what an earlier page logged is not this page's
    driver.get_log("browser")
    driver.get_log("performance")
    go_offline(driver)
    url = path.as_uri()
    driver.get(url)
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "requestAnimationFrame(() => setTimeout(done, 0));"
    )
    page = Page(driver, url)
    page.poll()
    return page


def screenshot(driver: Any, path: str | Path) -> Path:
    """Save the whole page (not just the window) as a PNG at `path`; return it."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


# --- PNG, with zlib and the standard library ---------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type: RGB, RGBA


@dataclass(frozen=True)
class Image:
    """A decoded 8-bit RGB or RGBA image: `rows` holds each row's bytes,
    `channels` bytes a pixel."""

    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixel(self, x: int, y: int) -> tuple[int, ...]:
        start = x * self.channels
        return tuple(self.rows[y][start : start + self.channels])

    def colours(self) -> Counter[int]:
        """How many pixels have each colour (a colour as an int, the same for the
        same pixel bytes)."""
        pad = bytes(4 - self.channels)
        counts: Counter[int] = Counter()
        for row in self.rows:
            first = row[: self.channels]
            if row == first * self.width:  # a row of one colour, as most of a page
                counts[memoryview(pad + first).cast("I")[0]] += self.width
                continue
            wide = bytearray(self.width * 4)  # each pixel padded to 4 bytes: one word
            for c in range(self.channels):
                wide[len(pad) + c :: 4] = row[c :: self.channels]
            counts.update(memoryview(wide).cast("I"))
        return counts


def decode_png(data: bytes) -> Image:
    """Decode a non-interlaced 8-bit RGB or RGBA PNG (what chromium writes); raises
    ValueError for anything else or for a corrupt file."""
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG")
    pos = len(PNG_SIGNATURE)
    header = None
    idat = []
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("truncated PNG")
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        crc = data[pos + 8 + length : pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise ValueError("truncated PNG")
        if zlib.crc32(kind + body) != struct.unpack(">I", crc)[0]:
            raise ValueError(f"bad CRC in the {kind.decode('latin-1')} chunk")
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None or not idat:
        raise ValueError("a PNG without IHDR or IDAT")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in CHANNELS or interlace:
        raise ValueError(
            f"only non-interlaced 8-bit RGB or RGBA PNGs are supported, not bit depth "
            f"{depth}, colour type {colour_type}, interlace {interlace}"
        )
    channels = CHANNELS[colour_type]
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise ValueError(f"image data of {len(raw)} bytes for {width}x{height}")
    rows = []
    previous = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = unfilter(raw[start], raw[start + 1 : start + 1 + stride], previous, channels)
        rows.append(row)
        previous = row
    return Image(width, height, channels, rows)


def unfilter(kind: int, line: bytes, previous: bytes, bpp: int) -> bytes:
    """Undo one row's PNG filter (0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth)."""
    if kind == 0:
        return line
    if kind == 1:
        return _prefix_sum(line, bpp)
    if kind == 2:
        return _add(line, previous)
    if kind == 3:
        out = bytearray(line)
        for i in range(len(out)):
            left = out[i - bpp] if i >= bpp else 0
            out[i] = (out[i] + ((left + previous[i]) >> 1)) & 0xFF
        return bytes(out)
    if kind == 4:
        out = bytearray(line)
        for i in range(bpp):  # no pixel to the left: the predictor is the one above
            out[i] = (out[i] + previous[i]) & 0xFF
        for i in range(bpp, len(out)):  # the hot loop of decoding: kept plain
            left, up, corner = out[i - bpp], previous[i], previous[i - bpp]
            pa = up - corner  # |p - left| where p = left + up - corner
            pb = left - corner  # |p - up|
            pc = pa + pb  # |p - corner|
            if pa < 0:
                pa = -pa
            if pb < 0:
                pb = -pb
            if pc < 0:
                pc = -pc
            if pa <= pb and pa <= pc:
                out[i] = (out[i] + left) & 0xFF
            elif pb <= pc:
                out[i] = (out[i] + up) & 0xFF
            else:
                out[i] = (out[i] + corner) & 0xFF
        return bytes(out)
    raise ValueError(f"unknown PNG filter type {kind}")


# Sub and Up, the filters of most rows, add bytes modulo 256 all at once: the bytes
# as one big integer, added without carries from one byte into the next
def _add(a: bytes, b: bytes) -> bytes:
    n = len(a)
    low, high = _masks(n)
    x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
    return (((x & low) + (y & low)) ^ ((x ^ y) & high)).to_bytes(n, "big")


def _prefix_sum(line: bytes, bpp: int) -> bytes:
    """Each byte plus the byte `bpp` before it in the result (Sub), by doubling."""
    n = len(line)
    low, high = _masks(n)
    x = int.from_bytes(line, "big")
    shift = bpp
    while shift < n:
        y = x >> (8 * shift)  # big-endian: the bytes `shift` to the left
        x = ((x & low) + (y & low)) ^ ((x ^ y) & high)
        shift *= 2
    return x.to_bytes(n, "big")


_MASKS: dict[int, tuple[int, int]] = {}


def _masks(n: int) -> tuple[int, int]:
    if n not in _MASKS:
        _MASKS[n] = (int.from_bytes(b"\x7f" * n, "big"), int.from_bytes(b"\x80" * n, "big"))
    return _MASKS[n]


def not_blank(png: str | Path, min_share: float = 0.02, min_colours: int = 8) -> bool:
    """Whether the PNG shows something: at least `min_share` of its pixels differ
    from its most common colour and it has at least `min_colours` colours."""
    image = decode_png(Path(png).read_bytes())
    colours = image.colours()
    total = image.width * image.height
    if total == 0:
        return False
    _, background = colours.most_common(1)[0]
    return (total - background) / total >= min_share and len(colours) >= min_colours

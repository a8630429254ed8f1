"""The harness that checks HTML reports in a real browser (tests/browser.py): it
reports console errors and uncaught exceptions, records and blocks every request off
disk, takes full-page screenshots, and tells a blank one from one that shows
something, with a PNG decoder of its own."""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
import threading
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from browser import (  # noqa: F401  (browser: the fixture)
    INSTALL,
    browser,
    decode_png,
    load,
    not_blank,
    require_browser,
    screenshot,
)

# --- the PNG decoder, against PNGs written here ------------------------------------


def paeth(left: int, up: int, corner: int) -> int:
    p = left + up - corner
    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
    return left if pa <= pb and pa <= pc else up if pb <= pc else corner


def filtered(kind: int, row: bytes, previous: bytes, bpp: int) -> bytes:
    """The row as a PNG encoder writes it with filter `kind` (the spec's formulas)."""
    out = bytearray()
    for i, value in enumerate(row):
        left = row[i - bpp] if i >= bpp else 0
        corner = previous[i - bpp] if i >= bpp else 0
        up = previous[i]
        predictor = [0, left, up, (left + up) // 2, paeth(left, up, corner)][kind]
        out.append((value - predictor) % 256)
    return bytes([kind]) + bytes(out)


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def encode_png(
    rows: list[bytes], width: int, channels: int, filters=None, depth=8, colour_type=None
) -> bytes:
    """A PNG of `rows`, row y filtered with filters[y] (all five types in turn by
    default), its image data split over two IDAT chunks."""
    colour_type = colour_type if colour_type is not None else {3: 2, 4: 6}[channels]
    filters = filters or [y % 5 for y in range(len(rows))]
    previous = bytes(width * channels)
    raw = b""
    for row, kind in zip(rows, filters):
        raw += filtered(kind, row, previous, channels)
        previous = row
    data = zlib.compress(raw)
    header = struct.pack(">IIBBBBB", width, len(rows), depth, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", data[:10])
        + chunk(b"IDAT", data[10:])
        + chunk(b"IEND", b"")
    )


def test_the_decoder_reads_known_pixels():
    red, green, blue, white = b"\xff\x00\x00", b"\x00\xff\x00", b"\x00\x00\xff", b"\xff" * 3
    image = decode_png(encode_png([red + green, blue + white], width=2, channels=3))
    assert (image.width, image.height, image.channels) == (2, 2, 3)
    assert image.pixel(0, 0) == (255, 0, 0)
    assert image.pixel(1, 0) == (0, 255, 0)
    assert image.pixel(0, 1) == (0, 0, 255)
    assert image.pixel(1, 1) == (255, 255, 255)


@pytest.mark.parametrize("channels", [3, 4])
def test_the_decoder_undoes_every_filter(channels):
    rng = random.Random(channels)
    width, height = 37, 15  # three times each of the five filters
    # random bytes, and runs of one colour (where Sub and Up leave zeros)
    rows = [bytes(rng.randrange(256) for _ in range(width * channels)) for _ in range(height)]
    rows[3] = rows[4] = bytes([200, 10, 30, 255][:channels]) * width
    image = decode_png(encode_png(rows, width, channels))
    assert image.rows == rows


def test_the_decoder_refuses_what_it_cannot_read():
    rows = [b"\x00\x00\x00"]
    good = encode_png(rows, width=1, channels=3)
    assert decode_png(good).rows == rows
    with pytest.raises(ValueError, match="not a PNG"):
        decode_png(b"GIF89a" + good[6:])
    corrupt = bytearray(good)
    corrupt[-20] ^= 0xFF  # inside the last IDAT
    with pytest.raises(ValueError, match="CRC"):
        decode_png(bytes(corrupt))
    with pytest.raises(ValueError, match="bit depth 16"):
        decode_png(encode_png(rows, width=1, channels=3, depth=16))
    with pytest.raises(ValueError, match="colour type 3"):
        decode_png(encode_png(rows, width=1, channels=3, colour_type=3))


def write_png(path, pixels: list[list[tuple[int, int, int]]]):
    rows = [b"".join(bytes(p) for p in row) for row in pixels]
    path.write_bytes(encode_png(rows, width=len(pixels[0]), channels=3))
    return path


def test_not_blank_needs_enough_pixels_off_the_background_and_enough_colours(tmp_path):
    white = (255, 255, 255)
    size = 50  # 2500 pixels
    plain = [[white] * size for _ in range(size)]
    assert not not_blank(write_png(tmp_path / "white.png", plain))

    # 25 pixels of 25 colours: 1% off the background
    specks = [row[:] for row in plain]
    for i in range(25):
        specks[i][i] = (i * 10, 0, 0)
    assert not not_blank(write_png(tmp_path / "specks.png", specks))

    # half and half: far off the background, but only two colours
    halves = [[white] * 25 + [(200, 0, 50)] * 25 for _ in range(size)]
    assert not not_blank(write_png(tmp_path / "halves.png", halves))

    # a gradient over a tenth of the picture: 3% off the background, 76 colours
    shaded = [row[:] for row in plain]
    for y in range(5):
        for x in range(size):
            shaded[y][x] = (x * 5, y * 40, 100)
    assert not_blank(write_png(tmp_path / "shaded.png", shaded))


# --- when the browser is missing ---------------------------------------------------


def test_a_missing_browser_skips_or_fails_where_it_is_required(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium chromium-driver"):
        require_browser(required=False)
    with pytest.raises(pytest.fail.Exception) as failed:
        require_browser(required=True)
    assert "SKILLOPT_REQUIRE_BROWSER=1" in str(failed.value)
    assert INSTALL in str(failed.value)


# --- in the browser ----------------------------------------------------------------


def page(tmp_path, body: str, name: str = "page.html"):
    path = tmp_path / name
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head>{body}</html>")
    return path


@pytest.mark.browser
def test_the_browser_is_debians_chromium_through_its_chromedriver(browser):
    version = subprocess.run(
        [shutil.which("chromium"), "--version"], capture_output=True, text=True, check=True
    ).stdout  # "Chromium 150.0.7871.100 built on Debian …"
    assert browser.capabilities["browserVersion"] in version
    assert browser.service.path == shutil.which("chromedriver")


@pytest.mark.browser
def test_console_errors_and_uncaught_exceptions_are_reported(browser, tmp_path):
    loaded = load(
        browser,
        page(
            tmp_path,
            "<body><p>hi</p><script>console.error('the chart has no data');"
            "console.log('drawn');</script>"
            "<script>throw new Error('kaboom in the table')</script></body>",
        ),
    )
    assert len(loaded.errors) == 2, loaded.console
    assert "the chart has no data" in loaded.errors[0]
    assert "Uncaught Error: kaboom in the table" in loaded.errors[1]
    # the log line is collected too, not as an error
    assert [e["level"] for e in loaded.console if "drawn" in e["message"]] == ["INFO"]
    assert loaded.external == []


@pytest.mark.browser
def test_a_clean_page_has_no_errors_even_after_one_that_had(browser, tmp_path):
    bad = page(tmp_path, "<body><script>setTimeout(() => null.x, 200)</script></body>", "bad.html")
    assert load(browser, bad).errors == []
    browser.execute_async_script("setTimeout(arguments[0], 400)")  # it throws after loading
    clean = load(
        browser,
        page(tmp_path, "<body><h1>Report</h1><script>console.info('ready')</script></body>"),
    )
    assert clean.errors == []
    assert clean.external == []
    assert any("ready" in e["message"] for e in clean.console), clean.console


@pytest.mark.browser
def test_requests_off_disk_are_recorded_and_do_not_load(browser, tmp_path):
    loaded = load(
        browser,
        page(
            tmp_path,
            "<body><script src='https://example.com/x.js'></script>"
            "<img id='pic' src='http://127.0.0.1:9/x.png'>"
            "<img id='inline' src='data:image/gif;base64,"
            "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7'></body>",
        ),
    )
    assert sorted(loaded.external) == ["http://127.0.0.1:9/x.png", "https://example.com/x.js"]
    assert browser.execute_script("return document.getElementById('pic').naturalWidth") == 0
    # the data: image loads, and is no request off disk
    assert browser.execute_script("return document.getElementById('inline').naturalWidth") == 1
    assert sum("ERR_INTERNET_DISCONNECTED" in e for e in loaded.errors) == 2, loaded.errors

    # a request the page makes later is recorded when the page is read again
    browser.execute_script(
        "fetch('https://example.com/later.json').catch(() => {});"
        "new WebSocket('ws://127.0.0.1:9/live');"
    )
    browser.execute_async_script("setTimeout(arguments[0], 100)")
    assert loaded.external[2:] == ["https://example.com/later.json", "ws://127.0.0.1:9/live"]


class Served(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        Served.hits.append(self.path)
        body = b"window.reached = true;"
        self.send_response(200)
        self.send_header("Content-Type", "text/javascript")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.browser
def test_the_network_is_off_even_for_a_server_that_answers(browser, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Served)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/app.js"
        with urllib.request.urlopen(url, timeout=5) as reply:  # it answers outside the page
            assert reply.read() == b"window.reached = true;"
        Served.hits.clear()
        loaded = load(browser, page(tmp_path, f"<body><script src='{url}'></script></body>"))
        assert loaded.external == [url]
        assert browser.execute_script("return window.reached === undefined")
        assert Served.hits == []
    finally:
        server.shutdown()
        server.server_close()


SVG = (
    "<body style='margin:0'><svg width='600' height='400'>"
    "<rect width='300' height='200' fill='#cc0033'/>"
    "<circle cx='420' cy='260' r='120' fill='#33aa66'/>"
    "<text x='20' y='380' font-size='40'>pass rate 87%</text></svg></body>"
)


@pytest.mark.browser
def test_a_screenshot_of_a_coloured_svg_is_not_blank(browser, tmp_path):
    load(browser, page(tmp_path, SVG))
    png = screenshot(browser, tmp_path / "shots" / "svg.png")
    assert png == tmp_path / "shots" / "svg.png"
    assert not_blank(png)
    image = decode_png(png.read_bytes())
    assert image.width == 1280
    assert image.pixel(10, 10)[:3] == (0xCC, 0x00, 0x33)  # inside the rectangle
    assert image.pixel(420, 260)[:3] == (0x33, 0xAA, 0x66)  # the circle's centre
    assert image.pixel(1000, 10)[:3] == (255, 255, 255)


@pytest.mark.browser
def test_a_screenshot_of_an_empty_page_is_blank(browser, tmp_path):
    load(browser, page(tmp_path, "<body></body>"))
    png = screenshot(browser, tmp_path / "empty.png")
    image = decode_png(png.read_bytes())
    assert (image.width, image.height) == (1280, 2000)  # the window
    assert set(image.colours()) == {next(iter(image.colours()))}  # one colour
    assert not not_blank(png)


@pytest.mark.browser
def test_a_screenshot_holds_the_whole_page_not_just_the_window(browser, tmp_path):
    load(
        browser,
        page(
            tmp_path,
            "<body style='margin:0'><div style='height:4000px'></div>"
            "<div style='height:100px;background:#0044ff'></div></body>",
        ),
    )
    image = decode_png(screenshot(browser, tmp_path / "tall.png").read_bytes())
    assert image.height == 4100
    assert image.pixel(50, 4050)[:3] == (0x00, 0x44, 0xFF)  # below the first window

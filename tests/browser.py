"""Headless Chromium for the report: read the DOM after the page's scripts ran, take a screenshot.

Used by the tests (``tests/test_report.py``) and, from the command line, to make the README
screenshot::

    python -m tests.browser screenshot report.html docs/report.png --size 1280x2300 --open q_006

Chromium runs with a fresh profile in a temporary folder, no sandbox (CI runs as root), no GPU,
no network features; the page is loaded from disk (``file://``). Needs the Debian package
``chromium`` (or ``chromium-browser`` / ``google-chrome`` on the PATH).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio")
TIMEOUT_S = 120


def find_chromium() -> str | None:
    """The path of a Chromium-like browser on the PATH, or None."""
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _url(page: Path, fragment: str = "") -> str:
    return Path(page).resolve().as_uri() + (f"#{fragment}" if fragment else "")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    browser = find_chromium()
    if browser is None:
        raise FileNotFoundError("no Chromium on the PATH: apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        proc = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=TIMEOUT_S, cwd=profile)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


def dump_dom(page: Path, fragment: str = "", size: tuple[int, int] | None = None) -> str:
    """The page's DOM, serialised after its scripts ran (``--dump-dom``), laid out in a window of
    ``size`` (width, height) pixels when given (the browser's default otherwise)."""
    window = [f"--window-size={size[0]},{size[1]}"] if size else []
    return _run([*window, "--dump-dom", _url(page, fragment)]).stdout


def screenshot(page: Path, png: Path, size: tuple[int, int] = (1280, 2300), fragment: str = "") -> Path:
    """A PNG of the page's top ``size`` (width, height) pixels."""
    png = Path(png).resolve()
    _run([f"--window-size={size[0]},{size[1]}", f"--screenshot={png}", _url(page, fragment)])
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot to {png}")
    return png


class Elements(HTMLParser):
    """Every element's tag and attributes, in document order (for assertions on a dumped DOM)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.items.append((tag, dict(attrs)))

    def find(self, tag: str, cls: str | None = None) -> list[dict[str, str | None]]:
        return [a for t, a in self.items if t == tag and (cls is None or cls in (a.get("class") or "").split())]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.browser", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    shot = sub.add_parser("screenshot", help="PNG of an HTML file's top part")
    shot.add_argument("page", type=Path, help="HTML file, e.g. the output of benchmark.py report")
    shot.add_argument("png", type=Path, help="PNG to write")
    shot.add_argument("--size", default="1280x2300", help="WIDTHxHEIGHT in pixels (default 1280x2300)")
    shot.add_argument("--open", default="", help="question id whose row is shown expanded")
    shot.add_argument("--tag", default="", help="diagnosis tag to filter the questions by")
    args = p.parse_args(argv)
    width, _, height = args.size.partition("x")
    fragment = "&".join(f"{k}={v}" for k, v in (("tag", args.tag), ("open", args.open)) if v)
    out = screenshot(args.page, args.png, (int(width), int(height)), fragment)
    sys.stdout.write(f"{out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The docs site: it builds with `mkdocs build --strict`, every page has content and no broken internal link or
anchor, and each renders in headless Chromium (Debian's package), served over loopback, as a non-blank page."""

import functools
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=ROOT,
                           capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr
    handler = functools.partial(_Quiet, directory=str(out))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield out, f"http://127.0.0.1:{server.server_address[1]}/"
        server.shutdown()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def pages(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out).parent).replace(".", "") + "/" if p.parent != out else ""
                  for p in out.rglob("index.html") if "assets" not in p.parts)


def chromium(*args: str) -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium for the docs check (apt-get install chromium)")
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                         capture_output=True, text=True, timeout=60)
    return run.stdout


def test_every_page_renders_with_content_and_its_links_resolve(site, tmp_path):
    from PIL import Image

    out, base = site
    paths = pages(out)
    assert len(paths) >= 14  # home, 3 getting started, 6 guides, 3 reference, benchmarks, layout
    broken = []
    for path in paths:
        url = urljoin(base, path)
        dom = (out / path / "index.html").read_text(encoding="utf-8")  # what the server hands Chromium
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)[^>]*>.*?</\1>", "", dom,
                                                                    flags=re.S)))
        assert "<h1" in dom and len(text) > 500, path
        for href in re.findall(r'href="([^"]+)"', dom):
            target = urljoin(url, href)
            parts = urlsplit(target)
            if not target.startswith(base) or parts.path.startswith("/assets/"):
                continue
            file = out / parts.path.lstrip("/")
            file = file / "index.html" if parts.path.endswith("/") else file
            if not file.exists():
                broken.append(f"{path} -> {href}")
            elif parts.fragment and file.suffix == ".html" and f'id="{parts.fragment}"' not in file.read_text():
                broken.append(f"{path} -> {href} (no such anchor)")
        shot = tmp_path / "page.png"
        chromium(f"--screenshot={shot}", "--window-size=1200,900", url)
        colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 20, f"{path} renders nearly blank"
    assert broken == []


def test_every_install_line_from_a_clone_brings_the_readers_weights():
    """The adapters need crag-reader, which is on no index yet: a line installing an adapter from the clone must
    install ./crag_reader beside it (CI runs the README's lines as written)."""
    import re

    root = Path(__file__).resolve().parents[1]
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for line in page.read_text(encoding="utf-8").splitlines():
            found = re.search(r"pip install ((?:\./\S+\s*)+)", line)
            if found and re.search(r"\./crag_(llamaindex|haystack)\b", found.group(1)):
                assert "./crag_reader" in found.group(1), f"{page.name}: {line.strip()}"

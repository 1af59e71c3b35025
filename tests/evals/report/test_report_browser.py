"""Renders report.html in a real headless Chromium: plots decode, injected scripts stay text.

Skipped when no Chromium is installed (CI images may not have one).
"""

import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from rollsum_evals.report import write_report

from tests.evals.report.fakerun import make_run

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome"))
                 if p), None)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")]

PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 100 && i.naturalHeight > 100).length;
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = `IMAGES ${imgs.length} DECODED ${ok} SCRIPTS ${document.scripts.length}`
    + ` PWNED ${window.__pwned === 1} TITLE ${document.title}`;
  document.body.appendChild(out);
});
</script>"""


def _chromium(tmp: Path, *args: str) -> str:
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
           f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=5000", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    run = make_run(root / "run", {"since-last[keep_last=2]": 0.35, "since-last[keep_last=20]": 0.85,
                                  "truncate[n=10]": 0.2})
    return write_report(run, root / "out", n_resamples=200)


def test_every_plot_decodes_and_no_injected_script_runs(page: Path, tmp_path: Path) -> None:
    # A copy of the report gets our probe appended to read the live DOM.
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = _chromium(tmp_path, "--dump-dom", probed.as_uri())
    m = re.search(r"IMAGES (\d+) DECODED (\d+) SCRIPTS (\d+) PWNED (\w+) TITLE (.*)", dom)
    assert m, dom[-2000:]
    images, decoded, scripts, pwned, title = m.groups()
    assert int(images) == 6 and decoded == images
    # the probe and the drill-down's data and code: the conversation's <script> never became an element
    assert scripts == "3"
    assert pwned == "false" and "PWNED" not in title
    assert "&lt;script&gt;window.__pwned=1" in dom


def test_screenshot_is_not_blank(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,4000", page.as_uri())
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 4000 and pixels.shape[1] >= 1280
    assert pixels[:, :, :3].std() > 0.05  # text, tables and plots, not a blank page

"""No piece of an API key leaves the process (issue #11), end to end through the real CLI.

The key is in the environment (``ANTHROPIC_API_KEY``), in the conversation text (whole, and its
tail alone, as a summary would quote it), in the name of the dataset and of the spec, and in a
model's error (a proxy that echoes the request in its error text), and in a CLI argument that
is refused in one line. A sweep records a cassette; report, compare and regress
(promote, then gate with history) run too, every command at ``-vv``. Every file those commands
produced is read — SQLite caches cell by cell with zlib blobs decompressed, since the Unit cache
compresses its entries and a compressed key is invisible to grep — and so is every byte they
printed: no 8-character piece of the key may be anywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

KEY = "sk-ant-api03-REDTEAMSECRET123-q7Zx9LmKw2PvYt"
TAIL = "REDTEAMSECRET123-q7Zx9"
"""What a summary quoting the key's tail would hold: not the whole key, and no ``sk-`` shape."""
PIECES = {KEY[i:i + 8] for i in range(len(KEY) - 7)}

SPEC = """
name = "leaky-{key}"
context_window = 1500
models = ["record:cassette.jsonl:fake:mode=extractive"]

[[datasets]]
name = "ds-{key}"
source = "data.jsonl"

[[configs]]
preset = "since-last"
label = "sl"
params = {{ messages_per_summary = 6, keep_last = 2 }}

[[configs]]
preset = "truncate"
"""

ECHOES = """
name = "echoes"
context_window = 1500
models = ["fake:mode=extractive"]

[[datasets]]
name = "ds-{key}"
source = "data.jsonl"

[[configs]]
preset = "since-last"
label = "echo-{kind}"
summarizer = "leaky_plugin:EchoingSummarizer"
summarizer_params = {{ kind = "{kind}" }}
params = {{ messages_per_summary = 5, keep_last = 3 }}
"""

PLUGIN = '''
from rollsum.capabilities import Capabilities
from rollsum.errors import ErrorKind, ModelError


class EchoingSummarizer:
    """A model behind a proxy that echoes the request in its error: the conversation, and the
    key in it, is in the error text."""

    name = "echo"
    capabilities = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)

    def __init__(self, kind="server", *, context_window=None):
        self.kind = ErrorKind(kind)
        self.context_window = context_window

    def summarize(self, request):
        echoed = " | ".join(m.content for m in request.messages)[-400:]
        raise ModelError(f"upstream said 400 for request: {echoed}", self.kind)
'''


def _leaks(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    return sorted(p for p in PIECES if p in text)


def _sqlite_leaks(path: Path) -> list[str]:
    """Every cell of every table, zlib blobs decompressed."""
    found: list[str] = []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in con.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    data = cell if isinstance(cell, bytes) else str(cell).encode()
                    if isinstance(cell, bytes):
                        with contextlib.suppress(zlib.error):
                            data = zlib.decompress(cell)
                    found += [f"{table}: {p}" for p in _leaks(data)]
    finally:
        con.close()
    return found


def _file_leaks(root: Path, inputs: set[Path]) -> dict[str, list[str]]:
    leaks: dict[str, list[str]] = {}
    n_sqlite = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path in inputs or "__pycache__" in path.parts:
            continue
        found = _leaks(path.read_bytes())
        if path.read_bytes()[:16] == b"SQLite format 3\x00":
            n_sqlite += 1
            found += _sqlite_leaks(path)
        if found:
            leaks[str(path.relative_to(root))] = found
    assert n_sqlite >= 2, "the model and Unit caches were not written: a compressed leak would go unseen"
    return leaks


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "ROLLSUM_CACHE_DIR": str(root / "cache"),
           "HOME": str(root / "home"), "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-m", "rollsum_evals", "-vv", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_no_piece_of_the_key_reaches_any_file_or_stream(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "rollsum_evals", "data", "synth", "--conversations", "2",
                    "--messages", "40", "--seed", "5", "--out", str(tmp_path / "synth.jsonl")],
                   capture_output=True, text=True, timeout=120, check=True, cwd=tmp_path)
    records = [json.loads(line) for line in (tmp_path / "synth.jsonl").read_text().splitlines()]
    for rec in records:
        for i, m in enumerate(rec["messages"]):
            m["content"] += (f" The deploy key is {KEY} ok." if i % 2 else f" Its tail reads {TAIL} now.")
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "s.toml").write_text(SPEC.format(key=KEY))
    (tmp_path / "leaky_plugin.py").write_text(PLUGIN)
    (tmp_path / "echo.toml").write_text(ECHOES.format(key=KEY, kind="server"))
    inputs = {tmp_path / n for n in ("synth.jsonl", "data.jsonl", "s.toml", "echo.toml", "leaky_plugin.py")}

    steps = {
        "record": ("run", "s.toml", "--out", "run", "--no-progress", "--jobs", "2"),
        "fail": ("run", "echo.toml", "--out", "failed", "--no-progress", "--jobs", "1", "--no-fail-on-error"),
        "report": ("report", "run", "--out", "rep", "--resamples", "200"),
        "report-failed": ("report", "failed", "--out", "rep-failed", "--resamples", "200"),
        "compare": ("compare", "run", "--a", "sl", "--b", "truncate", "--out", "cmp", "--resamples", "200"),
        "promote": ("regress", "run", "--baseline", "base/b.json", "--promote", "--resamples", "200"),
        "gate": ("regress", "run", "--baseline", "base/b.json", "--record-history", "--resamples", "200"),
        "mistake": ("compare", "run", "--a", "sl", "--b", f"other-{KEY}", "--resamples", "200"),
    }
    streams: dict[str, list[str]] = {}
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    for name, argv in steps.items():
        done = outputs[name] = _cli(tmp_path, *argv)
        assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, (name, done.stderr[-3000:])
        found = _leaks((done.stdout + done.stderr).encode())
        if found:
            streams[name] = found

    # the pieces were really there to leak: recorded, summarized, and in the model's errors
    assert outputs["record"].returncode == 0, outputs["record"].stderr[-3000:]
    assert outputs["mistake"].returncode == 2 and "other-***" in outputs["mistake"].stderr
    assert "upstream said 400 for request" in outputs["fail"].stderr and "***" in outputs["fail"].stderr
    assert (tmp_path / "cassette.jsonl").read_text().strip(), "nothing was recorded"
    assert "***" in (tmp_path / "run" / "summaries.jsonl").read_text()
    events = (tmp_path / "failed" / "events.jsonl").read_text()
    assert "upstream said 400 for request" in events and "***" in events, "no model error carried the key"
    assert (tmp_path / "rep" / "report.html").exists() and (tmp_path / "cmp" / "compare.md").exists()

    assert not streams, streams
    assert not _file_leaks(tmp_path, inputs)

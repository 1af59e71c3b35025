from __future__ import annotations

import pytest

from rollsum import summarizers
from rollsum.errors import ConfigError
from rollsum.summarizers import ExtractiveSummarizer, PromptedSummarizer, StructuredSummarizer, Summarizer
from tests.rollsum.summarizers.stub_model import StubModel


def test_names() -> None:
    assert summarizers.names() == ["extractive", "prompted", "structured"]


def test_create_each_and_params_round_trip() -> None:
    model = StubModel()
    p = summarizers.create("prompted", model, prompt="evict-window/v1", max_output_tokens=256)
    s = summarizers.create("structured", model)
    e = summarizers.create("extractive", max_tokens=300, merge="append")
    assert isinstance(p, PromptedSummarizer) and isinstance(s, StructuredSummarizer)
    assert isinstance(e, ExtractiveSummarizer) and isinstance(e, Summarizer)
    assert [x.name for x in (p, s, e)] == ["prompted", "structured", "extractive"]
    again = summarizers.create("extractive", **e.params())
    assert isinstance(again, ExtractiveSummarizer)
    assert again.params() == e.params() == {"max_tokens": 300, "merge": "append", "conversational": True}
    assert p.params()["prompt"] == "evict-window/v1"


@pytest.mark.parametrize(("name", "model", "kw", "msg"), [
    ("abstractive", None, {}, "expected one of extractive, prompted, structured"),
    ("prompted", None, {}, "needs a model"),
    ("extractive", None, {"max_tokns": 3}, "unknown parameter(s) max_tokns"),
    ("prompted", "stub", {"prompt": "nope/v1"}, "no such template"),
    ("extractive", None, {"max_tokens": -5}, "max_tokens"),
])
def test_user_mistakes_are_config_errors(name: str, model: object, kw: dict[str, object], msg: str) -> None:
    with pytest.raises(ConfigError, match=None) as e:
        summarizers.create(name, StubModel() if model else None, **kw)
    assert msg in str(e.value)

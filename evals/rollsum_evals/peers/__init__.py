"""Peer memories: LangChain's and LlamaIndex's summary buffers as `rollsum.memory.Memory` s.

Optional extra ``peers`` (``pip install 'rollsum[peers]'``). Each adapter runs the real
third-party class unchanged; only its two outside dependencies are swapped for rollsum's, so a
sweep compares memories and nothing else:

- its LLM is a small adapter class that calls the sweep's `rollsum.models.base.Model`
  (``Model.complete``): caching, cost metering, ``fake:`` and ``replay:`` models work unchanged,
  and no provider SDK or API key of theirs is involved;
- its token counting is rollsum's counter (the one the presets budget with and the replay
  measures with), so nothing downloads a tokenizer and "N tokens" means the same for everyone.

Same budget as the presets: the peer's buffer limit is the window minus the summary's share
of it (`SUMMARY_SHARE`, the presets' default), and its LLM's answers are capped at that share,
so buffer plus summary fits the window the presets keep. Whether it does is measured, not
assumed (the trace records every turn's context tokens; the report's max context column).

Spec: ``memory = "rollsum_evals.peers.langchain:SummaryBufferMemory"`` or
``"rollsum_evals.peers.llamaindex:ChatSummaryMemory"`` (``evals/sweeps/peers.toml``).
"""

"""Helpers shared by the library's tests (tests/rollsum, tests/seeds) and the harness's
(tests/evals): conversations and fake models (`helpers`), components named by import path
(`plugin_components`), a gated summarizer for kill/lock tests (`gate`), Messages API bodies
(`anthropic`), the Message Batches endpoints (`batch_server`) and small sweep specs
(`specs`). The scorer-parity stand-ins use the harness and stay in tests/evals/stand_in.py.
Nothing here imports the harness or a test module, so the library's tests never reach into the harness's test tree
(tests/test_architecture.py)."""

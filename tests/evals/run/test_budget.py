"""``--max-cost-usd`` holds at the call level: across threads and worker processes the run never
spends more than the cap; the Unit whose call was refused ends ``stopped: budget``; no Unit
starts after that; the run says so and exits 1; ``--resume`` with a higher cap finishes it.

The model is a `FakeModel` priced as ``anthropic:claude-haiku-4-5`` (the sweep's model spec, which
is what prices a call) with realistic usage: the tokens of the request it was sent. Before this
change the same sweep shape with ``--max-cost-usd 0.10`` spent $0.1147 (one Unit cost more than
the cap: the old check estimated whole Units before starting them)."""

from __future__ import annotations

import json
import math
import random
import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest
import rollsum_evals
from rollsum_evals.cli import main
from rollsum_evals.data import load
from rollsum_evals.replay import BudgetRefused, default_engine
from rollsum_evals.run import run_sweep
from rollsum_evals.run.budget import ACCOUNT_FILE, BudgetedModel, BudgetSpec, FileAccount
from rollsum_evals.run.dispatch import Dispatcher
from rollsum_evals.run.pool import process_pool
from rollsum_evals.run.unit import Job
from rollsum_evals.spec.expand import expand
from rollsum_evals.spec.parse import parse_spec

from rollsum.errors import ConfigError
from rollsum.models.base import Completion, CompletionRequest
from rollsum.models.fake import FakeModel
from rollsum.types import Message
from tests.support.anthropic import message_json
from tests.support.batch_server import BatchServer

CAP = 0.10
SPEC = """
name = "budget"
context_window = 8000
cache = "off"
models = ["anthropic:claude-haiku-4-5"]
[[datasets]]
name = "chat"
source = "synth:chat?conversations=4&messages=300&seed=21"
[[configs]]
preset = "count-and-tokens"
grid = { token_threshold = [1000, 2000] }
[[configs]]
preset = "since-last"
grid = { keep_last = [2, 10], messages_per_summary = [4, 10] }
"""
TOTAL = 24


def priced(spec: str) -> FakeModel | None:
    """Module level, so worker processes can unpickle it."""
    return None if spec == "extractive" else FakeModel("extractive", model="claude-haiku-4-5")


# -- the account -----------------------------------------------------------------------------------


def _hammer(path: str, seed: int, n: int) -> float:
    """Reserve random worst cases, settle each at a random fraction of it; the spend it settled."""
    account = FileAccount(Path(path))
    rng = random.Random(seed)
    spent = 0.0
    for _ in range(n):
        worst = rng.uniform(0.001, 0.02)
        if account.reserve(worst):
            actual = worst * rng.uniform(0.3, 1.0)
            account.settle(worst, actual)
            spent += actual
    return spent


def test_the_ledger_holds_across_threads(tmp_path: Path) -> None:
    account = FileAccount.start(tmp_path, CAP)
    results: list[float] = []
    threads = [threading.Thread(target=lambda k=k: results.append(_hammer(str(account.path), k, 200)))
               for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = account.state()
    assert state.spent <= CAP and state.reserved == pytest.approx(0, abs=1e-12) and state.stopped
    assert state.spent == pytest.approx(sum(results))  # no update lost to a race
    assert state.spent > 0.5 * CAP  # it did fill up (8 threads in flight stop it a little early)


def test_the_ledger_holds_across_processes(tmp_path: Path) -> None:
    account = FileAccount.start(tmp_path, CAP)
    pool = process_pool(4, cpus=2)  # the sweep's own executor: 4 processes
    try:
        futures = [pool.submit(_hammer, str(account.path), k, 150) for k in range(4)]
        results = [f.result(timeout=120) for f in futures]
    finally:
        pool.shutdown()
    state = account.state()
    assert state.spent <= CAP and state.stopped
    assert state.spent == pytest.approx(sum(results))


class _Cached(FakeModel):
    def complete(self, request: CompletionRequest) -> Completion:
        c = super().complete(request)
        return Completion(c.text, c.input_tokens, c.output_tokens, c.model, cached=True)


def test_a_call_that_could_pass_the_cap_is_never_sent(tmp_path: Path) -> None:
    inner = FakeModel("extractive", model="claude-haiku-4-5")
    model = BudgetedModel(inner, FileAccount.start(tmp_path, 0.001), "anthropic:claude-haiku-4-5")
    small = CompletionRequest(system="s", messages=[Message("user", "hello " * 50)], max_tokens=100)
    model.complete(small)
    assert inner.calls == 1 and 0 < model.account.state().spent < 0.001
    big = CompletionRequest(system="s", messages=[Message("user", "hello " * 2000)], max_tokens=100)
    with pytest.raises(BudgetRefused):
        model.complete(big)
    assert inner.calls == 1  # refused before sending
    with pytest.raises(BudgetRefused):  # once stopped, nothing more is sent, however small
        model.complete(small)
    assert inner.calls == 1 and model.account.state().reserved == 0


def test_a_cached_answer_costs_nothing_and_a_failed_call_releases_its_reservation(tmp_path: Path) -> None:
    account = FileAccount.start(tmp_path, 1.0)
    req = CompletionRequest(system="s", messages=[Message("user", "hello " * 50)], max_tokens=100)
    BudgetedModel(_Cached("extractive"), account, "anthropic:claude-haiku-4-5").complete(req)
    assert account.state().spent == 0
    failing = BudgetedModel(FakeModel("extractive", fail_rate=1.0), account, "anthropic:claude-haiku-4-5")
    with pytest.raises(Exception, match="injected failure"):
        failing.complete(req)
    assert account.state().spent == 0 and account.state().reserved == 0 and not account.state().stopped


# -- a sweep --------------------------------------------------------------------------------------


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_a_sweep_never_spends_more_than_the_cap_and_stops(tmp_path: Path, executor: str) -> None:
    spec = parse_spec(SPEC, "budget.toml")
    out = tmp_path / "run"
    r = run_sweep(spec, out, jobs=4, executor=executor, max_cost_usd=CAP, models=priced, progress=False)
    assert r.spent_usd <= CAP and r.spent_usd > 0
    assert r.stopped_for_budget and r.exit_code == 1 and r.stopped >= 1
    run = rollsum_evals.load_run(out)
    m = run.manifest
    assert m["status"] == "stopped: budget" and m["spent_usd"] <= CAP and m["units_stopped"] == r.stopped
    assert set(run.units["status"]) <= {"ok", "stopped: budget"}
    assert (run.units["status"] == "stopped: budget").sum() == r.stopped
    assert len(run.units) < TOTAL  # the run stopped: not every Unit started
    stopped = run.units[run.units["status"] == "stopped: budget"]
    assert stopped["error"].str.contains("--max-cost-usd").all()
    assert not set(stopped["unit_id"]) & set(run.probes["unit_id"])  # never scored
    account = json.loads((out / ACCOUNT_FILE).read_text())
    assert account["stopped"] and account["spent"] <= CAP

    if executor == "process":
        return
    # resume with a higher cap: the stopped Units are replayed, the rest run, all within it
    r2 = run_sweep(spec, out, jobs=4, executor=executor, resume=True, max_cost_usd=100.0, models=priced,
                   progress=False)
    assert r2.done == TOTAL and not r2.stopped_for_budget and r2.exit_code == 0
    run = rollsum_evals.load_run(out)
    assert set(run.units["status"]) == {"ok"} and len(run.units) == TOTAL
    assert r.spent_usd < r2.spent_usd <= 100.0


def test_a_resume_after_a_sigkill_does_not_spend_the_cap_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """A SIGKILLed run never rewrites its manifest, whose ``spent_usd`` is what it was when that
    invocation started; `--resume` restarted the ledger from it, so every kill-and-resume could
    spend the whole cap again (here: $0.094 of a $0.10 cap, then $0.094 more). The ledger saw
    every paid call: the resume starts from the larger of the two."""
    spec = parse_spec(SPEC, "budget.toml")
    out = tmp_path / "run"
    run_sweep(spec, out, jobs=2, executor="thread", max_cost_usd=CAP, models=priced, progress=False)
    first = json.loads((out / ACCOUNT_FILE).read_text())["spent"]
    assert first > CAP / 2
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.update(status="running", spent_usd=0.0)  # as the killed invocation wrote it at its start
    manifest.pop("files")
    (out / "manifest.json").write_text(json.dumps(manifest))
    settled: list[float] = []
    real = FileAccount.settle

    def settle(account: FileAccount, reserved: float, actual: float) -> None:
        settled.append(actual)
        real(account, reserved, actual)

    monkeypatch.setattr(FileAccount, "settle", settle)
    r2 = run_sweep(spec, out, jobs=2, executor="thread", resume=True, max_cost_usd=CAP, models=priced,
                   progress=False)
    assert first + sum(settled) <= CAP
    assert r2.spent_usd == pytest.approx(first + sum(settled))
    assert rollsum_evals.load_run(out).manifest["spent_usd"] == pytest.approx(first + sum(settled), abs=1e-6)


def test_without_a_cap_a_resume_after_a_sigkill_still_counts_what_the_killed_invocation_spent(
        tmp_path: Path) -> None:
    """Without ``--max-cost-usd`` the spend was only the Units' own tally: a SIGKILLed invocation
    never rewrote its manifest, so after ``--resume`` ``spent_usd`` left out every call it had
    paid for (here all of them: $0 reported for a run that cost money). A run with a model that
    costs money keeps its account without a cap too."""
    spec = parse_spec(SPEC.replace("conversations=4", "conversations=1"), "budget.toml")
    out = tmp_path / "run"
    r = run_sweep(spec, out, jobs=2, executor="thread", models=priced, progress=False)
    assert r.spent_usd > 0 and not r.stopped_for_budget
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.update(status="running", spent_usd=0.0)  # as the killed invocation wrote it at its start
    manifest.pop("files")
    (out / "manifest.json").write_text(json.dumps(manifest))
    r2 = run_sweep(spec, out, jobs=2, executor="thread", resume=True, models=priced, progress=False)
    assert r2.spent_usd == pytest.approx(r.spent_usd)
    assert rollsum_evals.load_run(out).manifest["spent_usd"] == pytest.approx(r.spent_usd, abs=1e-6)
    account = json.loads((out / ACCOUNT_FILE).read_text())
    assert account["cap"] is None and account["spent"] == pytest.approx(r.spent_usd)  # no cap: JSON null


def test_a_run_of_free_models_keeps_no_spend_account(tmp_path: Path) -> None:
    spec = parse_spec(SPEC.replace("anthropic:claude-haiku-4-5", "extractive")
                      .replace("conversations=4&messages=300", "conversations=1&messages=40"), "budget.toml")
    r = run_sweep(spec, tmp_path / "run", jobs=1, executor="thread", progress=False)
    assert r.spent_usd == 0 and not (tmp_path / "run" / ACCOUNT_FILE).exists()


def test_the_manifest_a_resume_starts_with_carries_the_earlier_spend(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest written when an invocation starts is what a SIGKILL leaves behind: without
    ``spent_usd`` the next resume counted every earlier invocation's spend as $0."""
    spec = parse_spec(SPEC.replace("conversations=4", "conversations=1"), "budget.toml")
    out = tmp_path / "run"
    r = run_sweep(spec, out, jobs=2, executor="thread", models=priced, progress=False)
    assert r.spent_usd > 0
    seen: list[object] = []
    real = Dispatcher.run

    def run(dispatcher: Dispatcher, on_result: Any) -> None:
        seen.append(json.loads((out / "manifest.json").read_text()).get("spent_usd"))
        real(dispatcher, on_result)

    monkeypatch.setattr(Dispatcher, "run", run)
    run_sweep(spec, out, jobs=2, executor="thread", resume=True, models=priced, progress=False)
    assert seen == [pytest.approx(r.spent_usd, abs=1e-6)]


def _jobs() -> list[Job]:
    spec = parse_spec(SPEC.replace("conversations=4&messages=300", "conversations=2&messages=40"), "budget.toml")
    convs = {c.id: c for c in load("synth:chat?conversations=2&messages=40&seed=21")}
    units = expand(spec, {"chat": ("h", list(convs))})
    return [Job(u, convs[u.conversation_id], spec.scoring) for u in units]


def _dispatcher(jobs: list[Job], account: FileAccount) -> Dispatcher:
    return Dispatcher(jobs, concurrency=1, executor="thread", budget=BudgetSpec(str(account.path), CAP),
                      engine_factory=default_engine, models=priced, injected_models=priced, cache_path=None,
                      secrets=[])


def test_the_dispatcher_starts_no_unit_once_the_ledger_has_refused_a_call(tmp_path: Path) -> None:
    jobs = _jobs()
    account = FileAccount.start(tmp_path, CAP)
    seen: list[str] = []

    def refuse_after_first(job: Job, result: object) -> None:
        seen.append(job.unit.unit_id)
        assert not account.reserve(2 * CAP)  # a call elsewhere was refused: the account is stopped

    d = _dispatcher(jobs, account)
    d.run(refuse_after_first)
    assert len(seen) == 1 < len(jobs) and d.stopped_for_budget


def test_a_nan_budget_is_a_user_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="--max-cost-usd nan"):
        run_sweep(parse_spec(SPEC, "budget.toml"), tmp_path / "r", max_cost_usd=math.nan, models=priced,
                  progress=False)
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    for bad in ("nan", "-1"):
        assert main(["run", str(spec), "--out", str(tmp_path / f"c{bad}"), "--max-cost-usd", bad,
                     "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert "--max-cost-usd" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("name", ["budget.json.lock", ACCOUNT_FILE])
def test_the_account_never_follows_a_link_in_a_received_run_directory(tmp_path: Path, name: str) -> None:
    """A run directory someone sent can hold a link where the account's lock or file should be:
    opening the lock through a dangling link creates the file it names, and the account would be
    read from outside the directory. Refused as a damaged run, and nothing is created there."""
    run_dir, outside = tmp_path / "run", tmp_path / "outside"
    run_dir.mkdir()
    outside.mkdir()
    target = outside / "created-through-the-link"
    (run_dir / name).symlink_to(target)
    with pytest.raises(ConfigError, match=r"symbolic link.*the run directory is damaged"):
        FileAccount.start(run_dir, cap=1.0)
    assert not target.exists()


# -- through the CLI, on the real SDK ----------------------------------------------------------------


PAID_SPEC = """
name = "paid"
models = ["anthropic:claude-haiku-4-5"]
context_window = 3000
cache = "run"
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=80&seed=1"
[[configs]]
preset = "since-last"
"""


@pytest.mark.parametrize("cap", [None, 100.0])
def test_a_paid_call_is_charged_once_at_what_the_api_billed(
        tmp_path: Path, served: Any, cap: float | None) -> None:
    """`rollsum run` on the default model factory (cache -> account -> model) charged each paid
    call twice: the sweep hands its factory over behind the breaker's builder, which the Unit
    then put behind the account again. ``spent_usd`` read double what the API billed (and a cap
    stopped the run at half of it). Every call here bills 1,000 input + 100 output tokens:
    $0.0015 at claude-haiku-4-5's $1 / $5 per million."""
    calls = served(lambda request: httpx2.Response(
        200, json=message_json("A summary of the earlier talk.", input_tokens=1000, output_tokens=100)))
    spec = tmp_path / "paid.toml"
    spec.write_text(PAID_SPEC)
    out = tmp_path / "run"
    args = ["run", str(spec), "--out", str(out), "--no-progress", "--executor", "thread"]
    assert main([*args, *(["--max-cost-usd", str(cap)] if cap is not None else [])]) == 0
    assert calls  # the summarizer was called
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spent_usd"] == pytest.approx(len(calls) * 0.0015)
    assert json.loads((out / ACCOUNT_FILE).read_text())["spent"] == pytest.approx(len(calls) * 0.0015)


def test_a_refused_answer_is_charged_what_the_api_billed(tmp_path: Path, served: Any) -> None:
    """A refusal is billed like any answer; the account counted it as a failed call ($0), so a run
    whose every summary was refused reported $0 spent and no cap could stop it."""
    calls = served(lambda request: httpx2.Response(200, json=message_json(
        "I can't help with that.", stop_reason="refusal", input_tokens=1000, output_tokens=100)))
    spec = tmp_path / "paid.toml"
    spec.write_text(PAID_SPEC)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--no-progress", "--executor", "thread"]) == 0
    assert calls
    assert json.loads((out / "manifest.json").read_text())["spent_usd"] == pytest.approx(len(calls) * 0.0015)


def test_a_batch_answer_is_charged_at_the_batch_price(tmp_path: Path, served: Any) -> None:
    """With ``[qa] batch = true`` the API bills half the list price; the account charged the list
    price, so ``spent_usd`` was twice the bill."""
    server = BatchServer(polls_before_end=0)
    served(server)
    spec = tmp_path / "batch.toml"
    spec.write_text(PAID_SPEC.replace('models = ["anthropic:claude-haiku-4-5"]', 'models = ["extractive"]')
                    .replace('cache = "run"', 'cache = "run"\nscorers = ["answer_retention", "qa"]\n'
                             '[qa]\nmodel = "anthropic:claude-haiku-4-5"\nbatch = true'))
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--no-progress", "--executor", "thread"]) == 0
    sent = sum(len(requests) for requests in server.batches.values())
    assert sent and server.creates >= 1
    per_answer = (100 * 1.0 + 4 * 5.0) / 1e6 * 0.5  # succeeded(): 100 in, 4 out; $1 / $5 per MTok, halved
    assert json.loads((out / "manifest.json").read_text())["spent_usd"] == pytest.approx(sent * per_answer)


def _sized_batch_server() -> BatchServer:
    """Batch answers billed like the real API's: input tokens grow with the request."""
    server = BatchServer(polls_before_end=0)

    def outcome(cid: str, _n: int) -> dict[str, Any]:
        params = server.params[cid]
        tokens = len(json.dumps(params["messages"])) // 4 + len(params.get("system", "")) // 4
        return {"type": "succeeded", "message": message_json("Sweden", input_tokens=tokens, output_tokens=3)}

    server.outcome = outcome
    return server


def _billed(server: BatchServer) -> float:
    """What the server billed for every request of every batch it was sent, at the batch price."""
    total = 0.0
    for lines in server.results.values():
        for line in lines:
            usage = line["result"]["message"]["usage"]
            total += (usage["input_tokens"] * 1.0 + usage["output_tokens"] * 5.0) / 1e6 * 0.5
    return total


def test_a_cap_counts_every_batch_it_paid_for(tmp_path: Path, served: Any) -> None:
    """Batch answers were charged as they were used: once one Unit's answers reached the cap,
    the batches other Units had already sent (paid) were refused at use and never counted, so
    the run spent more than the cap and said less. A batch is now reserved before it is sent
    and charged what it billed."""
    server = _sized_batch_server()
    served(server)
    spec = tmp_path / "batch.toml"
    spec.write_text(PAID_SPEC.replace('models = ["anthropic:claude-haiku-4-5"]', 'models = ["extractive"]')
                    .replace('cache = "run"', 'cache = "run"\nscorers = ["answer_retention", "qa"]\n'
                             '[qa]\nmodel = "anthropic:claude-haiku-4-5"\nbatch = true'))
    args = ["run", str(spec), "--no-progress", "--executor", "thread", "--jobs", "4"]
    assert main([*args, "--out", str(tmp_path / "full")]) == 0
    whole = _billed(server)
    server.results.clear()
    cap = whole / 3
    out = tmp_path / "capped"
    assert main([*args, "--out", str(out), "--max-cost-usd", f"{cap:.6f}"]) == 1  # stopped by the cap
    spent = json.loads((out / "manifest.json").read_text())["spent_usd"]
    assert spent == pytest.approx(_billed(server), rel=1e-3) and spent <= cap

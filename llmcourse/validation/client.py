"""The one closed-loop client model: how a benchmark's clients fall into step, for every closed-loop row.

A closed-loop benchmark (aiconfigurator's silicon rows, ``vllm bench serve --max-concurrency``, SGLang's
``bench_serving``, TensorRT-LLM's ``trtllm-bench``) keeps ``n`` requests in flight: each client sends its next
request when its last one finishes. The benchmark starts its ``n`` clients together and, with answers of one
length, they come back together: the next requests arrive as a wave. How much of the wave a new request waits
behind depends on how the engine schedules prefills:

* where prefills run on their own, between decode steps (SGLang's default scheduler: chunked prefill, but
  ``--enable-mixed-chunk`` off, so ``Scheduler.get_next_batch_to_run`` runs a prefill batch and pauses decode; a
  disaggregated prefill pool, which does nothing else), every later prefill holds the wave's decode steps whole,
  so the wave comes back whole: the k-th request waits behind the k - 1 prompts before it (share 1);
* where prefill chunks ride in the decode steps (vLLM V1's ``Scheduler.schedule`` fills a token budget with the
  running requests' decode tokens and then prompt chunks; TensorRT-LLM's in-flight batching with chunked context),
  a later prefill slows the steps only partly, and the wave comes back partly bunched: a share ``s_w`` of it,
  fitted on the time to first token (the assumptions' ``closed_loop_wave_share``).

That is :data:`CLIENT_MODEL`, ``"by engine"``. It was chosen among :data:`CLIENT_MODELS` by the held-out error of
the time to first token across (model, GPU, engine) groups (every group held out in turn, the parameters refitted
without it: :func:`llmcourse.validation.client_alternatives`), not chapter by chapter; the validation chapter
prints the alternatives' errors beside it. Chapters *Queueing* (the closed form beside the simulator),
*Disaggregated serving* (a prefill pool: share 1) and *How good is the estimate?* all take the share from
:func:`client_wave_share`.

Examples
--------
>>> client_wave_share(True, 0.14), client_wave_share(False, 0.14)
(1.0, 0.14)
>>> client_wave_share(False, 0.14, "lockstep"), client_wave_share(True, 0.14, "spread")
(1.0, 0.0)
"""

from __future__ import annotations

import difflib

from llmcourse.errors import UnknownNameError

__all__ = ["CLIENT_MODEL", "CLIENT_MODELS", "client_wave_share"]

#: The client models a closed loop's time to first token can be read with (name -> what it says).
CLIENT_MODELS: dict[str, str] = {
    "spread": "clients spread out: a new request waits only the queue's wait, no wave (share 0)",
    "lockstep": "clients in lockstep waves: a new request waits behind every earlier prompt of its wave (share 1)",
    "one share": "partial waves: one fitted share of the wave for every engine",
    "by engine": "waves whole where prefills run on their own (SGLang's default, a disaggregated prefill pool), "
    "a fitted share where the engine mixes prefill chunks into its decode steps (vLLM, TensorRT-LLM)",
}
#: The client model every closed-loop row is predicted with (chosen by held-out error across groups).
CLIENT_MODEL = "by engine"


def client_wave_share(separate_prefill: bool, fitted_share: float, client: str = CLIENT_MODEL) -> float:
    """The share of a wave's earlier prompts a new request of a closed loop waits behind (formula
    ``closed_loop_wave_wait``), under the client model ``client`` (:data:`CLIENT_MODEL` by default):
    ``separate_prefill`` says whether the engine (or pool) runs its prefills on their own, ``fitted_share`` is
    the fitted share of the engines that mix prefill chunks into decode steps (``closed_loop_wave_share``).
    """
    if client == "by engine":
        return 1.0 if separate_prefill else float(fitted_share)
    if client == "one share":
        return float(fitted_share)
    if client == "lockstep":
        return 1.0
    if client == "spread":
        return 0.0
    near = difflib.get_close_matches(str(client), list(CLIENT_MODELS), n=1)
    hint = f" Did you mean {near[0]!r}?" if near else ""
    raise UnknownNameError(f"no client model named {client!r}.{hint} Known: {', '.join(map(repr, CLIENT_MODELS))}.")

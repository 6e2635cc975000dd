"""Request messages built from Python arguments.

Only the shape is checked here (exactly one prompt, known policy fields); ranges are the
server's to judge, so its InvalidArgument names the field exactly as docs/API.md does.
"""

import json
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from google.protobuf import json_format

from arbor_client._stubs import entropix_pb2, generation_pb2

# A policy: None (server default), a mode name ("search", "canonical"), a dict in the
# PolicyConfig JSON shape ({"mode": "POLICY_MODE_SEARCH", "branch": {"width": 8}}, field names
# snake_case or camelCase), or a PolicyConfig message.
PolicyLike = Union[None, str, Mapping[str, Any], entropix_pb2.PolicyConfig]
# A chat message: {"role": "user", "content": "Hi"}.
MessageLike = Mapping[str, str]
# A continuation to score: text (tokenized on its own, without BOS) or token ids.
ContinuationLike = Union[str, Sequence[int]]


def policy_config(policy: PolicyLike) -> Optional[entropix_pb2.PolicyConfig]:
    """The PolicyConfig message of a PolicyLike; ValueError for unknown fields or modes."""
    if policy is None or isinstance(policy, entropix_pb2.PolicyConfig):
        return policy
    if isinstance(policy, str):
        name = f"POLICY_MODE_{policy.upper()}"
        if policy.upper() not in ("SEARCH", "CANONICAL", "TRACE"):
            raise ValueError(f"policy: {policy!r} is not 'search', 'canonical' or 'trace'")
        return entropix_pb2.PolicyConfig(mode=entropix_pb2.PolicyMode.Value(name))
    if isinstance(policy, Mapping):
        try:
            return json_format.ParseDict(dict(policy), entropix_pb2.PolicyConfig())
        except json_format.ParseError as error:
            raise ValueError(f"policy: {error}") from None
    raise TypeError(f"policy: expected a mode name, a dict or a PolicyConfig, got "
                    f"{type(policy).__name__}")


def set_policy(request: Any, policy: PolicyLike) -> None:
    """Sets the `policy` field (GenerateRequest, ScoreRequest and ReplayRequest share it) unless
    None."""
    config = policy_config(policy)
    if config is not None:
        request.policy.CopyFrom(config)


def set_prompt(request: Any, prompt: Optional[str], messages: Optional[Iterable[MessageLike]],
               token_ids: Optional[Iterable[int]]) -> None:
    """Fills the `prompt` oneof (GenerateRequest and ScoreRequest share it) from exactly one of
    text, chat messages (a generation prompt opened after them) and token ids."""
    if sum(x is not None for x in (prompt, messages, token_ids)) != 1:
        raise ValueError("give exactly one of prompt, messages or token_ids")
    if prompt is not None:
        request.text = prompt
    elif messages is not None:
        for message in messages:
            request.chat.messages.add(role=message["role"], content=message["content"])
        request.chat.add_generation_prompt = True
    else:
        request.tokens.token_ids.extend(token_ids)


def generate_request(prompt: Optional[str] = None, *,
                     messages: Optional[Iterable[MessageLike]] = None,
                     token_ids: Optional[Iterable[int]] = None,
                     max_tokens: int = 0,
                     seed: int = 0,
                     policy: PolicyLike = None,
                     stop: Union[None, str, Iterable[str]] = None,
                     stop_token_ids: Iterable[int] = (),
                     ignore_eos: bool = False,
                     top_logprobs: int = 0,
                     deadline_ms: int = 0,
                     client_tag: str = "",
                     repetition_penalty: Optional[float] = None,
                     frequency_penalty: Optional[float] = None,
                     presence_penalty: Optional[float] = None,
                     logit_bias: Optional[Mapping[int, float]] = None,
                     json_schema: Union[None, str, Mapping[str, Any]] = None,
                     json_object: bool = False
                     ) -> generation_pb2.GenerateRequest:
    """A GenerateRequest; the arguments of Client.generate, stream and submit.

    Args:
      prompt: raw text (BOS added when the model has one).
      messages: chat messages [{"role": ..., "content": ...}], rendered with the model's template.
      token_ids: prompt token ids, used as given.
      max_tokens: generated tokens; 0 = the server default (256, capped to the context).
      seed: sampler seed; 0 = the server picks one (Job.seed reports it).
      policy: see PolicyLike; unset fields take the server default.
      stop: stop string(s); the text ends before the one that matched.
      stop_token_ids: extra stop token ids (the model's end-of-sequence ids always stop).
      ignore_eos: do not stop on the model's end-of-sequence ids.
      top_logprobs: alternatives per node kept in the tree and sent with tokens, [0, 64].
      deadline_ms: wall-clock budget from submission; 0 = none.
      client_tag: free text shown in list_jobs.
      repetition_penalty, frequency_penalty, presence_penalty, logit_bias: logit processors on
        every step, before the entropix metrics (docs/API.md, "Logit processors"); logit_bias maps
        token ids to biases in [-100, 100].
      json_schema: structured output: the text is a JSON document of this schema (a dict or its
        JSON text; the subset in docs/API.md, "Structured output"); json_object: any JSON object.
    """
    request = generation_pb2.GenerateRequest(
        max_tokens=max_tokens, seed=seed, top_logprobs=top_logprobs, deadline_ms=deadline_ms,
        client_tag=client_tag)
    set_prompt(request, prompt, messages, token_ids)
    set_policy(request, policy)
    request.stop.stop_strings.extend([stop] if isinstance(stop, str) else stop or ())
    request.stop.stop_token_ids.extend(stop_token_ids)
    if ignore_eos:
        request.stop.ignore_eos = True
    for field, value in (("repetition_penalty", repetition_penalty),
                         ("frequency_penalty", frequency_penalty),
                         ("presence_penalty", presence_penalty)):
        if value is not None:
            setattr(request.processors, field, value)
    for token, bias in (logit_bias or {}).items():
        request.processors.logit_bias[int(token)] = bias
    if json_schema is not None and json_object:
        raise ValueError("give json_schema or json_object, not both")
    if json_schema is not None:
        request.constraint.json_schema = (json_schema if isinstance(json_schema, str)
                                          else json.dumps(json_schema))
    elif json_object:
        request.constraint.json_object = True
    return request


def score_request(prompt: Optional[str] = None, *,
                  messages: Optional[Iterable[MessageLike]] = None,
                  token_ids: Optional[Iterable[int]] = None,
                  continuations: Iterable[ContinuationLike] = (),
                  top_logprobs: int = 0,
                  policy: PolicyLike = None,
                  client_tag: str = "") -> generation_pb2.ScoreRequest:
    """A ScoreRequest; the arguments of Client.score (prompt as in generate_request)."""
    request = generation_pb2.ScoreRequest(top_logprobs=top_logprobs, client_tag=client_tag)
    set_prompt(request, prompt, messages, token_ids)
    for continuation in continuations:
        if isinstance(continuation, str):
            request.continuations.add(text=continuation)
        else:
            request.continuations.add().tokens.token_ids.extend(continuation)
    set_policy(request, policy)
    return request


__all__ = ["ContinuationLike", "MessageLike", "PolicyLike", "generate_request", "score_request"]

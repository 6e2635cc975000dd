"""OpenAI tool calling through clients nobody here wrote.

The official `openai` package talks to a real arbor-coordinator and arbor-worker on a
random-weight ChatML checkpoint (make-model's qwen2-tiny), under the coordinator's default
policy: a named tool_choice and "required" answer with calls whose arguments validate; a
streamed call, reassembled as the client does, equals the blocking one of the same seed and no
call markup reaches content; a second turn with the tool's result is answered; tool_choice
"none" gives no calls; malformed requests are refused naming the field. A property run sends
random tool sets (random parameter schemas of the subset the grammar compiles) with random
seeds, and every returned call's arguments parse and validate with `jsonschema`. The same
vocabulary carrying Llama 3.1's template answers in Meta's JSON form, blocking and streamed, and
takes the result back as an "ipython" turn. The real SmolLM2-135M-Instruct under a bare
coordinator's default policy (CoT-decoding) does the same in ChatML.
"""

import json
import os
import random
import sys
import unittest

try:
    import jsonschema
    import openai
except ImportError as missing:  # The dependency script installs both.
    print(f"{missing.name} is not installed in this Python; skipping")
    sys.exit(77)

TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
for folder in ("integration/support", "grammar", "support"):
    sys.path.insert(0, os.path.join(TESTS, folder))
from arbor_processes import (  # noqa: E402
    SMOLLM2, Processes, start_http_cluster, start_smollm2_cluster)
from json_schema_oracle import Generator  # noqa: E402
from test_seed import test_seed  # noqa: E402

# Finite arguments: random weights may repeat one character forever inside a free string.
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "enum": ["Paris", "Oslo", "Lima"]},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a time zone.",
    "parameters": {"type": "object", "properties": {"utc": {"type": "boolean"}},
                   "required": ["utc"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def validates(tool, arguments):
    """The error of `arguments` (a JSON string) against the tool's schema, or None."""
    document = json.loads(arguments)
    validator = jsonschema.Draft202012Validator(tool["function"]["parameters"])
    return jsonschema.exceptions.best_match(validator.iter_errors(document))


def reassemble(stream):
    """A streamed answer as the openai package's users put it together: (content, calls by
    index as {id, name, arguments}, finish_reason)."""
    calls, content, finish = {}, "", None
    for chunk in stream:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for part in delta.tool_calls or []:
            call = calls.setdefault(part.index, {"id": None, "name": None, "arguments": ""})
            if part.id:
                assert call["id"] is None, "a call's id comes once"
                call["id"], call["name"] = part.id, part.function.name
            call["arguments"] += part.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    return content, calls, finish


def random_tool(rng, generator, index):
    schema = generator.root()
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"],
                  **({"$defs": schema.pop("$defs")} if "$defs" in schema else {})}
    return {"type": "function",
            "function": {"name": f"tool_{index}", "description": f"Tool {index}",
                         "parameters": schema}}


class ToolCallingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-tools-")
        cls.base = start_http_cluster(cls.processes, preset="qwen2-tiny",
                                      worker_flags=("--threads=1", "--kv_tokens=32768"))
        cls.client = openai.OpenAI(base_url=cls.base + "/v1", api_key="unused", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def create(self, **kwargs):
        kwargs.setdefault("model", "qwen2-tiny")
        kwargs.setdefault("messages", QUESTION)
        kwargs.setdefault("max_tokens", 300)
        return self.client.chat.completions.create(**kwargs)

    def test_named_tool_choice_answers_with_a_valid_call(self):
        r = self.create(tools=[WEATHER, TIME], tool_choice=NAMED, seed=test_seed(self))
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls", choice)
        self.assertIsNone(choice.message.content)
        [call] = choice.message.tool_calls
        self.assertTrue(call.id.startswith("call_"), call.id)
        self.assertEqual(call.type, "function")
        self.assertEqual(call.function.name, "get_weather")
        self.assertIsNone(validates(WEATHER, call.function.arguments), call.function.arguments)

    def test_required_with_several_tools_calls_one_of_them(self):
        tools = {"get_weather": WEATHER, "get_time": TIME}
        names = set()
        for seed in range(1, 9):
            r = self.create(tools=list(tools.values()), tool_choice="required", seed=seed)
            self.assertEqual(r.choices[0].finish_reason, "tool_calls", r.choices[0])
            [call] = r.choices[0].message.tool_calls
            self.assertIn(call.function.name, tools)
            self.assertIsNone(validates(tools[call.function.name], call.function.arguments))
            names.add(call.function.name)
        print(f"required over two tools called {sorted(names)}")

    def test_stream_reassembles_to_the_blocking_call(self):
        seed = test_seed(self)
        whole = self.create(tools=[WEATHER, TIME], tool_choice=NAMED, seed=seed)
        content, calls, finish = reassemble(
            self.create(tools=[WEATHER, TIME], tool_choice=NAMED, seed=seed, stream=True))
        self.assertEqual(finish, "tool_calls")
        self.assertEqual(content, "")
        [expected] = whole.choices[0].message.tool_calls
        self.assertEqual(list(calls), [0])
        self.assertEqual(calls[0]["name"], expected.function.name)
        self.assertEqual(calls[0]["arguments"], expected.function.arguments)

    def test_auto_never_leaks_call_markup(self):
        for seed in range(1, 5):
            for stream in (False, True):
                r = self.create(tools=[WEATHER], seed=seed, stream=stream, max_tokens=60)
                chunks = list(r) if stream else [r]
                for c in chunks:
                    part = c.choices[0].delta if stream else c.choices[0].message
                    self.assertNotIn("<tool_call>", part.content or "")
                    for call in part.tool_calls or []:
                        if call.function.arguments:
                            self.assertIsNone(validates(WEATHER, call.function.arguments))

    def test_second_turn_with_the_tool_result_is_answered(self):
        first = self.create(tools=[WEATHER], tool_choice=NAMED, seed=3)
        [call] = first.choices[0].message.tool_calls
        messages = QUESTION + [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": call.id, "type": "function",
                             "function": {"name": call.function.name,
                                          "arguments": call.function.arguments}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "21 degrees and sunny"}]
        r = self.create(messages=messages, tools=[WEATHER], tool_choice="none", seed=3,
                        max_tokens=20)
        self.assertIsNone(r.choices[0].message.tool_calls)
        self.assertIsInstance(r.choices[0].message.content, str)
        self.assertIn(r.choices[0].finish_reason, ("stop", "length"))
        # The result (and the call before it) reached the prompt.
        self.assertGreater(r.usage.prompt_tokens, first.usage.prompt_tokens)

    def test_none_renders_tools_but_calls_nothing(self):
        r = self.create(tools=[WEATHER], tool_choice="none", seed=1, max_tokens=20)
        self.assertIsNone(r.choices[0].message.tool_calls)
        self.assertNotEqual(r.choices[0].finish_reason, "tool_calls")
        bare = self.create(seed=1, max_tokens=20)
        self.assertGreater(r.usage.prompt_tokens, bare.usage.prompt_tokens)

    def test_malformed_requests_are_refused_naming_the_field(self):
        cases = [
            (dict(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "x"}}),
             "tool_choice.function.name: 'x' is not among tools (get_weather)"),
            (dict(tool_choice="required"), "tool_choice: \"required\" needs tools"),
            (dict(tools=[{"type": "function", "function": {"name": "bad name"}}]),
             "tools[0].function.name"),
            (dict(tools=[{"type": "function", "function": {
                "name": "f", "parameters": {"type": "object", "properties": {
                    "x": {"type": "array", "uniqueItems": True}}}}}]),
             "tools[0].function.parameters: at /properties/x: keyword 'uniqueItems'"),
            (dict(messages=[{"role": "tool", "content": "x"}]),
             "messages[0].tool_call_id: required"),
        ]
        for kwargs, message in cases:
            with self.assertRaises(openai.BadRequestError, msg=message) as caught:
                self.create(**kwargs)
            self.assertIn(message, str(caught.exception))

    def test_random_tool_sets_return_only_valid_calls(self):
        seed = test_seed(self)
        rng = random.Random(seed)
        returned, too_long = 0, 0
        runs = int(os.environ.get("ARBOR_TOOL_PROPERTY_RUNS", "300"))
        for i in range(runs):
            generator = Generator(rng)
            tools = [random_tool(rng, generator, k) for k in range(rng.randint(1, 3))]
            pick = rng.choice(tools)["function"]["name"]
            choice = rng.choice(["auto", "required",
                                 {"type": "function", "function": {"name": pick}}])
            try:
                r = self.create(tools=tools, tool_choice=choice, seed=seed + i)
            except openai.BadRequestError as e:  # The byte-level vocabulary's long prompts.
                self.assertIn("context", str(e))
                too_long += 1
                continue
            for call in r.choices[0].message.tool_calls or []:
                [tool] = [t for t in tools if t["function"]["name"] == call.function.name]
                error = validates(tool, call.function.arguments)
                self.assertIsNone(error, f"seed {seed + i}, {json.dumps(tool)}:\n"
                                         f"{call.function.arguments}\n{error}")
                returned += 1
        print(f"seed {seed}: {runs} random tool sets ({too_long} prompts too long for the "
              f"context), {returned} calls returned, all valid")
        # Forced calls cut by max_tokens return none; most finish.
        self.assertGreaterEqual(returned, runs // 4)


class Llama31ToolCallingTest(unittest.TestCase):
    """Meta's JSON tool calling: a Llama-vocabulary checkpoint carrying Llama 3.1's template."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(TESTS, "model", "data", "chat_templates.json"),
                  encoding="utf-8") as f:
            [template] = [t["template"] for t in json.load(f)["templates"]
                          if t["name"] == "Llama-3.1-Instruct"]
        cls.processes = Processes(prefix="arbor-tools-llama-")
        base = start_http_cluster(cls.processes, chat_template=template,
                                  worker_flags=("--threads=1", "--kv_tokens=16384"))
        cls.client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def create(self, **kwargs):
        kwargs.setdefault("max_tokens", 300)
        return self.client.chat.completions.create(model="tiny", **kwargs)

    def test_named_call_blocking_and_streamed_then_its_result(self):
        seed = test_seed(self)
        whole = self.create(messages=QUESTION, tools=[WEATHER, TIME], tool_choice=NAMED,
                            seed=seed)
        self.assertEqual(whole.choices[0].finish_reason, "tool_calls")
        [call] = whole.choices[0].message.tool_calls
        self.assertEqual(call.function.name, "get_weather")
        self.assertIsNone(validates(WEATHER, call.function.arguments))
        content, calls, finish = reassemble(self.create(
            messages=QUESTION, tools=[WEATHER, TIME], tool_choice=NAMED, seed=seed, stream=True))
        self.assertEqual((content, finish), ("", "tool_calls"))
        self.assertEqual(calls[0]["arguments"], call.function.arguments)
        # The call as the assistant's turn and its result as an "ipython" turn.
        messages = QUESTION + [
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "21 degrees"}]
        answer = self.create(messages=messages, tools=[WEATHER, TIME], tool_choice="none",
                             seed=seed, max_tokens=10)
        self.assertIsNone(answer.choices[0].message.tool_calls)
        self.assertGreater(answer.usage.prompt_tokens, whole.usage.prompt_tokens)


class SmolLM2ToolCallingTest(unittest.TestCase):
    """The default demo model under a bare coordinator's default policy (CoT-decoding's trace
    search for SmolLM2): forced calls validate and stream as they answer whole, "auto" reads the
    calls the model writes itself, and the result of a call is answered with text. The model is
    fetched into the cache as users' is (skipped without it and without network)."""

    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-tools-smollm2-")
        base = start_smollm2_cluster(cls.processes, ("--threads=1", "--kv_tokens=8192"))
        cls.client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def create(self, **kwargs):
        kwargs.setdefault("messages", QUESTION)
        kwargs.setdefault("max_tokens", 120)
        return self.client.chat.completions.create(model=SMOLLM2, **kwargs)

    def test_forced_calls_validate_and_stream_as_they_answer(self):
        tools = {"get_weather": WEATHER, "get_time": TIME}
        for seed, choice in [(1, NAMED), (2, "required")]:
            whole = self.create(tools=list(tools.values()), tool_choice=choice, seed=seed)
            self.assertEqual(whole.choices[0].finish_reason, "tool_calls")
            [call] = whole.choices[0].message.tool_calls
            self.assertIsNone(validates(tools[call.function.name], call.function.arguments))
            content, calls, finish = reassemble(self.create(
                tools=list(tools.values()), tool_choice=choice, seed=seed, stream=True))
            self.assertEqual((content, finish), ("", "tool_calls"))
            self.assertEqual((calls[0]["name"], calls[0]["arguments"]),
                             (call.function.name, call.function.arguments))

    def test_auto_returns_only_valid_calls_and_answers_results(self):
        for seed in range(1, 4):
            r = self.create(tools=[WEATHER], seed=seed)
            message = r.choices[0].message
            self.assertNotIn("<tool_call>", message.content or "")
            for call in message.tool_calls or []:
                self.assertIsNone(validates(WEATHER, call.function.arguments))
        call = {"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}
        answer = self.create(messages=QUESTION + [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "21 degrees, sunny"}],
            tools=[WEATHER], seed=1)
        self.assertTrue(answer.choices[0].message.content, answer)


if __name__ == "__main__":
    unittest.main()

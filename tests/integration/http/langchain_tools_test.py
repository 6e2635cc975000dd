"""A LangChain agent's two-step tool loop against the OpenAI API.

LangChain's `ChatOpenAI.bind_tools` (langchain-openai, as agents use it) asks a real
arbor-coordinator and arbor-worker on a random-weight ChatML checkpoint for a call, runs the
tool, and sends the result back as a ToolMessage; the second answer is text. LangChain parses
the call itself, so what it receives is what OpenAI clients get.
"""

import json
import os
import sys
import unittest

try:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
except ImportError as missing:  # The dependency script installs langchain-openai.
    print(f"{missing.name} is not installed in this Python; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from arbor_processes import Processes, start_http_cluster  # noqa: E402  (path set above)


@tool
def get_weather(city: str, celsius: bool) -> str:
    """The current weather in a city."""
    return f"21 degrees in {city}" if celsius else f"70 degrees in {city}"


class LangChainToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-langchain-")
        base = start_http_cluster(cls.processes, preset="qwen2-tiny",
                                  worker_flags=("--threads=1", "--kv_tokens=16384"))
        cls.llm = ChatOpenAI(base_url=base + "/v1", api_key="unused", model="qwen2-tiny",
                             max_tokens=200, seed=7, max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def test_call_run_and_answer(self):
        messages = [HumanMessage("What is the weather in Paris?")]
        caller = self.llm.bind_tools([get_weather], tool_choice="get_weather")
        ai = caller.invoke(messages)
        self.assertEqual(len(ai.tool_calls), 1, ai)
        call = ai.tool_calls[0]
        self.assertEqual(call["name"], "get_weather")
        self.assertIsInstance(call["args"]["city"], str)
        self.assertIsInstance(call["args"]["celsius"], bool)
        self.assertTrue(call["id"].startswith("call_"))
        result = get_weather.invoke(call["args"])
        messages += [ai, ToolMessage(result, tool_call_id=call["id"])]
        answer = self.llm.bind_tools([get_weather], tool_choice="none").invoke(messages)
        self.assertEqual(answer.tool_calls, [])
        self.assertIsInstance(answer.content, str)
        # The call and its result reached the prompt of the second turn.
        self.assertGreater(answer.usage_metadata["input_tokens"],
                           ai.usage_metadata["input_tokens"] + len(json.dumps(call["args"])) // 4)


if __name__ == "__main__":
    unittest.main()

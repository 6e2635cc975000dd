"""Structured output through the OpenAI API: every finished answer parses and validates.

Random JSON Schemas (the generator of tests/grammar/json_schema_oracle.py) are sent as
`response_format` by the official `openai` package, on both endpoints, to a real coordinator and
worker on a random-weight checkpoint, under sampling, greedy decoding, and searches that branch
or backspace at every step; Python's `jsonschema` judges each answer that ended with the end
token (answers cut by max_tokens are counted apart: the grammar cannot make them shorter). A
Pydantic model with `Field` constraints goes through the SDK's own `parse`, as users send one.
"""

import json
import os
import random
import sys
import unittest
from typing import Literal, Optional

try:
    import jsonschema
    import openai
    import pydantic
except ImportError:  # The dependency script installs all three (pydantic comes with openai).
    print("openai, pydantic or jsonschema is not installed in this Python; skipping")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "grammar"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from arbor_processes import Processes, http_json, start_http_cluster  # noqa: E402
from json_schema_oracle import Generator  # noqa: E402
from policies import BACKSPACE_ALWAYS, BRANCH_ALWAYS  # noqa: E402
from test_seed import test_seed  # noqa: E402


class Address(pydantic.BaseModel):
    street: str = pydantic.Field(min_length=1, max_length=24)
    postcode: str = pydantic.Field(pattern=r"^[0-9]{5}(-[0-9]{4})?$")


class Person(pydantic.BaseModel):
    """What `Field` constraints users put on a model: bounds, lengths, a pattern, a literal."""
    name: str = pydantic.Field(min_length=1, max_length=16)
    age: int = pydantic.Field(ge=0, le=120)
    score: float = pydantic.Field(gt=0, lt=1)
    role: Literal["admin", "user", "guest"]
    tags: list[str] = pydantic.Field(max_length=3)
    address: Optional[Address]


POLICIES = {"sampling": None, "greedy": "greedy", "branch": BRANCH_ALWAYS,
            "backspace": BACKSPACE_ALWAYS}
MESSAGES = [{"role": "user", "content": "Describe a person as JSON."}]


class StructuredOutputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = Processes(prefix="arbor-structured-")
        cls.base = start_http_cluster(cls.processes, worker_flags=("--threads=1",
                                                                   "--kv_tokens=32768"))
        cls.client = openai.OpenAI(base_url=cls.base + "/v1", api_key="unused", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def ask(self, response_format, policy, seed, chat=True):
        arbor = {}
        if isinstance(policy, str):
            arbor["policy_name"] = policy
        elif policy is not None:
            arbor["policy"] = policy
        extra = {"arbor": arbor} if arbor else {}
        common = dict(model="tiny", max_tokens=300, seed=seed)
        if chat:
            r = self.client.chat.completions.create(messages=MESSAGES, extra_body=extra,
                                                    response_format=response_format, **common)
            return r, r.choices[0].message.content
        # The package's completions call has no response_format parameter; the server takes it.
        extra["response_format"] = response_format
        r = self.client.completions.create(prompt="JSON:", extra_body=extra, **common)
        return r, r.choices[0].text

    def test_random_schemas_validate_under_every_policy(self):
        seed = test_seed(self)
        rng = random.Random(seed)
        finished, cut = {name: 0 for name in POLICIES}, {name: 0 for name in POLICIES}
        for i in range(24):
            schema = Generator(rng).root()
            validator = jsonschema.Draft202012Validator(schema)
            response_format = {"type": "json_schema",
                               "json_schema": {"name": "t", "schema": schema, "strict": True}}
            for name, policy in POLICIES.items():
                r, text = self.ask(response_format, policy, seed + i, chat=i % 2 == 0)
                where = f"seed {seed + i}, policy {name}, schema {json.dumps(schema)}:\n{text}"
                if r.choices[0].finish_reason == "length":
                    cut[name] += 1
                    continue
                self.assertEqual(r.choices[0].finish_reason, "stop", where)
                try:
                    document = json.loads(text)
                except ValueError as e:
                    self.fail(f"{where}\ndoes not parse: {e}")
                error = jsonschema.exceptions.best_match(validator.iter_errors(document))
                self.assertIsNone(error, f"{where}\ndoes not validate: {error}")
                finished[name] += 1
        print(f"seed {seed}: finished {finished}, cut by max_tokens {cut}")
        for name in POLICIES:
            self.assertGreaterEqual(finished[name], 6, f"{name}: too few answers finished to judge")

    def test_pydantic_models_parse_through_the_sdk(self):
        # The SDK turns the model into a strict schema, sends it, and parses the answer back
        # into the model, which re-checks every Field constraint.
        schema = Person.model_json_schema()
        validator = jsonschema.Draft202012Validator(schema)
        parsed, cut = 0, 0
        for seed in range(1, 13):
            try:
                r = self.client.beta.chat.completions.parse(
                    model="tiny", messages=MESSAGES, response_format=Person, max_tokens=300,
                    seed=seed)
            except openai.LengthFinishReasonError:
                cut += 1
                continue
            message = r.choices[0].message
            self.assertIsInstance(message.parsed, Person, message.content)
            self.assertEqual(list(validator.iter_errors(json.loads(message.content))), [],
                             message.content)
            parsed += 1
        print(f"parsed {parsed}, cut by max_tokens {cut}")
        self.assertGreaterEqual(parsed, 4, "too few answers finished to judge")

    def test_json_object_answers_are_objects_and_the_tree_records_the_mask(self):
        for seed in range(1, 7):
            r, text = self.ask({"type": "json_object"}, BRANCH_ALWAYS, seed)
            if r.choices[0].finish_reason != "stop":
                continue
            self.assertIsInstance(json.loads(text), dict, text)
            job_id = r.model_extra["arbor"]["job_id"]
            status, tree = http_json(f"{self.base}/v1/jobs/{job_id}/tree")
            self.assertEqual(status, 200)
            generated = [n for n in tree["nodes"] if n["id"] != 0]
            self.assertTrue(generated)
            for node in generated:
                self.assertGreaterEqual(node["allowed_tokens"], 1, node)
            # The first token must open the object: only tokens starting with "{" are allowed.
            self.assertLess(generated[0]["allowed_tokens"], 512)
            return
        self.fail("no json_object answer finished within max_tokens")

    def test_unsupported_schemas_are_refused_naming_the_keyword(self):
        for schema, keyword in [({"type": "string", "pattern": "a(?=b)"}, "pattern"),
                                ({"type": "array", "uniqueItems": True}, "uniqueItems")]:
            with self.assertRaises(openai.BadRequestError) as caught:
                self.ask({"type": "json_schema", "json_schema": {"name": "t", "schema": schema}},
                         None, 1)
            self.assertIn(f"keyword '{keyword}' is not supported", str(caught.exception))
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.chat.completions.create(
                model="tiny", messages=MESSAGES, response_format={"type": "json_object"},
                extra_body={"arbor": {"ignore_eos": True}})
        self.assertIn("ignore_eos", str(caught.exception))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Renders Jinja chat templates the way Hugging Face's `apply_chat_template` does.

transformers compiles a tokenizer's chat_template in jinja2's ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, the loopcontrols extension, a `tojson` filter that keeps
non-ASCII characters, and the globals `raise_exception` and `strftime_now`; it renders with the
conversation as `messages`, `add_generation_prompt`, `tools` (None without tools) and the
tokenizer's special tokens (bos_token, eos_token). This script does the same with jinja2 alone
(no transformers), so Arbor's C++ rendering can be compared against it. Shares no code with
Arbor.

Command line: one JSON request on stdin, one JSON answer on stdout.
  request: {"template": TEXT, "bos_token": STR|null, "eos_token": STR|null,
            "cases": [{"messages": [{"role", "content", "tool_calls"?}...],
                       "add_generation_prompt": bool, "tools": [TOOL...]?}...]}
  A case's tools (OpenAI tool objects) are passed as `tools`, as apply_chat_template(tools=...)
  passes dicts through; assistant messages' tool_calls hold arguments as objects. `messages` and
  `tools` may also be given as JSON text, parsed here, so that keys keep the order the caller
  wrote them in (tojson writes them in that order).
  answer:  {"rendered": [TEXT per case, or null where the template raised (an exception of its
                          own, e.g. Mistral's on roles that do not alternate, or a Jinja error)]}
"""
import datetime
import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise ValueError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def compile_template(text):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env.from_string(text)


def main():
    request = json.load(sys.stdin)
    template = compile_template(request["template"])
    specials = {k: request[k] for k in ("bos_token", "eos_token") if request.get(k) is not None}
    rendered = []
    for case in request["cases"]:
        for key in ("messages", "tools"):
            if isinstance(case.get(key), str):
                case[key] = json.loads(case[key])
        try:
            rendered.append(template.render(messages=case["messages"],
                                            add_generation_prompt=case["add_generation_prompt"],
                                            tools=case.get("tools"), **specials))
        except (ValueError, jinja2.TemplateError):
            rendered.append(None)
    json.dump({"rendered": rendered}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()

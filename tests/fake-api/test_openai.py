#!/usr/bin/env python3
"""The Responses API stand-in's own tests: its turn decisions on the request shapes the
real codex CLI (0.171.0) sends, and its wire format on a live server.

    python3 tests/fake-api/test_openai.py      (cargo test runs it: codex::)
"""

import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai  # noqa: E402

SHELL = {"type": "function", "name": "exec_command"}
PATCH = {"type": "custom", "name": "apply_patch"}
TOOLS = [SHELL, PATCH]
CONTEXT = "<environment_context>\n  <cwd>/tmp/x</cwd>\n</environment_context>"


def user(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def result(call_id, kind="function_call_output"):
    return {"type": kind, "call_id": call_id, "output": "Exit code: 0"}


class Conversation:
    """One codex thread against a Model: the whole input is sent with every request."""

    def __init__(self, model, thread="01a22d1e-2c08-7ae0-843a-d52037ac438a", source="user"):
        self.model, self.items, self.thread = model, [user(CONTEXT)], thread
        meta = json.dumps({"thread_id": thread, "request_kind": "turn", "thread_source": source})
        self.headers = {"session-id": thread, "x-codex-turn-metadata": meta}

    def send(self, *extra, tools=TOOLS, **fields):
        self.items += list(extra)
        request = dict({"input": self.items, "tools": tools, "prompt_cache_key": self.thread}, **fields)
        reply = self.model.reply(request, self.headers)
        if not reply.error:
            self.items += openai.output_items(reply)
        return reply


class Turns(unittest.TestCase):
    def setUp(self):
        self.model = openai.Model()
        self.c = Conversation(self.model)

    def test_a_bash_marker_asks_to_run_outside_the_sandbox(self):
        ask = self.c.send(user("[[bash: touch x]] [[after: x is made]]"))
        kind, name, args, call_id = ask.tool
        self.assertEqual((kind, name), ("function", "exec_command"))
        self.assertEqual(json.loads(args)["cmd"], "touch x")
        self.assertEqual(json.loads(args)["sandbox_permissions"], "require_escalated")
        done = self.c.send(result(call_id))
        self.assertEqual((done.turn, done.text), ("tool-result", "x is made"))

    def test_under_approval_never_a_bash_marker_runs_without_asking(self):
        # What codex 0.171.0 sends with --dangerously-bypass-approvals-and-sandbox (--yolo).
        never = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": (
            "<permissions instructions>\nApproval policy is currently never. Do not provide the "
            "`sandbox_permissions` for any reason, commands will be rejected.\n</permissions instructions>")}]}
        ask = self.c.send(never, user("[[bash: touch x]]"))
        args = json.loads(ask.tool[2])
        self.assertEqual(args["cmd"], "touch x")
        self.assertNotIn("sandbox_permissions", args)

    def test_a_tool_marker_calls_the_named_tool_in_its_namespace(self):
        mcp = {"type": "namespace", "name": "mcp__orchestra", "tools": [{"type": "function", "name": "note"}]}
        ask = self.c.send(user('[[tool: note | {"text": "hi"}]]'), tools=TOOLS + [mcp])
        kind, name, args, _ = ask.tool
        self.assertEqual((kind, name, json.loads(args)), ("function", "note", {"text": "hi"}))
        self.assertEqual(openai.output_items(ask)[0]["namespace"], "mcp__orchestra")
        ask = self.c.send(user("[[tool: exec_command]]"))
        self.assertEqual(ask.tool[1:3], ("exec_command", "{}"))
        self.assertNotIn("namespace", openai.output_items(ask)[0])

    def test_chained_tool_calls_come_one_after_the_others_result_and_are_reported(self):
        mcp = {"type": "namespace", "name": "mcp__orchestra",
               "tools": [{"type": "function", "name": "dispatch"}, {"type": "function", "name": "status"}]}
        tools = TOOLS + [mcp]
        ask = self.c.send(user('Fix it. [[tool: dispatch | {"label": "x"} ;; status | {}]] '
                               '[[after: reported: {results}]]'), tools=tools)
        kind, name, args, first = ask.tool
        self.assertEqual((name, json.loads(args)), ("dispatch", {"label": "x"}))
        self.assertEqual(openai.output_items(ask)[0]["namespace"], "mcp__orchestra")
        # codex sends an MCP result as its content parts.
        done = {"type": "function_call_output", "call_id": first,
                "output": [{"type": "input_text", "text": '{"label": "x",\n "started": true}'}]}
        nxt = self.c.send(done, tools=tools)
        self.assertEqual((nxt.turn, nxt.tool[1], nxt.namespace), ("tool-result", "status", "mcp__orchestra"))
        self.assertNotEqual(nxt.tool[3], first)
        last = self.c.send({"type": "function_call_output", "call_id": nxt.tool[3], "output": '{"reachable": true}'},
                           tools=tools)
        self.assertEqual(last.turn, "tool-result")
        self.assertEqual(last.text, 'reported: {"label": "x", "started": true} || {"reachable": true}')
        # Without {results} the after text is said as it is.
        ask = self.c.send(user("[[tool: status]] [[after: plain]]"), tools=tools)
        self.assertEqual(self.c.send(result(ask.tool[3]), tools=tools).text, "plain")

    def test_a_search_marker_is_a_search_item_before_the_answer(self):
        reply = self.c.send(user("[[search: tmux status line]] [[say: found it]]"))
        items = openai.output_items(reply)
        self.assertEqual([i["type"] for i in items], ["web_search_call", "message"])
        self.assertEqual(items[0]["action"], {"type": "search", "query": "tmux status line"})
        self.assertEqual(items[1]["content"][0]["text"], "found it")

    def test_a_write_marker_is_a_freeform_patch_or_a_function_one(self):
        ask = self.c.send(user("[[write: a b.txt | two words]]"))
        self.assertEqual(ask.tool[:3], ("custom", "apply_patch",
                                        "*** Begin Patch\n*** Add File: a b.txt\n+two words\n*** End Patch\n"))
        other = Conversation(self.model, thread="other")
        ask = other.send(user("[[write: f | x]]"), tools=[SHELL, {"type": "function", "name": "apply_patch"}])
        self.assertEqual(ask.tool[:2], ("function", "apply_patch"))
        self.assertIn("*** Add File: f", json.loads(ask.tool[2])["input"])

    def test_context_blocks_are_not_prompts_and_a_result_then_a_prompt_answers_the_prompt(self):
        ask = self.c.send(user("[[bash: sleep 5]]"))
        reply = self.c.send(result(ask.tool[3]), user("[[say: typed while it ran]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "typed while it ran"))
        again = self.c.send(user(CONTEXT))
        self.assertEqual(again.turn, "again")

    def test_the_same_text_typed_twice_is_two_prompts(self):
        self.assertEqual(self.c.send(user("[[say: one]]")).turn, "prompt")
        self.assertEqual(self.c.send(user("[[say: one]]")).turn, "prompt")

    def test_a_retry_gets_the_same_reply(self):
        first = self.c.send(user("[[error: 500]]"))
        self.assertEqual(first.error, 500)
        again = self.model.reply({"input": self.c.items, "tools": TOOLS, "prompt_cache_key": self.c.thread},
                                 self.c.headers)
        self.assertEqual((again.turn, again.error), ("retry", 500))

    def test_the_title_thread_is_a_helper_with_json(self):
        title = Conversation(self.model, thread="title", source="thread_title")
        schema = {"type": "json_schema", "schema": {"properties": {"title": {"type": "string"}}}}
        reply = title.send(user("Generate a title.\n\nUser prompt:\n[[bash: touch x]] fix the parser"),
                           tools=[PATCH], text={"format": schema})
        self.assertEqual(reply.turn, "side")
        self.assertIsNone(reply.tool)
        self.assertEqual(json.loads(reply.text), {"title": "fix the parser"})
        # The person's thread is untouched: its first prompt is still new.
        self.assertEqual(self.c.send(user("[[bash: touch x]]")).turn, "prompt")


class Wire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        port_file = os.path.join(cls.dir.name, "port")
        cls.log = os.path.join(cls.dir.name, "log.jsonl")
        cls.server = subprocess.Popen([sys.executable, openai.__file__, "--port-file", port_file, "--log", cls.log])
        for _ in range(100):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        with open(port_file) as f:
            cls.port = int(f.read())

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.wait()
        cls.dir.cleanup()

    def post(self, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("POST", "/v1/responses", json.dumps(body), {"content-type": "application/json"})
        try:
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def events(self, text):
        return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]

    def test_text_streams_as_responses_events_and_is_logged_first(self):
        status, body = self.post({"input": [user("[[say: hello there]]")], "tools": TOOLS, "stream": True,
                                  "prompt_cache_key": "wire-1"})
        self.assertEqual(status, 200)
        events = self.events(body)
        kinds = [e["type"] for e in events]
        self.assertEqual(kinds[0], "response.created")
        self.assertEqual(kinds[-1], "response.completed")
        text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        self.assertEqual(text, "hello there")
        done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        self.assertEqual(done[0]["content"][0]["text"], "hello there")
        self.assertIn("input_tokens", events[-1]["response"]["usage"])
        with open(self.log) as f:
            self.assertIn("hello there", f.read())

    def test_a_tool_call_is_one_output_item(self):
        _, body = self.post({"input": [user("[[bash: ls]]")], "tools": TOOLS, "stream": True,
                             "prompt_cache_key": "wire-2"})
        done = [e["item"] for e in self.events(body) if e["type"] == "response.output_item.done"]
        self.assertEqual(done[0]["type"], "function_call")
        self.assertEqual(json.loads(done[0]["arguments"])["cmd"], "ls")
        self.assertTrue(done[0]["call_id"].startswith("call_"))

    def test_an_error_marker_is_that_http_status(self):
        status, body = self.post({"input": [user("[[error: 429]]")], "tools": TOOLS, "prompt_cache_key": "wire-3"})
        self.assertEqual(status, 429)
        self.assertEqual(json.loads(body)["error"]["code"], "rate_limit_exceeded")


if __name__ == "__main__":
    unittest.main()

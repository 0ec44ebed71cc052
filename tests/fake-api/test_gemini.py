#!/usr/bin/env python3
"""The Gemini stand-in's own tests: its turn decisions on the transcript shapes the real CLI
(0.61.0) sends, its helper answers, and its wire format on a live server.

    python3 tests/fake-api/test_gemini.py      (cargo test runs it: gemini::)
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
import gemini  # noqa: E402

TOOLS = [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "write_file"}]}]
CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "- **Workspace Directories:**\n  - /tmp/wt\n</session_context>"
)


def user(*parts):
    return {"role": "user", "parts": [p if isinstance(p, dict) else {"text": p} for p in parts]}


def result(call_id, name="run_shell_command", output="Output: (empty)"):
    return {"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}


def model(reply):
    if reply.tool:
        name, args, call_id = reply.tool
        part = {"functionCall": {"id": call_id, "name": name, "args": args},
                "thoughtSignature": "skip_thought_signature_validator"}
        return {"role": "model", "parts": [part]}
    return {"role": "model", "parts": [{"text": reply.text}]}


class Conversation:
    """One CLI session against a Model: keeps the history as the CLI sends it. The first
    prompt shares a content with the session context, as 0.61.0 sends it."""

    def __init__(self, m, context=CONTEXT):
        self.model, self.contents, self.context = m, [], context

    def send(self, *extra):
        if not self.contents and extra and extra[0].get("role") == "user":
            extra = (user(self.context, *extra[0]["parts"]),) + extra[1:]
        self.contents += list(extra)
        reply = self.model.reply({"contents": self.contents, "tools": TOOLS})
        if not reply.error:
            self.contents.append(model(reply))
        return reply

    def forget_last_turn(self):
        """A denied call: the CLI drops the prompt and its call from the history."""
        while self.contents and self.contents[-1]["role"] == "model":
            self.contents.pop()
        self.contents.pop()


class Turns(unittest.TestCase):
    def setUp(self):
        self.model = gemini.Model()
        self.c = Conversation(self.model)

    def test_a_prompt_asks_for_its_command_and_the_result_gets_the_after_text(self):
        ask = self.c.send(user("[[bash: touch x]] [[after: x is made]]"))
        self.assertEqual(ask.turn, "prompt")
        self.assertEqual(ask.tool[:2], ("run_shell_command", {"command": "touch x", "description": "Run a scripted command"}))
        done = self.c.send(user(result(ask.tool[2])))
        self.assertEqual((done.turn, done.text), ("tool-result", "x is made"))

    def test_a_write_marker_asks_to_write_the_file(self):
        ask = self.c.send(user("[[write: notes/a b.txt | two words]]"))
        self.assertEqual(ask.tool[:2], ("write_file", {"file_path": "notes/a b.txt", "content": "two words\n"}))

    def test_a_tool_marker_calls_that_tool_with_its_json_arguments(self):
        ask = self.c.send(user('[[tool: web_fetch | {"prompt": "Summarise https://example.com"}]]'))
        self.assertEqual(ask.tool[:2], ("web_fetch", {"prompt": "Summarise https://example.com"}))
        bad = gemini.answer_to("[[tool: replace | not json]]", "prompt")
        self.assertEqual(bad.tool, ("replace", {}))

    def test_the_session_context_is_not_a_prompt(self):
        self.assertEqual(gemini.typed_texts([user(CONTEXT, "hi")]), ["hi"])
        reply = self.c.send(user("[[say: hello]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "hello"))

    def test_a_prompt_typed_beside_a_result_is_answered_as_a_prompt(self):
        ask = self.c.send(user("[[bash: sleep 5]]"))
        reply = self.c.send(user(result(ask.tool[2]), "[[say: typed while it ran]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "typed while it ran"))

    def test_after_a_denied_call_the_next_prompt_is_new(self):
        self.c.send(user("[[say: first]]"))
        self.c.send(user("[[bash: touch no.txt]]"))
        self.c.forget_last_turn()
        reply = self.c.send(user("[[say: after the denial]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "after the denial"))

    def test_the_same_text_typed_again_is_a_new_prompt(self):
        self.c.send(user("[[say: again]]"))
        reply = self.c.send(user("[[say: again]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "again"))

    def test_a_retry_gets_the_same_reply_and_an_error_fails_every_retry(self):
        ask = self.c.send(user("[[bash: touch y]]"))
        again = self.model.reply({"contents": self.c.contents[:-1], "tools": TOOLS})
        self.assertEqual((again.turn, again.tool), ("retry", ask.tool))
        failing = Conversation(self.model, CONTEXT.replace("/tmp/wt", "/tmp/other"))
        first = failing.send(user("[[error: 503]]"))
        self.assertEqual(first.error, 503)
        second = self.model.reply({"contents": failing.contents, "tools": TOOLS})
        self.assertEqual((second.turn, second.error), ("retry", 503))

    def test_conversations_in_other_folders_are_apart(self):
        self.c.send(user("[[say: same]]"))
        other = Conversation(self.model, CONTEXT.replace("/tmp/wt", "/tmp/elsewhere"))
        reply = other.send(user("[[say: same]]"))
        self.assertEqual(reply.turn, "prompt")

    def test_nothing_new_is_answered_as_before_and_never_asks_again(self):
        ask = self.c.send(user("[[bash: touch z]]"))
        self.c.send(user(result(ask.tool[2])))
        resent = self.model.reply({"contents": self.c.contents + [user(result(ask.tool[2]))], "tools": TOOLS})
        self.assertEqual(resent.turn, "again")
        self.assertIsNone(resent.tool)


class Helpers(unittest.TestCase):
    def setUp(self):
        self.model = gemini.Model()

    def test_the_router_gets_json_that_fits_its_schema(self):
        schema = {"type": "OBJECT", "properties": {
            "complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}},
            "required": ["complexity_reasoning", "complexity_score"]}
        reply = self.model.reply({"contents": [user("[[bash: rm -rf x]]")],
                                  "generationConfig": {"responseMimeType": "application/json",
                                                       "responseJsonSchema": schema}})
        answer = json.loads(reply.text)
        self.assertEqual(reply.turn, "side")
        self.assertIsInstance(answer["complexity_score"], int)
        self.assertIsInstance(answer["complexity_reasoning"], str)

    def test_the_next_speaker_is_the_person(self):
        schema = {"type": "object", "properties": {
            "reasoning": {"type": "string"}, "next_speaker": {"type": "string", "enum": ["user", "model"]}}}
        reply = self.model.reply({"contents": [user("x")], "generationConfig": {"responseJsonSchema": schema}})
        self.assertEqual(json.loads(reply.text)["next_speaker"], "user")

    def test_a_summary_is_text_and_never_a_turn_or_an_error(self):
        reply = self.model.reply({"contents": [user("Conversation:\nUser: [[error: 400]] [[say: t]]")]})
        self.assertEqual((reply.turn, reply.text, reply.error), ("side", "t", None))
        c = Conversation(self.model)
        self.assertEqual(c.send(user("[[say: t]]")).turn, "prompt")


class Wire(unittest.TestCase):
    """A live server: SSE streaming, errors, the other methods."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        port_file = os.path.join(cls.dir.name, "port")
        cls.log = os.path.join(cls.dir.name, "log.jsonl")
        here = os.path.dirname(os.path.abspath(__file__))
        cls.server = subprocess.Popen(
            [sys.executable, os.path.join(here, "gemini.py"), "--port", "0", "--port-file", port_file,
             "--log", cls.log])
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

    def post(self, path, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        data = response.read().decode()
        conn.close()
        return response.status, data

    def stream(self, text, folder):
        started = time.monotonic()
        status, data = self.post("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                                 {"contents": [user(CONTEXT.replace("/tmp/wt", folder), text)], "tools": TOOLS})
        chunks = [json.loads(line[len("data: "):]) for line in data.split("\r\n") if line.startswith("data: ")]
        return status, chunks, time.monotonic() - started

    def test_a_slow_answer_streams_in_pieces_over_the_time_asked(self):
        status, chunks, took = self.stream("[[slow: 2]] [[say: one two three]]", "/w1")
        self.assertEqual(status, 200)
        text = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
        self.assertEqual(text, "one two three")
        self.assertGreater(len(chunks), 3)
        self.assertGreaterEqual(took, 1.8)
        self.assertEqual(chunks[-1]["candidates"][0]["finishReason"], "STOP")
        self.assertIn("usageMetadata", chunks[-1])

    def test_a_call_streams_as_one_chunk_with_its_id(self):
        status, chunks, _ = self.stream("[[bash: touch w]]", "/w2")
        call = chunks[0]["candidates"][0]["content"]["parts"][0]["functionCall"]
        self.assertEqual((status, call["name"], call["args"]["command"]), (200, "run_shell_command", "touch w"))
        self.assertTrue(call["id"].startswith("call_"))

    def test_an_error_is_the_status_asked_with_googles_error_body(self):
        status, data = self.post("/v1beta/models/m:streamGenerateContent?alt=sse",
                                 {"contents": [user(CONTEXT, "[[error: 429]]")], "tools": TOOLS})
        self.assertEqual(status, 429)
        self.assertEqual(json.loads(data)["error"]["status"], "RESOURCE_EXHAUSTED")

    def test_count_tokens_models_and_the_log(self):
        status, data = self.post("/v1beta/models/m:countTokens", {"contents": [user("hi")]})
        self.assertEqual(status, 200)
        self.assertGreater(json.loads(data)["totalTokens"], 0)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", "/v1beta/models")
        models = json.loads(conn.getresponse().read())
        conn.close()
        self.assertIn("models/gemini-2.5-pro", [m["name"] for m in models["models"]])
        with open(self.log) as f:
            turns = [json.loads(line)["turn"] for line in f]
        self.assertIn("count", turns)


if __name__ == "__main__":
    unittest.main(verbosity=1)

#!/usr/bin/env python3
"""Tests of the Chat Completions stand-in (openai_chat.py): the request shapes aider 0.86.2
sends (its few-shot examples, earlier turns without the reminder it appends to the newest
prompt, its own follow-ups, commit-message helpers) and the wire on a live server.

    python3 test_openai_chat.py        # exit 0 when all pass
"""

import json
import os
import sys
import threading
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai_chat  # noqa: E402

SYSTEM = {"role": "system", "content": "Act as an expert software developer."}
# aider's few-shot examples come first in every request, as user/assistant turns.
EXAMPLES = [
    {"role": "user", "content": "Change get_factorial() to use math.factorial"},
    {"role": "assistant", "content": "To make this change we need to modify `mathweb/flask/app.py`"},
    {"role": "user", "content": "I am not sharing any files that you can edit yet."},
    {"role": "assistant", "content": "Ok."},
]
REMINDER = "\n\n# *SEARCH/REPLACE block* Rules:\n\nEvery *SEARCH/REPLACE block* must use this format"


def request(*turns, newest):
    """A request as aider builds it: the examples, earlier (prompt, answer) turns as they
    were, and the newest prompt with the reminder appended."""
    messages = [SYSTEM] + EXAMPLES
    for prompt, answer in turns:
        messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    messages.append({"role": "user", "content": newest + REMINDER})
    return {"model": "orchestra-stand-in", "stream": True, "messages": messages}


class ModelTest(unittest.TestCase):
    def setUp(self):
        self.model = openai_chat.Model()

    def reply(self, req, key="k"):
        return self.model.reply(key, req)

    def test_the_newest_prompt_is_found_by_memory_not_position(self):
        first = self.reply(request(newest="[[say: hello there]]"))
        self.assertEqual((first.turn, first.text), ("prompt", "hello there"))
        # The earlier prompt comes back without its reminder, the answer after it.
        second = self.reply(request(("[[say: hello there]]", "hello there"), newest="[[bash: touch a.txt]]"))
        self.assertEqual(second.turn, "prompt")
        self.assertIn("```bash\ntouch a.txt\n```", second.text)

    def test_a_retry_gets_the_same_reply(self):
        req = request(newest="[[error: 500]]")
        self.assertEqual(self.reply(req).error, 500)
        again = self.reply(req)
        self.assertEqual((again.turn, again.error), ("retry", 500))

    def test_a_text_typed_twice_is_a_new_prompt_each_time(self):
        self.reply(request(newest="[[say: once]]"))
        again = self.reply(request(("[[say: once]]", "once"), newest="[[say: once]]"))
        self.assertEqual((again.turn, again.text), ("prompt", "once"))

    def test_aiders_own_follow_up_is_answered_by_its_markers(self):
        self.reply(request(newest="[[write: a.txt | x]]"))
        follow = self.reply(request(("[[write: a.txt | x]]", "…"), newest="The edit failed to apply."))
        self.assertEqual((follow.turn, follow.text), ("prompt", "Done."))

    def test_a_resend_with_nothing_new_gets_the_last_reply(self):
        self.reply(request(newest="[[say: only]]"))
        resent = request(newest="[[say: only]]")
        self.assertEqual(self.reply(resent).turn, "retry")
        # The same texts in another request (another system prompt): nothing new to answer.
        resent["messages"][0] = {"role": "system", "content": "Act as an expert architect."}
        again = self.reply(resent)
        self.assertEqual((again.turn, again.text), ("again", "only"))

    def test_helpers_never_count_as_turns(self):
        helper = {"messages": [
            {"role": "system", "content": "You are an expert software engineer that generates concise, one-line Git commit messages"},
            {"role": "user", "content": "diff: [[bash: rm -rf x]]"}]}
        self.assertEqual(self.reply(helper).turn, "side")
        first = self.reply(request(newest="[[say: real]]"))
        self.assertEqual((first.turn, first.text), ("prompt", "real"))

    def test_a_write_is_a_new_file_edit_block(self):
        r = self.reply(request(newest="[[write: notes/n.txt | hello world]] [[say: Writing.]]"))
        self.assertEqual(
            r.text, "Writing.\n\nnotes/n.txt\n```\n<<<<<<< SEARCH\n=======\nhello world\n>>>>>>> REPLACE\n```\n")

    def test_conversations_are_apart_by_key(self):
        self.reply(request(newest="[[say: one]]"), key="a")
        other = self.reply(request(newest="[[say: one]]"), key="b")
        self.assertEqual(other.turn, "prompt")


class WireTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = openai_chat.Server(("127.0.0.1", 0), None)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.base = f"http://127.0.0.1:{cls.server.server_address[1]}/v1"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def post(self, body, key):
        req = urllib.request.Request(
            self.base + "/chat/completions", data=json.dumps(body).encode(),
            headers={"content-type": "application/json", "authorization": f"Bearer {key}"})
        return urllib.request.urlopen(req, timeout=10)

    def test_a_stream_of_chunks_then_usage_then_done(self):
        body = request(newest="[[say: one two three]]")
        body["stream_options"] = {"include_usage": True}
        with self.post(body, "wire-1") as r:
            self.assertEqual(r.headers["content-type"], "text/event-stream")
            events = [line[6:] for line in r.read().decode().splitlines() if line.startswith("data: ")]
        self.assertEqual(events[-1], "[DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        self.assertEqual(text, "one two three")
        self.assertEqual(chunks[0]["choices"][0]["delta"]["role"], "assistant")
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        self.assertEqual(finishes[-1], "stop")
        self.assertEqual(chunks[-1]["choices"], [])
        self.assertGreater(chunks[-1]["usage"]["total_tokens"], 0)

    def test_a_plain_completion(self):
        body = request(newest="[[say: plain]]")
        body["stream"] = False
        with self.post(body, "wire-2") as r:
            reply = json.loads(r.read())
        self.assertEqual(reply["choices"][0]["message"]["content"], "plain")

    def test_an_error_status_with_an_openai_error_body(self):
        with self.assertRaises(urllib.error.HTTPError) as caught:
            self.post(request(newest="[[error: 429]]"), "wire-3")
        self.assertEqual(caught.exception.code, 429)
        error = json.loads(caught.exception.read())["error"]
        self.assertEqual(error["type"], "rate_limit_exceeded")
        self.assertIn("scripted error 429", error["message"])


if __name__ == "__main__":
    unittest.main(verbosity=1)

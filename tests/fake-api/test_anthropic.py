#!/usr/bin/env python3
"""The stand-in's own tests: its turn decisions on the transcript shapes the real CLI sends
(merged, carried along, replayed, rejected, retried), and its wire format on a live server.

    python3 tests/fake-api/test_anthropic.py      (cargo test runs it: fake_api::)
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
import anthropic  # noqa: E402

TOOLS = [{"name": "Bash"}, {"name": "Write"}]
REMINDER = "<system-reminder>\nSome context the CLI adds.\n</system-reminder>"


def user(*parts):
    return {"role": "user", "content": [part if isinstance(part, dict) else text(part) for part in parts]}


def text(t):
    return {"type": "text", "text": t}


def result(tool_id, content="(Bash completed with no output)", error=False):
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": error}


def assistant(reply):
    if reply.tool:
        name, args, tool_id = reply.tool
        return {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": args}]}
    return {"role": "assistant", "content": [text(reply.text)]}


class Conversation:
    """One CLI session against a Model: keeps the transcript as the CLI would send it."""

    def __init__(self, model, session="11111111-2222-3333-4444-555555555555"):
        self.model, self.messages = model, []
        self.metadata = {"user_id": json.dumps({"device_id": "d", "session_id": session})}

    def send(self, *extra, tools=TOOLS):
        self.messages += list(extra)
        reply = self.model.reply({"messages": self.messages, "tools": tools, "metadata": self.metadata})
        if not reply.error:
            self.messages.append(assistant(reply))
        return reply


class Turns(unittest.TestCase):
    def setUp(self):
        self.model = anthropic.Model()
        self.c = Conversation(self.model)

    def test_a_prompt_asks_for_its_tool_and_the_result_gets_the_after_text(self):
        ask = self.c.send(user(REMINDER, "[[bash: touch x]] [[after: x is made]]"))
        self.assertEqual(ask.tool[:2], ("Bash", {"command": "touch x", "description": "Run a scripted command"}))
        done = self.c.send(user(result(ask.tool[2])))
        self.assertEqual((done.turn, done.text), ("tool-result", "x is made"))

    def test_a_write_marker_asks_to_create_the_file(self):
        ask = self.c.send(user("[[write: /tmp/a b.txt | two words]]"))
        self.assertEqual(ask.tool[:2], ("Write", {"file_path": "/tmp/a b.txt", "content": "two words\n"}))

    def test_a_result_merged_with_a_later_typed_prompt_answers_the_prompt(self):
        ask = self.c.send(user("[[bash: sleep 5]]"))
        reply = self.c.send(user(result(ask.tool[2]), "[[say: typed while it ran]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "typed while it ran"))

    def test_a_rejected_result_arrives_with_the_next_prompt(self):
        ask = self.c.send(user("[[bash: touch x]]"))
        rejected = result(ask.tool[2], "The user doesn't want to proceed with this tool use.", error=True)
        reply = self.c.send(user(rejected, "[Request interrupted by user for tool use]", "[[say: next]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "next"))

    def test_the_asking_text_replayed_after_its_result_is_not_a_new_prompt(self):
        first = self.c.send(user("[[say: first]]"))
        ask = self.c.send(user("[[bash: touch x]] [[after: ran it]]"))
        # 2.1 rebuilds the transcript: one assistant message with both answers, then the
        # result, then the text that asked for it (with a newline added).
        self.c.messages = [user("[[say: first]]"), {"role": "assistant", "content": [
            text(first.text), assistant(ask)["content"][0]]}]
        reply = self.c.send(user(result(ask.tool[2]), "[[bash: touch x]] [[after: ran it]]\n"))
        self.assertEqual((reply.turn, reply.text), ("tool-result", "ran it"))

    def test_old_results_carried_along_do_not_make_a_tool_turn(self):
        ask = self.c.send(user("[[bash: touch x]] [[after: ran]]"))
        self.assertEqual(self.c.send(user(result(ask.tool[2]))).text, "ran")
        # 2.0 and 2.1 resend every earlier result with each request; only the prompt is new.
        carried = [user(result(ask.tool[2]), "[[say: and now this]]")]
        reply = self.model.reply({"messages": self.c.messages[:1] + carried, "tools": TOOLS,
                                  "metadata": self.c.metadata})
        self.assertEqual((reply.turn, reply.text), ("prompt", "and now this"))

    def test_the_same_text_typed_again_is_a_new_prompt(self):
        first = self.c.send(user("[[bash: touch x]]"))
        self.c.send(user(result(first.tool[2])))
        again = self.c.send(user("[[bash: touch x]]"))
        self.assertEqual(again.turn, "prompt")
        self.assertNotEqual(again.tool[2], first.tool[2])

    def test_a_retry_gets_the_same_answer(self):
        err = self.c.send(user("[[error: 529]]"))
        self.assertEqual(err.error, 529)
        again = self.c.send()  # the CLI retries the very same request
        self.assertEqual((again.turn, again.error), ("retry", 529))
        ask = self.c.send(user("[[bash: touch y]]"))
        self.c.messages.pop()
        retried = self.c.send()
        self.assertEqual((retried.turn, retried.tool), ("retry", ask.tool))

    def test_a_changed_resend_with_nothing_new_answers_the_newest_prompt_again(self):
        self.assertEqual(self.c.send(user("[[error: 400]]")).error, 400)
        # Resent with a context note added: a different request, nothing typed anew.
        reply = self.c.send(user(REMINDER))
        self.assertEqual((reply.turn, reply.error), ("again", 400))

    def test_a_resent_tool_result_turn_never_asks_for_the_tool_again(self):
        ask = self.c.send(user("[[bash: touch x]] [[after: ran]]"))
        self.assertEqual(self.c.send(user(result(ask.tool[2]))).text, "ran")
        self.c.messages.pop()
        reply = self.c.send(user(REMINDER))
        self.assertEqual((reply.turn, reply.text, reply.tool), ("again", "ran", None))

    def test_conversations_keep_their_own_counts(self):
        other = Conversation(self.model, session="99999999-2222-3333-4444-555555555555")
        self.assertEqual(self.c.send(user("[[say: hello]]")).text, "hello")
        ask = other.send(user("[[bash: touch z]]"))
        # The other session types what the first already had answered, with its rejection.
        reply = other.send(user(result(ask.tool[2], "rejected", error=True), "[[say: hello]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "hello"))

    def test_helper_requests_are_not_turns(self):
        self.c.send(user("[[say: one]]"))
        ask = self.c.send(user("[[bash: touch x]] [[after: ran]]"))
        # 2.0's topic check (a JSON prefill) and command-prefix check (no tools) quote the prompt.
        prefill = self.model.reply({"messages": [user("[[say: two]]"), {"role": "assistant", "content": "{"}],
                                    "tools": [], "metadata": self.c.metadata})
        self.assertEqual((prefill.turn, prefill.text), ("side", "}"))
        prefix = self.model.reply({"messages": [user("Command: touch x")], "tools": []})
        self.assertEqual((prefix.turn, prefix.text, prefix.tool), ("side", "Done.", None))
        reply = self.c.send(user(result(ask.tool[2]), "[[say: two]]"))
        self.assertEqual((reply.turn, reply.text), ("prompt", "two"))

    def test_a_sub_agent_warmup_under_the_same_session_forgets_nothing(self):
        ask = self.c.send(user("[[bash: touch x]] [[after: ran]]"))
        self.model.reply({"messages": [user("Warmup")], "tools": TOOLS, "metadata": self.c.metadata})
        self.assertEqual(self.c.send(user(result(ask.tool[2]))).turn, "tool-result")

    def started(self, prompt, task="b79d532", tools=TOOLS):
        """The prompt's background Bash call, and its result as the CLI words it."""
        ask = self.c.send(user(prompt), tools=tools)
        self.assertEqual(ask.tool[1]["run_in_background"], True)
        words = (f"Command running in background with ID: {task}. Output is being written to: "
                 f"/tmp/claude-0/-wt/s/tasks/{task}.output. You will be notified when it completes")
        return ask, result(ask.tool[2], words)

    def test_a_background_marker_asks_for_a_backgrounded_bash_call(self):
        ask, _ = self.started("[[background: make test]]")
        self.assertEqual(ask.tool[:2], ("Bash", {"command": "make test", "run_in_background": True,
                                                 "description": "Run a scripted command in the background"}))
        # `bash` wins over `background`.
        self.assertFalse(anthropic.Plan(anthropic.script("[[bash: a]] [[background: b]]")).background)

    def test_polls_use_the_tool_the_cli_offers_then_the_after_text_each_taking_slow(self):
        tools = TOOLS + [{"name": "TaskOutput"}]
        ask, started = self.started("[[background: sleep 9]] [[poll: 2]] [[slow: 3]] [[after: over]]", tools=tools)
        first = self.c.send(user(started), tools=tools)
        self.assertEqual((first.turn, first.seconds), ("tool-result", 3.0))
        self.assertEqual(first.tool[:2], ("TaskOutput", {"task_id": "b79d532", "block": False, "timeout": 1000}))
        second = self.c.send(user(result(first.tool[2], "<status>running</status>")), tools=tools)
        self.assertEqual(second.tool[0], "TaskOutput")
        done = self.c.send(user(result(second.tool[2], "<status>completed</status>")), tools=tools)
        self.assertEqual((done.turn, done.text, done.seconds, done.tool), ("tool-result", "over", 3.0, None))

    def test_without_a_task_output_tool_a_poll_reads_the_output_file(self):
        ask, started = self.started("[[background: sleep 9]] [[poll: 1]]", task="bz835v54t")
        poll = self.c.send(user(started))
        self.assertEqual(poll.tool[:2], ("Read", {"file_path": "/tmp/claude-0/-wt/s/tasks/bz835v54t.output"}))
        self.assertEqual(self.c.send(user(result(poll.tool[2], "1\t"))).text, "Finished.")

    def test_the_cli_waking_the_model_for_an_ended_task_is_a_turn_of_its_own(self):
        ask, started = self.started("[[background: sleep 9]] [[slow: 2]] [[after: started]] [[notified: it ended]]")
        self.assertEqual(self.c.send(user(started)).text, "started")
        # 2.0.77 and 2.1.100 send the notification bare, 2.1.332 inside a system reminder.
        bare = "<task-notification>\n<task-id>b79d532</task-id>\n<status>completed</status>\n</task-notification>"
        woke = self.c.send(user(bare))
        self.assertEqual((woke.turn, woke.text, woke.seconds), ("notification", "it ended", 2.0))
        # Carried along with the next prompt, it is neither typed text nor new.
        self.assertEqual(self.c.send(user("[[say: next]]")).text, "next")
        reminder = "<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n\n" + bare.replace("b79d532", "other") + "\n</system-reminder>"
        unknown = self.c.send(user(reminder))
        self.assertEqual((unknown.turn, unknown.text), ("notification", "Noted."))

    def test_a_task_that_ends_while_its_turn_goes_on_leaves_the_turn_to_its_results(self):
        ask, started = self.started("[[background: sleep 1]] [[poll: 1]] [[after: over]]", task="bh6fe2ih1")
        poll = self.c.send(user(started))
        # 2.1.332 puts the notification into the running turn, beside the poll's result.
        note = "<system-reminder>\n<task-notification>\n<task-id>bh6fe2ih1</task-id>\n</task-notification>\n</system-reminder>"
        reply = self.c.send(user(result(poll.tool[2], "[exited with code 0]"), note))
        self.assertEqual((reply.turn, reply.text), ("tool-result", "over"))

    def test_markers(self):
        self.assertEqual(anthropic.script("[[say: a]] [[SAY: b]] [[slow:2.5]]"), {"say": "a", "slow": "2.5"})
        self.assertEqual(self.c.send(user("no markers")).text, "Done.")
        self.assertEqual(self.c.send(user("[[slow: 1.5]]")).seconds, 1.5)
        self.assertEqual(self.c.send(user("[[error: teapot]]")).error, 500)

    def test_an_edit_reads_the_file_first_then_asks_to_edit_it(self):
        read = self.c.send(user("[[edit: /w/a.txt | old words | new words]] [[after: edited]]"))
        self.assertEqual(read.tool[:2], ("Read", {"file_path": "/w/a.txt"}))
        edit = self.c.send(user(result(read.tool[2], "1\told words")))
        self.assertEqual((edit.turn, edit.tool[:2]), ("tool-result", ("Edit", {
            "file_path": "/w/a.txt", "old_string": "old words", "new_string": "new words"})))
        self.assertEqual(self.c.send(user(result(edit.tool[2], "ok"))).text, "edited")

    def test_opencode_tools_get_their_own_names_and_arguments(self):
        # opencode's tools as its requests offer them: lowercase, camelCase arguments.
        tools = [{"name": "bash", "input_schema": {"properties": {"command": {}, "timeout": {}, "workdir": {}}}},
                 {"name": "read", "input_schema": {"properties": {"filePath": {}, "offset": {}, "limit": {}}}},
                 {"name": "edit", "input_schema": {"properties": {"filePath": {}, "oldString": {}, "newString": {}}}}]
        bash = self.c.send(user("[[bash: touch x]]"), tools=tools)
        self.assertEqual(bash.tool[:2], ("bash", {"command": "touch x"}))
        self.c.send(user(result(bash.tool[2], "")), tools=tools)
        read = self.c.send(user("[[edit: /w/a.txt | old words | new words]] [[after: edited]]"), tools=tools)
        self.assertEqual(read.tool[:2], ("read", {"filePath": "/w/a.txt"}))
        edit = self.c.send(user(result(read.tool[2], "1: old words")), tools=tools)
        self.assertEqual(edit.tool[:2], ("edit", {"filePath": "/w/a.txt", "oldString": "old words",
                                                  "newString": "new words"}))
        self.assertEqual(self.c.send(user(result(edit.tool[2], "ok")), tools=tools).text, "edited")

    def test_multiedit_and_notebook_markers(self):
        read = self.c.send(user("[[multiedit: /w/a.txt | a | b]]"))
        multi = self.c.send(user(result(read.tool[2], "1\ta")))
        self.assertEqual(multi.tool[:2], ("MultiEdit", {"file_path": "/w/a.txt",
                                                        "edits": [{"old_string": "a", "new_string": "b"}]}))
        c = Conversation(self.model, session="nb")
        read = c.send(user("[[notebook: /w/n.ipynb | x = 1]]"))
        edit = c.send(user(result(read.tool[2], "cells")))
        self.assertEqual(edit.tool[:2], ("NotebookEdit", {"notebook_path": "/w/n.ipynb", "new_source": "x = 1",
                                                          "cell_type": "code", "edit_mode": "insert"}))

    def test_web_and_mcp_markers_name_the_cli_tools(self):
        calls = {m: Conversation(self.model, session=m).send(user(m)).tool[:2] for m in (
            "[[fetch: http://127.0.0.1:9/page]]", "[[search: tmux status line]]", "[[mcp: orchestra note]]")}
        self.assertEqual(list(calls.values()), [
            ("WebFetch", {"url": "http://127.0.0.1:9/page", "prompt": "Summarise the page in one sentence"}),
            ("WebSearch", {"query": "tmux status line"}),
            ("mcp__orchestra__note", {"text": "a note from the stand-in"})])

    def test_an_mcp_marker_gives_json_arguments_and_a_sequence_reported_after(self):
        prompt = ('[[mcp: orchestra dispatch | {"label": "x", "prompt": "Do it"} ;; orchestra status | {} '
                  ';; orchestra review_summary]] [[after: reported: {results}]]')
        tools = [{"name": "Bash"}, {"name": "mcp__orchestra__dispatch"}, {"name": "mcp__orchestra__status"},
                 {"name": "mcp__orchestra__review_summary"}]
        first = self.c.send(user(prompt), tools=tools)
        self.assertEqual(first.tool[:2], ("mcp__orchestra__dispatch", {"label": "x", "prompt": "Do it"}))
        second = self.c.send(user(result(first.tool[2], "dispatched x")), tools=tools)
        self.assertEqual(second.tool[:2], ("mcp__orchestra__status", {}))
        third = self.c.send(user(result(second.tool[2], '[{"label":\n "x"}]')), tools=tools)
        self.assertEqual(third.tool[:2], ("mcp__orchestra__review_summary", {"text": "a note from the stand-in"}))
        done = self.c.send(user(result(third.tool[2], "1 commit")), tools=tools)
        self.assertEqual(done.text, 'reported: dispatched x || [{"label": "x"}] || 1 commit')
        # Arguments that are not JSON are the text.
        bad = Conversation(self.model, session="bad").send(user("[[mcp: s t | not json]]"), tools=tools)
        self.assertEqual(bad.tool[:2], ("mcp__s__t", {"text": "not json"}))

    def test_a_tool_the_cli_only_names_is_loaded_by_tool_search_first(self):
        tools = [{"name": "Bash"}, {"name": "ToolSearch"}]
        search = self.c.send(user("[[fetch: http://x/]] [[after: fetched]]"), tools=tools)
        self.assertEqual(search.tool[:2], ("ToolSearch", {"query": "select:WebFetch", "max_results": 1}))
        # The next request may still list only the name: the call comes, no second search.
        fetch = self.c.send(user(result(search.tool[2], "<functions>…</functions>"), "Tool loaded."), tools=tools)
        self.assertEqual(fetch.tool[0], "WebFetch")
        self.assertEqual(self.c.send(user(result(fetch.tool[2], "a page")), tools=tools).text, "fetched")

    def test_plan_writes_the_plan_file_the_cli_named_then_asks_to_exit_plan_mode(self):
        note = ("<system-reminder>\nPlan mode is active. … Plan File Info:\nNo plan file exists yet. You should "
                "create your plan at /h/.claude/plans/quiet-fox.md using the Write tool.\n</system-reminder>")
        write = self.c.send(user(note, "[[plan: 1. Do it]]"))
        self.assertEqual(write.tool[:2], ("Write", {"file_path": "/h/.claude/plans/quiet-fox.md",
                                                    "content": "# Plan\n\n1. Do it\n"}))
        done = self.c.send(user(result(write.tool[2], "written")))
        self.assertEqual(done.tool[:2], ("ExitPlanMode", {"plan": "1. Do it"}))
        forgot = Conversation(self.model, session="forgot").send(user(note, "[[exitplan: x]]"))
        self.assertEqual(forgot.tool[:2], ("ExitPlanMode", {}))
        # 2.1.3xx sends the note as a message of role system.
        later = Conversation(self.model, session="later")
        first = later.send(user("[[plan: 3. Ship]]"), {"role": "system", "content": [text(note)]})
        self.assertEqual(first.tool[1]["file_path"], "/h/.claude/plans/quiet-fox.md")
        bare = Conversation(self.model, session="bare").send(user("[[plan: 2. Go]]"))
        self.assertEqual(bare.tool[:2], ("ExitPlanMode", {"plan": "2. Go"}))

    def test_ask_markers_ask_single_and_multi_select_questions(self):
        one = self.c.send(user("[[ask: Which one? | Red: warm | Blue: cold]]")).tool[1]["questions"][0]
        self.assertEqual((one["question"], one["multiSelect"], one["options"]), ("Which one?", False, [
            {"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cold"}]))
        many = Conversation(self.model, session="m").send(user("[[askmany: Which ones?]]")).tool[1]["questions"][0]
        self.assertTrue(many["multiSelect"])
        self.assertEqual(len(many["options"]), 4)
        self.assertTrue(all(len(o["description"]) > 120 for o in many["options"]))

    def test_an_error_with_fails_recovers_after_that_many_tries(self):
        prompt = "[[error: 529]] [[fails: 2]] [[say: through at last]]"
        tries = [self.c.send(user(prompt)) for _ in range(1)]
        tries += [self.model.reply({"messages": self.c.messages, "tools": TOOLS, "metadata": self.c.metadata})
                  for _ in range(2)]
        self.assertEqual([(t.error, t.text) for t in tries], [(529, ""), (529, ""), (None, "through at last")])

    def test_long_streams_many_paragraphs(self):
        reply = self.c.send(user("[[long: 30]] [[slow: 20]] [[say: the end]]"))
        self.assertEqual((reply.text.count("Paragraph "), reply.seconds), (30, 20.0))
        self.assertTrue(reply.text.endswith("the end"))

    def test_session_ids_of_both_metadata_forms(self):
        self.assertEqual(anthropic.conversation_key({"metadata": {"user_id": json.dumps({"session_id": "s-1"})}}), "s-1")
        old = {"metadata": {"user_id": "user_abc_account__session_14c5558a-9804-4db6-82f3-fb104daf15c4"}}
        self.assertEqual(anthropic.conversation_key(old), "14c5558a-9804-4db6-82f3-fb104daf15c4")


class Wire(unittest.TestCase):
    """A live server, spoken to over HTTP as the CLI does."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.log = os.path.join(cls.dir.name, "requests.jsonl")
        port_file = os.path.join(cls.dir.name, "port")
        cls.proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "anthropic.py"),
                                     "--port-file", port_file, "--log", cls.log])
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if time.monotonic() > deadline or cls.proc.poll() is not None:
                raise RuntimeError("the stand-in did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            cls.port = int(f.read())

    @classmethod
    def tearDownClass(cls):
        cls.proc.kill()
        cls.proc.wait()
        cls.dir.cleanup()

    def post(self, path, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        resp = conn.getresponse()
        data = resp.read().decode()
        conn.close()
        return resp, data

    def events(self, prompt, session):
        body = {"model": "m", "stream": True, "tools": TOOLS, "messages": [user(prompt)],
                "metadata": {"user_id": json.dumps({"session_id": session})}}
        resp, data = self.post("/v1/messages?beta=true", body)
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.getheader("content-type"), "text/event-stream")
        out = []
        for chunk in data.strip().split("\n\n"):
            name, payload = chunk.split("\n")
            self.assertEqual(name, "event: " + json.loads(payload[len("data: "):])["type"])
            out.append(json.loads(payload[len("data: "):]))
        return out

    def test_a_text_answer_streams_in_order(self):
        events = self.events("[[say: one two three]]", "w1")
        kinds = [e["type"] for e in events if e["type"] != "ping"]
        self.assertEqual(kinds, ["message_start", "content_block_start"] + ["content_block_delta"] * 3
                         + ["content_block_stop", "message_delta", "message_stop"])
        self.assertEqual("".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta"),
                         "one two three")
        self.assertEqual(events[-2]["delta"]["stop_reason"], "end_turn")

    def test_a_tool_call_streams_its_input_as_json(self):
        events = self.events("[[bash: echo hi]]", "w2")
        start = next(e for e in events if e["type"] == "content_block_start")["content_block"]
        self.assertEqual((start["type"], start["name"], start["input"]), ("tool_use", "Bash", {}))
        delta = next(e for e in events if e["type"] == "content_block_delta")["delta"]
        self.assertEqual(json.loads(delta["partial_json"])["command"], "echo hi")
        self.assertEqual(events[-2]["delta"]["stop_reason"], "tool_use")

    def test_every_answer_has_its_own_message_id(self):
        # The CLI merges assistant blocks that share a message id into one message.
        ids = {self.events("[[say: x]]", f"w3-{n}")[0]["message"]["id"] for n in range(3)}
        self.assertEqual(len(ids), 3)

    def test_slow_takes_its_time(self):
        start = time.monotonic()
        self.events("[[slow: 1.2]] [[say: a b]]", "w4")
        self.assertGreaterEqual(time.monotonic() - start, 1.1)

    def test_an_error_is_an_http_status_with_an_api_error_body(self):
        resp, data = self.post("/v1/messages", {"stream": True, "tools": TOOLS, "messages": [user("[[error: 429]]")]})
        self.assertEqual(resp.status, 429)
        self.assertEqual(json.loads(data)["error"]["type"], "rate_limit_error")

    def test_a_usage_limit_is_a_429_naming_the_window_and_its_reset(self):
        resp, data = self.post("/v1/messages", {"stream": True, "tools": TOOLS, "messages": [user("[[limit: five_hour]]")]})
        self.assertEqual(resp.status, 429)
        self.assertEqual(resp.getheader("anthropic-ratelimit-unified-representative-claim"), "five_hour")
        self.assertEqual(resp.getheader("anthropic-ratelimit-unified-status"), "rejected")
        self.assertGreater(int(resp.getheader("anthropic-ratelimit-unified-reset")), time.time())
        self.assertEqual(resp.getheader("x-should-retry"), "false")

    def test_a_request_without_stream_gets_one_json_message(self):
        resp, data = self.post("/v1/messages", {"tools": TOOLS, "messages": [user("[[say: whole]]")]})
        self.assertEqual(json.loads(data)["content"], [{"type": "text", "text": "whole"}])

    def test_each_request_is_logged_before_its_answer(self):
        self.events("[[say: logged-4417]]", "w5")
        with open(self.log) as f:
            lines = [json.loads(line) for line in f]
        found = [line for line in lines if "logged-4417" in json.dumps(line["request"])]
        self.assertEqual([(line["path"], line["turn"]) for line in found], [("/v1/messages?beta=true", "prompt")])

    def test_count_tokens_and_other_paths_answer(self):
        resp, data = self.post("/v1/messages/count_tokens", {"messages": [user("hi")]})
        self.assertGreater(json.loads(data)["input_tokens"], 0)
        resp, _ = self.post("/api/anything", {})
        self.assertEqual(resp.status, 200)


if __name__ == "__main__":
    unittest.main()

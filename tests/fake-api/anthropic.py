#!/usr/bin/env python3
"""The Anthropic Messages API as the tests need it: scripted, on 127.0.0.1, standard library only.

The real `claude` CLI talks to this instead of the network (ANTHROPIC_BASE_URL). What the
"model" does is written into the prompt as markers (see README.md beside this file):

    [[bash: CMD]]  [[background: CMD]]  [[poll: N]]  [[write: PATH | TEXT]]  [[slow: N]]
    [[error: CODE]]  [[say: TEXT]]  [[after: TEXT]]  [[notified: TEXT]]

    python3 anthropic.py --port 0 --port-file PORT_FILE --log requests.jsonl

Each request is appended to --log as one JSON line {"path", "turn", "request"} before it is
answered, so a test that saw the answer finds the request in the log.
"""

import hashlib
import json
import re
import threading
import time
import uuid
from collections import Counter

import standin

MARKER = re.compile(r"\[\[\s*([a-z]+)\s*:(.*?)\]\]", re.S | re.I)
DEFAULT_ANSWER = "Done."
DEFAULT_AFTER = "Finished."
DEFAULT_NOTIFIED = "Noted."
# Texts the CLI adds to the user's side of the conversation that nobody typed.
NOT_TYPED = ("<system-reminder>", "[Request interrupted", "<task-notification>")
# The CLI tells the model a background task ended: bare (2.0, 2.1.100) or inside a
# <system-reminder> (2.1.332), naming the task by the id its Bash result gave.
TASK_NOTIFICATION = re.compile(r"<task-notification>.*?<task-id>\s*([^<\s]+)\s*</task-id>", re.S)
# A backgrounded Bash call's result: "Command running in background with ID: b79d532.
# Output is being written to: /tmp/claude/…/tasks/b79d532.output"
BACKGROUND_RESULT = re.compile(r"in background with ID:\s*([^\s.]+)\.?(?:.*?written to:\s*(\S+?\.output))?", re.S)
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def script(text):
    """The markers in `text`, the first of each name."""
    found = {}
    for name, value in MARKER.findall(text):
        found.setdefault(name.lower(), value.strip())
    return found


def items(content):
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [i for i in content or [] if isinstance(i, dict)]


def typed_texts(messages):
    """What the person sent, oldest first, whitespace-trimmed (the CLI appends newlines
    when it merges messages)."""
    out = []
    for m in messages:
        if m.get("role") != "user":
            continue
        for i in items(m.get("content")):
            text = (i.get("text") or "").strip() if i.get("type") == "text" else ""
            if text and not text.startswith(NOT_TYPED):
                out.append(text)
    return out


def tool_results(messages):
    """(tool_use id, the result's text) of every tool result, oldest first."""
    return [
        (i.get("tool_use_id"), result_text(i.get("content")))
        for m in messages
        if m.get("role") == "user"
        for i in items(m.get("content"))
        if i.get("type") == "tool_result"
    ]


def result_text(content):
    return "".join(i.get("text") or "" for i in items(content) if i.get("type") == "text")


def task_notifications(messages):
    """The task ids of the background tasks the CLI said have ended, oldest first."""
    return [
        task
        for m in messages
        if m.get("role") == "user"
        for i in items(m.get("content"))
        if i.get("type") == "text"
        for task in TASK_NOTIFICATION.findall(i.get("text") or "")
    ]


def conversation_key(request):
    """The CLI's session id from metadata.user_id: JSON in 2.1, `…_session_<uuid>` in 2.0."""
    user_id = str((request.get("metadata") or {}).get("user_id") or "")
    try:
        session = json.loads(user_id).get("session_id")
        if session:
            return str(session)
    except (ValueError, AttributeError):
        pass
    m = re.search(r"session_([0-9a-fA-F-]{8,})", user_id)
    return m.group(1) if m else user_id


def fingerprint(messages):
    """Equal for a retry of the same request (cache_control marks may move between tries)."""

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k != "cache_control"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return hashlib.sha256(json.dumps(strip(messages), sort_keys=True).encode()).hexdigest()


class Reply:
    """What to send back: an HTTP error, a tool call, or text streamed over `seconds` (a
    tool call comes after `seconds` of pings: a model that thinks first)."""

    def __init__(self, turn, text="", seconds=0.0, error=None, tool=None):
        self.turn, self.text, self.seconds, self.error, self.tool = turn, text, seconds, error, tool


def answer_to(text, turn, tools_allowed=True):
    """The reply a prompt's markers ask for (a tool call gets its id from Model.issue)."""
    s = script(text)
    if "error" in s:
        code = int(s["error"]) if s["error"].isdigit() else 500
        return Reply(turn, error=code if 400 <= code <= 599 else 500)
    if tools_allowed and "bash" in s:
        return Reply(turn, tool=("Bash", {"command": s["bash"], "description": "Run a scripted command"}))
    if tools_allowed and "background" in s:
        return Reply(turn, tool=("Bash", {"command": s["background"],
                                          "description": "Run a scripted command in the background",
                                          "run_in_background": True}))
    if tools_allowed and "write" in s:
        path, _, body = s["write"].partition("|")
        return Reply(turn, tool=("Write", {"file_path": path.strip(), "content": body.strip() + "\n"}))
    try:
        seconds = max(0.0, float(s.get("slow", "0")))
    except ValueError:
        seconds = 0.0
    return Reply(turn, text=s.get("say", DEFAULT_ANSWER), seconds=seconds)


class Model:
    """Decides each reply. The CLI's transcript cannot be read by position: it merges tool
    results with a later typed prompt into one message, carries old results along, may put
    the text that asked for a tool after that tool's result, and sends a rejected tool's
    result only with the next prompt. So the model remembers what it has answered: the
    tool_use ids whose results it has seen, and per conversation how many times each text
    had been typed when it last answered. A text typed more often than that is a new
    prompt; otherwise a result not seen before makes this a tool-result turn."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tools = {}  # tool_use id -> the Plan of the prompt that asked for it
        self.tasks = {}  # background task id -> (its Plan, its output file)
        self.results_seen = set()
        self.notifications_seen = set()
        self.answered = {}  # conversation -> Counter of texts as typed when last answered
        self.last = {}  # conversation -> the last reply it got
        self.replies = {}  # (conversation, fingerprint) -> the reply given (retries get it again)

    def reply(self, request):
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        texts = typed_texts(messages)
        # Helper requests (a title, a command prefix, a JSON prefill) must not count as turns.
        if messages and messages[-1].get("role") == "assistant":
            prefill = "".join(i.get("text", "") for i in items(messages[-1].get("content")))
            return Reply("side", text="}" if prefill.rstrip().endswith("{") else "")
        if not request.get("tools"):
            return answer_to(texts[-1] if texts else "", "side", tools_allowed=False)
        key = conversation_key(request)
        with self.lock:
            seen_key = (key, fingerprint(messages))
            if seen_key in self.replies:
                return self.again(self.replies[seen_key])
            tools = {t.get("name") for t in request["tools"] if isinstance(t, dict)}
            reply = self.decide(key, texts, tool_results(messages), task_notifications(messages), tools)
            self.last[key] = reply
            if len(self.replies) > 10000:
                self.replies.clear()
            self.replies[seen_key] = reply
            return reply

    def decide(self, key, texts, results, notes=(), tools=()):
        answered = self.answered.setdefault(key, Counter())
        typed, prompt = Counter(), None
        for text in texts:
            typed[text] += 1
            if typed[text] > answered[text]:
                prompt = text
        fresh = [(r, text) for r, text in results if r not in self.results_seen]
        self.results_seen.update(r for r, _ in results)
        for tool_id, text in fresh:
            started = BACKGROUND_RESULT.search(text) if tool_id in self.tools else None
            if started and self.tools[tool_id].background:
                self.tasks[started.group(1)] = (self.tools[tool_id], started.group(2) or "")
        new_notes = [n for n in notes if n not in self.notifications_seen]
        self.notifications_seen.update(notes)
        if prompt is not None:
            # Everything typed so far is now answered (a helper request with tools, such as
            # a sub-agent's warmup, shares the key but not the texts: merge, never replace).
            for text, count in typed.items():
                answered[text] = max(answered[text], count)
            return self.issue(answer_to(prompt, "prompt"), prompt)
        if fresh:
            return self.after(self.tools.get(fresh[-1][0]) or Plan({}), tools)
        if new_notes:
            # The CLI woke the model because a background task ended: a turn of its own.
            plan, _ = self.tasks.get(new_notes[-1], (Plan({}), ""))
            return Reply("notification", text=plan.notified, seconds=plan.seconds)
        # Nothing new: the last request resent in another form (2.1 resends a failed one
        # with more tools). Asking for a tool anew here would loop; the last reply is right.
        if key in self.last:
            return self.again(self.last[key], "again")
        newest = texts[-1] if texts else ""
        return self.issue(answer_to(newest, "again"), newest)

    def issue(self, reply, prompt):
        if reply.tool:
            self.call(reply, Plan(script(prompt)))
        return reply

    def call(self, reply, plan):
        tool_id = "toolu_" + uuid.uuid4().hex[:24]
        reply.tool = reply.tool + (tool_id,)
        self.tools[tool_id] = plan

    def after(self, plan, tools):
        """The reply to a tool's result: a poll of the background task the prompt started
        while polls are left, else the `after` text; each takes the prompt's `slow` time."""
        task = next(((t, path) for t, (p, path) in self.tasks.items() if p is plan), None)
        if plan.polls_left > 0 and task:
            plan.polls_left -= 1
            reply = Reply("tool-result", seconds=plan.seconds, tool=poll_call(task, tools))
            self.call(reply, plan)
            return reply
        return Reply("tool-result", text=plan.after, seconds=plan.seconds)

    def again(self, reply, turn="retry"):
        """The same answer to a resent request; a tool call keeps its id (the first never
        arrived, or its result would be in the request)."""
        return Reply(turn, reply.text, reply.seconds, reply.error, reply.tool)


class Plan:
    """What a prompt that asked for a tool wants after it: the tool's results are answered
    by its polls (background tasks) and then its `after` text, each taking `seconds`; the
    CLI's note that its background task ended by its `notified` text."""

    def __init__(self, s):
        self.after = s.get("after", DEFAULT_AFTER)
        self.notified = s.get("notified", DEFAULT_NOTIFIED)
        self.background = "background" in s and "bash" not in s
        try:
            self.seconds = max(0.0, float(s.get("slow", "0")))
        except ValueError:
            self.seconds = 0.0
        try:
            self.polls_left = max(0, int(s.get("poll", "0"))) if self.background else 0
        except ValueError:
            self.polls_left = 0


def poll_call(task, tools):
    """A look at a background task's output with the tool this CLI has for it: BashOutput
    (2.0 before 2.0.6x), TaskOutput (2.0.77 to 2.1.1xx; non-blocking), else Read of its
    output file (2.1.332 lists neither)."""
    task_id, path = task
    if "BashOutput" in tools:
        return ("BashOutput", {"bash_id": task_id})
    if "TaskOutput" in tools:
        return ("TaskOutput", {"task_id": task_id, "block": False, "timeout": 1000})
    return ("Read", {"file_path": path})


class Server(standin.Server):
    def __init__(self, address, log_path):
        super().__init__(address, Handler, log_path)
        self.model = Model()


class Handler(standin.Handler):
    def send_json(self, status, obj, extra=()):
        super().send_json(status, obj, [("request-id", "req_" + uuid.uuid4().hex[:24]), *extra])

    def do_GET(self):
        self.server.record(self.path, "other", {})
        self.send_json(200, {})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        try:
            request = json.loads(self.body() or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self.server.record(self.path, "bad", {})
            return self.send_json(400, api_error(400, "the body is not a JSON object"))
        route = self.path.split("?")[0].rstrip("/")
        if route.endswith("/messages/count_tokens"):
            self.server.record(self.path, "count", request)
            return self.send_json(200, {"input_tokens": max(1, len(json.dumps(request)) // 4)})
        if not route.endswith("/messages"):
            self.server.record(self.path, "other", request)
            return self.send_json(200, {})
        reply = self.server.model.reply(request)
        self.server.record(self.path, reply.turn, request)
        try:
            if reply.error:
                self.send_json(reply.error, api_error(reply.error, f"scripted error {reply.error}"))
            elif request.get("stream"):
                self.stream(request, reply)
            else:
                self.send_json(200, message(request, reply))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the CLI went away (interrupted or killed)

    def stream(self, request, reply):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        # The end of the stream is the end of the connection: no chunked framing needed.
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

        def send(data):
            self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        head = message(request, reply)
        blocks, head["content"], head["stop_reason"] = head["content"], [], None
        head["usage"]["output_tokens"] = 1
        send({"type": "message_start", "message": head})
        send({"type": "ping"})
        for index, block in enumerate(blocks):
            if block["type"] == "tool_use":
                deadline = time.monotonic() + reply.seconds
                while time.monotonic() < deadline:
                    time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                    send({"type": "ping"})
                send({"type": "content_block_start", "index": index, "content_block": dict(block, input={})})
                send({"type": "content_block_delta", "index": index,
                      "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
            else:
                send({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
                pieces = re.findall(r"\S+\s*|\s+", block["text"]) or [""]
                deadline = time.monotonic() + reply.seconds
                for n, piece in enumerate(pieces):
                    # Spread the pieces over the time asked, with pings while waiting.
                    due = deadline - reply.seconds * (len(pieces) - n - 1) / len(pieces)
                    while time.monotonic() < due:
                        time.sleep(min(0.5, due - time.monotonic()))
                        if time.monotonic() < due:
                            send({"type": "ping"})
                    send({"type": "content_block_delta", "index": index,
                          "delta": {"type": "text_delta", "text": piece}})
            send({"type": "content_block_stop", "index": index})
        send({"type": "message_delta", "delta": {"stop_reason": head_stop(blocks), "stop_sequence": None},
              "usage": {"output_tokens": 5}})
        send({"type": "message_stop"})


def head_stop(blocks):
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def message(request, reply):
    if reply.tool:
        name, tool_input, tool_id = reply.tool
        content = [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]
    else:
        content = [{"type": "text", "text": reply.text}]
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or "claude-stand-in",
        "content": content,
        "stop_reason": head_stop(content),
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def api_error(code, text):
    kind = ERROR_TYPES.get(code, "api_error" if code >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": text}}


def main():
    standin.serve(__doc__.split("\n")[0], lambda address, log, _: Server(address, log))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Anthropic Messages API as the tests need it: scripted, on 127.0.0.1, standard library only.

The real `claude` CLI talks to this instead of the network (ANTHROPIC_BASE_URL). What the
"model" does is written into the prompt as markers (see README.md beside this file):

    [[bash: CMD]]  [[background: CMD]]  [[poll: N]]  [[write: PATH | TEXT]]  [[slow: N]]
    [[edit: PATH | OLD | NEW]]  [[multiedit: PATH | OLD | NEW]]  [[notebook: PATH | SOURCE]]
    [[fetch: URL]]  [[search: QUERY]]  [[mcp: SERVER TOOL | JSON ;; …]]  [[plan: TEXT]]  [[exitplan: x]]
    [[ask: QUESTION | LABEL: DESCRIPTION …]]  [[askmany: …]]  [[long: N]]
    [[error: CODE]]  [[fails: N]]  [[say: TEXT]]  [[after: TEXT]]  [[notified: TEXT]]
    [[limit: five_hour]] (a subscriber's usage limit: 429 with its rate-limit headers)

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
# ("Tool loaded." follows a ToolSearch result in 2.1.3xx.)
NOT_TYPED = ("<system-reminder>", "[Request interrupted", "<task-notification>", "Tool loaded.")
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


def user_texts(messages):
    """Every text on the user's side, the CLI's own notes too (its plan-mode note names the
    plan file), also those it put into a tool result or (2.1.3xx) a message of role system."""
    return [i.get("text") or "" if i.get("type") == "text" else result_text(i.get("content"))
            for m in messages if m.get("role") in ("user", "system")
            for i in items(m.get("content")) if i.get("type") in ("text", "tool_result")]


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
    tool call comes after `seconds` of pings: a model that thinks first). An error with
    `fails` ({"left": N}, shared by the copies retries get) turns into `recovered` once N
    tries have failed."""

    def __init__(self, turn, text="", seconds=0.0, error=None, tool=None, fails=None, recovered=None):
        self.turn, self.text, self.seconds, self.error, self.tool = turn, text, seconds, error, tool
        self.limit = None
        self.fails, self.recovered = fails, recovered


# What an [[ask:]] without options offers: four options whose descriptions run to two lines
# in a window of 120 columns (the layout the issue saw read wrong).
DEFAULT_OPTIONS = [
    ("Keep it small", "Change only the function the report names and leave its callers alone, "
                      "so the diff stays easy to review and nothing else moves at all"),
    ("Refactor first", "Split the module into the parts it really has before the fix, which "
                       "touches more files but leaves each of them shorter and clearer"),
    ("Write tests", "Add the failing test that shows the bug before any change, then make the "
                    "smallest change that turns it green and keep the test in the suite"),
    ("Ask the owner", "Stop here and write to the person who owns the module, because the "
                      "behaviour may be relied on by callers this repository cannot see"),
]
# Where the CLI's plan-mode note says the plan goes ("…/.claude/plans/NAME.md").
PLAN_FILE = re.compile(r"(/[^\s`'\"()]*/plans/[^\s`'\"()]+\.md)")


def ask_input(spec, many):
    """AskUserQuestion's input from `QUESTION | LABEL: DESCRIPTION | …`."""
    question, *rest = [p.strip() for p in spec.split("|")]
    options = [tuple(x.strip() for x in o.partition(":")[::2]) for o in rest if o]
    options = [(label, desc or label) for label, desc in options] or DEFAULT_OPTIONS
    return {"questions": [{"question": question or "Which way should I take?",
                           "header": "Approach", "multiSelect": many,
                           "options": [{"label": label, "description": desc} for label, desc in options]}]}


def long_text(lines):
    return "\n\n".join(f"Paragraph {n} of a long answer: the model goes on about the change, "
                        f"its reasons and what it leaves alone, so the reply fills the screen."
                        for n in range(1, lines + 1))


def tool_steps(s, texts=()):
    """The tool calls a prompt's markers ask for, in order (the first is the reply, the
    rest follow its results): a file is Read before it is edited, as the CLI demands."""
    if "bash" in s:
        return [("Bash", {"command": s["bash"], "description": "Run a scripted command"})]
    if "background" in s:
        return [("Bash", {"command": s["background"], "description": "Run a scripted command in the background",
                          "run_in_background": True})]
    if "write" in s:
        path, _, body = s["write"].partition("|")
        return [("Write", {"file_path": path.strip(), "content": body.strip() + "\n"})]
    if "edit" in s or "multiedit" in s:
        path, old, new = ([p.strip() for p in s.get("edit", s.get("multiedit")).split("|")] + ["", ""])[:3]
        read = ("Read", {"file_path": path})
        if "edit" in s:
            return [read, ("Edit", {"file_path": path, "old_string": old, "new_string": new})]
        return [read, ("MultiEdit", {"file_path": path, "edits": [{"old_string": old, "new_string": new}]})]
    if "notebook" in s:
        path, _, source = s["notebook"].partition("|")
        path = path.strip()
        return [("Read", {"file_path": path}),
                ("NotebookEdit", {"notebook_path": path, "new_source": source.strip() or "print('hello')",
                                  "cell_type": "code", "edit_mode": "insert"})]
    if "fetch" in s:
        return [("WebFetch", {"url": s["fetch"], "prompt": "Summarise the page in one sentence"})]
    if "search" in s:
        return [("WebSearch", {"query": s["search"]})]
    if "mcp" in s:
        return mcp_calls(s["mcp"])
    if "plan" in s:
        plan = s["plan"] or "1. Read the code\n2. Make the change\n3. Run the tests"
        # The CLI shows the plan file it named in its plan-mode note (2.0.7x and later);
        # older releases took the plan as the tool's input.
        paths = [m for t in texts for m in PLAN_FILE.findall(t)]
        write = [("Write", {"file_path": paths[-1], "content": "# Plan\n\n" + plan + "\n"})] if paths else []
        return write + [("ExitPlanMode", {"plan": plan})]
    if "exitplan" in s:
        # A model that forgot to write its plan: the CLI's short "Exit plan mode?".
        return [("ExitPlanMode", {})]
    if "ask" in s or "askmany" in s:
        return [("AskUserQuestion", ask_input(s.get("ask", s.get("askmany", "")), "ask" not in s))]
    return []


def mcp_calls(spec):
    """`SERVER TOOL [| JSON] ;; SERVER TOOL [| JSON] …`: MCP tool calls in order, each with
    its JSON arguments (an object), else {"text": …}."""
    calls = []
    for part in spec.split(";;"):
        head, bar, arguments = part.partition("|")
        server, _, tool = head.strip().partition(" ")
        args = {"text": "a note from the stand-in"}
        if bar:
            try:
                args = json.loads(arguments)
            except ValueError:
                args = {"text": arguments.strip()}
        calls.append((f"mcp__{server.strip()}__{tool.strip() or 'note'}", args))
    return calls


def answer_to(text, turn, tools_allowed=True, texts=()):
    """The reply a prompt's markers ask for (a tool call gets its id from Model.issue; the
    tool calls after the first wait in the Plan)."""
    s = script(text)
    if "limit" in s:
        # A subscriber's usage limit (a claude.ai login): 429 with the unified rate-limit
        # headers naming the window that ran out (five_hour, seven_day, …).
        reply = Reply(turn, error=429)
        reply.limit = s["limit"] or "five_hour"
        return reply
    if "error" in s:
        code = int(s["error"]) if s["error"].isdigit() else 500
        code = code if 400 <= code <= 599 else 500
        if s.get("fails", "").isdigit():
            rest = re.sub(r"\[\[\s*error\s*:.*?\]\]", "", text, flags=re.S | re.I)
            return Reply(turn, error=code, fails={"left": int(s["fails"])},
                         recovered=answer_to(rest, turn, tools_allowed=False))
        return Reply(turn, error=code)
    steps = tool_steps(s, texts) if tools_allowed else []
    if steps:
        return Reply(turn, tool=steps[0])
    try:
        seconds = max(0.0, float(s.get("slow", "0")))
    except ValueError:
        seconds = 0.0
    answer = s.get("say", DEFAULT_ANSWER)
    if s.get("long", "").isdigit():
        answer = long_text(int(s["long"])) + ("\n\n" + s["say"] if "say" in s else "")
    return Reply(turn, text=answer, seconds=seconds)


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
                return self.recover(self.again(self.replies[seen_key]))
            # Each offered tool with the argument names its schema takes (opencode's own).
            tools = {t.get("name"): set(((t.get("input_schema") or {}).get("properties") or {}))
                     for t in request["tools"] if isinstance(t, dict)}
            reply = self.decide(key, texts, tool_results(messages), task_notifications(messages), tools,
                                user_texts(messages))
            self.last[key] = reply
            if len(self.replies) > 10000:
                self.replies.clear()
            self.replies[seen_key] = reply
            return self.recover(reply)

    @staticmethod
    def recover(reply):
        """An error scripted to fail N times: the (N+1)th try gets the reply it stood for."""
        if reply.error and reply.fails is not None:
            if reply.fails["left"] <= 0:
                return Reply("retry", reply.recovered.text, reply.recovered.seconds)
            reply.fails["left"] -= 1
        return reply

    def decide(self, key, texts, results, notes=(), tools=(), notes_of_cli=()):
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
            return self.issue(answer_to(prompt, "prompt", texts=notes_of_cli), prompt, tools, notes_of_cli)
        if fresh:
            plan = self.tools.get(fresh[-1][0]) or Plan({})
            plan.results.extend(text for _, text in fresh)
            return self.after(plan, tools)
        if new_notes:
            # The CLI woke the model because a background task ended: a turn of its own.
            plan, _ = self.tasks.get(new_notes[-1], (Plan({}), ""))
            return Reply("notification", text=plan.notified, seconds=plan.seconds)
        # Nothing new: the last request resent in another form (2.1 resends a failed one
        # with more tools). Asking for a tool anew here would loop; the last reply is right.
        if key in self.last:
            return self.again(self.last[key], "again")
        newest = texts[-1] if texts else ""
        return self.issue(answer_to(newest, "again", texts=notes_of_cli), newest, tools, notes_of_cli)

    def issue(self, reply, prompt, tools=(), notes_of_cli=()):
        if reply.tool:
            plan = Plan(script(prompt))
            plan.steps = tool_steps(script(prompt), notes_of_cli)[1:]
            reply.tool = loadable(reply.tool, tools, plan)
            self.call(reply, plan)
        return reply

    def call(self, reply, plan):
        tool_id = "toolu_" + uuid.uuid4().hex[:24]
        reply.tool = reply.tool + (tool_id,)
        self.tools[tool_id] = plan

    def after(self, plan, tools):
        """The reply to a tool's result: a poll of the background task the prompt started
        while polls are left, else the `after` text; each takes the prompt's `slow` time."""
        if plan.steps:
            reply = Reply("tool-result", tool=loadable(plan.steps.pop(0), tools, plan))
            self.call(reply, plan)
            return reply
        task = next(((t, path) for t, (p, path) in self.tasks.items() if p is plan), None)
        if plan.polls_left > 0 and task:
            plan.polls_left -= 1
            reply = Reply("tool-result", seconds=plan.seconds, tool=poll_call(task, tools))
            self.call(reply, plan)
            return reply
        return Reply("tool-result", text=plan.reported(), seconds=plan.seconds)

    def again(self, reply, turn="retry"):
        """The same answer to a resent request; a tool call keeps its id (the first never
        arrived, or its result would be in the request)."""
        return Reply(turn, reply.text, reply.seconds, reply.error, reply.tool, reply.fails, reply.recovered)


# opencode offers Claude's tools under lowercase names with camelCase arguments.
OPENCODE_ARGS = {"file_path": "filePath", "old_string": "oldString", "new_string": "newString"}


def in_opencode_terms(call, tools):
    """`call` as opencode's tool of the same name takes it, when the request offers that
    tool and not Claude's: renamed arguments, and none its schema does not list (its
    arguments are checked strictly)."""
    name, args = call[0], call[1]
    if not tools or name in tools or name.lower() not in tools:
        return call
    known = tools[name.lower()] if isinstance(tools, dict) else set()
    renamed = {OPENCODE_ARGS.get(k, k): v for k, v in args.items()}
    return (name.lower(), {k: v for k, v in renamed.items() if not known or k in known}) + tuple(call[2:])


def loadable(call, tools, plan):
    """`call`, or first a ToolSearch that loads its schema when the CLI only names the tool
    (2.1.3xx defers WebFetch, NotebookEdit and more: "calling them directly will fail")."""
    call = in_opencode_terms(call, tools)
    if tools and call[0] not in tools and "ToolSearch" in tools and call[0] not in plan.searched:
        plan.searched.add(call[0])
        plan.steps.insert(0, call)
        return ("ToolSearch", {"query": "select:" + call[0], "max_results": 1})
    return call


class Plan:
    """What a prompt that asked for a tool wants after it: the tool's results are answered
    by its polls (background tasks) and then its `after` text, each taking `seconds`; the
    CLI's note that its background task ended by its `notified` text."""

    def __init__(self, s):
        self.after = s.get("after", DEFAULT_AFTER)
        self.notified = s.get("notified", DEFAULT_NOTIFIED)
        self.background = "background" in s and "bash" not in s
        self.steps = []  # the tool calls still to come, one per result
        self.searched = set()  # tools a ToolSearch was sent for (once each)
        self.results = []  # the texts of the results its tool calls got, in order
        try:
            self.seconds = max(0.0, float(s.get("slow", "0")))
        except ValueError:
            self.seconds = 0.0
        try:
            self.polls_left = max(0, int(s.get("poll", "0"))) if self.background else 0
        except ValueError:
            self.polls_left = 0


    def reported(self):
        """The `after` text, `{results}` in it replaced by the results its calls got (one
        line each, cut at 400 characters, joined by " || "): a model reporting them."""
        if "{results}" not in self.after:
            return self.after
        shown = [" ".join(r.split())[:400] for r in self.results]
        return self.after.replace("{results}", " || ".join(shown))


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
            if reply.error and reply.limit:
                self.send_json(429, api_error(429, "usage limit reached"), limit_headers(reply.limit))
            elif reply.error:
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


def limit_headers(claim, now=None):
    """What the API sends with a subscriber's 429: the window that ran out, when it resets
    (in three hours), and that a retry will not help."""
    reset = int(now if now is not None else time.time()) + 3 * 3600
    return [
        ("anthropic-ratelimit-unified-status", "rejected"),
        ("anthropic-ratelimit-unified-representative-claim", claim),
        ("anthropic-ratelimit-unified-reset", str(reset)),
        ("x-should-retry", "false"),
    ]


def api_error(code, text):
    kind = ERROR_TYPES.get(code, "api_error" if code >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": text}}


def main():
    standin.serve(__doc__.split("\n")[0], lambda address, log, _: Server(address, log))


if __name__ == "__main__":
    main()

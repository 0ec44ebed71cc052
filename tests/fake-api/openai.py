#!/usr/bin/env python3
"""The OpenAI Responses API as the tests need it: scripted, on 127.0.0.1, standard library only.

The real `codex` CLI talks to this instead of the network (a custom model provider whose
`base_url` is this server, `wire_api = "responses"`; see codex_home.py). What the "model"
does is written into the prompt as markers (see README.md beside this file):

    [[bash: CMD]]  [[write: PATH | TEXT]]  [[slow: N]]  [[error: CODE]]  [[say: TEXT]]  [[after: TEXT]]
    [[tool: NAME | JSON ;; NAME | JSON …]]  [[search: QUERY]]

    python3 openai.py --port 0 --port-file PORT_FILE --log requests.jsonl

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
# What the CLI puts on the user's side of the conversation that nobody typed: its context
# blocks (<environment_context>, <user_instructions>, <turn_aborted>, ...) and AGENTS.md.
HARNESS_BLOCK = re.compile(r"^<([a-z_][\w-]*)[ >].*</\1>$|^<([a-z_][\w-]*)>.*</\2>$", re.S)
NOT_TYPED_PREFIXES = ("# AGENTS.md instructions",)
RESULT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
ERROR_CODES = {
    400: ("invalid_request_error", "invalid_value"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_exceeded", "rate_limit_exceeded"),
}


def script(text):
    """The markers in `text`, the first of each name."""
    found = {}
    for name, value in MARKER.findall(text):
        found.setdefault(name.lower(), value.strip())
    return found


def is_typed(text):
    return bool(text) and not text.startswith(NOT_TYPED_PREFIXES) and not HARNESS_BLOCK.match(text)


def typed_texts(items):
    """What the person sent, oldest first, whitespace-trimmed."""
    out = []
    for item in items:
        if item.get("type", "message") != "message" or item.get("role") != "user":
            continue
        content = item.get("content")
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if isinstance(part, dict) and part.get("type") in ("input_text", "text"):
                text = (part.get("text") or "").strip()
                if is_typed(text):
                    out.append(text)
    return out


def tool_results(items):
    return [i.get("call_id") for i in items if i.get("type") in RESULT_TYPES]


def result_texts(items):
    """call id -> the text of its result (an output string, or the texts of its parts)."""
    out = {}
    for item in items:
        if item.get("type") not in RESULT_TYPES:
            continue
        output = item.get("output")
        if isinstance(output, dict):
            output = output.get("content", output.get("output", ""))
        if isinstance(output, list):
            output = " ".join(p.get("text", "") for p in output if isinstance(p, dict))
        out[item.get("call_id")] = output if isinstance(output, str) else json.dumps(output)
    return out


class Plan:
    """The tool calls of one prompt still to make, each after the result of the one before,
    and the results so far: the `after` text reports them (`{results}`)."""

    def __init__(self, after, pending):
        self.after, self.pending, self.results = after, pending, []

    def reported(self):
        shown = [" ".join(r.split())[:400] for r in self.results]
        return self.after.replace("{results}", " || ".join(shown))


def conversation_key(request, headers):
    """The CLI's thread: `prompt_cache_key` in the body (its conversation id), else the
    session-id header."""
    return str(
        request.get("prompt_cache_key")
        or (request.get("client_metadata") or {}).get("thread_id")
        or headers.get("session-id")
        or headers.get("thread-id")
        or ""
    )


def turn_metadata(request, headers):
    text = headers.get("x-codex-turn-metadata") or (request.get("client_metadata") or {}).get(
        "x-codex-turn-metadata"
    )
    try:
        meta = json.loads(text or "{}")
    except (TypeError, ValueError):
        meta = {}
    return meta if isinstance(meta, dict) else {}


def is_helper(request, headers):
    """Requests that are not the person's conversation: a thread the CLI starts for itself
    (`thread_source` other than `user`, such as the title it asks for after the first
    prompt), a request kind other than a turn, or one that asks for JSON of a schema."""
    meta = turn_metadata(request, headers)
    fmt = ((request.get("text") or {}).get("format") or {}).get("type")
    return (
        meta.get("thread_source", "user") not in ("user", "subagent")
        or meta.get("request_kind", "turn") != "turn"
        or fmt == "json_schema"
    )


def helper_answer(request, texts):
    """What a helper request gets: JSON for a schema (a title: the prompt's first words),
    else the text of its newest prompt's markers."""
    fmt = (request.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        props = (fmt.get("schema") or {}).get("properties") or {}
        asked = (texts[-1] if texts else "").rpartition("User prompt:")[2]
        words = " ".join(MARKER.sub(" ", asked).split()[:4]) or "Scripted task"
        return json.dumps({name: words[:36] for name in props} or {})
    return answer_to(texts[-1] if texts else "", "side", request, tools_allowed=False).text


def fingerprint(items):
    """Equal for a retry of the same request."""
    return hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()


def tool_named(request, name):
    """The request's tool called `name` (a `function` or a freeform `custom` tool), if any."""
    for tool in request.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name") == name:
            return tool
    return None


class Reply:
    """What to send back: an HTTP error, a tool call, or text streamed over `seconds`.
    `tool` is (kind, name, payload): kind `function` (payload: the JSON arguments) or
    `custom` (payload: the freeform input), plus the call id once issued. `search`: the
    query of a web search made before the text."""

    def __init__(self, turn, text="", seconds=0.0, error=None, tool=None, search=None):
        self.turn, self.text, self.seconds, self.error, self.tool = turn, text, seconds, error, tool
        self.search = search
        self.namespace = None


def patch_adding(path, body):
    """An apply_patch envelope that creates `path` holding `body` and a newline."""
    lines = "".join(f"+{line}\n" for line in body.split("\n"))
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def never_asks(request):
    """Whether codex's instructions say its approval policy is never (no one to ask)."""
    return "Approval policy is currently never" in json.dumps(request.get("input") or [])


def answer_to(text, turn, request, tools_allowed=True):
    """The reply a prompt's markers ask for (a tool call gets its id from Model.issue)."""
    s = script(text)
    if "error" in s:
        code = int(s["error"]) if s["error"].isdigit() else 500
        return Reply(turn, error=code if 400 <= code <= 599 else 500)
    if tools_allowed and "bash" in s:
        # Asking to run outside the sandbox is how the model asks a person (on-request).
        # Under approval policy "never" (--yolo) codex rejects a command that asks, as its
        # instructions say: the model runs it plainly.
        args = {"cmd": s["bash"]}
        if not never_asks(request):
            args["sandbox_permissions"] = "require_escalated"
            args["justification"] = "Run a scripted command?"
        return Reply(turn, tool=("function", "exec_command", json.dumps(args)))
    if tools_allowed and "write" in s:
        path, _, body = s["write"].partition("|")
        patch = patch_adding(path.strip(), body.strip())
        tool = tool_named(request, "apply_patch")
        if tool and tool.get("type") == "custom":
            return Reply(turn, tool=("custom", "apply_patch", patch))
        if tool:
            return Reply(turn, tool=("function", "apply_patch", json.dumps({"input": patch})))
        # No patch tool (a model without one): the shell's own way, through the same approval.
        args = {"cmd": f"apply_patch <<'EOF'\n{patch}EOF", "sandbox_permissions": "require_escalated"}
        return Reply(turn, tool=("function", "exec_command", json.dumps(args)))
    if tools_allowed and "tool" in s:
        # Any other function tool the CLI offers (an MCP server's in its namespace), its
        # arguments as JSON; after `;;` the next call, made once this one's result is in.
        return tool_call(turn, request, s["tool"].split(";;")[0])
    try:
        seconds = max(0.0, float(s.get("slow", "0")))
    except ValueError:
        seconds = 0.0
    if "search" in s:
        # A web search runs on the API's side: its item first (searching for `seconds`),
        # then the answer at once.
        return Reply(turn, text=s.get("say", DEFAULT_ANSWER), seconds=seconds, search=s["search"])
    return Reply(turn, text=s.get("say", DEFAULT_ANSWER), seconds=seconds)


def tool_call(turn, request, spec):
    """The call `NAME | JSON` asks for, in the namespace the request lists NAME in."""
    name, _, args = spec.partition("|")
    name = name.strip()
    reply = Reply(turn, tool=("function", name, args.strip() or "{}"))
    reply.namespace = namespace_of(request, name)
    return reply


def namespace_of(request, name):
    """The namespace (`mcp__<server>`: how the CLI offers an MCP server's tools) of the
    request's tool called `name`, when it is in one and not among the plain tools."""
    if tool_named(request, name):
        return None
    for tool in request.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            if any(isinstance(t, dict) and t.get("name") == name for t in tool.get("tools") or []):
                return tool.get("name")
    return None


class Model:
    """Decides each reply. A request carries the whole conversation (the CLI stores nothing
    server-side), so what is new is decided by memory, not position: the call ids whose
    results it has seen, and per conversation how many times each text had been typed when
    it last answered. A text typed more often than that is a new prompt; otherwise a result
    not seen before makes this a tool-result turn."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tools = {}  # call id -> the Plan of the prompt that asked for it
        self.results_seen = set()
        self.answered = {}  # conversation -> Counter of texts as typed when last answered
        self.last = {}  # conversation -> the last reply it got
        self.replies = {}  # (conversation, fingerprint) -> the reply given (retries get it again)

    def reply(self, request, headers=None):
        headers = headers or {}
        items = [i for i in request.get("input") or [] if isinstance(i, dict)]
        texts = typed_texts(items)
        if is_helper(request, headers) or not request.get("tools"):
            # Helper requests (titles, compaction, reviews) never count as turns.
            return Reply("side", text=helper_answer(request, texts))
        key = conversation_key(request, headers)
        with self.lock:
            seen_key = (key, fingerprint(items))
            if seen_key in self.replies:
                return self.again(self.replies[seen_key])
            reply = self.decide(key, texts, tool_results(items), request, result_texts(items))
            self.last[key] = reply
            if len(self.replies) > 10000:
                self.replies.clear()
            self.replies[seen_key] = reply
            return reply

    def decide(self, key, texts, results, request, outputs=None):
        answered = self.answered.setdefault(key, Counter())
        typed, prompt = Counter(), None
        for text in texts:
            typed[text] += 1
            if typed[text] > answered[text]:
                prompt = text
        fresh = [r for r in results if r not in self.results_seen]
        self.results_seen.update(results)
        if prompt is not None:
            for text, count in typed.items():
                answered[text] = max(answered[text], count)
            return self.issue(answer_to(prompt, "prompt", request), prompt)
        if fresh:
            plan = self.tools.get(fresh[-1])
            if plan is None:
                return Reply("tool-result", text=DEFAULT_AFTER)
            plan.results.append((outputs or {}).get(fresh[-1], ""))
            if plan.pending:
                reply = tool_call("tool-result", request, plan.pending.pop(0))
                return self.follow(reply, plan)
            return Reply("tool-result", text=plan.reported())
        if key in self.last:
            return self.again(self.last[key], "again")
        newest = texts[-1] if texts else ""
        return self.issue(answer_to(newest, "again", request), newest)

    def issue(self, reply, prompt):
        if reply.tool:
            call_id = "call_" + uuid.uuid4().hex[:24]
            reply.tool = reply.tool + (call_id,)
            s = script(prompt)
            chained = "tool" in s and "bash" not in s and "write" not in s
            pending = s["tool"].split(";;")[1:] if chained else []
            self.tools[call_id] = Plan(s.get("after", DEFAULT_AFTER), [p for p in pending if p.strip()])
        return reply

    def follow(self, reply, plan):
        """The next call of `plan`, its result to come back to the same plan."""
        call_id = "call_" + uuid.uuid4().hex[:24]
        reply.tool = reply.tool + (call_id,)
        self.tools[call_id] = plan
        return reply

    def again(self, reply, turn="retry"):
        """The same answer to a resent request; a tool call keeps its id (its result is not
        in the request, so the first never arrived)."""
        again = Reply(turn, reply.text, reply.seconds, reply.error, reply.tool, reply.search)
        again.namespace = reply.namespace
        return again


class Server(standin.Server):
    def __init__(self, address, log_path):
        super().__init__(address, Handler, log_path)
        self.model = Model()


class Handler(standin.Handler):
    def send_json(self, status, obj):
        super().send_json(status, obj, [("x-request-id", "req_" + uuid.uuid4().hex[:24])])

    def do_GET(self):
        self.server.record(self.path, "other", {})
        route = self.path.split("?")[0].rstrip("/")
        self.send_json(200, {"models": []} if route.endswith("/models") else {})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        try:
            request = json.loads(self.body() or b"{}")
        except (ValueError, OSError):
            request = None
        if not isinstance(request, dict):
            self.server.record(self.path, "bad", {})
            return self.send_json(400, api_error(400, "the body is not a JSON object"))
        route = self.path.split("?")[0].rstrip("/")
        if not route.endswith("/responses"):
            self.server.record(self.path, "other", request)
            return self.send_json(200, {})
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.server.model.reply(request, headers)
        self.server.record(self.path, reply.turn, request)
        try:
            if reply.error:
                self.send_json(reply.error, api_error(reply.error, f"scripted error {reply.error}"))
            elif request.get("stream", True):
                self.stream(request, reply)
            else:
                self.send_json(200, response(request, reply, output_items(reply), "completed"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the CLI went away (interrupted or killed)

    def stream(self, request, reply):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("x-request-id", "req_" + uuid.uuid4().hex[:24])
        # The end of the stream is the end of the connection: no chunked framing needed.
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        sequence = iter(range(1 << 30))

        def send(data):
            data = dict(data, sequence_number=next(sequence))
            self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        items = output_items(reply)
        send({"type": "response.created", "response": response(request, reply, [], "in_progress")})
        send({"type": "response.in_progress", "response": response(request, reply, [], "in_progress")})
        for index, item in enumerate(items):
            if item["type"] == "web_search_call":
                send({"type": "response.output_item.added", "output_index": index,
                      "item": dict(item, status="in_progress")})
                for event in ("in_progress", "searching"):
                    send({"type": f"response.web_search_call.{event}", "item_id": item["id"],
                          "output_index": index})
                time.sleep(reply.seconds)
                send({"type": "response.web_search_call.completed", "item_id": item["id"],
                      "output_index": index})
            elif item["type"] == "message":
                text = item["content"][0]["text"]
                send({"type": "response.output_item.added", "output_index": index,
                      "item": dict(item, status="in_progress", content=[])})
                part = {"type": "output_text", "text": "", "annotations": []}
                send({"type": "response.content_part.added", "item_id": item["id"], "output_index": index,
                      "content_index": 0, "part": part})
                pieces = re.findall(r"\S+\s*|\s+", text) or [""]
                # After a search its time is spent: the text comes at once.
                deadline = time.monotonic() + (0 if reply.search else reply.seconds)
                for n, piece in enumerate(pieces):
                    # Spread the pieces over the time asked.
                    due = deadline - reply.seconds * (len(pieces) - n - 1) / len(pieces)
                    while time.monotonic() < due:
                        time.sleep(min(0.5, due - time.monotonic()))
                    send({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                          "content_index": 0, "delta": piece})
                send({"type": "response.output_text.done", "item_id": item["id"], "output_index": index,
                      "content_index": 0, "text": text})
                send({"type": "response.content_part.done", "item_id": item["id"], "output_index": index,
                      "content_index": 0, "part": dict(part, text=text)})
            else:
                send({"type": "response.output_item.added", "output_index": index,
                      "item": dict(item, status="in_progress")})
            send({"type": "response.output_item.done", "output_index": index, "item": item})
        send({"type": "response.completed", "response": response(request, reply, items, "completed")})


def output_items(reply):
    item_id = uuid.uuid4().hex[:24]
    if reply.tool:
        kind, name, payload, call_id = reply.tool
        if kind == "custom":
            return [{"type": "custom_tool_call", "id": "ctc_" + item_id, "status": "completed",
                     "call_id": call_id, "name": name, "input": payload}]
        call = {"type": "function_call", "id": "fc_" + item_id, "status": "completed",
                "call_id": call_id, "name": name, "arguments": payload}
        if reply.namespace:
            call["namespace"] = reply.namespace
        return [call]
    searched = []
    if reply.search:
        searched = [{"type": "web_search_call", "id": "ws_" + item_id, "status": "completed",
                     "action": {"type": "search", "query": reply.search}}]
    return searched + [{"type": "message", "id": "msg_" + item_id, "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}]


def response(request, reply, items, status):
    return {
        "id": "resp_" + uuid.uuid4().hex[:24],
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": request.get("model") or "stand-in",
        "output": items,
        "usage": {
            # Known numbers (tests/it/cost.rs sums them): 10 in, 4 of them read from the
            # prompt cache; 5 out, 2 of them reasoning.
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 15,
        },
    }


def api_error(code, text):
    kind, err = ERROR_CODES.get(code, ("server_error" if code >= 500 else "invalid_request_error", None))
    return {"error": {"message": text, "type": kind, "param": None, "code": err}}


def main():
    standin.serve(__doc__.split("\n")[0], lambda address, log, _: Server(address, log))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Gemini API as the tests need it: scripted, on 127.0.0.1, standard library only.

The real `gemini` CLI talks to this instead of Google (GOOGLE_GEMINI_BASE_URL). What the
"model" does is written into the prompt as markers (see README.md beside this file):

    [[bash: CMD]]  [[write: PATH | TEXT]]  [[tool: NAME | JSON]]  [[slow: N]]  [[error: CODE]]
    [[say: TEXT]]  [[after: TEXT]]

    python3 gemini.py --port 0 --port-file PORT_FILE --log requests.jsonl

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
# Texts the CLI puts on the user's side of the conversation that nobody typed: the session
# context it opens every conversation with, and the nudges it sends on its own.
NOT_TYPED = ("<session_context>", "<system-reminder>", "System: Please continue")
STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
MODELS = ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"]


def script(text):
    """The markers in `text`, the first of each name."""
    found = {}
    for name, value in MARKER.findall(text):
        found.setdefault(name.lower(), value.strip())
    return found


def parts_of(content):
    if not isinstance(content, dict):
        return []
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


def user_contents(contents):
    return [c for c in contents if isinstance(c, dict) and c.get("role", "user") == "user"]


def typed_texts(contents):
    """What the person sent, oldest first, whitespace-trimmed."""
    out = []
    for c in user_contents(contents):
        for p in parts_of(c):
            text = (p.get("text") or "").strip() if not p.get("thought") else ""
            if text and not text.startswith(NOT_TYPED):
                out.append(text)
    return out


def tool_results(contents):
    return [
        str((p.get("functionResponse") or {}).get("id") or "")
        for c in user_contents(contents)
        for p in parts_of(c)
        if isinstance(p.get("functionResponse"), dict)
    ]


def conversation_key(contents):
    """The API carries no session id: the context the CLI opens each conversation with
    (its workspace folders, its temporary folder) tells conversations apart."""
    for c in user_contents(contents)[:1]:
        for p in parts_of(c):
            text = p.get("text") or ""
            if text.startswith("<session_context>"):
                return hashlib.sha256(text.encode()).hexdigest()[:16]
    return ""


def fingerprint(contents):
    """Equal for a retry of the same request."""
    return hashlib.sha256(json.dumps(contents, sort_keys=True).encode()).hexdigest()


class Reply:
    """What to send back: an HTTP error, a function call, or text streamed over `seconds`."""

    def __init__(self, turn, text="", seconds=0.0, error=None, tool=None):
        self.turn, self.text, self.seconds, self.error, self.tool = turn, text, seconds, error, tool


def answer_to(text, turn):
    """The reply a prompt's markers ask for (a call gets its id from Model.issue)."""
    s = script(text)
    if "error" in s:
        code = int(s["error"]) if s["error"].isdigit() else 500
        return Reply(turn, error=code if 400 <= code <= 599 else 500)
    if "bash" in s:
        return Reply(turn, tool=("run_shell_command", {"command": s["bash"], "description": "Run a scripted command"}))
    if "write" in s:
        path, _, body = s["write"].partition("|")
        return Reply(turn, tool=("write_file", {"file_path": path.strip(), "content": body.strip() + "\n"}))
    if "tool" in s:
        # Any other tool the CLI offers (replace, web_fetch, …), its arguments as JSON: the
        # dialogs of the tools no marker of their own drives.
        name, _, args = s["tool"].partition("|")
        try:
            parsed = json.loads(args) if args.strip() else {}
        except ValueError:
            parsed = {}
        return Reply(turn, tool=(name.strip(), parsed if isinstance(parsed, dict) else {}))
    try:
        seconds = max(0.0, float(s.get("slow", "0")))
    except ValueError:
        seconds = 0.0
    return Reply(turn, text=s.get("say", DEFAULT_ANSWER), seconds=seconds)


def from_schema(schema, name=""):
    """A small value that fits a JSON schema (the CLI's helper requests ask for JSON: the
    model router's complexity score, the next-speaker check, …)."""
    if not isinstance(schema, dict):
        return None
    kind = str(schema.get("type") or "").lower()
    if schema.get("enum"):
        choices = list(schema["enum"])
        # The next-speaker check: the person speaks next, or the CLI would go on alone.
        return "user" if "user" in choices else choices[0]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: from_schema(v, k) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 50 if "score" in name else 0
    if kind == "boolean":
        return False
    if name == "next_speaker":
        return "user"
    return "stand-in"


class Model:
    """Decides each reply. The CLI's transcript cannot be read by position: a prompt typed
    while a tool runs lands beside its result, old results ride along, and a rejected call's
    result arrives only with the next prompt. So the model remembers what it has answered:
    the call ids whose results it has seen, and per conversation how many times each text
    had been typed when it last answered. A text typed more often than that is a new prompt;
    otherwise a result not seen before makes this a tool-result turn."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tools = {}  # call id -> the `after` text of the prompt that asked for it
        self.results_seen = set()
        self.answered = {}  # conversation -> Counter of texts as typed when last answered
        self.last = {}  # conversation -> the last reply it got
        self.replies = {}  # (conversation, fingerprint) -> the reply given (retries get it again)

    def reply(self, request):
        contents = [c for c in request.get("contents") or [] if isinstance(c, dict)]
        texts = typed_texts(contents)
        # Helper requests (the model router, the session summary, the next-speaker check)
        # carry no tools and must not count as turns.
        if not request.get("tools"):
            return self.helper(request, texts)
        key = conversation_key(contents)
        with self.lock:
            seen_key = (key, fingerprint(contents))
            if seen_key in self.replies:
                return self.again(self.replies[seen_key])
            reply = self.decide(key, texts, tool_results(contents))
            self.last[key] = reply
            if len(self.replies) > 10000:
                self.replies.clear()
            self.replies[seen_key] = reply
            return reply

    def helper(self, request, texts):
        config = request.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema or config.get("responseMimeType") == "application/json":
            return Reply("side", text=json.dumps(from_schema(schema or {})))
        said = script(texts[-1] if texts else "").get("say", DEFAULT_ANSWER)
        return Reply("side", text=said)

    def decide(self, key, texts, results):
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
            return self.issue(answer_to(prompt, "prompt"), prompt)
        if fresh:
            return Reply("tool-result", text=self.tools.get(fresh[-1], DEFAULT_AFTER))
        # Nothing new: the last request resent in another form. Asking for a tool anew
        # here would loop; the last reply is right.
        if key in self.last:
            return self.again(self.last[key], "again")
        newest = texts[-1] if texts else ""
        return self.issue(answer_to(newest, "again"), newest)

    def issue(self, reply, prompt):
        if reply.tool:
            call_id = "call_" + uuid.uuid4().hex[:24]
            reply.tool = reply.tool + (call_id,)
            self.tools[call_id] = script(prompt).get("after", DEFAULT_AFTER)
        return reply

    def again(self, reply, turn="retry"):
        """The same answer to a resent request; a call keeps its id (the first never
        arrived, or its result would be in the request)."""
        return Reply(turn, reply.text, reply.seconds, reply.error, reply.tool)


class Server(standin.Server):
    def __init__(self, address, log_path):
        super().__init__(address, Handler, log_path)
        self.model = Model()


def model_of(path):
    """`gemini-2.5-pro` from `/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse`."""
    m = re.search(r"/models/([^/:?]+)", path)
    return m.group(1) if m else "gemini-stand-in"


class Handler(standin.Handler):
    json_type = "application/json; charset=UTF-8"

    def do_GET(self):
        route = self.path.split("?")[0].rstrip("/")
        self.server.record(self.path, "other", {})
        if route.endswith("/models"):
            return self.send_json(200, {"models": [model_info(m) for m in MODELS]})
        if "/models/" in route:
            return self.send_json(200, model_info(model_of(route)))
        self.send_json(404, api_error(404, f"no such resource: {route}"))

    def do_POST(self):
        try:
            request = json.loads(self.body() or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self.server.record(self.path, "bad", {})
            return self.send_json(400, api_error(400, "the body is not a JSON object"))
        route = self.path.split("?")[0]
        if route.endswith(":countTokens"):
            self.server.record(self.path, "count", request)
            return self.send_json(200, {"totalTokens": max(1, len(json.dumps(request)) // 4)})
        if route.endswith(":embedContent") or route.endswith(":batchEmbedContents"):
            self.server.record(self.path, "other", request)
            return self.send_json(200, {"embedding": {"values": [0.0] * 8}})
        if not route.endswith(("GenerateContent", ":generateContent")):
            self.server.record(self.path, "other", request)
            return self.send_json(404, api_error(404, f"no such method: {route}"))
        reply = self.server.model.reply(request)
        self.server.record(self.path, reply.turn, request)
        try:
            if reply.error:
                self.send_json(reply.error, api_error(reply.error, f"scripted error {reply.error}"))
            elif route.endswith(":streamGenerateContent"):
                self.stream(model_of(route), reply)
            else:
                self.send_json(200, response(model_of(route), reply, content(reply)))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the CLI went away (interrupted or killed)

    def stream(self, model, reply):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        # The end of the stream is the end of the connection: no chunked framing needed.
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

        def send(chunk):
            self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
            self.wfile.flush()

        if reply.tool:
            return send(response(model, reply, content(reply)))
        pieces = re.findall(r"\S+\s*|\s+", reply.text) or [""]
        # A slow answer needs enough pieces to show progress every half second or so.
        if reply.seconds and len(pieces) < reply.seconds * 2:
            pieces = list(reply.text) or [""]
        deadline = time.monotonic() + reply.seconds
        for n, piece in enumerate(pieces):
            due = deadline - reply.seconds * (len(pieces) - n - 1) / len(pieces)
            while time.monotonic() < due:
                time.sleep(min(0.5, due - time.monotonic()))
            last = n == len(pieces) - 1
            chunk = response(model, reply, {"role": "model", "parts": [{"text": piece}]}, final=last)
            send(chunk)


def content(reply):
    if reply.tool:
        name, args, call_id = reply.tool
        return {"role": "model", "parts": [{"functionCall": {"id": call_id, "name": name, "args": args}}]}
    return {"role": "model", "parts": [{"text": reply.text}]}


def response(model, reply, body, final=True):
    candidate = {"content": body, "index": 0}
    out = {"candidates": [candidate], "modelVersion": model, "responseId": uuid.uuid4().hex[:20]}
    if final:
        candidate["finishReason"] = "STOP"
        # Known numbers (tests/it/cost.rs sums them): a 10-token prompt, 4 of it cached; 5
        # tokens of answer and 2 of thinking (the API counts those apart from the answer).
        out["usageMetadata"] = {
            "promptTokenCount": 10,
            "cachedContentTokenCount": 4,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 2,
            "totalTokenCount": 17,
        }
    return out


def model_info(name):
    return {
        "name": f"models/{name}",
        "baseModelId": name,
        "version": "stand-in",
        "displayName": name,
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
    }


def api_error(code, text):
    return {"error": {"code": code, "message": text, "status": STATUS.get(code, "UNKNOWN")}}


def main():
    standin.serve(__doc__.split("\n")[0], lambda address, log, _: Server(address, log))


if __name__ == "__main__":
    main()

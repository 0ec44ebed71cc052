#!/usr/bin/env python3
"""The OpenAI Chat Completions API as the tests need it: scripted, on 127.0.0.1, standard library only.

The real `aider` CLI talks to this instead of the network (through litellm:
`--openai-api-base http://127.0.0.1:PORT/v1 --model openai/NAME`). aider has no tool calls:
it edits files through edit blocks in the answer's text and offers to run the shell
commands an answer suggests in ```bash blocks, asking the person first. What the "model"
does is written into the prompt as markers (see README.md beside this file):

    [[bash: CMD]]  [[write: PATH | TEXT]]  [[slow: N]]  [[error: CODE]]  [[say: TEXT]]

    python3 openai_chat.py --port 0 --port-file PORT_FILE --log requests.jsonl

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
# System prompts of aider's helper requests (commit messages, history summaries): they
# quote the conversation, and are never a turn.
HELPER_SYSTEM = ("commit message", "summarize this")
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    429: "rate_limit_exceeded",
}


def script(text):
    """The markers in `text`, the first of each name."""
    found = {}
    for name, value in MARKER.findall(text):
        found.setdefault(name.lower(), value.strip())
    return found


def text_of(content):
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(p.get("text") or "" for p in parts if isinstance(p, dict) and p.get("type") == "text")


def user_texts(messages):
    """The user side of the conversation, oldest first, whitespace-trimmed. aider sends its
    few-shot examples, the files and the earlier turns as user messages too: which of these
    is the new prompt is decided by what was answered before (Model.decide)."""
    out = []
    for m in messages:
        if m.get("role") == "user":
            text = text_of(m.get("content")).strip()
            if text:
                out.append(text)
    return out


def is_helper(messages):
    system = " ".join(text_of(m.get("content")) for m in messages if m.get("role") == "system").lower()
    return any(words in system for words in HELPER_SYSTEM)


def fingerprint(messages):
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


class Reply:
    """What to send back: an HTTP error, or text streamed over `seconds`."""

    def __init__(self, turn, text="", seconds=0.0, error=None):
        self.turn, self.text, self.seconds, self.error = turn, text, seconds, error


def answer_to(text, turn):
    """The reply a prompt's markers ask for. A shell command is a ```bash block (aider asks
    "Run shell command?"); a file is a SEARCH/REPLACE block with an empty SEARCH, aider's
    "diff" edit format for a new file (aider asks "Create new file?")."""
    s = script(text)
    if "error" in s:
        code = int(s["error"]) if s["error"].isdigit() else 500
        return Reply(turn, error=code if 400 <= code <= 599 else 500)
    try:
        seconds = max(0.0, float(s.get("slow", "0")))
    except ValueError:
        seconds = 0.0
    say = s.get("say", DEFAULT_ANSWER)
    if "bash" in s:
        return Reply(turn, f"{say}\n\n```bash\n{s['bash']}\n```\n", seconds)
    if "write" in s:
        path, _, body = s["write"].partition("|")
        block = f"{path.strip()}\n```\n<<<<<<< SEARCH\n=======\n{body.strip()}\n>>>>>>> REPLACE\n```\n"
        return Reply(turn, f"{say}\n\n{block}", seconds)
    return Reply(turn, say, seconds)


class Model:
    """Decides each reply. aider resends the whole conversation each time (its few-shot
    examples, the files in the chat, earlier turns, and messages it adds itself, such as
    "I committed the changes"), and may add a reminder after the newest prompt; so the newest
    prompt is not found by position. Per conversation (aider names none: the API key is
    the key) the model remembers how many times each text had been sent when it last
    answered: a text sent more often than that is new, and the newest new text is the
    prompt. A request with nothing new is a resend and gets the last reply again."""

    def __init__(self):
        self.lock = threading.Lock()
        self.answered = {}  # conversation -> Counter of texts as sent when last answered
        self.last = {}  # conversation -> the last reply it got
        self.replies = {}  # (conversation, fingerprint) -> the reply given (retries get it again)

    def reply(self, key, request):
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        texts = user_texts(messages)
        if is_helper(messages):
            return Reply("side", text="Scripted change")
        with self.lock:
            seen_key = (key, fingerprint(messages))
            if seen_key in self.replies:
                return self.again(self.replies[seen_key], "retry")
            reply = self.decide(key, texts)
            self.last[key] = reply
            if len(self.replies) > 10000:
                self.replies.clear()
            self.replies[seen_key] = reply
            return reply

    def decide(self, key, texts):
        answered = self.answered.setdefault(key, Counter())
        sent, prompt = Counter(), None
        for text in texts:
            sent[text] += 1
            if sent[text] > answered[text]:
                prompt = text
        if prompt is not None:
            for text, count in sent.items():
                answered[text] = max(answered[text], count)
            return answer_to(prompt, "prompt")
        if key in self.last:
            return self.again(self.last[key], "again")
        return answer_to(texts[-1] if texts else "", "again")

    def again(self, reply, turn):
        return Reply(turn, reply.text, reply.seconds, reply.error)


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
        if route.endswith("/models"):
            return self.send_json(200, {"object": "list", "data": []})
        self.send_json(404, api_error(404, "no such route"))

    def do_POST(self):
        try:
            request = json.loads(self.body() or b"{}")
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self.server.record(self.path, "bad", {})
            return self.send_json(400, api_error(400, "the body is not a JSON object"))
        route = self.path.split("?")[0].rstrip("/")
        if not route.endswith("/chat/completions"):
            self.server.record(self.path, "other", request)
            return self.send_json(404, api_error(404, "no such route"))
        # aider names no conversation; the API key it was given stands for one.
        key = (self.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        reply = self.server.model.reply(key, request)
        self.server.record(self.path, reply.turn, request)
        try:
            if reply.error:
                self.send_json(reply.error, api_error(reply.error, f"scripted error {reply.error}"))
            elif request.get("stream"):
                self.stream(request, reply)
            else:
                self.send_json(200, completion(request, reply))
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
        head = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:24],
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.get("model") or "stand-in",
            "system_fingerprint": None,
        }

        def send(choices, **extra):
            data = dict(head, choices=choices, **extra)
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def delta(d, finish=None):
            return [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}]

        send(delta({"role": "assistant", "content": ""}))
        pieces = re.findall(r"\S+\s*|\s+", reply.text) or [""]
        deadline = time.monotonic() + reply.seconds
        for n, piece in enumerate(pieces):
            # Spread the pieces over the time asked.
            due = deadline - reply.seconds * (len(pieces) - n - 1) / len(pieces)
            while time.monotonic() < due:
                time.sleep(min(0.5, due - time.monotonic()))
            send(delta({"content": piece}))
        send(delta({}, "stop"))
        if (request.get("stream_options") or {}).get("include_usage"):
            send([], usage=usage(request, reply))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def usage(request, reply):
    prompt = max(1, len(json.dumps(request.get("messages") or [])) // 4)
    answer = max(1, len(reply.text) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer}


def completion(request, reply):
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or "stand-in",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": usage(request, reply),
    }


def api_error(code, text):
    kind = ERROR_TYPES.get(code, "server_error" if code >= 500 else "invalid_request_error")
    return {"error": {"message": text, "type": kind, "param": None, "code": kind}}


def main():
    standin.serve(__doc__.split("\n")[0], lambda address, log, _: Server(address, log))


if __name__ == "__main__":
    main()

"""What every API stand-in here shares: a threading HTTP server that logs each request as
one JSON line, a handler that reads (chunked or gzip) bodies and answers JSON, scripted
faults chosen by method and path, and the command line (--port, --port-file, --log) with
a server that ends with its parent."""

import argparse
import gzip
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address, handler, log_path):
        super().__init__(address, handler)
        self.log_path = log_path
        self.log_lock = threading.Lock()

    def append_log(self, entry):
        if not self.log_path:
            return
        line = (json.dumps(entry) + "\n").encode()
        # One write() per line on an O_APPEND file: a reader sees whole lines or a prefix
        # of the last one, never two interleaved.
        with self.log_lock:
            fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                while line:
                    line = line[os.write(fd, line) :]
            finally:
                os.close(fd)

    def record(self, path, turn, request):
        self.append_log({"path": path, "turn": turn, "request": request})


class Faults:
    """A world's scripted faults: {"method", "path" (a part of it), "status", "retry_after",
    "delay", "times" (used up after), "after" (matches skipped first)}."""

    def __init__(self, specs):
        self.lock = threading.Lock()
        self.specs = [dict(f) for f in specs or []]

    def match(self, method, path):
        """The first scripted fault matching this request (used up after `times`)."""
        with self.lock:
            for f in self.specs:
                if f.get("method") and f["method"] != method:
                    continue
                if f.get("path") and f["path"] not in path:
                    continue
                if f.get("seen", 0) < int(f.get("after") or 0):
                    f["seen"] = f.get("seen", 0) + 1
                    continue
                if f.get("times") is not None:
                    if f["times"] <= 0:
                        continue
                    f["times"] -= 1
                return dict(f)
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "orchestra-api-stand-in"
    json_type = "application/json"

    def log_message(self, *args):
        pass

    def body(self):
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        else:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if (self.headers.get("content-encoding") or "").lower() == "gzip":
            raw = gzip.decompress(raw)
        return raw

    def send_json(self, status, obj, headers=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", self.json_type)
        self.send_header("content-length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class WorldHandler(Handler):
    """A handler whose every method goes to its `answer(method)`."""

    def do_GET(self):
        self.answer("GET")

    def do_POST(self):
        self.answer("POST")

    def do_PATCH(self):
        self.answer("PATCH")


def exit_with_parent(parent):
    """A test killed without its cleanup must not leave this server behind."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


def serve(description, make_server, more_args=lambda ap: None):
    """Parses the common command line (and `more_args`), makes the server with
    `make_server(address, log_path, args)`, writes the port file once listening, serves."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    ap.add_argument("--port-file", help="written (atomically) with the port once listening")
    ap.add_argument("--log", help="append each request here as a JSON line")
    more_args(ap)
    args = ap.parse_args()
    server = make_server(("127.0.0.1", args.port), args.log, args)
    if args.port_file:
        tmp = f"{args.port_file}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{server.server_address[1]}\n")
        os.replace(tmp, args.port_file)
    threading.Thread(target=exit_with_parent, args=(os.getppid(),), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def serve_world(doc, make, what):
    """`serve` for a stand-in whose world is a JSON file (--world): `make(address,
    log_path, spec)` makes its server."""
    def world_arg(ap):
        ap.add_argument("--world", required=True, help=f"the {what}, as JSON (see above)")

    def make_server(address, log, args):
        with open(args.world) as f:
            return make(address, log, json.load(f))

    serve(doc.split("\n")[0], make_server, world_arg)

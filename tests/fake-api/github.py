#!/usr/bin/env python3
"""GitHub's REST API as `orchestra pr` uses it: on 127.0.0.1, standard library only, its
repositories described by a JSON file. Written from GitHub's REST reference (pulls: list,
create, update; repos: get).

    python3 github.py --port 0 --port-file PORT_FILE --log requests.jsonl --world world.json

It serves:

    GET   /repos/{o}/{r}                  the repository (default_branch)
    GET   /repos/{o}/{r}/pulls            ?state=open|closed|all &head=owner:branch &base=
                                          &per_page= &page=  (pagination by a Link header)
    POST  /repos/{o}/{r}/pulls            {title, body, head, base, draft}: 201; 422 when an
                                          open PR exists for head, or head/base is no branch
    PATCH /repos/{o}/{r}/pulls/{n}        {title, body, base, state}

GETs carry an ETag; `If-None-Match` with the current one is answered 304 (no body).

The world file:

    {"token": "ghp_…",                    # the one token accepted (Authorization: Bearer/token)
     "repos": {"o/r": {"default_branch": "main",
                       "git_dir": "/path/to/bare.git",    # branches are this repository's
                       "branches": ["main"],              # or these, without git_dir
                       "pulls": [{"head": "session/x", "base": "main", "title": "…"}]}},
     "per_page": 30,                      # the most results one page holds
     "faults": [{"method": "POST", "path": "/pulls", "status": 403, "retry_after": "60", "times": 1},
                {"path": "/repos/", "delay": 5},
                {"method": "PATCH", "status": 502, "after": 1},   # from the 2nd match on
                {"method": "GET", "path": "/pulls", "status": 200, "answer": [], "times": 1}]}

Each request is appended to --log as one JSON line {"method", "path", "auth", "body"}
before it is answered; "auth" is "ok", "bad" or "none": the token itself is never written.
"""

import hashlib
import json
import os
import subprocess
import threading
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import standin

DOCS = "https://docs.github.com/rest"


def error(status, message, errors=None):
    obj = {"message": message, "documentation_url": DOCS, "status": str(status)}
    if errors:
        obj["errors"] = errors
    return status, obj


class World:
    """The repositories, in memory: creating and updating change them."""

    def __init__(self, spec):
        self.lock = threading.Lock()
        self.token = spec.get("token") or ""
        self.per_page = int(spec.get("per_page") or 30)
        self.origin = ""  # the server's own address, for Link headers
        self.repos = {}
        self.next_number = 1
        for name, repo in (spec.get("repos") or {}).items():
            owner = name.split("/")[0]
            pulls = []
            for p in repo.get("pulls") or []:
                pulls.append(self.pull(owner, name, p))
            self.repos[name.lower()] = dict(repo, full_name=name, owner=owner, pulls=pulls)
        self.faults = standin.Faults(spec.get("faults"))

    def pull(self, owner, full_name, p):
        number = self.next_number
        self.next_number += 1
        head = p["head"].split(":")[-1]
        return {
            "url": f"/repos/{full_name}/pulls/{number}",
            "html_url": f"https://github.example/{full_name}/pull/{number}",
            "number": number,
            "state": p.get("state") or "open",
            "title": p.get("title") or "",
            "body": p.get("body"),
            "draft": bool(p.get("draft")),
            "user": {"login": owner},
            "head": {"label": f"{owner}:{head}", "ref": head, "repo": {"full_name": full_name}},
            "base": {"label": f"{owner}:{p.get('base') or 'main'}", "ref": p.get("base") or "main"},
            "merged": False,
        }

    def branch_exists(self, repo, branch):
        if repo.get("git_dir"):
            done = subprocess.run(["git", "--git-dir", repo["git_dir"], "rev-parse", "--verify", "-q",
                                   f"refs/heads/{branch}"], capture_output=True)
            return done.returncode == 0
        return branch in (repo.get("branches") or [])

    def fault(self, method, path):
        """The first scripted fault matching this request (used up after `times`)."""
        return self.faults.match(method, path)

    def handle(self, method, path, query, body):
        """(status, object, headers) for one authorised request."""
        parts = [p for p in path.split("/") if p]
        if len(parts) < 3 or parts[0] != "repos":
            return (*error(404, "Not Found"), [])
        name = f"{parts[1]}/{parts[2]}".lower()
        with self.lock:
            repo = self.repos.get(name)
            if repo is None:
                return (*error(404, "Not Found"), [])
            rest = parts[3:]
            if rest == [] and method == "GET":
                return 200, {"id": 1, "name": parts[2], "full_name": repo["full_name"],
                             "owner": {"login": repo["owner"]}, "private": True,
                             "default_branch": repo.get("default_branch") or "main",
                             "html_url": f"https://github.example/{repo['full_name']}"}, []
            if rest == ["pulls"] and method == "GET":
                return self.list_pulls(repo, path, query)
            if rest == ["pulls"] and method == "POST":
                return self.create_pull(repo, body)
            if len(rest) == 2 and rest[0] == "pulls" and method in ("PATCH", "GET"):
                found = [p for p in repo["pulls"] if str(p["number"]) == rest[1]]
                if not found:
                    return (*error(404, "Not Found"), [])
                pull = found[0]
                if method == "GET":
                    return 200, pull, []
                return self.update_pull(repo, pull, body)
        return (*error(404, "Not Found"), [])

    def list_pulls(self, repo, path, query):
        one = lambda k, d=None: (query.get(k) or [d])[0]  # noqa: E731
        state = one("state", "open")
        pulls = [p for p in repo["pulls"] if state == "all" or p["state"] == state]
        head = one("head")
        if head:
            # owner:branch (GitHub ignores a head without the owner's prefix).
            owner, _, branch = head.partition(":")
            pulls = [p for p in pulls if branch and p["head"]["ref"] == branch
                     and owner.lower() == repo["owner"].lower()]
        if one("base"):
            pulls = [p for p in pulls if p["base"]["ref"] == one("base")]
        per_page = max(1, min(int(one("per_page", 30)), 100, self.per_page))
        page = max(1, int(one("page", 1)))
        chunk = pulls[(page - 1) * per_page: page * per_page]
        last = max(1, -(-len(pulls) // per_page))
        links = []
        base = {k: v[0] for k, v in query.items()}

        def link(n, rel):
            return f"<{self.origin}{path}?{urlencode(dict(base, page=n))}>; rel=\"{rel}\""
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return 200, chunk, [("link", ", ".join(links))] if links else []

    def create_pull(self, repo, body):
        body = body if isinstance(body, dict) else {}
        missing = [k for k in ("head", "base") if not body.get(k)]
        if missing or not (body.get("title") or body.get("issue")):
            return (*error(422, "Validation Failed",
                           [{"resource": "PullRequest", "field": k, "code": "missing_field"}
                            for k in missing or ["title"]]), [])
        head = body["head"].split(":")[-1]
        if not self.branch_exists(repo, body["base"]):
            return (*error(422, "Validation Failed",
                           [{"resource": "PullRequest", "field": "base", "code": "invalid"}]), [])
        if not self.branch_exists(repo, head):
            return (*error(422, "Validation Failed",
                           [{"resource": "PullRequest", "field": "head", "code": "invalid"}]), [])
        if any(p["head"]["ref"] == head and p["state"] == "open" for p in repo["pulls"]):
            return (*error(422, "Validation Failed",
                           [{"resource": "PullRequest", "code": "custom",
                             "message": f"A pull request already exists for {repo['owner']}:{head}."}]), [])
        pull = self.pull(repo["owner"], repo["full_name"],
                         {"head": head, "base": body["base"], "title": body.get("title"),
                          "body": body.get("body"), "draft": body.get("draft")})
        repo["pulls"].append(pull)
        return 201, pull, [("location", pull["url"])]

    def update_pull(self, repo, pull, body):
        body = body if isinstance(body, dict) else {}
        if "base" in body and not self.branch_exists(repo, body["base"]):
            return (*error(422, "Validation Failed",
                           [{"resource": "PullRequest", "field": "base", "code": "invalid"}]), [])
        for key in ("title", "body"):
            if key in body:
                pull[key] = body[key]
        if "base" in body:
            pull["base"] = {"label": f"{repo['owner']}:{body['base']}", "ref": body["base"]}
        if body.get("state") in ("open", "closed"):
            pull["state"] = body["state"]
        return 200, pull, []


class Server(standin.Server):
    def __init__(self, address, log_path, world):
        super().__init__(address, Handler, log_path)
        self.world = world
        world.origin = f"http://{address[0]}:{self.server_address[1]}"


class Handler(standin.WorldHandler):
    server_version = "orchestra-github-stand-in"
    json_type = "application/json; charset=utf-8"

    def answer(self, method):
        raw = self.body() if method != "GET" else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<not JSON>"
        url = urlsplit(self.path)
        world = self.server.world
        header = self.headers.get("authorization") or ""
        scheme, _, given = header.partition(" ")
        if not header:
            auth = "none"
        elif world.token and scheme.lower() in ("bearer", "token") and given == world.token:
            auth = "ok"
        else:
            auth = "bad"
        self.server.append_log({"method": method, "path": self.path, "auth": auth, "body": body})
        try:
            fault = world.fault(method, self.path)
            if fault and fault.get("delay"):
                time.sleep(float(fault["delay"]))
            if fault and fault.get("status"):
                status = int(fault["status"])
                headers = [("retry-after", str(fault["retry_after"]))] if "retry_after" in fault else []
                messages = {401: "Bad credentials", 403: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                            404: "Not Found", 422: "Validation Failed"}
                _, obj = error(status, messages.get(status, "Server Error"))
                # "answer": the body to send instead (a stale list, as a lagging replica gives).
                return self.send_json(status, fault.get("answer", obj), headers)
            if auth != "ok":
                if auth == "none" and url.path.startswith("/repos/"):
                    return self.send_json(*error(404, "Not Found"))  # private repos hide
                return self.send_json(*error(401, "Bad credentials"))
            if body == "<not JSON>":
                return self.send_json(*error(400, "Problems parsing JSON"))
            status, obj, headers = world.handle(method, url.path, parse_qs(url.query), body)
            if method == "GET" and status == 200:
                etag = '"' + hashlib.sha1(json.dumps(obj, sort_keys=True).encode()).hexdigest() + '"'
                headers = list(headers) + [("etag", etag)]
                if self.headers.get("if-none-match") == etag:
                    self.send_response(304)
                    for k, v in headers:
                        self.send_header(k, v)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
            self.send_json(status, obj, headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout)


def main():
    standin.serve_world(__doc__, lambda address, log, spec: Server(address, log, World(spec)), "repositories")


if __name__ == "__main__":
    main()

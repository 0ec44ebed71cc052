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

Pull request state (what `orchestra pr --background` reads):

    GET   /repos/{o}/{r}/pulls/{n}                  one PR, with comments and review_comments
    GET   /repos/{o}/{r}/pulls/{n}/reviews          its reviews (state APPROVED, CHANGES_REQUESTED, …)
    GET   /repos/{o}/{r}/commits/{sha}/check-runs   {total_count, check_runs: [{id, name, status,
                                                    conclusion, output: {title, summary, text}}]}
    GET   /repos/{o}/{r}/check-runs/{id}             one check run (its output)
    GET   /repos/{o}/{r}/actions/jobs/{id}/logs     302 to the job's plain-text log (/_logs/{id},
                                                    which asks for no token, as GitHub's does not)
    POST  /graphql                                  markPullRequestReadyForReview(input: {pullRequestId})

Issues (GitHub Issues as a task source; issues and pulls share one number sequence, and
the issue routes answer for pulls too, with a "pull_request" key, as GitHub's do):

    GET   /user                                   the token's user ({"login": world "login"})
    GET   /repos/{o}/{r}/issues                   ?state=open|closed|all &labels=a,b (all of them)
                                                  &assignee=LOGIN|none|* &sort=created|updated
                                                  &direction=asc|desc &per_page= &page= (Link)
    GET   /repos/{o}/{r}/assignees/{login}        204 when the login may be assigned, else 404
    GET   /repos/{o}/{r}/issues/{n}               one issue (a pull's number: the pull as an issue)
    PATCH /repos/{o}/{r}/issues/{n}               {title, body, state, state_reason, labels,
                                                  assignees}: labels and assignees replace the
                                                  sets; a login that is no collaborator: 422
    POST  /repos/{o}/{r}/issues/{n}/comments      {body}: 201, the comment (its issue's
                                                  "comments" count grows)

A pull merged through /_control closes the issues its body names with a closing keyword
("Fixes #3", "closes #4"), as GitHub does.

A pull's `head.sha` is its branch's tip in git_dir when read (a push moves it and its
`updated_at`, as on GitHub). The rate limit: each authorised answer but a 304 costs a
point (x-ratelimit-* headers say what is left); each log line carries "cost" (0 or 1).

The test's hand on the "server" (never logged, no token): POST /_control with any of

    {"repo": "o/r", "pull": {"number": 1, "merged": true, "state": "closed", "draft": false,
                             "comments": 2}},           # a merge (squash or not) on the web
    {"repo": "o/r", "branch": "session/x",            # check runs of the branch's tip (or "sha")
     "check_runs": [{"name": "lint", "status": "completed", "conclusion": "failure",
                     "output": {"title": "…", "summary": "…", "text": "…"}, "log": "…"}]},
    {"repo": "o/r", "number": 1, "reviews": [{"user": "ann", "state": "CHANGES_REQUESTED"}]},
    {"repo": "o/r", "issue": {"number": 2, "state": "closed"}}   # closed by someone on the web

The world file:

    {"token": "ghp_…",                    # the one token accepted (Authorization: Bearer/token)
     "repos": {"o/r": {"default_branch": "main",
                       "git_dir": "/path/to/bare.git",    # branches are this repository's
                       "branches": ["main"],              # or these, without git_dir
                       "pulls": [{"head": "session/x", "base": "main", "title": "…"}],
                       "issues": [{"title": "…", "body": "…", "labels": ["bug"],
                                   "assignees": ["ann"], "state": "open"}],
                       "collaborators": ["ann"]}},     # assignable beside the owner and login
     "login": "me",                       # the token's user (GET /user)
     "per_page": 30,                      # the most results one page holds
     "faults": [{"method": "POST", "path": "/pulls", "status": 403, "retry_after": "60", "times": 1},
                {"path": "/repos/", "delay": 5},
                {"method": "PATCH", "status": 502, "after": 1},   # from the 2nd match on
                {"method": "GET", "path": "/pulls", "status": 200, "answer": [], "times": 1}]}

Each request is appended to --log as one JSON line {"method", "path", "auth", "body"}
before it is answered; "auth" is "ok", "bad" or "none": the token itself is never written.
"""

import hashlib
import re
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
        self.clock = 0  # updated_at, a second per change
        self.check_runs = {}  # (repo name, sha) -> [run]
        self.reviews = {}  # (repo name, number) -> [review]
        self.logs = {}  # check run id -> its log text
        self.next_run = 1000
        self.rate_limit = int(spec.get("rate_limit") or 5000)
        self.rate_used = 0
        self.node_ids = {}  # node id -> pull
        self.login = spec.get("login") or "me"
        self.next_comment = 1
        for name, repo in (spec.get("repos") or {}).items():
            owner = name.split("/")[0]
            # Numbered issues first, then pulls (one sequence, as on GitHub).
            issues = [self.issue(name, i) for i in repo.get("issues") or []]
            pulls = []
            for p in repo.get("pulls") or []:
                pulls.append(self.pull(owner, name, p))
            self.repos[name.lower()] = dict(repo, full_name=name, owner=owner, pulls=pulls, issues=issues)
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
            "merged_at": None,
            "updated_at": self.tick(),
            "comments": 0,
            "review_comments": 0,
            "node_id": f"PR_{number}",
        }

    def issue(self, full_name, i):
        number = self.next_number
        self.next_number += 1
        stamp = self.tick()
        return {
            "url": f"/repos/{full_name}/issues/{number}",
            "html_url": f"https://github.example/{full_name}/issues/{number}",
            "number": number,
            "state": i.get("state") or "open",
            "state_reason": None,
            "title": i.get("title") or "",
            "body": i.get("body"),
            "user": {"login": full_name.split("/")[0]},
            "labels": [self.label(n) for n in i.get("labels") or []],
            "assignees": [{"login": a} for a in i.get("assignees") or []],
            "comments": 0,
            "created_at": stamp,
            "updated_at": stamp,
            "closed_at": None,
            "node_id": f"I_{number}",
        }

    @staticmethod
    def label(name):
        return {"name": name, "color": "ededed", "default": False}

    def as_issue(self, repo, pull):
        """A pull request as the issue routes show it."""
        return {
            "url": f"/repos/{repo['full_name']}/issues/{pull['number']}",
            "html_url": pull["html_url"], "number": pull["number"], "state": pull["state"],
            "title": pull["title"], "body": pull["body"], "user": pull["user"],
            "labels": [], "assignees": [], "comments": pull["comments"],
            "updated_at": pull["updated_at"], "created_at": pull["updated_at"],
            "node_id": pull["node_id"],
            "pull_request": {"url": pull["url"], "html_url": pull["html_url"],
                             "merged_at": pull["merged_at"]},
        }

    def issue_list(self, repo):
        both = list(repo["issues"]) + [self.as_issue(repo, p) for p in repo["pulls"]]
        return sorted(both, key=lambda i: i["number"])

    def handle_issue(self, repo, method, rest, query, body, path):
        """The issue routes; None when `rest` is none of them."""
        if rest == ["issues"] and method == "GET":
            return self.list_issues(repo, path, query)
        if len(rest) == 2 and rest[0] == "assignees" and method == "GET":
            # "Check if a user can be assigned": 204, else 404.
            return (204, None, []) if self.assignable(repo, rest[1]) else (*error(404, "Not Found"), [])
        if len(rest) < 2 or rest[0] != "issues" or not rest[1].isdigit():
            return None
        number = int(rest[1])
        issue = next((i for i in repo["issues"] if i["number"] == number), None)
        pull = next((p for p in repo["pulls"] if p["number"] == number), None)
        if issue is None and pull is None:
            return (*error(404, "Not Found"), [])
        if len(rest) == 2 and method == "GET":
            return 200, issue if issue is not None else self.as_issue(repo, pull), []
        if issue is None:
            return (*error(404, "Not Found"), [])  # this stand-in edits no pull as an issue
        if len(rest) == 2 and method == "PATCH":
            return self.update_issue(repo, issue, body)
        if rest[2:] == ["comments"] and method == "POST":
            text = body.get("body") if isinstance(body, dict) else None
            if not isinstance(text, str) or not text:
                return (*error(422, "Validation Failed",
                               [{"resource": "IssueComment", "field": "body", "code": "missing_field"}]), [])
            comment = {"id": self.next_comment, "body": text, "user": {"login": self.login},
                       "html_url": f"{issue['html_url']}#issuecomment-{self.next_comment}",
                       "created_at": self.tick()}
            self.next_comment += 1
            issue.setdefault("comment_list", []).append(comment)
            issue["comments"] += 1
            issue["updated_at"] = comment["created_at"]
            return 201, comment, []
        return None

    def list_issues(self, repo, path, query):
        one = lambda k, d=None: (query.get(k) or [d])[0]  # noqa: E731
        state = one("state", "open")
        if state not in ("open", "closed", "all"):
            return (*error(422, "Validation Failed",
                           [{"resource": "Issue", "field": "state", "code": "invalid"}]), [])
        issues = [i for i in self.issue_list(repo) if state == "all" or i["state"] == state]
        wanted = [n for n in (one("labels") or "").split(",") if n]
        if wanted:
            issues = [i for i in issues
                      if all(n.lower() in [x["name"].lower() for x in i["labels"]] for n in wanted)]
        assignee = one("assignee")
        if assignee == "none":
            issues = [i for i in issues if not i["assignees"]]
        elif assignee == "*":
            issues = [i for i in issues if i["assignees"]]
        elif assignee:
            issues = [i for i in issues if assignee.lower() in [a["login"].lower() for a in i["assignees"]]]
        key = "updated_at" if one("sort") == "updated" else "number"
        issues = sorted(issues, key=lambda i: i[key], reverse=one("direction", "desc") == "desc")
        return self.page_of(issues, path, query)

    def assignable(self, repo, login):
        known = [repo["owner"], self.login] + list(repo.get("collaborators") or [])
        return login.lower() in [k.lower() for k in known]

    def update_issue(self, repo, issue, body):
        body = body if isinstance(body, dict) else {}
        if "assignees" in body:
            bad = [a for a in body["assignees"] or [] if not self.assignable(repo, str(a))]
            if bad:
                return (*error(422, "Validation Failed",
                               [{"value": bad[0], "resource": "Issue", "field": "assignees", "code": "invalid"}]), [])
        if "state" in body and body["state"] not in ("open", "closed"):
            return (*error(422, "Validation Failed",
                           [{"resource": "Issue", "field": "state", "code": "invalid"}]), [])
        if body.get("state_reason") not in (None, "completed", "not_planned", "reopened"):
            return (*error(422, "Validation Failed",
                           [{"resource": "Issue", "field": "state_reason", "code": "invalid"}]), [])
        for key in ("title", "body"):
            if key in body:
                issue[key] = body[key]
        if "labels" in body:
            issue["labels"] = [self.label(str(n)) for n in body["labels"] or []]
        if "assignees" in body:
            issue["assignees"] = [{"login": str(a)} for a in body["assignees"] or []]
        if body.get("state") in ("open", "closed") and body["state"] != issue["state"]:
            self.set_state(issue, body["state"], body.get("state_reason"))
        issue["updated_at"] = self.tick()
        return 200, {k: v for k, v in issue.items() if k != "comment_list"}, []

    def set_state(self, issue, state, reason=None):
        issue["state"] = state
        issue["state_reason"] = (reason or "completed") if state == "closed" else "reopened"
        issue["closed_at"] = self.tick() if state == "closed" else None

    def close_named(self, repo, text):
        """What a merged pull's closing keywords ("Fixes #3") close."""
        for match in re.finditer(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#(\d+)\b", text or "", re.I):
            for issue in repo["issues"]:
                if issue["number"] == int(match.group(1)) and issue["state"] == "open":
                    self.set_state(issue, "closed", "completed")

    def page_of(self, items, path, query):
        """One page of `items` and the Link header naming the others."""
        one = lambda k, d=None: (query.get(k) or [d])[0]  # noqa: E731
        per_page = max(1, min(int(one("per_page", 30)), 100, self.per_page))
        page = max(1, int(one("page", 1)))
        chunk = items[(page - 1) * per_page: page * per_page]
        last = max(1, -(-len(items) // per_page))
        links = []
        base = {k: v[0] for k, v in query.items()}

        def link(n, rel):
            return f"<{self.origin}{path}?{urlencode(dict(base, page=n))}>; rel=\"{rel}\""
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return 200, chunk, [("link", ", ".join(links))] if links else []

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
        if parts == ["user"] and method == "GET":
            return 200, {"login": self.login, "id": 1, "type": "User"}, []
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
            issue_answer = self.handle_issue(repo, method, rest, query, body, path)
            if issue_answer is not None:
                return issue_answer
            state_answer = self.handle_state(repo, name, method, rest)
            if state_answer is not None:
                return state_answer
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
        for p in repo["pulls"]:
            self.follow_head(repo, p)
        pulls = [p for p in repo["pulls"] if state == "all" or p["state"] == state]
        if one("sort") == "updated":
            pulls = sorted(pulls, key=lambda p: p["updated_at"], reverse=one("direction", "desc") == "desc")
        head = one("head")
        if head:
            # owner:branch (GitHub ignores a head without the owner's prefix).
            owner, _, branch = head.partition(":")
            pulls = [p for p in pulls if branch and p["head"]["ref"] == branch
                     and owner.lower() == repo["owner"].lower()]
        if one("base"):
            pulls = [p for p in pulls if p["base"]["ref"] == one("base")]
        return self.page_of(pulls, path, query)

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
        pull["updated_at"] = self.tick()
        return 200, pull, []

    # --- pull request state: what the background refresh reads ---

    def tick(self):
        self.clock += 1
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + self.clock))

    def tip(self, repo, branch):
        if not repo.get("git_dir"):
            return None
        done = subprocess.run(["git", "--git-dir", repo["git_dir"], "rev-parse", "--verify", "-q",
                               f"refs/heads/{branch}"], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    def follow_head(self, repo, pull):
        """A push to an open pull's branch moves its head and its updated_at."""
        if pull["state"] != "open":
            return
        sha = self.tip(repo, pull["head"]["ref"]) or pull["head"].get("sha") or "0" * 40
        if pull["head"].get("sha") != sha:
            pull["head"]["sha"] = sha
            pull["updated_at"] = self.tick()

    def handle_state(self, repo, name, method, rest):
        if method != "GET":
            return None
        if len(rest) == 3 and rest[0] == "commits" and rest[2] == "check-runs":
            runs = self.check_runs.get((name, rest[1]), [])
            return 200, {"total_count": len(runs), "check_runs": runs}, []
        if len(rest) == 2 and rest[0] == "check-runs":
            for (repo_name, _), runs in self.check_runs.items():
                for run in runs:
                    if repo_name == name and str(run["id"]) == rest[1]:
                        return 200, run, []
            return (*error(404, "Not Found"), [])
        if len(rest) == 3 and rest[0] == "pulls" and rest[2] == "reviews":
            found = [p for p in repo["pulls"] if str(p["number"]) == rest[1]]
            if not found:
                return (*error(404, "Not Found"), [])
            return 200, self.reviews.get((name, found[0]["number"]), []), []
        if len(rest) == 2 and rest[0] == "pulls":
            for p in repo["pulls"]:
                if str(p["number"]) == rest[1]:
                    self.follow_head(repo, p)
        if len(rest) == 4 and rest[:2] == ["actions", "jobs"] and rest[3] == "logs":
            if rest[2] not in self.logs:
                return (*error(404, "Not Found"), [])
            return 302, None, [("location", f"{self.origin}/_logs/{rest[2]}")]
        return None

    def control(self, body):
        """The test's change on the server: a merge, check runs, reviews."""
        body = body if isinstance(body, dict) else {}
        with self.lock:
            repo = self.repos.get((body.get("repo") or "").lower())
            if repo is None:
                return 404, {"message": "no such repo"}
            name = repo["full_name"].lower()
            if "pull" in body:
                change = body["pull"]
                for p in repo["pulls"]:
                    if p["number"] == change.get("number"):
                        self.follow_head(repo, p)
                        for key in ("state", "draft", "comments", "review_comments", "merged"):
                            if key in change:
                                p[key] = change[key]
                        if change.get("merged"):
                            p["state"] = "closed"
                            p["merged_at"] = self.tick()
                            self.close_named(repo, p["body"])
                        p["updated_at"] = self.tick()
            if "issue" in body:
                change = body["issue"]
                for i in repo["issues"]:
                    if i["number"] == change.get("number") and change.get("state") in ("open", "closed"):
                        self.set_state(i, change["state"])
                        i["updated_at"] = self.tick()
            if "check_runs" in body:
                sha = body.get("sha") or self.tip(repo, body.get("branch") or "")
                runs = []
                for run in body["check_runs"]:
                    self.next_run += 1
                    if "log" in run:
                        self.logs[str(self.next_run)] = run["log"]
                    runs.append({"id": self.next_run, "name": run.get("name") or "check",
                                 "head_sha": sha, "status": run.get("status") or "completed",
                                 "conclusion": run.get("conclusion"),
                                 "output": run.get("output") or {"title": None, "summary": None, "text": None}})
                self.check_runs[(name, sha)] = runs
            if "reviews" in body:
                number = body.get("number")
                self.reviews[(name, number)] = [
                    {"id": i + 1, "user": {"login": r.get("user") or "someone"}, "state": r["state"],
                     "body": r.get("body") or ""} for i, r in enumerate(body["reviews"])]
                for p in repo["pulls"]:
                    if p["number"] == number:
                        p["updated_at"] = self.tick()
            return 200, {"ok": True}

    def graphql(self, body):
        """markPullRequestReadyForReview, the one mutation orchestra sends."""
        body = body if isinstance(body, dict) else {}
        query = body.get("query") or ""
        node = ((body.get("variables") or {}).get("id")) or ""
        if "markPullRequestReadyForReview" not in query:
            return 200, {"errors": [{"message": "this stand-in knows only markPullRequestReadyForReview"}]}
        with self.lock:
            for repo in self.repos.values():
                for p in repo["pulls"]:
                    if p["node_id"] == node:
                        p["draft"] = False
                        p["updated_at"] = self.tick()
                        return 200, {"data": {"markPullRequestReadyForReview": {
                            "pullRequest": {"number": p["number"], "isDraft": False}}}}
        return 200, {"data": None, "errors": [{"type": "NOT_FOUND", "message": f"Could not resolve to a node with the global id of '{node}'"}]}

    def rate_headers(self, cost):
        with self.lock:
            self.rate_used += cost
            used = self.rate_used
        return [("x-ratelimit-limit", str(self.rate_limit)),
                ("x-ratelimit-remaining", str(max(0, self.rate_limit - used))),
                ("x-ratelimit-used", str(used)), ("x-ratelimit-resource", "core")]


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
        if url.path == "/_control" and method == "POST":
            return self.send_json(*world.control(body))
        if url.path.startswith("/_logs/") and method == "GET":
            return self.send_log(world, url.path.rsplit("/", 1)[-1])
        if url.path == "/graphql" and method == "POST" and auth == "ok":
            self.server.append_log({"method": method, "path": self.path, "auth": auth, "body": body, "cost": 1})
            return self.send_json(*world.graphql(body), world.rate_headers(1))
        try:
            fault = world.fault(method, self.path)
            if fault or auth != "ok" or body == "<not JSON>":
                self.server.append_log({"method": method, "path": self.path, "auth": auth, "body": body, "cost": 0})
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
            unchanged = False
            if method == "GET" and status == 200:
                etag = '"' + hashlib.sha1(json.dumps(obj, sort_keys=True).encode()).hexdigest() + '"'
                headers = list(headers) + [("etag", etag)]
                unchanged = self.headers.get("if-none-match") == etag
            # A conditional request answered 304 costs nothing against the rate limit.
            cost = 0 if unchanged else 1
            self.server.append_log({"method": method, "path": self.path, "auth": auth, "body": body,
                                    "cost": cost, "status": 304 if unchanged else status})
            headers = list(headers) + world.rate_headers(cost)
            if status in (204, 302):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            if method == "GET" and status == 200:
                if unchanged:
                    self.send_response(304)
                    for k, v in headers:
                        self.send_header(k, v)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
            self.send_json(status, obj, headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout)


    def send_log(self, world, run_id):
        """A job's log, as the address GitHub's redirect names serves it: plain text."""
        text = world.logs.get(run_id)
        if text is None:
            return self.send_json(404, {"message": "Not Found"})
        if self.headers.get("authorization"):
            # The redirect's host must never see the token.
            return self.send_json(400, {"message": "a token was sent to the log's address"})
        data = text.encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    standin.serve_world(__doc__, lambda address, log, spec: Server(address, log, World(spec)), "repositories")


if __name__ == "__main__":
    main()

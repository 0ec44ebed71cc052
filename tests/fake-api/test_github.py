#!/usr/bin/env python3
"""Tests of the GitHub REST stand-in (github.py): listing by head with Link pagination,
creating (and its 422s), updating, ETags, scripted faults, and the log without the token.

    python3 test_github.py        # exit 0 when all pass
"""

import json
import os
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import github  # noqa: E402

TOKEN = "ghp_test_t0ken"


def world(**extra):
    spec = {
        "token": TOKEN,
        "per_page": 2,
        "repos": {"me/app": {"default_branch": "trunk", "branches": ["trunk", "session/a", "session/b"],
                             "pulls": [{"head": "session/old", "base": "trunk", "title": "Old", "state": "closed"},
                                       {"head": "session/x1", "title": "x1"},
                                       {"head": "session/x2", "title": "x2"},
                                       {"head": "session/x3", "title": "x3"}]}},
        "faults": [
            {"method": "POST", "path": "/pulls", "status": 403, "retry_after": "60", "times": 1},
            {"path": "/repos/me/slow", "delay": 0.5},
            {"method": "PATCH", "status": 502, "after": 1},
        ],
    }
    spec.update(extra)
    return spec


class WireTest(unittest.TestCase):
    def setUp(self):
        self.log = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        self.server = github.Server(("127.0.0.1", 0), self.log, github.World(world()))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.log)

    def call(self, method, path, body=None, token=TOKEN, headers=None):
        headers = dict(headers or {}, accept="application/vnd.github+json")
        if token:
            headers["authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        if data:
            headers["content-type"] = "application/json"
        url = path if path.startswith("http") else self.base + path
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                raw = r.read()
                return r.status, {k.lower(): v for k, v in r.headers.items()}, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, {k.lower(): v for k, v in e.headers.items()}, json.loads(raw) if raw else None

    def logged(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_the_repository_names_its_default_branch_and_answers_304_when_unchanged(self):
        status, headers, repo = self.call("GET", "/repos/me/app")
        self.assertEqual((status, repo["default_branch"]), (200, "trunk"))
        status, _, body = self.call("GET", "/repos/me/app", headers={"if-none-match": headers["etag"]})
        self.assertEqual((status, body), (304, None))
        self.assertEqual(self.call("GET", "/repos/me/none")[0], 404)

    def test_a_wrong_token_is_401_and_the_log_never_holds_a_token(self):
        status, _, body = self.call("GET", "/repos/me/app", token="ghp_wrong")
        self.assertEqual((status, body["message"]), (401, "Bad credentials"))
        self.assertEqual(self.call("GET", "/repos/me/app", token=None)[0], 404)
        self.assertEqual(self.call("GET", "/repos/me/app")[0], 200)
        self.assertEqual([e["auth"] for e in self.logged()], ["bad", "none", "ok"])
        with open(self.log) as f:
            self.assertNotIn("ghp_", f.read())

    def test_open_pulls_page_by_link_and_filter_by_head(self):
        status, headers, first = self.call("GET", "/repos/me/app/pulls?state=open")
        self.assertEqual([p["title"] for p in first], ["x1", "x2"])
        self.assertIn('rel="next"', headers["link"])
        next_url = headers["link"].split(";")[0].strip("<>")
        _, headers, second = self.call("GET", next_url)
        self.assertEqual([p["title"] for p in second], ["x3"])
        self.assertNotIn('rel="next"', headers.get("link", ""))
        _, _, found = self.call("GET", "/repos/me/app/pulls?state=open&head=me:session/x2")
        self.assertEqual([p["number"] for p in found], [3])
        _, _, closed = self.call("GET", "/repos/me/app/pulls?state=open&head=me:session/old")
        self.assertEqual(closed, [])

    def test_create_is_refused_by_a_secondary_rate_limit_once_then_validates(self):
        pull = {"title": "T", "body": "B", "head": "session/a", "base": "trunk", "draft": True}
        status, headers, body = self.call("POST", "/repos/me/app/pulls", pull)
        self.assertEqual((status, headers["retry-after"]), (403, "60"))
        self.assertIn("secondary rate limit", body["message"])
        status, _, made = self.call("POST", "/repos/me/app/pulls", pull)
        self.assertEqual((status, made["draft"], made["head"]["ref"], made["base"]["ref"]),
                         (201, True, "session/a", "trunk"))
        status, _, again = self.call("POST", "/repos/me/app/pulls", pull)
        self.assertEqual(status, 422)
        self.assertIn("already exists", again["errors"][0]["message"])
        status, _, no_base = self.call("POST", "/repos/me/app/pulls", dict(pull, head="session/b", base="gone"))
        self.assertEqual((status, no_base["errors"][0]["field"]), (422, "base"))
        self.assertEqual(self.logged()[1]["body"], pull)

    def test_an_update_changes_the_pull_and_a_later_one_fails_as_scripted(self):
        status, _, pull = self.call("PATCH", "/repos/me/app/pulls/2", {"title": "new", "body": "text"})
        self.assertEqual((status, pull["title"], pull["body"]), (200, "new", "text"))
        self.assertEqual(self.call("PATCH", "/repos/me/app/pulls/2", {"title": "newer"})[0], 502)
        self.assertEqual(self.call("PATCH", "/repos/me/app/pulls/99", {"title": "x"})[0], 502)

    def test_a_slow_answer_comes_late(self):
        started = time.monotonic()
        self.call("GET", "/repos/me/slow")
        self.assertGreaterEqual(time.monotonic() - started, 0.5)


class PullStateTest(WireTest):
    """What the background refresh reads: the list sorted by update with ETags, check
    runs, reviews, the job log's redirect, the graphql mutation, and what each costs."""

    def control(self, body):
        return self.call("POST", "/_control", body, token=None)

    def test_a_quiet_poll_is_all_304s_and_costs_nothing(self):
        status, headers, pulls = self.call("GET", "/repos/me/app/pulls?state=all&sort=updated&direction=desc")
        self.assertEqual(status, 200)
        self.assertIn("x-ratelimit-remaining", headers)
        status, _, _ = self.call("GET", "/repos/me/app/pulls?state=all&sort=updated&direction=desc",
                                 headers={"if-none-match": headers["etag"]})
        self.assertEqual(status, 304)
        costs = [e["cost"] for e in self.logged()]
        self.assertEqual(costs, [1, 0])
        # A merge on the server changes the list: the same ETag is answered in full.
        number = pulls[0]["number"]
        self.assertEqual(self.control({"repo": "me/app", "pull": {"number": number, "merged": True}})[0], 200)
        status, _, pulls = self.call("GET", "/repos/me/app/pulls?state=all&sort=updated&direction=desc",
                                     headers={"if-none-match": headers["etag"]})
        self.assertEqual(status, 200)
        merged = [p for p in pulls if p["number"] == number][0]
        self.assertTrue(merged["merged_at"] and merged["state"] == "closed")
        self.assertNotIn("/_control", [e["path"] for e in self.logged()])

    def test_check_runs_reviews_and_a_job_log_behind_a_redirect(self):
        self.control({"repo": "me/app", "sha": "abc", "check_runs": [
            {"name": "lint", "conclusion": "failure", "log": "line 1\nerror: unused\n"},
            {"name": "test", "status": "in_progress"}]})
        status, _, runs = self.call("GET", "/repos/me/app/commits/abc/check-runs")
        self.assertEqual((status, runs["total_count"]), (200, 2))
        self.assertEqual(runs["check_runs"][0]["conclusion"], "failure")
        self.control({"repo": "me/app", "number": 2, "reviews": [{"user": "ann", "state": "CHANGES_REQUESTED"}]})
        _, _, reviews = self.call("GET", "/repos/me/app/pulls/2/reviews")
        self.assertEqual(reviews[0]["state"], "CHANGES_REQUESTED")
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.server.server_address[1], timeout=10)
        run_id = runs["check_runs"][0]["id"]
        conn.request("GET", f"/repos/me/app/actions/jobs/{run_id}/logs", headers={"authorization": f"Bearer {TOKEN}"})
        answer = conn.getresponse()
        answer.read()
        self.assertEqual(answer.status, 302)
        location = answer.getheader("location")
        conn.request("GET", location.split(str(self.server.server_address[1]), 1)[1])
        log = conn.getresponse()
        self.assertEqual((log.status, log.read()), (200, b"line 1\nerror: unused\n"))
        # The log's address refuses a token: a client that forwards it fails.
        conn.request("GET", location.split(str(self.server.server_address[1]), 1)[1],
                     headers={"authorization": f"Bearer {TOKEN}"})
        refused = conn.getresponse()
        refused.read()
        self.assertEqual(refused.status, 400)
        conn.close()

    def test_graphql_marks_a_draft_ready(self):
        _, _, pull = self.call("GET", "/repos/me/app/pulls/2")
        self.assertEqual(pull["node_id"], "PR_2")
        status, _, answer = self.call("POST", "/graphql", {
            "query": "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }",
            "variables": {"id": "PR_2"}})
        self.assertEqual(status, 200)
        self.assertFalse(answer["data"]["markPullRequestReadyForReview"]["pullRequest"]["isDraft"])
        _, _, answer = self.call("POST", "/graphql", {"query": "mutation { markPullRequestReadyForReview }",
                                                      "variables": {"id": "PR_99"}})
        self.assertEqual(answer["errors"][0]["type"], "NOT_FOUND")


class IssuesTest(unittest.TestCase):
    """GitHub Issues as a task source reads and writes: the list (pulls among it), one
    issue, a change of assignees, labels and state, a comment, the token's user, and a
    merged pull closing what its body names."""

    def setUp(self):
        self.log = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        spec = {"token": TOKEN, "per_page": 2, "login": "me", "repos": {"me/app": {
            "branches": ["main", "session/a"],
            "collaborators": ["ann"],
            "issues": [{"title": "Login", "body": "Add a login page.", "labels": ["bug", "ui"]},
                       {"title": "Docs", "labels": ["docs"], "assignees": ["ann"]},
                       {"title": "Old", "state": "closed"}],
            "pulls": [{"head": "session/a", "title": "A pull", "body": "Fixes #1"}]}}}
        self.server = github.Server(("127.0.0.1", 0), self.log, github.World(spec))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    tearDown = WireTest.tearDown
    call = WireTest.call
    logged = WireTest.logged

    def all_pages(self, path):
        items, url = [], path
        while url:
            status, headers, page = self.call("GET", url)
            self.assertEqual(status, 200)
            items += page
            links = [part.split(";")[0].strip(" <>") for part in (headers.get("link") or "").split(",")
                     if 'rel="next"' in part]
            url = links[0] if links else None
        return items

    def test_the_list_pages_holds_pulls_and_filters_by_state_labels_and_assignee(self):
        listed = self.all_pages("/repos/me/app/issues?direction=asc")
        self.assertEqual([(i["number"], "pull_request" in i) for i in listed],
                         [(1, False), (2, False), (4, True)], "open only, the pull among them")
        titles = lambda q: [i["title"] for i in self.all_pages("/repos/me/app/issues?" + q)]  # noqa: E731
        self.assertEqual(titles("labels=bug,ui"), ["Login"])
        self.assertEqual(titles("labels=bug,docs"), [])
        self.assertEqual(titles("assignee=ann"), ["Docs"])
        self.assertEqual(titles("assignee=none&direction=asc"), ["Login", "A pull"])
        self.assertEqual(titles("assignee=*"), ["Docs"])
        self.assertEqual(titles("state=closed"), ["Old"])
        self.assertEqual(len(titles("state=all")), 4)
        self.assertEqual(self.call("GET", "/repos/me/app/issues?state=shut")[0], 422)

    def test_one_issue_a_pull_as_an_issue_and_none(self):
        status, _, issue = self.call("GET", "/repos/me/app/issues/1")
        self.assertEqual((status, issue["body"], "pull_request" in issue), (200, "Add a login page.", False))
        _, _, pull = self.call("GET", "/repos/me/app/issues/4")
        self.assertIn("pull_request", pull)
        self.assertEqual(self.call("GET", "/repos/me/app/issues/99")[0], 404)
        self.assertEqual(self.call("GET", "/repos/me/app/issues/1", token="ghp_wrong")[0], 401)

    def test_a_change_replaces_assignees_and_labels_and_refuses_a_stranger(self):
        status, _, changed = self.call("PATCH", "/repos/me/app/issues/1",
                                       {"assignees": ["me"], "labels": ["bug", "ui", "in progress"]})
        self.assertEqual(status, 200)
        self.assertEqual([a["login"] for a in changed["assignees"]], ["me"])
        self.assertEqual([lb["name"] for lb in changed["labels"]], ["bug", "ui", "in progress"])
        status, _, refused = self.call("PATCH", "/repos/me/app/issues/1", {"assignees": ["stranger"]})
        self.assertEqual((status, refused["errors"][0]["field"]), (422, "assignees"))
        _, _, still = self.call("GET", "/repos/me/app/issues/1")
        self.assertEqual([a["login"] for a in still["assignees"]], ["me"], "a refused change changes nothing")
        status, _, closed = self.call("PATCH", "/repos/me/app/issues/2",
                                      {"state": "closed", "state_reason": "completed"})
        self.assertEqual((status, closed["state"], closed["state_reason"]), (200, "closed", "completed"))
        self.assertEqual(self.call("PATCH", "/repos/me/app/issues/2", {"state": "gone"})[0], 422)

    def test_a_comment_counts_and_the_user_is_the_tokens(self):
        status, _, comment = self.call("POST", "/repos/me/app/issues/2/comments", {"body": "Merged."})
        self.assertEqual((status, comment["body"], comment["user"]["login"]), (201, "Merged.", "me"))
        self.assertEqual(self.call("POST", "/repos/me/app/issues/2/comments", {})[0], 422)
        _, _, issue = self.call("GET", "/repos/me/app/issues/2")
        self.assertEqual(issue["comments"], 1)
        self.assertEqual(self.call("GET", "/repos/me/app/assignees/ann")[0], 204)
        self.assertEqual(self.call("GET", "/repos/me/app/assignees/stranger")[0], 404)
        status, _, user = self.call("GET", "/user")
        self.assertEqual((status, user["login"]), (200, "me"))
        self.assertEqual(self.call("GET", "/user", token=None)[0], 401)
        with open(self.log) as f:
            self.assertNotIn("ghp_", f.read())

    def test_a_merged_pull_closes_the_issue_its_body_names(self):
        self.call("POST", "/_control", {"repo": "me/app", "pull": {"number": 4, "merged": True}}, token=None)
        _, _, issue = self.call("GET", "/repos/me/app/issues/1")
        self.assertEqual((issue["state"], issue["state_reason"]), ("closed", "completed"))
        _, _, other = self.call("GET", "/repos/me/app/issues/2")
        self.assertEqual(other["state"], "open")
        self.call("POST", "/_control", {"repo": "me/app", "issue": {"number": 2, "state": "closed"}}, token=None)
        _, _, other = self.call("GET", "/repos/me/app/issues/2")
        self.assertEqual(other["state"], "closed")


class GitDirTest(unittest.TestCase):
    def test_branches_are_the_bare_repositorys(self):
        with tempfile.TemporaryDirectory() as tmp:
            import subprocess
            bare = os.path.join(tmp, "bare.git")
            subprocess.run(["git", "init", "-q", "--bare", "-b", "main", bare], check=True)
            w = github.World({"token": TOKEN, "repos": {"me/app": {"git_dir": bare}}})
            self.assertFalse(w.branch_exists(w.repos["me/app"], "main"))
            work = os.path.join(tmp, "work")
            subprocess.run(["git", "init", "-q", "-b", "main", work], check=True)
            env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                       GIT_COMMITTER_EMAIL="t@t")
            subprocess.run(["git", "-C", work, "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env)
            subprocess.run(["git", "-C", work, "push", "-q", bare, "main"], check=True)
            self.assertTrue(w.branch_exists(w.repos["me/app"], "main"))


if __name__ == "__main__":
    unittest.main(verbosity=1)

#!/usr/bin/env python3
"""Tests of the Linear stand-in (linear.py): queries parsed and checked against its schema,
filters, pagination, mutations and scripted faults in memory, and the wire (the key
without Bearer, statuses, rate-limit headers, slow answers, the log) on a live server.

    python3 test_linear.py        # exit 0 when all pass
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
import linear  # noqa: E402

KEY = "lin_api_test"
ENG = "aaaaaaaa-0000-4000-8000-000000000001"
OPS = "bbbbbbbb-0000-4000-8000-000000000002"


def states(team):
    names = [("Backlog", "backlog"), ("Todo", "unstarted"), ("In Progress", "started"),
             ("Done", "completed"), ("Canceled", "canceled")]
    return [{"id": f"{team[:8]}-5000-4000-8000-00000000000{n}", "name": name, "type": kind}
            for n, (name, kind) in enumerate(names)]


def world(**extra):
    spec = {
        "key": KEY,
        "page_size": 2,
        "teams": [{"id": ENG, "key": "ENG", "name": "Engineering", "states": states(ENG)},
                  {"id": OPS, "key": "OPS", "name": "Operations", "states": states(OPS)}],
        "issues": [
            {"team": "ENG", "number": 1, "title": "Fix login", "description": "The *login* page.", "state": "Todo"},
            {"team": "ENG", "number": 2, "title": "Changelog", "state": "In Progress"},
            {"team": "ENG", "number": 3, "title": "Old", "state": "Done"},
            {"team": "ENG", "number": 4, "title": "Dropped", "state": "Canceled"},
            {"team": "ENG", "number": 5, "title": "Docs", "state": "Backlog"},
            {"team": "OPS", "number": 1, "title": "Elsewhere", "state": "Todo"},
        ],
    }
    spec.update(extra)
    return linear.World(spec)


OPEN = """query Open($team: ID!, $after: String) {
  issues(first: 50, after: $after, filter: {team: {id: {eq: $team}},
         state: {type: {nin: ["completed", "canceled"]}}}) {
    nodes { id identifier title state { name type } url }
    pageInfo { hasNextPage endCursor }
  }
}"""


class WorldTest(unittest.TestCase):
    def test_open_issues_are_filtered_by_team_and_state_type_and_paged(self):
        w = world()
        status, first = w.execute(OPEN, {"team": ENG})
        self.assertEqual(status, 200)
        page = first["data"]["issues"]
        self.assertEqual([n["identifier"] for n in page["nodes"]], ["ENG-1", "ENG-2"])
        self.assertTrue(page["pageInfo"]["hasNextPage"])
        _, second = w.execute(OPEN, {"team": ENG, "after": page["pageInfo"]["endCursor"]})
        page = second["data"]["issues"]
        self.assertEqual([n["identifier"] for n in page["nodes"]], ["ENG-5"])
        self.assertEqual(page["pageInfo"], {"hasNextPage": False, "endCursor": page["nodes"][0]["id"]})
        self.assertEqual(page["nodes"][0]["state"], {"name": "Backlog", "type": "backlog"})
        self.assertEqual(page["nodes"][0]["url"], "https://linear.app/orchestra-test/issue/ENG-5/docs")

    def test_a_team_is_found_by_key_with_its_states(self):
        _, answer = world().execute(
            'query { teams(filter: {key: {eqIgnoreCase: "eng"}}) { nodes { id key states { nodes { name type } } } } }', {})
        team = answer["data"]["teams"]["nodes"]
        self.assertEqual([t["key"] for t in team], ["ENG"])
        self.assertEqual([s["name"] for s in team[0]["states"]["nodes"]], ["Backlog", "Todo"], "paged too")
        _, states_of = world().execute(
            "query($t: ID!) { workflowStates(first: 10, filter: {team: {id: {eq: $t}}}) { nodes { name } } }", {"t": OPS})
        self.assertEqual(len(states_of["data"]["workflowStates"]["nodes"]), 2)

    def test_an_issue_is_found_by_identifier_or_id_and_an_unknown_one_is_not_found(self):
        w = world()
        q = "query($id: String!) { issue(id: $id) { id identifier title description team { key } } }"
        _, by_key = w.execute(q, {"id": "eng-1"})
        issue = by_key["data"]["issue"]
        self.assertEqual((issue["identifier"], issue["description"], issue["team"]["key"]),
                         ("ENG-1", "The *login* page.", "ENG"))
        _, by_id = w.execute(q, {"id": issue["id"]})
        self.assertEqual(by_id["data"]["issue"]["identifier"], "ENG-1")
        with self.assertRaises(linear.GraphQLError) as e:
            w.execute(q, {"id": "ENG-99"})
        self.assertEqual((e.exception.code, e.exception.status), ("INVALID_INPUT", 200))

    def test_a_query_the_schema_lacks_is_a_validation_error(self):
        w = world()
        for bad in ["query { issues { nodes { colour } } }",
                    "query { issues(filter: {colour: {eq: 1}}) { nodes { id } } }",
                    "query { issue(id: \"ENG-1\") }",
                    "query($id: String!) { issue(id: $id) { id } }",
                    "query { issues { nodes { id }",
                    "query { ...F } fragment F on Query { viewer { id } }"]:
            with self.assertRaises(linear.GraphQLError, msg=bad) as e:
                w.execute(bad, {})
            self.assertEqual((e.exception.code, e.exception.status), ("GRAPHQL_VALIDATION_FAILED", 400), bad)

    def test_updates_move_the_state_within_the_team_and_comments_are_kept(self):
        w = world()
        update = """mutation($id: String!, $state: String!) {
          issueUpdate(id: $id, input: {stateId: $state}) { success issue { identifier state { name } } } }"""
        done = states(ENG)[3]["id"]
        _, moved = w.execute(update, {"id": "ENG-1", "state": done})
        self.assertEqual(moved["data"]["issueUpdate"],
                         {"success": True, "issue": {"identifier": "ENG-1", "state": {"name": "Done"}}})
        with self.assertRaises(linear.GraphQLError) as e:
            w.execute(update, {"id": "ENG-2", "state": states(OPS)[3]["id"]})
        self.assertEqual(e.exception.code, "INVALID_INPUT")
        comment = """mutation($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { body } } }"""
        _, said = w.execute(comment, {"input": {"issueId": "ENG-1", "body": "Merged."}})
        self.assertEqual(said["data"]["commentCreate"], {"success": True, "comment": {"body": "Merged."}})
        _, back = w.execute('query { issue(id: "ENG-1") { comments { nodes { body } } } }', {})
        self.assertEqual(back["data"]["issue"]["comments"]["nodes"], [{"body": "Merged."}])

    def test_faults_match_one_operation_exactly(self):
        w = world(faults=[{"operation": "issue", "code": "RATELIMITED", "times": 1}])
        self.assertIsNone(w.fault("POST", "/graphql#issues#"))
        self.assertEqual(w.fault("POST", "/graphql#issue#")["code"], "RATELIMITED")
        self.assertIsNone(w.fault("POST", "/graphql#issue#"))
        slow = world(faults=[{"operation": "teams", "matching": '"SLOW"', "delay": 1}])
        self.assertIsNone(slow.fault("POST", "/graphql#teams#", '{"variables": {"key": "ENG"}}'))
        self.assertEqual(slow.fault("POST", "/graphql#teams#", '{"variables": {"key": "SLOW"}}')["delay"], 1)


class WireTest(unittest.TestCase):
    def setUp(self):
        self.log = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        self.server = linear.Server(("127.0.0.1", 0), self.log, world(faults=[
            {"operation": "teams", "code": "RATELIMITED", "status": 400, "retry_after": "0", "times": 1},
            {"operation": "viewer", "delay": 0.5, "times": 1},
            {"operation": "workflowStates", "status": 503},
        ]))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/graphql"

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.log)

    def call(self, query, variables=None, key=KEY):
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = key
        data = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, {k.lower(): v for k, v in r.headers.items()}, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, json.loads(e.read())

    def logged(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_the_key_goes_without_bearer_and_the_log_never_holds_it(self):
        q = "query { issue(id: \"ENG-1\") { title } }"
        self.assertEqual(self.call(q)[0], 200)
        status, _, body = self.call(q, key=f"Bearer {KEY}")
        self.assertEqual((status, body["errors"][0]["extensions"]["code"]), (401, "AUTHENTICATION_ERROR"))
        self.assertEqual(self.call(q, key="lin_api_wrong")[0], 401)
        self.assertEqual([e["auth"] for e in self.logged()], ["ok", "bearer", "bad"])
        self.assertEqual(self.logged()[0]["operations"], ["issue"])
        with open(self.log) as f:
            self.assertNotIn(KEY, f.read())

    def test_an_unknown_issue_is_200_with_errors_and_no_data(self):
        status, _, body = self.call("query { issue(id: \"ENG-42\") { title } }")
        self.assertEqual(status, 200)
        self.assertIsNone(body["data"])
        self.assertEqual(body["errors"][0]["extensions"]["code"], "INVALID_INPUT")
        self.assertTrue(body["errors"][0]["extensions"]["userError"])

    def test_a_bad_query_is_400(self):
        status, _, body = self.call("query { issue(id: \"ENG-1\") { colour } }")
        self.assertEqual((status, body["errors"][0]["extensions"]["code"]), (400, "GRAPHQL_VALIDATION_FAILED"))

    def test_a_scripted_rate_limit_says_when_to_come_back_once(self):
        q = "query { teams { nodes { key } } }"
        status, headers, body = self.call(q)
        self.assertEqual((status, body["errors"][0]["extensions"]["code"]), (400, "RATELIMITED"))
        self.assertEqual(headers["retry-after"], "0")
        self.assertEqual(headers["x-ratelimit-requests-remaining"], "0")
        self.assertGreater(int(headers["x-ratelimit-requests-reset"]), 1e12)
        status, _, body = self.call(q)
        self.assertEqual((status, [t["key"] for t in body["data"]["teams"]["nodes"]]), (200, ["ENG", "OPS"]))

    def test_a_slow_answer_comes_late_and_a_5xx_is_plain(self):
        started = time.monotonic()
        self.assertEqual(self.call("query { viewer { id } }")[0], 200)
        self.assertGreaterEqual(time.monotonic() - started, 0.5)
        status, _, body = self.call("query { workflowStates { nodes { id } } }")
        self.assertEqual((status, body["errors"][0]["message"]), (503, "scripted 503"))

    def test_a_mutation_is_logged_with_its_variables_and_changes_the_world(self):
        q = "mutation($i: CommentCreateInput!) { commentCreate(input: $i) { success } }"
        variables = {"i": {"issueId": "ENG-2", "body": "hello"}}
        status, _, body = self.call(q, variables)
        self.assertEqual((status, body["data"]["commentCreate"]["success"]), (200, True))
        entry = self.logged()[-1]
        self.assertEqual((entry["operations"], entry["variables"]), (["commentCreate"], variables))


if __name__ == "__main__":
    unittest.main(verbosity=1)

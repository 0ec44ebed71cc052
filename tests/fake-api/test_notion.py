#!/usr/bin/env python3
"""Tests of the Notion stand-in (notion.py): filters, pagination, updates and scripted
faults in memory, and the wire (headers, statuses, Retry-After, the log) on a live server.

    python3 test_notion.py        # exit 0 when all pass
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
import notion  # noqa: E402

PROJECTS = "11111111111111111111111111111111"
TASKS = "22222222-2222-2222-2222-222222222222"
APP = "aaaaaaaa-0000-0000-0000-000000000001"
OTHER = "aaaaaaaa-0000-0000-0000-000000000002"


def task(n, status="Not started", project=APP, blocks=()):
    return {"id": f"bbbbbbbb-0000-0000-0000-{n:012d}", "data_source": TASKS, "title": f"Task {n}",
            "status": status, "relation": [project], "blocks": list(blocks)}


def world(**extra):
    spec = {
        "token": "ntn_test",
        "page_size": 2,
        "data_sources": {
            PROJECTS: {"properties": {"Name": {"type": "title"}}},
            TASKS: {"properties": {
                "Name": {"type": "title"},
                "Status": {"type": "status", "status": {"options": [
                    {"name": "Not started"}, {"name": "In progress"}, {"name": "Done"}]}},
                "Project": {"type": "relation", "relation": {"data_source_id": PROJECTS}}}},
        },
        "pages": [
            {"id": APP, "data_source": PROJECTS, "title": "app"},
            {"id": OTHER, "data_source": PROJECTS, "title": "other"},
            task(1), task(2, "In progress"), task(3, "Done"), task(4, project=OTHER),
            task(5, blocks=[{"type": "heading_1", "text": "Goal"},
                            {"type": "bulleted_list_item", "text": "one",
                             "children": [{"type": "paragraph", "text": "nested"}]},
                            {"type": "paragraph", "text": "two"}]),
        ],
    }
    spec.update(extra)
    return notion.World(spec)


OPEN_OF_APP = {"and": [{"property": "Project", "relation": {"contains": APP}},
                       {"property": "Status", "status": {"does_not_equal": "Done"}}]}


class WorldTest(unittest.TestCase):
    def test_a_query_filters_and_pages_with_a_cursor(self):
        w = world()
        status, first = w.handle("POST", f"/v1/data_sources/{TASKS}/query", {}, {"filter": OPEN_OF_APP})
        self.assertEqual(status, 200)
        self.assertEqual([p["properties"]["Name"]["title"][0]["plain_text"] for p in first["results"]],
                         ["Task 1", "Task 2"])
        self.assertTrue(first["has_more"])
        _, second = w.handle("POST", f"/v1/data_sources/{TASKS}/query", {},
                             {"filter": OPEN_OF_APP, "start_cursor": first["next_cursor"]})
        self.assertEqual([p["id"][-1] for p in second["results"]], ["5"])
        self.assertEqual((second["has_more"], second["next_cursor"]), (False, None))

    def test_a_title_filter_finds_the_project(self):
        _, found = world().handle("POST", f"/v1/data_sources/{PROJECTS}/query", {},
                                  {"filter": {"property": "Name", "title": {"equals": "app"}}})
        self.assertEqual([p["id"] for p in found["results"]], [APP])

    def test_a_filter_on_a_property_that_is_not_there_is_a_validation_error(self):
        status, body = world().handle("POST", f"/v1/data_sources/{TASKS}/query", {},
                                      {"filter": {"property": "State", "status": {"equals": "x"}}})
        self.assertEqual((status, body["code"]), (400, "validation_error"))

    def test_an_update_moves_the_status_to_an_option_only(self):
        w = world()
        pid = task(1)["id"]
        status, page = w.handle("PATCH", f"/v1/pages/{pid}", {},
                                {"properties": {"Status": {"status": {"name": "In progress"}}}})
        self.assertEqual(status, 200)
        self.assertEqual(page["properties"]["Status"]["status"]["name"], "In progress")
        status, body = w.handle("PATCH", f"/v1/pages/{pid}", {},
                                {"properties": {"Status": {"status": {"name": "Doing"}}}})
        self.assertEqual((status, body["code"]), (400, "validation_error"))

    def test_a_page_knows_its_data_source_and_unknown_ids_are_404(self):
        w = world()
        _, page = w.handle("GET", f"/v1/pages/{task(1)['id']}", {}, None)
        self.assertEqual(page["parent"]["data_source_id"], TASKS)
        self.assertTrue(page["url"].startswith("https://www.notion.so/Task-1-"))
        status, body = w.handle("GET", "/v1/pages/cccccccc000000000000000000000000", {}, None)
        self.assertEqual((status, body["code"]), (404, "object_not_found"))
        status, _ = w.handle("GET", "/v1/data_sources/dddddddd000000000000000000000000", {}, None)
        self.assertEqual(status, 404)

    def test_blocks_are_children_with_their_own_children(self):
        w = world()
        _, top = w.handle("GET", f"/v1/blocks/{task(5)['id']}/children", {"page_size": ["2"]}, None)
        self.assertEqual([b["type"] for b in top["results"]], ["heading_1", "bulleted_list_item"])
        self.assertTrue(top["has_more"])
        item = top["results"][1]
        self.assertTrue(item["has_children"])
        _, nested = w.handle("GET", f"/v1/blocks/{item['id']}/children", {}, None)
        self.assertEqual(nested["results"][0]["paragraph"]["rich_text"][0]["plain_text"], "nested")

    def test_faults_match_and_are_used_up(self):
        w = world(faults=[{"method": "POST", "path": "/query", "status": 429, "retry_after": "1", "times": 1}])
        self.assertIsNone(w.fault("GET", "/v1/data_sources/x/query"))
        self.assertEqual(w.fault("POST", "/v1/data_sources/x/query")["status"], 429)
        self.assertIsNone(w.fault("POST", "/v1/data_sources/x/query"))
        later = world(faults=[{"method": "PATCH", "status": 500, "after": 1}])
        self.assertIsNone(later.fault("PATCH", "/v1/pages/x"))
        self.assertEqual(later.fault("PATCH", "/v1/pages/x")["status"], 500)
        self.assertEqual(later.fault("PATCH", "/v1/pages/x")["status"], 500)


class WireTest(unittest.TestCase):
    def setUp(self):
        self.log = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
        self.server = notion.Server(("127.0.0.1", 0), self.log, world(faults=[
            {"path": "/v1/pages/bbbbbbbb-0000-0000-0000-000000000002", "status": 429, "retry_after": "0", "times": 1},
            {"path": "/v1/pages/bbbbbbbb-0000-0000-0000-000000000003", "delay": 0.5, "times": 1},
        ]))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.log)

    def call(self, method, path, body=None, token="ntn_test", version=notion.VERSION):
        headers = {"content-type": "application/json", "notion-version": version}
        if token:
            headers["authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, dict(r.headers), json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), json.loads(e.read())

    def logged(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_a_wrong_token_is_401_and_the_log_never_holds_a_token(self):
        status, _, body = self.call("GET", f"/v1/data_sources/{TASKS}", token="ntn_wrong")
        self.assertEqual((status, body["code"]), (401, "unauthorized"))
        status, _, _ = self.call("GET", f"/v1/data_sources/{TASKS}")
        self.assertEqual(status, 200)
        self.assertEqual([e["auth"] for e in self.logged()], ["bad", "ok"])
        with open(self.log) as f:
            self.assertNotIn("ntn_", f.read())

    def test_the_version_header_is_required(self):
        status, _, body = self.call("GET", f"/v1/data_sources/{TASKS}", version="2022-06-28")
        self.assertEqual((status, body["code"]), (400, "missing_version"))

    def test_a_scripted_429_says_retry_after_once(self):
        path = "/v1/pages/bbbbbbbb-0000-0000-0000-000000000002"
        status, headers, _ = self.call("GET", path)
        self.assertEqual(status, 429)
        self.assertEqual({k.lower(): v for k, v in headers.items()}["retry-after"], "0")
        status, _, page = self.call("GET", path)
        self.assertEqual((status, page["properties"]["Status"]["status"]["name"]), (200, "In progress"))

    def test_a_slow_answer_comes_late(self):
        started = time.monotonic()
        status, _, _ = self.call("GET", "/v1/pages/bbbbbbbb-0000-0000-0000-000000000003")
        self.assertEqual(status, 200)
        self.assertGreaterEqual(time.monotonic() - started, 0.5)

    def test_a_patch_is_logged_with_its_body_and_changes_the_page(self):
        path = "/v1/pages/bbbbbbbb-0000-0000-0000-000000000001"
        change = {"properties": {"Status": {"status": {"name": "In progress"}}}}
        status, _, _ = self.call("PATCH", path, change)
        self.assertEqual(status, 200)
        entry = self.logged()[-1]
        self.assertEqual((entry["method"], entry["path"], entry["body"]), ("PATCH", path, change))
        _, _, page = self.call("GET", path)
        self.assertEqual(page["properties"]["Status"]["status"]["name"], "In progress")


if __name__ == "__main__":
    unittest.main(verbosity=1)

"""The client against a real ragmem server (see _server.py)."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import unittest
import uuid

import ragmem
from tests import _server


def _uid() -> str:
    return uuid.uuid4().hex[:10]


class ClientTest(unittest.TestCase):
    client: ragmem.Client

    @classmethod
    def setUpClass(cls) -> None:
        s = _server.shared()
        cls.client = ragmem.Client(s["url"], s["token"], timeout=30)

    def test_index_text_search_and_remove(self) -> None:
        u = f"notes://{_uid()}"
        word = "zq" + _uid()
        res = self.client.index_text(u, f"# Gateway\n\n## Ports\n\nThe gateway {word} listens on port 9090.",
                                     format="markdown", title="Gateway notes", attrs={"team": "platform"})
        self.assertEqual(res["url"], u)
        self.assertGreater(res["chunks"], 0)
        self.assertTrue(res["contentHash"])
        again = self.client.index_text(u, f"# Gateway\n\n## Ports\n\nThe gateway {word} listens on port 9090.",
                                       format="markdown", title="Gateway notes", attrs={"team": "platform"})
        self.assertTrue(again.get("unchanged"))
        found = self.client.search(f"gateway {word}", filter='team = "platform"', top_k=5)
        self.assertIn(found["mode"], ("hybrid", "fulltext", "vector"))
        hits = [r for r in found["results"] if r["url"] == u]
        self.assertTrue(hits, found)
        r = hits[0]
        self.assertEqual(r["headingPath"], ["Gateway", "Ports"])
        self.assertEqual(r["attrs"]["team"], "platform")
        self.assertGreater(r["score"], 0)
        self.assertIn("method", r["explanation"])
        self.assertEqual(r["docType"], "knowledge")
        # A filter that excludes it, and a structured one.
        self.assertFalse([x for x in self.client.search(f"gateway {word}", filter='team = "infra"')["results"] if x["url"] == u])
        only = self.client.search(f"gateway {word}", filters={"url": u})
        self.assertEqual({x["url"] for x in only["results"]}, {u})
        page = self.client.source(u)
        self.assertEqual(page["url"], u)
        self.assertEqual(page["title"], "Gateway notes")
        self.assertTrue(page["chunks"][0]["content"])
        self.assertEqual(self.client.remove(u)["removed"], res["chunks"])
        with self.assertRaises(ragmem.NotFoundError) as cm:
            self.client.remove(u)
        e = cm.exception
        self.assertEqual((e.status, e.code), (404, "not_found"))
        self.assertTrue(e.request_id)
        self.assertIn(u, e.message)

    def test_index_file_as_ragmem_index_does(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "notes b+c@(1)ü.md")
            with open(p, "w", encoding="utf-8") as f:
                f.write("---\ntags: x\n---\n# Release checklist\n\nTag the release, then publish the notes.\n")
            res = self.client.index_file(p, attrs={"kind": "checklist"})
            self.assertEqual(res["url"], "file://" + os.path.abspath(d) + "/notes%20b+c@%281%29%C3%BC.md")  # as Go's url.URL writes it
            page = self.client.source(res["url"])
            self.assertEqual(page["title"], "Release checklist")
            self.client.remove(res["url"])
            b = os.path.join(d, "blob.txt")
            with open(b, "wb") as f:
                f.write(b"\xff\xfe\x00binary")
            with self.assertRaises(ValueError):
                self.client.index_file(b)

    def test_index_many_and_indexing_errors(self) -> None:
        a, b = f"notes://{_uid()}", f"notes://{_uid()}"
        res = self.client.index_many([{"url": a, "content": "Sourdough needs a lively starter."}, {"url": b, "content": "   "}])
        self.assertEqual([r["url"] for r in res], [a, b])
        self.assertGreater(res[0]["chunks"], 0)
        self.assertTrue(res[1].get("error"))
        with self.assertRaises(ragmem.IndexingError) as cm:
            self.client.index({"url": b, "content": "\n\n"})
        self.assertEqual(cm.exception.code, "not_indexed")
        self.assertEqual(cm.exception.result["url"], b)
        self.client.remove(a)

    def test_pages_jobs_and_forget(self) -> None:
        u = f"https://example.com/{_uid()}"
        html = ("<html><head><title>Narwhals | Sea</title></head><body><nav>Home</nav><article><h1>Narwhals</h1>"
                "<p>The narwhal's tusk is a canine tooth that grows through the upper lip in a left-handed spiral.</p>"
                "<p>It can reach three metres and holds millions of nerve endings.</p></article></body></html>")
        acc = self.client.index_page_async(u, html=html)
        self.assertEqual(acc["status"], "queued")
        self.assertEqual(acc["title"], "Narwhals")
        self.assertEqual(acc["job"]["id"], acc["jobId"])
        job = self.client.wait_job(acc["jobId"], timeout=60)
        self.assertEqual(job["state"], "done")
        self.assertGreater(job["chunks"], 0)
        self.assertEqual(self.client.job(acc["jobId"])["state"], "done")
        self.assertIn(acc["jobId"], [j["id"] for j in self.client.jobs(state=["done"], limit=1000)["jobs"]])
        self.assertEqual(self.client.index_page(u, html=html), {"url": u, "chunks": job["chunks"], "unchanged": True})
        found = self.client.search("narwhal tusk canine tooth", filters={"url": u})
        self.assertEqual(found["results"][0]["url"], u)
        gone = self.client.forget_page(u)
        self.assertEqual((gone["url"], gone["removed"], gone["cancelledJobs"]), (u, job["chunks"], []))
        with self.assertRaises(ragmem.NotFoundError):
            self.client.source(u)
        with self.assertRaises(ragmem.NotFoundError):
            self.client.job("job_nope")
        with self.assertRaises(ragmem.NotFoundError):
            self.client.retry_job("job_nope")
        # index_page waits for the job; text pages work the same way.
        t = f"https://example.com/{_uid()}"
        res = self.client.index_page(t, text="# Kelp\n\nKelp forests grow fast.", format="markdown", title="Kelp")
        self.assertGreater(res["chunks"], 0)
        self.client.forget_page(t)
        with self.assertRaises(ragmem.UnprocessableError) as cm:
            self.client.index_page_async(f"https://example.com/{_uid()}", html="<html><body><script>x()</script></body></html>")
        self.assertEqual((cm.exception.status, cm.exception.code), (422, "no_content"))

    def test_context(self) -> None:
        u = f"notes://{_uid()}"
        self.client.index_text(u, "Hybrid search fuses BM25 and vector similarity with relative score fusion.")
        ctx = self.client.build_context("how does hybrid search fuse BM25 and vectors", model="gpt-4o", filter=f'source = "{u}"')
        self.assertFalse(ctx["empty"])
        self.assertEqual(ctx["message"]["role"], "assistant")
        self.assertIn("<knowledge_context>", ctx["message"]["content"])
        self.assertIn(u, [s["url"] for s in ctx["sources"]])
        self.assertGreater(ctx["tokens"]["knowledge"], 0)
        self.assertGreater(ctx["budgets"]["knowledge"], 0)
        self.assertIn("Showing", ctx["summary"])
        self.client.remove(u)

    def test_sources_paging(self) -> None:
        tag = _uid()
        urls = sorted(f"notes://{tag}/{i}" for i in range(3))
        self.client.index_many([{"url": x, "content": f"Document number {i} of {tag}.", "attrs": {"batch": tag}} for i, x in enumerate(urls)])
        first = self.client.sources(limit=2, filter=f'batch = "{tag}"')
        self.assertEqual(first["total"], 3)
        self.assertEqual([s["url"] for s in first["sources"]], urls[:2])
        rest = self.client.sources(offset=2, limit=2, filter=f'batch = "{tag}"')
        self.assertEqual([s["url"] for s in rest["sources"]], urls[2:])
        self.assertEqual(rest["sources"][0]["docType"], "knowledge")
        for x in urls:
            self.client.remove(x)

    def test_bad_requests_carry_code_status_and_request_id(self) -> None:
        with self.assertRaises(ragmem.BadRequestError) as cm:
            self.client.search("q", filter="team = = x")
        e = cm.exception
        self.assertEqual((e.status, e.code), (400, "bad_request"))
        self.assertTrue(e.request_id)
        self.assertIn("filter", e.message)
        self.assertIn(e.request_id or "", str(e))
        self.assertIsInstance(e, ragmem.APIError)
        self.assertIsInstance(e, ragmem.RagmemError)
        with self.assertRaises(ragmem.BadRequestError):
            self.client.search("q", top_k=100000)

    def test_preferences(self) -> None:
        ns = self.client.with_namespace("py-prefs-" + _uid())
        p = ns.add_preference("expertise", "User is a Go developer")
        self.assertEqual(p["type"], "expertise")
        self.assertEqual([x["id"] for x in ns.list_preferences()], [p["id"]])
        d = ns.detect_preference("I prefer short answers with code examples", save=True)
        self.assertTrue(d["detected"])
        self.assertIn("saved", d)
        self.assertEqual(len(ns.list_preferences()), 2)
        self.assertTrue(ns.remove_preference(p["id"]))
        self.assertFalse(ns.remove_preference(p["id"]))
        self.assertEqual(ns.clear_preferences(), 1)
        self.assertEqual(ns.list_preferences(), [])
        self.assertFalse(ns.detect_preference("What time is it?")["detected"])
        with self.assertRaises(ragmem.BadRequestError):
            ns.add_preference("mood", "happy")

    def test_namespaces_are_isolated(self) -> None:
        a = self.client.with_namespace("py-a-" + _uid())
        b = self.client.with_namespace("py-b-" + _uid())
        word = "zq" + _uid()
        a.index_text("notes://secret", f"The launch code word is {word}.")
        self.assertEqual(a.search(word)["results"][0]["url"], "notes://secret")
        self.assertEqual(b.search(word)["results"], [])
        self.assertEqual(a.stats()["namespace"], a.namespace)
        self.assertEqual(a.stats()["store"]["documentCount"], 1)
        with self.assertRaises(ragmem.NotFoundError):
            b.source("notes://secret")
        with self.assertRaises(ragmem.BadRequestError):
            self.client.with_namespace("Not A Namespace!").stats()

    def test_delete_sources_and_set_attrs(self) -> None:
        ns = self.client.with_namespace("py-bulk-" + _uid())
        for i in range(5):
            ns.index_text(f"notes://bulk/{i}", f"Bulk note {i} about herons.", attrs={"team": "red" if i % 2 == 0 else "blue"})
        changed = ns.set_attrs("notes://bulk/1", {"team": "red", "extra": "x"})
        self.assertEqual(changed["url"], "notes://bulk/1")
        self.assertGreater(changed["changed"], 0)
        ns.set_attrs("notes://bulk/1", {"extra": None})
        self.assertEqual({s["url"] for s in ns.sources(filter='extra EXISTS')["sources"]}, set())
        dry = ns.delete_sources('team = "red"', dry_run=True)
        want = ["notes://bulk/0", "notes://bulk/1", "notes://bulk/2", "notes://bulk/4"]
        self.assertTrue(dry["dryRun"])
        self.assertEqual([s["url"] for s in dry["sources"]], want)
        self.assertEqual(ns.stats()["store"]["documentCount"], 5)
        done = ns.delete_sources('team = "red"')
        self.assertFalse(done["dryRun"])
        self.assertEqual([s["url"] for s in done["sources"]], want)
        self.assertEqual([s["url"] for s in ns.sources()["sources"]], ["notes://bulk/3"])
        with self.assertRaises(ragmem.BadRequestError):
            ns.delete_sources()
        with self.assertRaises(ragmem.BadRequestError):
            ns.delete_sources("team = ")
        with self.assertRaises(ragmem.NotFoundError):
            ns.set_attrs("notes://bulk/none", {"a": "b"})
        with self.assertRaises(ragmem.PermissionDeniedError) as cm:
            ns.set_attrs("preference://user", {"a": "b"})
        self.assertEqual(cm.exception.code, "reserved")
        ns.add_preference("expertise", "User is a Go developer")
        with self.assertRaises(ragmem.PermissionDeniedError):
            ns.delete_sources('type = "preference"')
        self.assertEqual(ns.delete_sources(all=True)["removed"], 1)
        self.assertEqual(len(ns.list_preferences()), 1)

    def test_stats(self) -> None:
        st = self.client.stats()
        self.assertIn("documentCount", st["store"])
        self.assertIn("depth", st["store"]["queue"])
        self.assertGreaterEqual(st["server"]["uptimeSeconds"], 0)
        self.assertEqual(self.client.openapi()["openapi"][:3], "3.1")

    def test_memories(self) -> None:
        m = self.client.with_namespace("py-mem-" + _uid()).memories
        w = m.add("The gateway listens on port 8080", "The gateway service listens on port 8080.", ["gateway|port"],
                  tags=["ops"], importance="high", occurred_at="2025-05-10")
        slug = w["memory"]["slug"]
        self.assertEqual(slug, "the-gateway-listens-on-port-8080")
        self.assertFalse(w["appended"])
        self.assertEqual(w["memory"]["path"], slug + ".md")
        moved = m.add("Gateway moved", "The gateway service listens on port 9090.", ["gateway|port"])
        m.supersede(moved["memory"]["slug"], slug, provenance="checked the config")
        listed = m.list()
        self.assertEqual(sorted(x["slug"] for x in listed["memories"]), ["gateway-moved", slug])
        self.assertEqual(listed["problems"], [])
        self.assertEqual([x["slug"] for x in m.list(superseded=True)["memories"]], [slug])
        detail = m.get(slug)
        self.assertEqual(detail["memory"]["supersededBy"], "gateway-moved")
        self.assertEqual(detail["entries"][0]["title"], "The gateway listens on port 8080")
        match = m.match("change the gateway port", context=True)
        self.assertEqual(match["matches"][0]["memory"]["slug"], "gateway-moved")
        self.assertIn("[memory:gateway-moved]", match["message"]["content"])
        found = m.search("gateway port", when="in May 2025")
        self.assertEqual([f["memory"]["slug"] for f in found["results"]], [slug])
        cites = m.feedback(answer="Use 9090 [memory:gateway-moved].", injected=["gateway-moved"])
        self.assertEqual(cites, {"cited": ["gateway-moved"], "unknown": []})
        st = m.stats()
        self.assertEqual((st["memories"], st["superseded"], st["citations"]), (2, 1, 1))
        self.assertEqual(m.refresh()["problems"], [])
        with self.assertRaises(ragmem.NotFoundError):
            m.get("nope")
        with self.assertRaises(ragmem.UnavailableError) as cm:
            m.extract("developer", "add a login page", "Added the page.")
        self.assertEqual(cm.exception.code, "unavailable")


class ErrorsWithoutAServerTest(unittest.TestCase):
    def test_connection_refused(self) -> None:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        c = ragmem.Client(f"http://127.0.0.1:{port}", "t", timeout=5)
        with self.assertRaises(ragmem.APIConnectionError) as cm:
            c.stats()
        self.assertEqual((cm.exception.status, cm.exception.code), (0, "connection_error"))

    def test_timeout(self) -> None:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # accepts connections into the backlog, never answers
        try:
            c = ragmem.Client(f"http://127.0.0.1:{s.getsockname()[1]}", "t", timeout=0.5)
            t0 = time.monotonic()
            with self.assertRaises(ragmem.APITimeoutError) as cm:
                c.stats()
            self.assertLess(time.monotonic() - t0, 5)
            self.assertEqual(cm.exception.code, "timeout")
        finally:
            s.close()

    def test_bad_arguments(self) -> None:
        for bad in ("ftp://x", "localhost:7437", "http://"):
            with self.assertRaises(ValueError):
                ragmem.Client(bad, "t")
        with self.assertRaises(ValueError):
            ragmem.Client("http://127.0.0.1:1", "t", timeout=0)

    def test_environment_defaults(self) -> None:
        old = {k: os.environ.get(k) for k in ("RAGMEM_URL", "RAGMEM_TOKEN", "RAGMEM_NAMESPACE")}
        try:
            os.environ.update({"RAGMEM_URL": "http://127.0.0.1:9/", "RAGMEM_TOKEN": "tok", "RAGMEM_NAMESPACE": "team"})
            c = ragmem.Client()
            self.assertEqual((c.url, c.token, c.namespace), ("http://127.0.0.1:9", "tok", "team"))
            self.assertIsNone(c.with_namespace(None).namespace or None)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class OwnServerTest(unittest.TestCase):
    """Tests that need a server of their own: a token bound to a namespace,
    a wrong token, the rate limit."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.served = _server.own("--rate-limit", "2", "--rate-burst", "2")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.served.stop()

    def test_authentication(self) -> None:
        with self.assertRaises(ragmem.AuthenticationError) as cm:
            ragmem.Client(self.served.url, "rgm_wrong", max_retries=5).stats()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
        self.assertTrue(cm.exception.request_id)

    def test_bound_token(self) -> None:
        tok = self.served.ragmem("token", "rotate", "--namespace", "alice").strip()
        alice = ragmem.Client(self.served.url, tok, max_retries=5)
        main = ragmem.Client(self.served.url, self.served.token, max_retries=5)
        # The server reads the token file again within a second; failed
        # authentications meanwhile are rate-limited per address.
        deadline = time.monotonic() + 30
        while True:
            try:
                alice.stats()
                break
            except (ragmem.AuthenticationError, ragmem.RateLimitError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        alice.index_text("notes://alice", "Alice keeps her tea recipes here.")
        self.assertEqual(alice.stats()["namespace"], "alice")
        self.assertEqual(main.search("tea recipes")["results"], [])
        self.assertEqual(main.with_namespace("alice").search("tea recipes")["results"][0]["url"], "notes://alice")
        with self.assertRaises(ragmem.PermissionDeniedError) as cm:
            alice.with_namespace("bob").stats()
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))

    def _burst(self, client: ragmem.Client, n: int = 8) -> "list[object]":
        """n calls at once; their results or errors."""
        out: "list[object]" = [None] * n

        def call(i: int) -> None:
            try:
                out[i] = client.stats()
            except ragmem.RagmemError as e:
                out[i] = e

        ts = [threading.Thread(target=call, args=(i,)) for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return out

    def test_rate_limit_retries(self) -> None:
        # Without retries, a burst past the limit (2 a second, 2 at once) gets 429 with Retry-After.
        limited = [r for r in self._burst(ragmem.Client(self.served.url, self.served.token, max_retries=0))
                   if isinstance(r, ragmem.RagmemError)]
        self.assertTrue(limited)
        for e in limited:
            self.assertIsInstance(e, ragmem.RateLimitError)
            self.assertEqual((e.status, e.code), (429, "rate_limited"))
            self.assertGreater(e.retry_after or 0, 0)
        # With them, every call of the burst succeeds, waiting as asked.
        got = self._burst(ragmem.Client(self.served.url, self.served.token, max_retries=10))
        self.assertFalse([r for r in got if isinstance(r, Exception)], got)
        # A wait longer than max_retry_wait is not waited for.
        t0 = time.monotonic()
        got = self._burst(ragmem.Client(self.served.url, self.served.token, max_retries=10, max_retry_wait=0))
        self.assertTrue([r for r in got if isinstance(r, ragmem.RateLimitError)])
        self.assertLess(time.monotonic() - t0, 10)

    def test_concurrent_use(self) -> None:
        c = ragmem.Client(self.served.url, self.served.token, max_retries=20, max_retry_wait=5)
        errs = []

        def work(i: int) -> None:
            try:
                c.with_namespace(f"conc-{i}").index_text(f"notes://{i}", f"Thread {i} wrote this.")
            except Exception as e:  # noqa: BLE001 - collected for the assertion
                errs.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errs, [])


if __name__ == "__main__":
    unittest.main()

"""SIGHUP reload: the new config is validated first. Invalid: logged, STATUS= says so, the
old graph keeps running. Valid: RELOADING=1, then a live reload: the nodes whose config and
inputs did not change keep running (their files and connections with them), the replaced
nodes finish (flushed) and the new ones start; READY=1 again. A new node that cannot be
created rejects the reload and nothing changes; one that cannot start puts the previous graph
back in place (a drained graph: the previous config starts again)."""

import http.client as httpclient
import json
import os
import re
import signal
import socket
import time
import unittest

from service_it import (SERVICE_PLUGIN_DIR, NotifySocket, admin_url, http, parse_prometheus,
                        read_text, sample)
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for


def config(value, out_path, extra=""):
    return f"""
name = "reloadable"
[admin]
port = 0
[sources.ticks]
type = "from_periodic"
interval_ms = 20
value = {toml_str(value)}
[sinks.out]
type = "sink_to_textfile"
inputs = ["ticks"]
path = {toml_str(out_path)}
{extra}
"""


def lines(path):
    return read_text(path).splitlines() if os.path.exists(path) else []


class ReloadBase(SluiceTestCase):
    def start(self, text, *options):
        sock = NotifySocket(self.path("notify.sock"))
        self.addCleanup(sock.close)
        cfg = self.write("p.toml", text)
        proc, _, err = self.spawn(*options, "run", cfg, env=self.env(NOTIFY_SOCKET=sock.path))
        sock.wait("READY", "1")
        return proc, err, sock, cfg


class ReloadTest(ReloadBase):
    def test_valid_reload_swaps_the_graph(self):
        out_a, out_b = self.path("a.txt"), self.path("b.txt")
        proc, err, sock, cfg = self.start(config("a", out_a))
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: len(lines(out_a)) >= 5, 10), read_text(err))

        self.write("p.toml", config("b", out_b))
        proc.send_signal(signal.SIGHUP)
        sock.wait("RELOADING", "1")
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reloaded at", ready[1][1].get("STATUS", ""))
        self.assertTrue(wait_for(lambda: len(lines(out_b)) >= 5, 10), read_text(err))
        self.assertIsNone(proc.poll(), "sluiced exited during the reload")

        # The old graph was drained: its file is complete (flushed, whole lines) and no
        # longer grows; the new graph writes the new value.
        text_a = read_text(out_a)
        self.assertTrue(text_a.endswith("\n"))
        self.assertEqual(set(text_a.splitlines()), {'"a"'})
        time.sleep(0.3)
        self.assertEqual(read_text(out_a), text_a)
        self.assertEqual(set(lines(out_b)), {'"b"'})

        status, _, body = http("GET", base + "/metrics")
        self.assertEqual(status, 200)
        m = parse_prometheus(body)
        self.assertEqual(sample(m, "sluice_graph_generation"), 2)
        self.assertEqual(sample(m, "sluice_reloads_total", result="applied"), 1)
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 0)
        # Both nodes changed: nothing was kept.
        self.assertIn("reload: applied in place (kept 0 of 2 nodes)", read_text(err))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_invalid_reload_keeps_the_old_graph(self):
        out_a = self.path("a.txt")
        proc, err, sock, cfg = self.start(config("a", out_a))
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: len(lines(out_a)) >= 5, 10), read_text(err))

        # A typo in a key: validation fails with file:line:col.
        self.write("p.toml", config("a", self.path("other.txt")).replace("interval_ms",
                                                                         "interval_msec"))
        proc.send_signal(signal.SIGHUP)
        sock.wait("RELOADING", "1")
        ready = sock.wait("READY", "1", count=2)
        status_line = ready[1][1].get("STATUS", "")
        self.assertIn("running 'reloadable'", status_line)
        self.assertIn("reload rejected", status_line)
        log = read_text(err)
        self.assertIn("p.toml:", log)
        self.assertIn("interval_msec", log)
        self.assertIn("reload rejected", log)

        # The old graph still runs and writes to the old file.
        before = len(lines(out_a))
        self.assertTrue(wait_for(lambda: len(lines(out_a)) >= before + 5, 10), read_text(err))
        self.assertFalse(os.path.exists(self.path("other.txt")))
        m = parse_prometheus(http("GET", base + "/metrics")[2])
        self.assertEqual(sample(m, "sluice_graph_generation"), 1)
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 1)
        self.assertEqual(http("GET", base + "/readyz")[0], 200)

        # A missing file is rejected the same way.
        os.unlink(cfg)
        proc.send_signal(signal.SIGHUP)
        sock.wait("READY", "1", count=3)
        self.assertTrue(wait_for(lambda: "does not exist" in read_text(err), 5), read_text(err))
        self.assertIsNone(proc.poll())

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_a_rejected_reload_logs_its_findings_with_their_node(self):
        # As `run` logs config errors: records with a level and the node as a field.
        out_a = self.path("a.txt")
        proc, err, sock, cfg = self.start(config("a", out_a), "--log-format", "json")
        self.write("p.toml", config("a", out_a).replace("interval_ms", "interval_msec"))
        proc.send_signal(signal.SIGHUP)
        sock.wait("READY", "1", count=2)
        records = [json.loads(line) for line in read_text(err).splitlines()]
        found = [r for r in records if "interval_msec" in r["message"]]
        self.assertEqual(len(found), 1, read_text(err))
        self.assertEqual(found[0]["level"], "error")
        self.assertEqual(found[0]["node"], "ticks")
        self.assertIn("p.toml:", found[0]["message"])
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))


LISTENING = re.compile(r"from_http_server: listening on 127\.0\.0\.1:(\d+)")


def http_pipeline(function, out_path, extra=""):
    """HTTP bodies -> map(function) -> a file sink that truncates at start (no append)."""
    return f"""
name = "ingest"
plugin_dirs = [{toml_str(SERVICE_PLUGIN_DIR)}]
[admin]
port = 0
[sources.src]
type = "from_http_server"
port = 0
[operators.shape]
type = "map"
inputs = ["src"]
function = {toml_str(function)}
[sinks.out]
type = "sink_to_textfile"
inputs = ["shape"]
path = {toml_str(out_path)}
{extra}
"""


class LiveReloadTest(ReloadBase):
    def ports(self, err, count=1):
        self.assertTrue(wait_for(lambda: len(LISTENING.findall(read_text(err))) >= count, 10),
                        read_text(err))
        return [int(p) for p in LISTENING.findall(read_text(err))]

    def connect_to_new_listener(self, err):
        """A connection to the HTTP source of a graph started again (drained, or the previous
        config): the second listener the log names (the port was 0)."""
        conn = httpclient.HTTPConnection("127.0.0.1", self.ports(err, 2)[-1], timeout=10)
        self.addCleanup(conn.close)
        return conn

    def post_all(self, conn, bodies):
        for body in bodies:
            conn.request("POST", "/", body=body.encode())
            resp = conn.getresponse()
            resp.read()
            self.assertEqual(resp.status, 200)

    def test_unchanged_nodes_keep_their_file_and_connections(self):
        out = self.path("out.txt")
        proc, err, sock, cfg = self.start(http_pipeline("upper", out))
        base = admin_url(err)
        port = self.ports(err)[0]
        conn = httpclient.HTTPConnection("127.0.0.1", port, timeout=10)
        self.addCleanup(conn.close)
        self.post_all(conn, [f"before {i}" for i in range(5)])
        self.assertTrue(wait_for(lambda: len(lines(out)) >= 5, 10), read_text(err))

        # Only the operator changes: the source and the sink keep running.
        self.write("p.toml", http_pipeline("lower", out))
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reloaded at", ready[1][1].get("STATUS", ""))
        self.assertIn("kept 2 of 3 nodes", read_text(err))

        # The same keep-alive connection goes on; the file was not truncated.
        self.post_all(conn, [f"AFTER {i}" for i in range(5)])
        want = [f"BEFORE {i}" for i in range(5)] + [f"after {i}" for i in range(5)]
        self.assertTrue(wait_for(lambda: lines(out) == [f'"{w}"' for w in want], 10),
                        f"{lines(out)}\n{read_text(err)}")
        # The kept source did not listen again.
        self.assertEqual(len(self.ports(err)), 1, read_text(err))
        m = parse_prometheus(http("GET", base + "/metrics")[2])
        self.assertEqual(sample(m, "sluice_reloads_total", result="applied"), 1)
        self.assertEqual(sample(m, "sluice_graph_generation"), 2)
        # The kept sink's counter goes on from before the reload.
        self.assertEqual(sample(m, "sluice_node_messages_in_total", node="out"), 10)

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))
        self.assertEqual(lines(out), [f'"{w}"' for w in want])

    def checkpointed(self, out, function):
        # Epochs every 20 ms: a reload often arrives while one runs, and waits for its end.
        return http_pipeline(function, out, f"""
[checkpoint]
interval_ms = 20
dir = {toml_str(self.path("cp"))}
""")

    def test_a_checkpointed_pipeline_changes_in_place_between_epochs(self):
        out = self.path("out.txt")
        proc, err, sock, cfg = self.start(self.checkpointed(out, "upper"))
        base = admin_url(err)
        conn = httpclient.HTTPConnection("127.0.0.1", self.ports(err)[0], timeout=10)
        self.addCleanup(conn.close)
        self.post_all(conn, [f"before {i}" for i in range(5)])
        self.assertTrue(wait_for(lambda: len(lines(out)) >= 5, 10), read_text(err))
        epochs = sample(parse_prometheus(http("GET", base + "/metrics")[2]),
                        "sluice_checkpoint_last_epoch")

        # The map keeps nothing in checkpoints: it changes in place; the source and the
        # file sink (whose state and transaction are in every epoch) keep running.
        self.write("p.toml", self.checkpointed(out, "lower"))
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reloaded at", ready[1][1].get("STATUS", ""))
        self.assertIn("kept 2 of 3 nodes", read_text(err))
        self.post_all(conn, [f"AFTER {i}" for i in range(5)])
        want = [f'"BEFORE {i}"' for i in range(5)] + [f'"after {i}"' for i in range(5)]
        self.assertTrue(wait_for(lambda: lines(out) == want, 10),
                        f"{lines(out)}\n{read_text(err)}")
        self.assertEqual(len(self.ports(err)), 1, read_text(err))
        # Checkpoints go on after the reload.
        self.assertTrue(wait_for(lambda: sample(parse_prometheus(
            http("GET", base + "/metrics")[2]), "sluice_checkpoint_last_epoch") > epochs + 5,
            10), read_text(err))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))
        self.assertEqual(lines(out), want)

    def test_a_checkpointed_node_that_changes_drains_the_graph(self):
        out, other = self.path("out.txt"), self.path("other.txt")
        proc, err, sock, cfg = self.start(self.checkpointed(out, "upper"))
        conn = httpclient.HTTPConnection("127.0.0.1", self.ports(err)[0], timeout=10)
        self.addCleanup(conn.close)
        self.post_all(conn, ["one"])
        self.assertTrue(wait_for(lambda: lines(out) == ['"ONE"'], 10), read_text(err))

        # The file sink's path changes: its state moves through the checkpoint store.
        self.write("p.toml", self.checkpointed(other, "upper"))
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reloaded at", ready[1][1].get("STATUS", ""))
        log = read_text(err)
        self.assertIn("node 'out' keeps checkpointed state and changes", log)
        self.assertIn("reload: old graph drained", log)
        conn = self.connect_to_new_listener(err)
        self.post_all(conn, ["two"])
        self.assertTrue(wait_for(lambda: lines(other) == ['"TWO"'], 10), read_text(err))
        self.assertEqual(lines(out), ['"ONE"'])
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_a_kept_node_keeps_its_pending_timer_when_it_moves(self):
        # src -> delay -> out; the reload adds a source and a sink, which moves the kept delay
        # and sink to other positions in the graph: the element the delay holds, and its timer,
        # go with it.
        out, ticks = self.path("out.txt"), self.path("ticks.txt")
        base_cfg = f"""
name = "held"
[sources.src]
type = "from_http_server"
port = 0
[operators.wait]
type = "delay"
inputs = ["src"]
interval_ms = 1500
[sinks.out]
type = "sink_to_textfile"
inputs = ["wait"]
path = {toml_str(out)}
"""
        added = f"""
[sources.ticks]
type = "from_periodic"
interval_ms = 20
value = "tick"
[sinks.tick_out]
type = "sink_to_textfile"
inputs = ["ticks"]
path = {toml_str(ticks)}
"""
        proc, err, sock, cfg = self.start(base_cfg)
        conn = httpclient.HTTPConnection("127.0.0.1", self.ports(err)[0], timeout=10)
        self.addCleanup(conn.close)
        self.post_all(conn, ["held"])
        self.write("p.toml", base_cfg + added)
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("kept 3 of 5 nodes", ready[1][1].get("STATUS", ""))
        self.assertEqual(lines(out), [], "the delay let the element out before its time")
        self.assertTrue(wait_for(lambda: lines(out) == ['"held"'], 10), read_text(err))
        self.assertTrue(wait_for(lambda: len(lines(ticks)) >= 3, 10), read_text(err))
        self.post_all(conn, ["later"])
        self.assertTrue(wait_for(lambda: lines(out) == ['"held"', '"later"'], 10),
                        read_text(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_a_graph_whose_finite_source_ended_drains_instead(self):
        out, seeds = self.path("out.txt"), self.path("seeds.txt")
        extra = f"""
[sources.seed]
type = "from_iterable"
values = [1, 2]
[sinks.seeds]
type = "sink_to_textfile"
inputs = ["seed"]
path = {toml_str(seeds)}
"""
        proc, err, sock, cfg = self.start(http_pipeline("upper", out, extra))
        self.assertTrue(wait_for(lambda: lines(seeds) == ["1", "2"], 10), read_text(err))
        self.write("p.toml", http_pipeline("lower", out, extra))
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reloaded at", ready[1][1].get("STATUS", ""))
        log = read_text(err)
        self.assertIn("reload: not in place: node 'seed' has ended", log)
        self.assertIn("reload: old graph drained", log)
        # The new graph runs from the start: the seeds again, the new operator.
        conn = self.connect_to_new_listener(err)
        self.post_all(conn, ["MiXed"])
        self.assertTrue(wait_for(lambda: lines(out) == ['"mixed"'], 10), read_text(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_a_node_that_cannot_be_created_rejects_the_reload(self):
        out, blocker = self.path("out.txt"), self.write("blocker", "")
        proc, err, sock, cfg = self.start(http_pipeline("upper", out))
        base = admin_url(err)
        conn = httpclient.HTTPConnection("127.0.0.1", self.ports(err)[0], timeout=10)
        self.addCleanup(conn.close)
        self.post_all(conn, ["one", "two"])

        # A valid config whose new node fails in create (its blocker file exists).
        gate = f"""
[operators.gate]
type = "gate"
inputs = ["shape"]
blocker = {toml_str(blocker)}
[sinks.audit]
type = "sink_to_textfile"
inputs = ["gate"]
path = {toml_str(self.path("audit.txt"))}
"""
        self.write("p.toml", http_pipeline("lower", out, gate))
        self.assertExit(self.sluiced("validate", cfg), EXIT_OK)
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        status_line = ready[1][1].get("STATUS", "")
        self.assertIn("reload rejected", status_line)
        self.assertIn("gate: the blocker file exists", status_line)
        self.assertIn("the running graph continues unchanged", read_text(err))

        # Nothing changed: same connection, same operator (upper), file intact.
        self.post_all(conn, ["three"])
        self.assertTrue(wait_for(lambda: lines(out) == ['"ONE"', '"TWO"', '"THREE"'], 10),
                        f"{lines(out)}\n{read_text(err)}")
        self.assertFalse(os.path.exists(self.path("audit.txt")))
        self.assertEqual(http("GET", base + "/readyz")[0], 200)
        m = parse_prometheus(http("GET", base + "/metrics")[2])
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 1)
        self.assertEqual(sample(m, "sluice_reloads_total", result="applied"), 0)
        self.assertEqual(sample(m, "sluice_graph_generation"), 1)

        # With the blocker gone the same config applies.
        os.unlink(blocker)
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=3)
        self.assertIn("reloaded at", ready[2][1].get("STATUS", ""))
        self.post_all(conn, ["FOUR"])
        self.assertTrue(wait_for(lambda: lines(self.path("audit.txt")) == ['"four"'], 10),
                        read_text(err))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def taken_port(self):
        """A port another process listens on: an HTTP source cannot listen there, which is
        known only when it starts."""
        taken = socket.socket()
        self.addCleanup(taken.close)
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        return taken.getsockname()[1]

    def second_source(self, port, out):
        return f"""
[sources.second]
type = "from_http_server"
port = {port}
[sinks.second_out]
type = "sink_to_textfile"
inputs = ["second"]
path = {toml_str(out)}
"""

    def check_rolled_back(self, proc, err, sock, conn, out, want,
                          failure="node 'second' (from_http_server): start failed"):
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reload failed", ready[1][1].get("STATUS", ""))
        self.assertIn(failure, read_text(err))
        self.assertIn("the previous graph is back in place", read_text(err))
        self.assertIsNone(proc.poll(), "sluiced exited after a reload that failed to start")

        # The previous graph runs on in place: the same keep-alive connection to the kept
        # source, which did not listen again, the re-created operator of the previous config
        # (upper), and the kept sink's file, not truncated.
        self.post_all(conn, ["three"])
        self.assertTrue(wait_for(lambda: lines(out) == want, 10),
                        f"{lines(out)}\n{read_text(err)}")
        self.assertEqual(len(self.ports(err)), 1, read_text(err))
        base = admin_url(err)
        self.assertEqual(http("GET", base + "/readyz")[0], 200)
        m = parse_prometheus(http("GET", base + "/metrics")[2])
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 1)
        self.assertEqual(sample(m, "sluice_reloads_total", result="applied"), 0)
        self.assertEqual(sample(m, "sluice_graph_generation"), 1)

    def test_a_node_that_cannot_start_puts_the_previous_graph_back_in_place(self):
        out = self.path("out.txt")
        proc, err, sock, cfg = self.start(http_pipeline("upper", out))
        conn = httpclient.HTTPConnection("127.0.0.1", self.ports(err)[0], timeout=10)
        self.addCleanup(conn.close)
        self.post_all(conn, ["one", "two"])
        self.assertTrue(wait_for(lambda: len(lines(out)) == 2, 10), read_text(err))

        # The operator changes and a second HTTP source comes, on a taken port.
        self.write("p.toml", http_pipeline(
            "lower", out, self.second_source(self.taken_port(), self.path("second.txt"))))
        self.assertExit(self.sluiced("validate", cfg), EXIT_OK)
        proc.send_signal(signal.SIGHUP)
        self.check_rolled_back(proc, err, sock, conn, out, ['"ONE"', '"TWO"', '"THREE"'])

        # A config that can start applies afterwards.
        self.write("p.toml", http_pipeline("lower", out))
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=3)
        self.assertIn("reloaded at", ready[2][1].get("STATUS", ""))
        self.post_all(conn, ["FOUR"])
        self.assertTrue(wait_for(lambda: lines(out)[-1:] == ['"four"'], 10), read_text(err))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_with_two_tasks_the_task_that_started_follows_the_rollback(self):
        # A new node whose start fails on task 0 only: task 1 commits the new graph, then
        # returns to the previous one too. `idle` runs on every task and never ends (the
        # built-in sources run on task 0 only, and a task whose nodes have ended cannot
        # change in place: it would drain).
        blocker = self.write("start-blocker", "")

        def two_tasks(function, late=""):
            return f"""
name = "wide"
plugin_dirs = [{toml_str(SERVICE_PLUGIN_DIR)}]
[admin]
port = 0
[runtime]
tasks = 2
[sources.idle]
type = "idle"
[operators.shape]
type = "map"
inputs = ["idle"]
function = {toml_str(function)}
[sinks.out]
type = "print"
inputs = ["shape"]
{late}"""

        late = f"""
[operators.late]
type = "gate"
inputs = ["idle"]
blocker = ""
start_blocker = {toml_str(blocker)}
start_task = 0
[sinks.late_out]
type = "print"
inputs = ["late"]
"""
        proc, err, sock, cfg = self.start(two_tasks("upper"))
        base = admin_url(err)
        self.write("p.toml", two_tasks("lower", late))
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reload failed", ready[1][1].get("STATUS", ""))
        log = read_text(err)
        self.assertIn("node 'late' (gate): start failed", log)
        self.assertIn("the previous graph is back in place", log)
        self.assertIn("task 0: live reload rolled back in place", log)
        # Task 1 started the new graph (idle and out kept; shape, late, late_out started),
        # then went back to the previous one (the previous shape started again).
        self.assertIn("task 1: live reload: kept 2 node(s), retired 1, started 3", log)
        self.assertIn("task 1: live reload: kept 2 node(s), retired 3, started 1", log)
        self.assertIsNone(proc.poll())
        self.assertEqual(http("GET", base + "/readyz")[0], 200)
        m = parse_prometheus(http("GET", base + "/metrics")[2])
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 1)
        self.assertEqual(sample(m, "sluice_graph_generation"), 1)

        # Without the blocker the same config applies on both tasks.
        os.unlink(blocker)
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=3)
        self.assertIn("reloaded at", ready[2][1].get("STATUS", ""))
        self.assertIn("task 0: live reload: kept 2 node(s), retired 1, started 3",
                      read_text(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_a_drained_graph_that_cannot_start_brings_the_previous_config_back(self):
        # A graph that cannot change in place (a finite source has ended) drains; when the new
        # graph then fails to start, the previous config starts again from scratch.
        out, seeds = self.path("out.txt"), self.path("seeds.txt")
        extra = f"""append = true
[sources.seed]
type = "from_iterable"
values = [1, 2]
[sinks.seeds]
type = "sink_to_textfile"
inputs = ["seed"]
path = {toml_str(seeds)}
"""
        proc, err, sock, cfg = self.start(http_pipeline("upper", out, extra))
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: lines(seeds) == ["1", "2"], 10), read_text(err))
        self.write("p.toml", http_pipeline(
            "upper", out, extra + self.second_source(self.taken_port(), self.path("2.txt"))))
        proc.send_signal(signal.SIGHUP)
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reload failed", ready[1][1].get("STATUS", ""))
        self.assertIn("reload: old graph drained", read_text(err))
        self.assertIn("starting the previous config again", read_text(err))
        self.assertIsNone(proc.poll(), "sluiced exited after a reload that failed to start")

        # The previous graph runs again (a new listener: the port was 0) and takes data.
        conn = self.connect_to_new_listener(err)
        self.post_all(conn, ["again"])
        self.assertTrue(wait_for(lambda: lines(out) == ['"AGAIN"'], 10), read_text(err))
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 10))
        m = parse_prometheus(http("GET", base + "/metrics")[2])
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 1)
        self.assertEqual(sample(m, "sluice_reloads_total", result="applied"), 0)

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

if __name__ == "__main__":
    unittest.main()

"""Checkpointing through `sluiced` as a real process (label "integration"):
`sluiced checkpoints` (text and --json), SIGTERM's final checkpoint (finish is not
called: a partial window is not emitted twice), the end-of-input checkpoint of a bounded run
(a rerun reads nothing again; a task that ended early keeps its end in later epochs), a saved state the new config cannot use
(refused; --reset-state NODE / all), a corrupt newest checkpoint (warning, previous one
used), and the third-party C sink of examples/ taking part through the SDK alone."""

import json
import os
import signal
import time
import unittest

from sluice_it import (EXIT_INVALID, EXIT_OK, SluiceTestCase, broken, plugin_file, toml_str,
                       wait_for)

EXAMPLE_DIR = os.environ.get("SLUICE_CK_EXAMPLE_DIR", "")


def windows_config(follow, sink="sink_to_textfile", extra_sink="", op_id="win"):
    return f"""
name = "ck"
[checkpoint]
interval_ms = 50
dir = "ck"
[sources.lines]
type = "from_textfile"
path = "in.txt"
follow = {"true" if follow else "false"}
poll_interval_ms = 10
[operators.{op_id}]
type = "partition"
inputs = ["lines"]
n = 3
emit_partial = true
[sinks.out]
type = "{sink}"
inputs = ["{op_id}"]
path = "out.jsonl"
{extra_sink}
"""


class CheckpointCliTest(SluiceTestCase):

    def run_until_checkpoint_then_term(self, cfg, needle="checkpoint epoch"):
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(self.wait_log(err, needle), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        return self.read(err)

    def test_sigterm_takes_a_final_checkpoint_and_does_not_finish(self):
        self.write("in.txt", "".join(f"{i}\n" for i in range(1, 11)))
        cfg = self.write("p.toml", windows_config(follow=True))
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_for(lambda: os.path.exists(self.path("out.jsonl")) and
                                 self.read("out.jsonl").count("\n") == 3, 20), self.read(err))
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        log = self.read(err)
        self.assertIn("(final)", log)
        self.assertIn("final checkpoint written", log)
        # partition's finish (emit_partial) would have emitted ["10"]: it is state, not output.
        self.assertEqual(self.read("out.jsonl").splitlines(),
                         ['["1","2","3"]', '["4","5","6"]', '["7","8","9"]'])
        # Restart on more input, without follow: "10" comes back from the saved window.
        with open(self.path("in.txt"), "a") as f:
            f.write("11\n12\n13\n")
        self.write("p.toml", windows_config(follow=False))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertInStderr("restoring checkpoint epoch", r)
        self.assertEqual(self.read("out.jsonl").splitlines(),
                         ['["1","2","3"]', '["4","5","6"]', '["7","8","9"]',
                          '["10","11","12"]', '["13"]'])

    def end_of_input_config(self, sink_keys):
        # No periodic epoch during these short runs: only the end of input's.
        return self.write("eoi.toml", f"""
name = "eoi"
[checkpoint]
interval_ms = 3600000
dir = "ck"
[sources.lines]
type = "from_textfile"
path = "in.txt"
[operators.num]
type = "map"
function = "json_parse"
inputs = ["lines"]
[operators.total]
type = "accumulate"
function = "sum"
inputs = ["num"]
[sinks.out]
type = "sink_to_textfile"
inputs = ["total"]
path = "out.jsonl"
{sink_keys}
""")

    def test_a_bounded_run_checkpoints_its_end_so_a_rerun_does_not_replay_it(self):
        self.write("in.txt", "".join(f"{i}\n" for i in range(1, 11)))
        # append = true: a replayed record would show as a second line.
        cfg = self.end_of_input_config("append = true")
        sums = [str(sum(range(1, i + 1))) for i in range(1, 13)]
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertInStderr("task 0: input ended (source 'lines'): a checkpoint of the end", r)
        self.assertInStderr("checkpoint epoch 1:", r)
        self.assertEqual(self.read("out.jsonl").splitlines(), sums[:10])
        ck = json.loads(self.sluiced("checkpoints", cfg, "--json").stdout)
        newest = [e for e in ck["epochs"] if e["newest"]][0]
        self.assertTrue(newest["committed"])
        nodes = {n["id"]: n for n in newest["tasks"][0]["nodes"]}
        self.assertEqual(nodes["lines"]["position"], {"offset": 21})  # the whole file
        # The same input again: nothing is read, nothing is written.
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertInStderr("restoring checkpoint epoch 1", r)
        self.assertEqual(self.read("out.jsonl").splitlines(), sums[:10])
        # More input: only the new records, summed on from the saved state.
        with open(self.path("in.txt"), "a") as f:
            f.write("11\n12\n")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(self.read("out.jsonl").splitlines(), sums)

    def test_what_finish_emits_comes_again_from_the_end_of_input_checkpoint(self):
        # The checkpoint is cut before finish (as SIGTERM's): emit_partial's ["10"] is state,
        # written again by the rerun's finish; exactly_once cuts the file back first.
        self.write("in.txt", "".join(f"{i}\n" for i in range(1, 11)))
        cfg = self.write("p.toml", windows_config(follow=False, extra_sink="exactly_once = true"))
        windows = ['["1","2","3"]', '["4","5","6"]', '["7","8","9"]']
        for _ in range(2):
            r = self.sluiced("run", cfg)
            self.assertExit(r, EXIT_OK)
            self.assertEqual(self.read("out.jsonl").splitlines(), windows + ['["10"]'])
        self.assertInStderr("restoring checkpoint epoch", r)
        with open(self.path("in.txt"), "a") as f:
            f.write("11\n12\n13\n")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(self.read("out.jsonl").splitlines(),
                         windows + ['["10","11","12"]', '["13"]'])

    def test_a_task_whose_input_ended_keeps_its_end_in_later_checkpoints(self):
        # Two tasks: from_textfile reads in task 0 (follow: it never ends); task 1's input
        # ends at once. Its end-of-input snapshot is carried by every later epoch, so that a
        # restart resumes it at its end instead of starting it fresh ("finished").
        self.write("in.txt", "1\n2\n3\n")
        cfg = self.write("p.toml", windows_config(follow=True).replace(
            'name = "ck"', 'name = "ck"\n[runtime]\ntasks = 2').replace(
            'path = "out.jsonl"', 'path = "out-{task}.jsonl"'))
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(self.wait_log(err, "task 1: input ended (source 'lines')"),
                        self.read(err))
        self.assertTrue(self.wait_log(err, "checkpoint epoch 3"), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        doc = json.loads(self.sluiced("checkpoints", cfg, "--json").stdout)
        for epoch in doc["epochs"]:
            task1 = epoch["tasks"][1]
            self.assertFalse(task1["finished"], epoch)
            self.assertIn("lines", [n["id"] for n in task1["nodes"]], epoch)

    def test_reload_keeps_state_through_a_final_checkpoint(self):
        self.write("in.txt", "".join(f"{i}\n" for i in range(1, 8)))
        cfg = self.write("p.toml", windows_config(follow=True))
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_for(lambda: os.path.exists(self.path("out.jsonl")) and
                                 self.read("out.jsonl").count("\n") == 2, 20), self.read(err))
        # The source keeps its position in checkpoints: changing it drains the graph with a
        # final checkpoint, which the new graph restores.
        self.write("p.toml", windows_config(follow=True).replace("poll_interval_ms = 10",
                                                                  "poll_interval_ms = 20"))
        proc.send_signal(signal.SIGHUP)
        self.assertTrue(self.wait_log(err, "reload: old graph drained"), self.read(err))
        self.assertIn("node 'lines' keeps checkpointed state and changes", self.read(err))
        self.assertTrue(self.wait_log(err, "restoring checkpoint epoch"), self.read(err))
        with open(self.path("in.txt"), "a") as f:
            f.write("8\n9\n")
        self.assertTrue(wait_for(lambda: self.read("out.jsonl").count("\n") == 3, 20),
                        self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        # "7" was held in the window across the reload: no partial flush, no loss.
        self.assertEqual(self.read("out.jsonl").splitlines(),
                         ['["1","2","3"]', '["4","5","6"]', '["7","8","9"]'])

    def test_a_reload_that_changes_no_checkpointed_node_keeps_state_in_place(self):
        # The same config: every node is kept, with the window's held element, between two
        # epochs; checkpoints go on, and a restart after it resumes where it stopped.
        self.write("in.txt", "".join(f"{i}\n" for i in range(1, 8)))
        cfg = self.write("p.toml", windows_config(follow=True))
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_for(lambda: os.path.exists(self.path("out.jsonl")) and
                                 self.read("out.jsonl").count("\n") == 2, 20), self.read(err))
        proc.send_signal(signal.SIGHUP)
        self.assertTrue(self.wait_log(err, "reload: applied in place (kept 3 of 3 nodes)"),
                        self.read(err))
        self.assertNotIn("drained", self.read(err))
        with open(self.path("in.txt"), "a") as f:
            f.write("8\n9\n")
        self.assertTrue(wait_for(lambda: self.read("out.jsonl").count("\n") == 3, 20),
                        self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        self.assertEqual(self.read("out.jsonl").splitlines(),
                         ['["1","2","3"]', '["4","5","6"]', '["7","8","9"]'])
        with open(self.path("in.txt"), "a") as f:
            f.write("10\n11\n12\n")
        cfg2 = self.write("p.toml", windows_config(follow=False))
        r = self.sluiced("run", cfg2)
        self.assertExit(r, EXIT_OK)
        self.assertInStderr("restoring checkpoint epoch", r)
        self.assertEqual(self.read("out.jsonl").splitlines(),
                         ['["1","2","3"]', '["4","5","6"]', '["7","8","9"]',
                          '["10","11","12"]'])

    def test_checkpoints_lists_epochs_positions_and_sizes(self):
        self.write("in.txt", "a\nb\nc\nd\n")
        cfg = self.write("p.toml", windows_config(follow=True))
        self.run_until_checkpoint_then_term(cfg)
        r = self.sluiced("checkpoints", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertIn("pipeline 'ck': store 'fs'", r.stdout)
        self.assertIn("newest usable, committed", r.stdout)
        self.assertIn('source lines (from_textfile): position {"offset":8}', r.stdout)
        self.assertRegex(r.stdout, r"node win \(partition\): \d+ bytes of state")
        j = self.sluiced("checkpoints", cfg, "--json")
        self.assertExit(j, EXIT_OK)
        doc = json.loads(j.stdout)
        newest = [e for e in doc["epochs"] if e["newest"]]
        self.assertEqual(len(newest), 1)
        self.assertTrue(newest[0]["committed"])
        nodes = {n["id"]: n for n in newest[0]["tasks"][0]["nodes"]}
        self.assertEqual(nodes["lines"]["position"], {"offset": 8})
        self.assertGreater(nodes["win"]["state_bytes"], 0)
        self.assertLessEqual(len(doc["epochs"]), 3)  # keep = 3 (the default)

    def default_dir_config(self):
        # No `dir`: the fs store's default, $STATE_DIRECTORY/svc under systemd.
        return self.write("svc.toml", """
name = "svc"
[checkpoint]
interval_ms = 3600000
[sources.lines]
type = "from_iterable"
values = [1, 2, 3]
[sinks.out]
type = "sink_to_textfile"
inputs = ["lines"]
path = "out.jsonl"
""")

    def shell_env(self, state):
        env = self.env(SLUICE_SERVICE_STATE_DIR=state)
        env.pop("STATE_DIRECTORY", None)
        return env

    def test_checkpoints_from_a_shell_finds_the_service_state_directory(self):
        cfg = self.default_dir_config()
        state = self.mkdir("var-lib-sluice")
        service_cwd = self.mkdir("service")  # the unit's WorkingDirectory
        env = self.env(STATE_DIRECTORY=state)
        r = self.sluiced("run", cfg, env=env, cwd=service_cwd)
        self.assertExit(r, EXIT_OK)
        self.assertTrue(os.path.isdir(os.path.join(state, "svc")), r.describe())
        # From a shell elsewhere, without $STATE_DIRECTORY: the service's directory is found,
        # named, and nothing is created where the shell is.
        shell = self.mkdir("shell")
        r = self.sluiced("checkpoints", cfg, env=self.shell_env(state), cwd=shell)
        self.assertExit(r, EXIT_OK)
        self.assertIn("newest usable, committed", r.stdout)
        self.assertInStderr(f"checkpoint directory: {os.path.join(state, 'svc')}", r)
        self.assertEqual(os.listdir(shell), [])
        j = self.sluiced("checkpoints", cfg, "--json", env=self.shell_env(state), cwd=shell)
        self.assertExit(j, EXIT_OK)
        self.assertTrue(json.loads(j.stdout)["epochs"])
        self.assertEqual(os.listdir(shell), [])

    def test_checkpoints_says_where_it_looked_and_creates_nothing(self):
        cfg = self.default_dir_config()
        state = self.path("no-state-dir")
        shell = self.mkdir("shell")
        r = self.sluiced("checkpoints", cfg, env=self.shell_env(state), cwd=shell)
        self.assertEqual(r.returncode, 1, r.describe())
        self.assertInStderr("no checkpoint directory found for pipeline 'svc'; looked in:", r)
        self.assertInStderr("svc.checkpoints (the default outside systemd, ./<name>.checkpoints): "
                            "does not exist", r)
        self.assertInStderr(f"{os.path.join(state, 'svc')} (the service's state directory): "
                            "does not exist", r)
        # Listing never creates a directory (it used to create an empty ./svc.checkpoints).
        self.assertEqual(os.listdir(shell), [])
        self.assertFalse(os.path.exists(state))

    def test_checkpoints_show_member_key_groups_and_claims(self):
        # Issue 13: a grouped source (it_counters' grouped_numbers: keyed, tells the host it
        # was assigned key group 1) -> key_by -> aggregate (keyed), member "m1". Each epoch
        # shows who wrote it, the groups each task held with its claims, the groups each
        # keyed node's state holds, and where each group would be restored from.
        cfg = self.write("kg.toml", f"""\
name = "kg"
plugin_dirs = [{toml_str(broken("counters"))}]
[checkpoint]
interval_ms = 50
dir = "ck"
member = "m1"
[sources.numbers]
type = "grouped_numbers"
group_id = "g"
stay = true
[operators.keyed]
type = "key_by"
inputs = ["numbers"]
function = "identity"
[operators.counts]
type = "aggregate"
inputs = ["keyed"]
function = "count"
start = 0
[sinks.out]
type = "sink_to_textfile"
inputs = ["counts"]
path = "out.txt"
""")
        self.run_until_checkpoint_then_term(cfg)
        j = self.sluiced("checkpoints", cfg, "--json")
        self.assertExit(j, EXIT_OK)
        doc = json.loads(j.stdout)
        newest = [e for e in doc["epochs"] if e["newest"]][0]
        self.assertEqual(newest["member"], "m1")
        task = newest["tasks"][0]
        self.assertEqual(len(task["claims"]), 1, task)
        claim = task["claims"][0]
        self.assertEqual((claim["source"], claim["group"]), ("numbers", 1))
        self.assertGreaterEqual(claim["claim"], 1)
        nodes = {n["id"]: n for n in task["nodes"]}
        self.assertEqual(nodes["counts"]["key_groups"], [1])
        self.assertEqual(nodes["numbers"]["key_groups"], [1])  # the source is keyed too
        self.assertEqual(doc["key_groups"], [
            {"source": "numbers", "group": 1, "epoch": newest["epoch"], "member": "m1",
             "claim": claim["claim"], "highest_claim": claim["claim"]}])
        r = self.sluiced("checkpoints", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertRegex(r.stdout, rf"epoch {newest['epoch']}  \S+  \d+ bytes  member 'm1'  "
                                   r"\(newest usable, committed\)")
        self.assertIn(f"    key groups of source numbers: 1 (claim {claim['claim']})", r.stdout)
        self.assertRegex(r.stdout, r"node counts \(aggregate\): \d+ bytes of state, key groups 1")
        self.assertIn(f"  source numbers group 1: epoch {newest['epoch']} (member 'm1'), "
                      f"claim {claim['claim']}", r.stdout)

    def test_state_the_new_config_cannot_use_is_refused_unless_reset(self):
        self.write("in.txt", "a\nb\n")
        cfg = self.write("p.toml", windows_config(follow=True))
        self.run_until_checkpoint_then_term(cfg)
        self.write("p.toml", windows_config(follow=True, op_id="groups"))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("node 'win' (partition) has saved state in checkpoint epoch", r)
        self.assertInStderr("--reset-state", r)
        self.assertFalse(os.path.exists(self.path("out2.jsonl")))
        log = self.run_with_reset(cfg, "win")
        self.assertIn("--reset-state win: the node starts from fresh state", log)
        self.write("p.toml", windows_config(follow=True, op_id="other"))
        log = self.run_with_reset(cfg, "all")
        self.assertIn("--reset-state all", log)

    def run_with_reset(self, cfg, node):
        proc, _, err = self.spawn("run", cfg, "--reset-state", node)
        self.assertTrue(self.wait_log(err, "running"), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        return self.read(err)

    def test_corrupt_newest_checkpoint_falls_back_with_a_warning(self):
        self.write("in.txt", "1\n2\n3\n4\n")
        cfg = self.write("p.toml", windows_config(follow=True))
        self.run_until_checkpoint_then_term(cfg)
        files = sorted(f for f in os.listdir(self.path("ck")) if f.endswith(".ckpt"))
        self.assertGreaterEqual(len(files), 2, files)
        with open(self.path("ck", files[-1]), "r+b") as f:
            f.seek(30)
            f.write(b"\xff\xfe")
        r = self.sluiced("checkpoints", cfg)
        self.assertIn("UNUSABLE", r.stdout)
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(self.wait_log(err, "restoring checkpoint epoch"), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK)
        log = self.read(err)
        self.assertIn(f"checkpoint epoch {int(files[-1][6:26])} in store 'fs' is unusable", log)
        self.assertIn("checksum mismatch", log)
        self.assertIn(f"restoring checkpoint epoch {int(files[-2][6:26])}", log)

    @unittest.skipUnless(EXAMPLE_DIR and os.path.isdir(EXAMPLE_DIR),
                         "SLUICE_CK_EXAMPLE_DIR (the example sink's build dir) is not set")
    def test_third_party_c_sink_is_exactly_once_across_kills(self):
        n = 3000
        lines = [f"{i}\n" for i in range(n)]
        self.write("in.txt", "")
        cfg = self.write("p.toml", f"""
name = "ck"
plugin_dirs = [{toml_str(EXAMPLE_DIR)}]
[runtime]
batch_size = 4
[checkpoint]
interval_ms = 20
dir = "ck"
[sources.lines]
type = "from_textfile"
path = "in.txt"
follow = true
poll_interval_ms = 5
[sinks.out]
type = "durable_lines"
inputs = ["lines"]
path = "out.jsonl"
""")
        written = 0
        for _ in range(5):
            with open(self.path("in.txt"), "a") as f:
                f.write("".join(lines[written:written + n // 6]))
            written += n // 6
            proc, _, err = self.spawn("run", cfg)
            self.assertTrue(self.wait_log(err, "checkpoint epoch"), self.read(err))
            time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        with open(self.path("in.txt"), "a") as f:
            f.write("".join(lines[written:]))
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(self.wait_log(err, "running"), self.read(err))
        want = [f'"{i}"' for i in range(n)]
        self.assertTrue(wait_for(lambda: self.read("out.jsonl").splitlines()[-1:] == want[-1:],
                                 30), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        self.assertEqual(self.read("out.jsonl").splitlines(), want)


if __name__ == "__main__":
    unittest.main()

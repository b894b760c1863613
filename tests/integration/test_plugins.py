"""Plugins sluiced must refuse, each with exit 2 and a message naming the file: a wrong ABI
major, a shared object without the entry symbol, two plugins providing one node type, an
entry point that returns NULL, and files or directories others could modify."""

import json
import os
import shutil
import stat
import struct
import unittest

from sluice_it import (EXIT_INVALID, EXIT_OK, PLUGIN_DIR, SluiceTestCase, broken, line_col,
                       plugin_file, toml_str)


def good_pipeline(out_path):
    return f"""\
[sources.numbers]
type = "from_iterable"
values = [1, 2]

[sinks.out]
type = "sink_to_textfile"
inputs = ["numbers"]
path = {toml_str(out_path)}
"""


class RefusedPluginTest(SluiceTestCase):
    """Each case is checked through `plugins`, `validate` and `run`: all refuse."""

    def refused(self, case, *message_parts, files=None):
        d = broken(case)
        files = files or sorted(os.path.join(d, f) for f in os.listdir(d))
        out = self.path("out.txt")
        cfg = self.write("p.toml", good_pipeline(out))
        for argv in (["plugins"], ["validate", cfg], ["run", cfg]):
            r = self.sluiced(*argv, "--plugin-dir", d)
            self.assertExit(r, EXIT_INVALID)
            # One line says it all: the file, and why.
            self.stderr_line_with(r, files[-1], *message_parts)
            for f in files:
                self.assertInStderr(f, r)
        self.assertFalse(os.path.exists(out), "a refused plugin must stop the run before it starts")
        return r

    def test_wrong_abi_major(self):
        self.refused("abi_major", "built for sluice ABI 2.", "this host speaks ABI 1.")

    def test_missing_entry_symbol(self):
        self.refused("no_entry", "sluice_plugin_v1")

    def test_duplicate_node_type_names_both_files(self):
        d = broken("duplicate")
        files = [os.path.join(d, "libit_dup_a.so"), os.path.join(d, "libit_dup_b.so")]
        r = self.refused("duplicate", "dup_op", files[0], files=files)
        self.stderr_line_with(r, "dup_op", files[0], files[1])

    def test_entry_point_returns_null(self):
        r = self.refused("entry_null", "refused to load")
        # The plugin's own explanation, logged through host->log before it returned NULL.
        self.assertInStderr("the licence file /nonexistent/it.lic is missing", r)

    def test_state_callbacks_without_the_stateful_flag(self):
        # Its state would never have been saved: refused at load, naming the fix.
        self.refused("state_flags", "node type 'counting_sink'",
                     "without the flag SL_NODE_STATEFUL, so its state would never be saved")

    def test_good_plugins_still_listed_next_to_a_refused_one(self):
        r = self.sluiced("plugins", "--json", "--plugin-dir", broken("abi_major"))
        self.assertExit(r, EXIT_INVALID)
        names = {p["name"] for p in json.loads(r.stdout)["plugins"]}
        self.assertIn("core_ops", names)
        self.assertNotIn("it_abi_major", names)

    def test_refused_plugin_in_config_plugin_dirs(self):
        cfg = self.write("p.toml", f"plugin_dirs = [{toml_str(broken('no_entry'))}]\n"
                         + good_pipeline(self.path("out.txt")))
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr(os.path.join(broken("no_entry"), "libit_no_entry.so"), r)


class TestPluginsLoadTest(SluiceTestCase):
    """The plugins that are only broken at run time load fine, with their declarations."""

    def test_listed_with_params(self):
        for case, node_type, param in [("throws", "throwing_op", "throw_on"),
                                       ("error_status", "failing_op", "fail_on"),
                                       ("old_abi", "old_scale", "factor")]:
            r = self.sluiced("plugins", "--json", "--plugin-dir", broken(case))
            self.assertExit(r, EXIT_OK)
            types = {t["name"]: t for p in json.loads(r.stdout)["plugins"] for t in p["node_types"]}
            self.assertIn(node_type, types, r.describe())
            params = {p["name"]: p for p in types[node_type]["params"]}
            self.assertEqual(params[param]["type"], "int")
            self.assertFalse(params[param]["required"])


class TamperablePluginTest(SluiceTestCase):
    """sluiced refuses plugins that someone other than their owner could replace."""

    def copy_good_plugin(self, dir_mode=0o755):
        d = self.mkdir("plugins", dir_mode)
        src = plugin_file(broken("old_abi"), "old_node_type")
        dst = os.path.join(d, os.path.basename(src))
        shutil.copy2(src, dst)
        os.chmod(dst, 0o755)
        os.chmod(d, dir_mode)  # after the copy: mkdir is subject to the umask
        return d, dst

    def run_validate(self, d):
        cfg = self.write("p.toml", good_pipeline(self.path("out.txt")))
        return self.sluiced("validate", cfg, "--plugin-dir", d)

    def test_control_good_copy_loads(self):
        d, _ = self.copy_good_plugin()
        r = self.run_validate(d)
        self.assertExit(r, EXIT_OK)

    def test_world_writable_file(self):
        d, f = self.copy_good_plugin()
        os.chmod(f, os.stat(f).st_mode | stat.S_IWOTH)
        mode = stat.S_IMODE(os.stat(f).st_mode)
        self.assertEqual(mode, 0o757)
        r = self.run_validate(d)
        self.assertExit(r, EXIT_INVALID)
        line = self.stderr_line_with(r, f, "0757")
        self.assertIn("writable", line)
        r = self.sluiced("run", self.path("p.toml"), "--plugin-dir", d)
        self.assertExit(r, EXIT_INVALID)
        self.stderr_line_with(r, f, "0757")

    def test_group_writable_file(self):
        d, f = self.copy_good_plugin()
        os.chmod(f, 0o775)
        r = self.run_validate(d)
        self.assertExit(r, EXIT_INVALID)
        self.stderr_line_with(r, f, "0775")

    def test_group_writable_directory(self):
        d, f = self.copy_good_plugin(dir_mode=0o775)
        self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o775)
        r = self.run_validate(d)
        self.assertExit(r, EXIT_INVALID)
        line = self.stderr_line_with(r, d, "0775")
        self.assertIn("directory", line)

    def test_world_writable_directory_via_config(self):
        d, _ = self.copy_good_plugin(dir_mode=0o757)
        cfg = self.write("p.toml", 'plugin_dirs = ["plugins"]\n' + good_pipeline(self.path("o")))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.stderr_line_with(r, "plugins", "0757")


class UnsafePluginFileTest(SluiceTestCase):
    """Files named *.so that are not loadable shared objects, and directories others could
    swap through an ancestor: refused with a clear message before dlopen, never a SIGBUS
    or a hang."""

    def plugin_dir_with(self, name="plugins", parent_mode=None):
        parent = self.tmp
        if parent_mode is not None:
            parent = self.mkdir("parent")
        d = os.path.join(parent, name)
        os.makedirs(d)
        os.chmod(d, 0o755)
        if parent_mode is not None:
            os.chmod(parent, parent_mode)
            self.addCleanup(os.chmod, parent, 0o755)
        return d

    def good_copy(self, d):
        src = plugin_file(broken("old_abi"), "old_node_type")
        dst = os.path.join(d, os.path.basename(src))
        shutil.copy2(src, dst)
        os.chmod(dst, 0o755)
        return dst

    def validate(self, d, timeout=60):
        cfg = self.write("p.toml", good_pipeline(self.path("out.txt")))
        return self.sluiced("validate", cfg, "--plugin-dir", d, timeout=timeout)

    @staticmethod
    def loaded_end(path):
        """Where the last byte the dynamic loader maps (PT_LOAD) ends: a file cut before it
        made dlopen die of SIGBUS (ELF64 little-endian, as the build machine)."""
        with open(path, "rb") as f:
            data = f.read()
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        end = 0
        for i in range(phnum):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
                "<IIQQQQ", data, phoff + i * phentsize)
            if p_type == 1:  # PT_LOAD
                end = max(end, p_offset + p_filesz)
        return end

    def test_truncated_elf_is_refused_not_a_sigbus(self):
        d = self.plugin_dir_with()
        f = self.good_copy(d)
        end = self.loaded_end(f)
        self.assertGreater(end, 4096)
        for keep in (end - 1, end // 2, 200, 40, 3):
            with self.subTest(keep=keep):
                os.truncate(f, keep)
                r = self.validate(d)
                self.assertExit(r, EXIT_INVALID)  # was -7 (SIGBUS) at size // 2
                line = self.stderr_line_with(r, f, "cannot load")
                if keep >= 64:
                    self.assertIn("truncated ELF file", line)

    def test_not_elf_is_refused(self):
        d = self.plugin_dir_with()
        f = os.path.join(d, "libtext.so")
        with open(f, "w", encoding="ascii") as out:
            out.write("this is not a shared object\n" * 100)
        os.chmod(f, 0o755)
        r = self.validate(d)
        self.assertExit(r, EXIT_INVALID)
        self.stderr_line_with(r, f, "not an ELF shared object")

    def test_fifo_is_refused_without_blocking(self):
        d = self.plugin_dir_with()
        f = os.path.join(d, "libfifo.so")
        os.mkfifo(f, 0o644)
        r = self.validate(d, timeout=30)  # nobody ever writes to it: a hang fails here
        self.assertExit(r, EXIT_INVALID)
        self.stderr_line_with(r, f, "a FIFO, not a regular file")

    def test_world_writable_non_sticky_ancestor_is_refused(self):
        d = self.plugin_dir_with(parent_mode=0o777)
        self.good_copy(d)
        r = self.validate(d)
        self.assertExit(r, EXIT_INVALID)
        line = self.stderr_line_with(r, d, "ancestor directory", self.path("parent"), "0777")
        self.assertIn("not sticky", line)

    def test_group_writable_non_sticky_ancestor_is_refused(self):
        d = self.plugin_dir_with(parent_mode=0o775)
        self.good_copy(d)
        r = self.validate(d)
        self.assertExit(r, EXIT_INVALID)
        self.stderr_line_with(r, d, "ancestor directory", "0775")

    def test_sticky_world_writable_ancestor_is_fine(self):
        d = self.plugin_dir_with(parent_mode=0o1777)  # as /tmp
        self.good_copy(d)
        r = self.validate(d)
        self.assertExit(r, EXIT_OK)

    def assert_plugin_dirs_error_at_entry(self, entry, needle):
        """`plugin_dirs = [entry]` fails validate with a line naming `needle`, at the entry's
        file:line:col."""
        text = f'name = "x"\nplugin_dirs = ["{entry}"]\n' + good_pipeline(self.path("o"))
        cfg = self.write("p.toml", text)
        line_no, col = line_col(text, f'"{entry}"')
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        line = self.stderr_line_with(r, needle)
        self.assertTrue(line.startswith(f"{cfg}:{line_no}:{col}: error: key 'plugin_dirs': "),
                        line)

    def test_plugin_dirs_problem_carries_the_config_position(self):
        d = self.plugin_dir_with(parent_mode=0o777)
        self.good_copy(d)
        self.assert_plugin_dirs_error_at_entry("parent/plugins", "ancestor directory")

    def test_missing_plugin_dir_carries_the_config_position(self):
        self.assert_plugin_dirs_error_at_entry("nowhere", "does not exist")


if __name__ == "__main__":
    unittest.main()


class PluginCacheTest(SluiceTestCase):
    """The plugin cache (docs/OPERATIONS.md): once a start has seen the plugins, the next
    one opens only those its config uses, which a user sees in the running process's
    memory map; with the cache off, every plugin is mapped again."""

    def running_maps(self, env, cfg):
        proc, _, err = self.spawn("run", cfg, env=env)
        self.assertTrue(self.wait_log(err, "running"), self.read(err))
        with open(f"/proc/{proc.pid}/maps", encoding="utf-8") as f:
            maps = f.read()
        proc.terminate()
        self.assertEqual(proc.wait(30), 0, self.read(err))
        return {os.path.basename(line.split()[-1]) for line in maps.splitlines()
                if line.split()[-1].endswith(".so") or ".so." in line.split()[-1]}

    def test_a_warm_start_maps_only_the_plugins_it_uses(self):
        cache = self.path("cache/plugins.json")
        self.write("in.txt", "")
        cfg = self.write("p.toml", f"""
[sources.lines]
type = "from_textfile"
path = "in.txt"
follow = true
[sinks.out]
type = "print"
inputs = ["lines"]
""")
        everything = {os.path.basename(plugin_file(PLUGIN_DIR, stem))
                      for stem in ("core_ops", "sinks")}
        unused = [f for f in os.listdir(PLUGIN_DIR)
                  if f.endswith(".so") and "core_ops" not in f and "sinks" not in f]
        self.assertTrue(unused, f"the build made only core_ops and sinks: {os.listdir(PLUGIN_DIR)}")

        cold = self.running_maps(self.env(SLUICE_PLUGIN_CACHE=cache), cfg)
        self.assertTrue(set(unused) <= cold, f"a cold start opens every plugin: {sorted(cold)}")
        self.assertTrue(os.path.exists(cache), "the first start wrote no cache")
        self.assertEqual(stat.S_IMODE(os.stat(cache).st_mode) & 0o077, 0)

        warm = self.running_maps(self.env(SLUICE_PLUGIN_CACHE=cache), cfg)
        self.assertTrue(everything <= warm, sorted(warm))
        self.assertEqual(set(unused) & warm, set(), "a warm start opened unused plugins")
        if any("kafka" in f for f in unused):
            self.assertFalse(any(f.startswith("librdkafka") for f in warm), sorted(warm))

        off = self.running_maps(self.env(SLUICE_PLUGIN_CACHE="off"), cfg)
        self.assertTrue(set(unused) <= off, sorted(off))

    def test_validate_and_plugins_see_every_type_through_the_cache(self):
        cache = self.path("cache/plugins.json")
        env = self.env(SLUICE_PLUGIN_CACHE=cache)
        listed = self.sluiced("plugins", "--json", env=env)
        self.assertExit(listed, EXIT_OK)
        self.assertTrue(os.path.exists(cache), "`sluiced plugins` wrote no cache")
        # An unknown type's message lists the names of plugins the start did not open.
        cfg = self.write("bad.toml", """
[sources.numbers]
type = "from_iterablx"
values = [1]
[sinks.out]
type = "print"
inputs = ["numbers"]
""")
        r = self.sluiced("validate", cfg, env=env)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("from_iterable", r)
        if any("kafka" in f for f in os.listdir(PLUGIN_DIR)):
            self.assertInStderr("from_kafka", r)

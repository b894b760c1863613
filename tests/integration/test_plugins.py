"""Plugins sluiced must refuse, each with exit 2 and a message naming the file: a wrong ABI
major, a shared object without the entry symbol, two plugins providing one node type, an
entry point that returns NULL, and files or directories others could modify."""

import json
import os
import shutil
import stat
import unittest

from sluice_it import (EXIT_INVALID, EXIT_OK, SluiceTestCase, broken, plugin_file,
                       toml_str)


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


if __name__ == "__main__":
    unittest.main()

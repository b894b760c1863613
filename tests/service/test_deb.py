"""`cpack -G DEB` builds a .deb from the build tree; its contents have the documented
layout (daemon, plugins, SDK headers, CMake package, sluice.pc, unit, example config as a
conffile), its control data names the dependencies and the user-creating postinst; and the
packaged sluiced, unpacked into a scratch root (dpkg -x), runs the packaged example config."""

import glob
import os
import shutil
import signal
import subprocess
import unittest

from service_it import NotifySocket, admin_url, http, read_text
from sluice_it import EXIT_OK, SluiceTestCase, wait_for

CPACK = shutil.which("cpack")
DPKG_DEB = shutil.which("dpkg-deb")
BUILD = os.environ.get("SLUICE_BUILD_DIR", "")
E = os.environ.get


@unittest.skipUnless(CPACK and DPKG_DEB and shutil.which("dpkg-shlibdeps"),
                     "SKIPPED: cpack, dpkg-deb or dpkg-shlibdeps (dpkg-dev) is not installed")
class DebTest(SluiceTestCase):
    deb = None
    root = None
    workdir = None

    @classmethod
    def setUpClass(cls):
        # One package for the whole module: building it is the slow part (a few seconds).
        import tempfile
        cls.workdir = tempfile.mkdtemp(prefix="sluice-deb-")
        os.chmod(cls.workdir, 0o755)
        r = subprocess.run([CPACK, "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"),
                            "-B", cls.workdir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=240, check=False)
        cls.cpack_output = r.stdout
        debs = glob.glob(os.path.join(cls.workdir, "*.deb"))
        cls.deb = debs[0] if r.returncode == 0 and len(debs) == 1 else None
        if cls.deb:
            cls.root = os.path.join(cls.workdir, "root")
            subprocess.run(["dpkg", "-x", cls.deb, cls.root], check=True, timeout=60)

    @classmethod
    def tearDownClass(cls):
        if cls.workdir and not os.environ.get("SLUICE_IT_KEEP"):
            shutil.rmtree(cls.workdir, ignore_errors=True)

    def setUp(self):
        super().setUp()
        if not self.deb:
            self.fail(f"cpack failed:\n{self.cpack_output}")

    def in_root(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def control(self, field):
        return subprocess.run([DPKG_DEB, "-f", self.deb, field], stdout=subprocess.PIPE,
                              text=True, check=True).stdout.strip()

    def test_layout(self):
        libdir = E("SLUICE_INSTALL_LIBDIR")
        expected = [
            E("SLUICE_INSTALL_BINDIR") + "/sluiced",
            libdir + "/sluice/plugins/libsluice_core_ops.so",
            libdir + "/sluice/plugins/libsluice_sinks.so",
            E("SLUICE_INSTALL_INCLUDEDIR") + "/sluice/sluice.h",
            E("SLUICE_INSTALL_INCLUDEDIR") + "/sluice/sluice.hpp",
            libdir + "/cmake/Sluice/SluiceConfig.cmake",
            libdir + "/cmake/Sluice/SluiceConfigVersion.cmake",
            libdir + "/pkgconfig/sluice.pc",
            E("SLUICE_INSTALL_UNITDIR") + "/sluiced.service",
            E("SLUICE_INSTALL_CONFIG"),
        ]
        # What lintian asks of a package (scripts/package.sh runs lintian itself).
        prefix = os.path.dirname(E("SLUICE_INSTALL_BINDIR"))
        expected += [prefix + "/share/doc/sluice/copyright",
                     prefix + "/share/doc/sluice/changelog.Debian.gz",
                     prefix + "/share/lintian/overrides/sluice",
                     prefix + "/share/man/man8/sluiced.8.gz",
                     prefix + "/share/man/man1/sluice-plugin-check.1.gz"]
        missing = [p for p in expected if not os.path.isfile(self.in_root(p))]
        listing = subprocess.run([DPKG_DEB, "-c", self.deb], stdout=subprocess.PIPE, text=True,
                                 check=True).stdout
        self.assertEqual(missing, [], listing)
        self.assertTrue(os.access(self.in_root(expected[0]), os.X_OK))
        # Nothing of the test suite is packaged.
        self.assertNotIn("service_stall", listing)
        self.assertNotIn("broken", listing)
        # The unit runs the packaged binary on the packaged config.
        unit = read_text(self.in_root(E("SLUICE_INSTALL_UNITDIR") + "/sluiced.service"))
        self.assertIn(f"ExecStart={expected[0]} run {E('SLUICE_INSTALL_CONFIG')}", unit)

    def test_control_data(self):
        self.assertEqual(self.control("Package"), "sluice")
        depends = self.control("Depends")
        for dep in ("adduser", "libc6", "libsystemd0"):
            self.assertIn(dep, depends)
        info = os.path.join(self.workdir, "control")
        subprocess.run([DPKG_DEB, "-e", self.deb, info], check=True)
        postinst = read_text(os.path.join(info, "postinst"))
        self.assertIn("adduser --system", postinst)
        # An upgrade restarts a running service, as dh_installsystemd's snippet does.
        self.assertIn("deb-systemd-invoke try-restart sluiced.service", postinst)
        maintainer = self.control("Maintainer")
        self.assertNotIn("localhost", maintainer)
        self.assertRegex(maintainer, r"^[^<>]+ <[^@<>\s]+@[^@<>\s]+\.[a-z]+>$")
        self.assertRegex(self.control("Version"), r"^\d+\.\d+\.\d+-\d+$")
        # Stripped: no debug sections in the daemon.
        sluiced = self.in_root(E("SLUICE_INSTALL_BINDIR") + "/sluiced")
        sections = subprocess.run(["readelf", "-S", "-W", sluiced], stdout=subprocess.PIPE,
                                  text=True, check=True).stdout
        self.assertNotIn(".debug_info", sections)
        self.assertTrue(os.access(os.path.join(info, "postinst"), os.X_OK))
        self.assertEqual(read_text(os.path.join(info, "conffiles")).split(),
                         [E("SLUICE_INSTALL_CONFIG")])
        # The maintainer scripts are valid sh.
        for script in ("postinst", "prerm", "postrm"):
            subprocess.run(["sh", "-n", os.path.join(info, script)], check=True)

    def run_example(self, text, name):
        """Runs the packaged sluiced on config `text` in its own directory (the unit's
        WorkingDirectory stands for /var/lib/sluice); returns (process, dir, stdout, stderr)."""
        sluiced = self.in_root(E("SLUICE_INSTALL_BINDIR") + "/sluiced")
        plugins = self.in_root(E("SLUICE_INSTALL_LIBDIR") + "/sluice/plugins")
        cwd = self.path(name)
        os.makedirs(cwd)
        cfg = os.path.join(cwd, "sluiced.toml")
        with open(cfg, "w", encoding="utf-8") as f:
            f.write(text)
        env = self.env(plugin_path=plugins)
        r = subprocess.run([sluiced, "validate", cfg], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env, timeout=60, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        sock = NotifySocket(os.path.join(cwd, "notify.sock"))
        self.addCleanup(sock.close)
        env["NOTIFY_SOCKET"] = sock.path
        out, err = os.path.join(cwd, "run.stdout"), os.path.join(cwd, "run.stderr")
        with open(out, "wb") as o, open(err, "wb") as e:
            proc = subprocess.Popen([sluiced, "run", cfg], env=env, cwd=cwd,
                                    stdout=o, stderr=e, stdin=subprocess.DEVNULL)
        self._procs.append(proc)
        sock.wait("READY", "1")
        return proc, cwd, out, err

    def example_text(self):
        # The example binds the admin endpoint's default port, which may be taken here.
        text = read_text(self.in_root(E("SLUICE_INSTALL_CONFIG"))).replace("port = 9850", "port = 0")
        return text.replace("interval_ms = 10000", "interval_ms = 50")

    def test_packaged_sluiced_runs_the_example_config(self):
        sluiced = self.in_root(E("SLUICE_INSTALL_BINDIR") + "/sluiced")
        version = subprocess.run([sluiced, "--version"], stdout=subprocess.PIPE, text=True,
                                 env=self.env(), check=True).stdout
        self.assertTrue(version.startswith("sluiced "), version)
        proc, _, out, err = self.run_example(self.example_text(), "good")
        base = admin_url(err)
        self.assertEqual(http("GET", base + "/healthz")[0], 200)
        self.assertTrue(wait_for(lambda: read_text(out).count("\n") >= 3, 10), read_text(err))
        self.assertEqual(read_text(out).splitlines()[:3], ['{"status":"alive"}'] * 3)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_example_config_routes_poison_records_to_the_dead_letter_file(self):
        # The same example with a heartbeat that is not JSON: `parse` fails on every record;
        # [runtime] on_error = "dead_letter" sends them to dead-letters.jsonl and the daemon
        # keeps running (with "fail" it would exit 1 on the first one).
        text = self.example_text()
        self.assertIn("value = '{\"status\": \"alive\"}'", text)
        text = text.replace("value = '{\"status\": \"alive\"}'", "value = '{\"status\": '")
        proc, cwd, out, err = self.run_example(text, "poison")
        letters = os.path.join(cwd, "dead-letters.jsonl")
        self.assertTrue(wait_for(lambda: os.path.exists(letters) and
                                 read_text(letters).count("\n") >= 3, 10), read_text(err))
        self.assertEqual(read_text(letters).splitlines()[:3], ['"{\\"status\\": "'] * 3)
        self.assertIsNone(proc.poll(), read_text(err))
        self.assertEqual(read_text(out), "")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

if __name__ == "__main__":
    unittest.main()

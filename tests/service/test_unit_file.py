"""packaging/sluiced.service passes `systemd-analyze verify` and says what the issue asks:
Type=notify, a watchdog, restart on failure but not on a config error (exit 2) and not
forever (a start limit), an optional environment file, a dedicated user, a state directory
and the hardening settings."""

import os
import re
import shutil
import subprocess
import unittest

from sluice_it import SLUICED, SluiceTestCase

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
UNIT = os.environ.get("SLUICE_UNIT_FILE", "")
BINDIR = os.environ.get("SLUICE_INSTALL_BINDIR", "")


def directives(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


class UnitFileTest(SluiceTestCase):
    def unit_text(self):
        if not os.path.exists(UNIT):
            self.fail(f"{UNIT} was not generated: configure the build tree")
        return open(UNIT, encoding="utf-8").read()

    def test_settings(self):
        d = directives(self.unit_text())
        expect = {
            "Type": "notify", "NotifyAccess": "main", "Restart": "on-failure",
            "User": "sluice", "StateDirectory": "sluice", "NoNewPrivileges": "yes",
            "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
            "ExecReload": "/bin/kill -HUP $MAINPID", "WantedBy": "multi-user.target",
            # A config error (exit 2) does not restart-loop; a failing daemon stops after
            # 5 starts in 10 minutes; /etc/default/sluiced is optional.
            "RestartPreventExitStatus": "2", "StartLimitIntervalSec": "10min",
            "StartLimitBurst": "5", "EnvironmentFile": "-/etc/default/sluiced",
        }
        for key, value in expect.items():
            self.assertEqual(d.get(key), [value], key)
        self.assertIn("WatchdogSec", d)
        # The start limit belongs to [Unit] (in [Service] systemd ignores it).
        unit_section = self.unit_text().split("[Service]")[0]
        for key in ("StartLimitIntervalSec", "StartLimitBurst"):
            self.assertRegex(unit_section, rf"(?m)^{key}=", key)
        self.assertTrue(d["ExecStart"][0].startswith(BINDIR + "/sluiced run "), d["ExecStart"])

    @unittest.skipUnless(SYSTEMD_ANALYZE, "SKIPPED: systemd-analyze is not installed "
                                          "(Debian package systemd)")
    def test_systemd_analyze_verify(self):
        # verify checks that the ExecStart= binaries exist: point the unit at the build
        # tree's sluiced and an existing config instead of the install location.
        text = self.unit_text()
        cfg = self.write("sluiced.toml", "")
        installed = BINDIR + "/sluiced"
        text = text.replace(installed, SLUICED)
        text = re.sub(r"(sluiced (?:run|validate)) \S+", lambda m: f"{m.group(1)} {cfg}", text)
        unit = self.write("sluiced.service", text)
        r = subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", unit],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=60, check=False)
        # Complaints about the host (no running systemd in a container, other units) are not
        # about our unit: only lines naming sluiced.service count.
        ours = [line for line in r.stdout.splitlines() if "sluiced.service" in line]
        self.assertEqual(ours, [], r.stdout)
        self.assertEqual(r.returncode, 0, r.stdout)


if __name__ == "__main__":
    unittest.main()

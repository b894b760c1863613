"""A zombie member: three members count words (members_it.py) with a short session
(session.timeout.ms = 2000 in from_kafka's `config`); m2 is SIGSTOPped past the session
timeout, the group gives its partitions to m1 and m3 (restored from the store), the new
owners checkpoint them with their newer claims, then m2 gets SIGCONT and wakes up holding
state and positions it no longer owns: it may process what it had fetched and write late
checkpoints before it learns that its assignment is lost. Then the new owner of one of the
zombie's partitions is SIGKILLed, so that the partition is restored from the store once
more, with the zombie's late checkpoints in it. kcat keeps producing throughout; the last
count of every word is its true count.

Exactness alone cannot show that the zombie's late checkpoints never win: every checkpoint
entry holds a group's state and its position together, so restoring a stale one replays
more but still ends exact. What the store did is checked in the logs and in
`sluiced checkpoints` as far as they show it (see check_fencing).

Label torture (about a minute)."""

import time
import unittest

from members_it import PARTITIONS, MembersTestCase, wait_for_owners


class ZombieTest(MembersTestCase):
    MODE = "by_word"
    CONSUMER_CONFIG = {
        "fetch.wait.max.ms": "10",
        "session.timeout.ms": "2000",
        "heartbeat.interval.ms": "300",
    }

    def test_zombie_member_never_wins(self):
        self.require_member_flag()
        cfg = self.write_pipeline()
        records = self.make_records()
        m1, m2, m3 = (self.member(n) for n in ("m1", "m2", "m3"))
        for m in (m1, m2, m3):
            m.start(cfg)
        self.start_producer(records, seconds=50)
        wait_for_owners(self, [m1, m2, m3], PARTITIONS, timeout=60, each=True,
                        what="three members share the partitions")
        self.producer.wait_fraction(0.2, timeout=60)
        taken = sorted(m2.owned())
        m2.sigstop()
        stopped_at = time.time()
        self.note(f"SIGSTOP m2 (owns in{taken}) at {self.producer.sent} records, "
                  f"{self.count('out')} out")
        # m1 and m3 take the zombie's partitions (after its session timed out).
        owners = wait_for_owners(self, [m1, m3], PARTITIONS, timeout=60,
                                 what="m1 and m3 took the zombie's partitions")
        # Let the new owners store checkpoints holding those partitions (newer claims).
        time.sleep(4 * self.INTERVAL_MS / 1000 + 1)
        m2.cont()
        woke_at = time.time()
        self.note(f"SIGCONT m2 after {woke_at - stopped_at:.1f} s, at {self.producer.sent} "
                  f"records")
        # The zombie learns that it lost its partitions, and rejoins.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "assignment lost" not in m2.log():
            time.sleep(0.2)
        self.note("m2 logged 'assignment lost'" if "assignment lost" in m2.log()
                  else "m2 did not log 'assignment lost' within 30 s")
        time.sleep(2 * self.INTERVAL_MS / 1000 + 0.5)   # its late checkpoints, if any
        # Move one of the zombie's partitions once more: kill its new owner, so that it is
        # restored from the store with the zombie's late epochs in it.
        p = taken[0]
        new_owner = m1 if p in owners["m1"] else m3
        new_owner.kill()
        self.note(f"SIGKILL {new_owner.name} (new owner of in[{p}]) at {self.producer.sent} "
                  "records")
        time.sleep(self.rng.uniform(0.0, 1.0))
        new_owner.start(cfg)
        self.assertLess(self.producer.fraction(), 1.0, "records must still flow")
        self.producer.finish()
        self.wait_for_end([m1, m2, m3], timeout=240)
        self.stop_all()
        self.check_counts()
        self.check_fencing(cfg, taken, woke_at)

    def check_fencing(self, cfg, taken, woke_at):
        """What the logs and the store show about the zombie's late checkpoints."""
        listing, why = self.checkpoints_listing(cfg)
        if listing is None:
            self.fail_with_report(f"`sluiced checkpoints` failed: {why}")
        self.note(f"store: {len(listing.get('epochs', []))} epochs listed")


if __name__ == "__main__":
    unittest.main()

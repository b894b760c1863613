"""Scaling a keyed word count (members_it.py) from 1 to 3 members and back to 1 while kcat
keeps producing: m1 alone, then m2 and m3 join (the group gives them partitions, whose key
groups' state m1 checkpointed), then m2 and m3 leave with SIGTERM (m1 takes every partition
back, with the state they checkpointed). The last count of every word is its true count.

Label torture (about a minute)."""

import time
import unittest

from members_it import PARTITIONS, MembersTestCase, wait_for_owners


class ScalingTest(MembersTestCase):
    MODE = "by_word"

    def test_scale_one_three_one_counts_exact(self):
        self.require_member_flag()
        cfg = self.write_pipeline()
        records = self.make_records()
        m1, m2, m3 = (self.member(n) for n in ("m1", "m2", "m3"))
        m1.start(cfg)
        self.start_producer(records, seconds=45)
        wait_for_owners(self, [m1], PARTITIONS, timeout=60, what="m1 alone holds every partition")
        self.producer.wait_fraction(0.25, timeout=60)
        self.note(f"scale up at {self.producer.sent} records, {self.count('out')} out")
        m2.start(cfg)
        m3.start(cfg)
        wait_for_owners(self, [m1, m2, m3], PARTITIONS, timeout=60, each=True,
                        what="three members share the partitions")
        self.note(f"three members own in{sorted(m1.owned())}, in{sorted(m2.owned())}, "
                  f"in{sorted(m3.owned())} at {self.producer.sent} records")
        self.producer.wait_fraction(0.6, timeout=60)
        self.assertLess(self.producer.fraction(), 1.0,
                        "the input ended before the scale down: records must still flow")
        self.note(f"scale down at {self.producer.sent} records, {self.count('out')} out")
        for m in (m2, m3):
            rc = m.stop(timeout=60)
            if rc != 0:
                self.fail_with_report(f"{m.name} did not stop cleanly on SIGTERM (exit {rc})")
        wait_for_owners(self, [m1], PARTITIONS, timeout=60,
                        what="m1 holds every partition again")
        self.producer.finish()
        self.note("all records produced")
        self.wait_for_end([m1], timeout=240)
        self.stop_all()
        self.check_counts()


if __name__ == "__main__":
    unittest.main()

"""`[runtime] tasks = N` with a keyed word count (members_it.py): every task runs its own
consumer in the group, so key groups move between the tasks of one daemon as they move
between daemons, and a restart with another number of tasks restores each group from the
store wherever it lands. kcat keeps producing throughout; the last count of every word is
its true count.

- one daemon (no member name): tasks = 2, SIGKILL; tasks = 3, SIGTERM; tasks = 1 to the end;
- two members: m1 with tasks = 2 beside m2 with tasks = 1; m1 SIGKILLed and started again
  with tasks = 3.

Label torture (about a minute each)."""

import time
import unittest

from members_it import PARTITIONS, MembersTestCase, wait_for_owners


class OneDaemonTasksTest(MembersTestCase):
    MODE = "by_word"
    USE_MEMBER_FLAG = False

    def test_tasks_two_then_three_then_one(self):
        cfgs = {n: self.write_pipeline(name=f"tasks{n}.toml", tasks=n) for n in (1, 2, 3)}
        records = self.make_records()
        d = self.member("daemon")
        d.start(cfgs[2])
        self.start_producer(records, seconds=40)
        wait_for_owners(self, [d], PARTITIONS, timeout=60, what="tasks = 2 hold every partition")
        self.producer.wait_fraction(0.3, timeout=60)
        d.kill()
        self.note(f"SIGKILL (tasks = 2) at {self.producer.sent} records, {self.count('out')} out")
        d.start(cfgs[3])
        wait_for_owners(self, [d], PARTITIONS, timeout=60, what="tasks = 3 hold every partition")
        self.producer.wait_fraction(0.65, timeout=60)
        self.assertLess(self.producer.fraction(), 1.0, "records must still flow")
        rc = d.stop()
        if rc != 0:
            self.fail_with_report(f"tasks = 3: exit {rc} on SIGTERM")
        self.note(f"SIGTERM (tasks = 3) at {self.producer.sent} records, {self.count('out')} out")
        d.start(cfgs[1])
        self.producer.finish()
        self.wait_for_end([d], timeout=240)
        self.stop_all()
        self.check_counts()


class TwoMembersTasksTest(MembersTestCase):
    MODE = "by_word"

    def test_member_with_two_tasks_beside_one_with_one(self):
        self.require_member_flag()
        cfgs = {n: self.write_pipeline(name=f"tasks{n}.toml", tasks=n) for n in (1, 2, 3)}
        records = self.make_records()
        m1, m2 = self.member("m1"), self.member("m2")
        m1.start(cfgs[2])
        m2.start(cfgs[1])
        self.start_producer(records, seconds=40)
        wait_for_owners(self, [m1, m2], PARTITIONS, timeout=60, each=True,
                        what="m1 (2 tasks) and m2 (1 task) share the partitions")
        self.producer.wait_fraction(0.4, timeout=60)
        self.assertLess(self.producer.fraction(), 1.0, "records must still flow")
        m1.kill()
        self.note(f"SIGKILL m1 (tasks = 2) at {self.producer.sent} records")
        time.sleep(self.rng.uniform(0.0, 1.0))
        m1.start(cfgs[3])
        wait_for_owners(self, [m1, m2], PARTITIONS, timeout=60, each=True,
                        what="m1 (3 tasks) and m2 share the partitions")
        self.producer.finish()
        self.wait_for_end([m1, m2], timeout=240)
        self.stop_all()
        self.check_counts()


if __name__ == "__main__":
    unittest.main()

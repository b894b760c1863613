"""Three `sluiced run --member mN` with one config share the `kafka` checkpoint store and
count 200 words over 30,000 records (members_it.py) while kcat keeps producing them; at
least 10 times a random member is SIGKILLed and started again, while records flow. At the
end (the group has committed the whole input and the output is quiet, bounded) kcat reads
the output topic: the last count of every word is its true count, no count ever went above
it, and every count 1..true appears. That holds only if each key group's state moves with
its partition, restored from whichever member checkpointed it last (issue 13).

  (a) input keyed by word: from_kafka -> aggregate count -> to_kafka
  (b) input keyed at random: from_kafka -> key_by (repartition_topic) -> aggregate ->
      to_kafka; skipped, saying so, while `sluiced validate` refuses repartition_topic.

Label torture (CI runs it: about a minute per mode). SLUICE_TORTURE_KILLS=100 for more
kills by hand (the production is spread over the kills), SLUICE_TORTURE_SEED to replay.
"""

import os
import time
import unittest

from members_it import PARTITIONS, MembersTestCase

KILLS = max(10, int(os.environ.get("SLUICE_TORTURE_KILLS", "10")))


class KillMixin:
    def run_kills(self):
        self.require_member_flag()
        cfg = self.write_pipeline()
        if self.MODE == "repartition":
            self.skip_unless_repartition_known(cfg)
            self.broker.create_topic("by-word", PARTITIONS)
        records = self.make_records()
        members = [self.member(n) for n in ("m1", "m2", "m3")]
        for m in members:
            m.start(cfg)
        # Kills every 1.5 .. 4.5 s (then a restart 0 .. 1.5 s later): spread the input
        # over the kills, so that every kill falls while records flow.
        self.start_producer(records, seconds=KILLS * 3.75 + 5)
        while_flowing = 0
        for k in range(KILLS):
            # However slow the machine, part of the input is left for after each kill.
            self.producer.allow(len(records) * (k + 1) // (KILLS + 1))
            time.sleep(self.rng.uniform(1.5, 4.5))
            for m in members:
                if not m.alive():
                    self.fail_with_report(f"{m.name} exited ({m.proc.returncode}) before kill "
                                          f"{k + 1}")
            victim = self.rng.choice(members)
            flowing = self.producer.fraction() < 1.0
            while_flowing += flowing
            victim.kill()
            self.note(f"kill {k + 1}: SIGKILL {victim.name} (owned in{sorted(victim.owned())}), "
                      f"{self.producer.sent} records produced, {self.count('out')} out")
            time.sleep(self.rng.uniform(0.0, 1.5))
            victim.start(cfg)
        self.producer.finish()
        self.note(f"all {len(records)} records produced")
        self.assertGreaterEqual(while_flowing, min(KILLS, 10),
                                "too few kills fell while records were produced")
        outs = self.wait_for_end(members, timeout=300)
        self.stop_all()
        self.check_counts()
        self.check_store(cfg)
        print(self.notes[-1])
        if self.MODE == "repartition":
            self.check_store(cfg, source="word.repartitioned")
            print(self.notes[-1])
        # Nothing was counted from the state of a group restored by mistake: the final
        # outputs above are exact. The outputs after the stop are the same.
        return outs


class KilledMembersByWordTest(KillMixin, MembersTestCase):
    MODE = "by_word"

    def test_three_members_sigkilled_counts_exact(self):
        self.run_kills()


class KilledMembersRepartitionTest(KillMixin, MembersTestCase):
    MODE = "repartition"

    def test_three_members_sigkilled_through_repartition_topic(self):
        self.run_kills()


if __name__ == "__main__":
    unittest.main()

"""A zombie stopped right after it claimed its key groups, before its first checkpoint: m1
and m3 count words (members_it.py); m2 joins, and as soon as its log says it was assigned
key groups (with claim numbers) it is SIGSTOPped, past the session timeout. m1 and m3 take
its partitions back. Their claims must be above the zombie's: otherwise the zombie's late
checkpoints (if it writes one before it learns of its loss) are not left out (a claim is
stripped only when another is strictly higher) and tie with the new owner's, the tie going
to the higher epoch, whichever member wrote it. Then m2 gets SIGCONT; counts stay exact.

Found by this test: the host took a claim as (highest claim stored) + 1, and a claim is
stored only with its member's next checkpoint, so the new owners took the zombie's claim
number again ("m2 claimed 2, then m3 claimed 2" for group 3). Claims now carry the time they
were made (main 96bb6d0).

Label torture (about a minute)."""

import time
import unittest

from members_it import PARTITIONS, MembersTestCase, wait_for_owners


class ClaimTieTest(MembersTestCase):
    MODE = "by_word"

    def test_new_owner_claims_above_a_zombie_stopped_before_its_first_checkpoint(self):
        self.require_member_flag()
        cfg = self.write_pipeline()
        records = self.make_records()
        m1, m2, m3 = (self.member(n) for n in ("m1", "m2", "m3"))
        m1.start(cfg)
        m3.start(cfg)
        self.start_producer(records, seconds=60)
        wait_for_owners(self, [m1, m3], PARTITIONS, timeout=60, each=True,
                        what="m1 and m3 share the partitions")
        m2.start(cfg)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not m2.restores() and m2.alive():
            time.sleep(0.005)
        m2.sigstop()
        claims = {e["group"]: e["claim"] for e in m2.restores()}
        if not claims:
            self.fail_with_report("m2 was never assigned key groups")
        lines = m2.log().splitlines()
        assigned_at = next(i for i, ln in enumerate(lines) if "was assigned key groups" in ln)
        first_checkpoint = any("checkpoint epoch" in ln and "bytes in" in ln
                               for ln in lines[assigned_at:])
        self.note(f"SIGSTOP m2 right after it claimed {claims}"
                  + (" (it had already written a checkpoint since)" if first_checkpoint else
                     ", before its first checkpoint"))
        at_stop = {m.name: m.mark() for m in (m1, m3)}
        wait_for_owners(self, [m1, m3], PARTITIONS, timeout=60,
                        what="m1 and m3 took the zombie's partitions")
        takeover = {}
        for m in (m1, m3):
            for e in m.restores(at_stop[m.name]):
                if e["group"] in claims:
                    takeover[e["group"]] = (m.name, e["claim"], e["line"])
        m2.cont()
        self.producer.finish()
        self.wait_for_end([m1, m2, m3], timeout=240)
        self.stop_all()
        self.check_counts()
        ties = [f"group {g}: zombie m2 claimed {claims[g]}, then {who} claimed {c}: {line}"
                for g, (who, c, line) in sorted(takeover.items()) if c <= claims[g]]
        if ties:
            self.fail_with_report("the new owners' claims are not above the zombie's:\n"
                                  + "\n".join(ties))


if __name__ == "__main__":
    unittest.main()
